"""math.<fn> on every type it is defined on, against numpy on random data and special
values: real functions on f16/bf16/f32/f64, integer functions on signed and unsigned
types, complex functions on c32/c64.  Tolerances: a few ulp of the type (OpenCL full
profile accuracy), one ulp of f16/bf16 after rounding."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import backend_opencl


def _load_numref():  # the tests are not a package (pytest --import-mode=importlib)
    spec = importlib.util.spec_from_file_location("backend_test_numref",
                                                  Path(__file__).parent / "numref.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ref = _load_numref()
DTYPES, to_float, wrap = _ref.DTYPES, _ref.to_float, _ref.wrap


def _round_half_away(x: np.ndarray) -> np.ndarray:
    r = np.trunc(x)
    return np.copysign(r + np.sign(x) * (np.abs(x - r) >= 0.5), x)


def _vec(f):
    return lambda x: np.vectorize(f, otypes=[np.float64])(x)


def _lgamma(x: float) -> float:
    try:
        return math.lgamma(x)
    except ValueError:
        return math.inf


def _erf(x: float) -> float:
    return math.erf(x) if not math.isnan(x) else math.nan


def _erfc(x: float) -> float:
    return math.erfc(x) if not math.isnan(x) else math.nan


# name -> (numpy reference on float64, input range (low, high), second input range)
REAL = {
    "abs": (np.abs, (-10, 10)), "sqrt": (np.sqrt, (-1, 100)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100)), "cbrt": (np.cbrt, (-100, 100)),
    "exp": (np.exp, (-20, 20)), "exp2": (np.exp2, (-20, 20)), "expm1": (np.expm1, (-2, 2)),
    "log": (np.log, (-0.5, 100)), "log1p": (np.log1p, (-0.9, 10)), "log2": (np.log2, (0, 100)),
    "log10": (np.log10, (0, 100)), "sin": (np.sin, (-6, 6)), "cos": (np.cos, (-6, 6)),
    "tan": (np.tan, (-1.5, 1.5)), "tanh": (np.tanh, (-10, 10)),
    "asin": (np.arcsin, (-1.1, 1.1)), "acos": (np.arccos, (-1.1, 1.1)),
    "atan": (np.arctan, (-10, 10)), "sinh": (np.sinh, (-10, 10)),
    "cosh": (np.cosh, (-10, 10)), "asinh": (np.arcsinh, (-10, 10)),
    "acosh": (np.arccosh, (0.9, 10)), "atanh": (np.arctanh, (-1.1, 1.1)),
    "erf": (_vec(_erf), (-4, 4)), "erfc": (_vec(_erfc), (-4, 4)),
    "lgamma": (_vec(_lgamma), (0.1, 20)), "floor": (np.floor, (-10, 10)),
    "ceil": (np.ceil, (-10, 10)), "round": (_round_half_away, (-10, 10)),
    "roundeven": (np.rint, (-10, 10)), "trunc": (np.trunc, (-10, 10)),
    "sign": (lambda x: np.where(x == 0, x, np.sign(x)), (-3, 3)),  # keeps -0.0
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), (-30, 30)),
    "real": (lambda x: x, (-3, 3)), "imag": (np.zeros_like, (-3, 3)),
    "pow": (np.power, (0, 4), (-3, 3)), "atan2": (np.arctan2, (-3, 3), (-3, 3)),
    "min": (np.minimum, (-3, 3), (-3, 3)), "max": (np.maximum, (-3, 3), (-3, 3)),
    "nextafter": (np.nextafter, (-3, 3), (-3, 3)),
    "copysign": (np.copysign, (-3, 3), (-3, 3)), "hypot": (np.hypot, (-3, 3), (-3, 3)),
}
EXACT = {"abs", "floor", "ceil", "round", "roundeven", "trunc", "sign", "real", "imag", "min",
         "max", "nextafter", "copysign"}
FLOATS = ["f32", "f64", "f16", "bf16"]
ULP = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-10, "bf16": 2.0**-7}


def _fns(t: str) -> list[str]:
    return list(REAL)


def _table_kernel(name: str, t: str, fns: list[tuple[str, int]], out_t: str) -> str:
    lines = []
    for k, (fn, arity) in enumerate(fns):
        args = "%x, %y" if arity == 2 else "%x"
        lines.append(f"    %k{k} = constant {k} : index\n"
                     f"    %x{k} = load %a[%i, %k{k}] : memref<{t}x?x{len(fns)}>\n"
                     f"    %y{k} = load %b[%i, %k{k}] : memref<{t}x?x{len(fns)}>\n"
                     f"    %r{k} = math.{fn} {args.replace('%x', f'%x{k}').replace('%y', f'%y{k}')}"
                     f" : {t}\n"
                     f"    store %r{k}, %out[%i, %k{k}] : memref<{out_t}x?x{len(fns)}>")
    body = "\n".join(lines)
    return f"""
func @{name}(%a: memref<{t}x?x{len(fns)}>, %b: memref<{t}x?x{len(fns)}>,
             %out: memref<{out_t}x?x{len(fns)}>) work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?x{len(fns)}>
  foreach %i = %zero, %n {{
{body}
  }}
}}
"""


def real_source(t: str) -> str:
    return _table_kernel(f"real_{t}", t, [(f, len(REAL[f]) - 1) for f in _fns(t)], t)


INT_FNS = [("abs", 1), ("sign", 1), ("popcount", 1), ("clz", 1), ("pow", 2), ("min", 2),
           ("max", 2)]
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
COMPLEX_FNS = [("exp", 1), ("log", 1), ("sqrt", 1), ("rsqrt", 1), ("sin", 1), ("cos", 1),
               ("tan", 1), ("tanh", 1), ("log1p", 1), ("expm1", 1), ("sign", 1), ("conj", 1),
               ("pow", 2), ("cbrt", 1), ("logistic", 1), ("atan2", 2), ("min", 2), ("max", 2)]
COMPLEX_REAL_FNS = [("abs", 1), ("real", 1), ("imag", 1)]
COMPLEX = ["c32", "c64"]

ISFINITE = """
func @isfinite_{t}(%a: memref<{t}x?>, %out: memref<i1x?>) work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{t}x?>
    %r = math.isfinite %x : {t}
    store %r, %out[%i] : memref<i1x?>
  }}
}}
"""


@pytest.fixture(scope="module")
def module() -> object:
    parts = [real_source(t) for t in FLOATS]
    parts += [_table_kernel(f"int_{t}", t, INT_FNS, t) for t in INTS]
    parts += [_table_kernel(f"complex_{t}", t, COMPLEX_FNS, t) for t in COMPLEX]
    parts += [_table_kernel(f"creal_{t}", t, COMPLEX_REAL_FNS, {"c32": "f32", "c64": "f64"}[t])
              for t in COMPLEX]
    parts += [ISFINITE.format(t=t) for t in FLOATS]
    return backend_opencl.compile("\n".join(parts))


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5]


def _inputs(rng: np.random.Generator, n: int, t: str, fns: list[str]) -> tuple[np.ndarray, ...]:
    a = np.empty((n, len(fns)), np.float64)
    b = np.empty((n, len(fns)), np.float64)
    for k, fn in enumerate(fns):
        spec = REAL[fn]
        a[:, k] = rng.uniform(*spec[1], size=n)
        b[:, k] = rng.uniform(*(spec[2] if len(spec) > 2 else (0, 1)), size=n)
        a[:len(SPECIALS), k] = SPECIALS
        b[:len(SPECIALS), k] = SPECIALS[::-1]
    cast = (lambda x: to_float(x, t)) if t in ("f16", "bf16") else (lambda x: x.astype(DTYPES[t]))
    return np.asfortranarray(cast(a)), np.asfortranarray(cast(b))


@pytest.mark.parametrize("t", FLOATS)
def test_real_functions(module, rng, t: str) -> None:
    fns = _fns(t)
    n = 120
    a, b = _inputs(rng, n, t, fns)
    out = np.full((n, len(fns)), np.nan, DTYPES[t], order="F")
    getattr(module, f"real_{t}")(a, b, out)
    x, y = a.astype(np.float64), b.astype(np.float64)
    for k, fn in enumerate(fns):
        spec = REAL[fn]
        with np.errstate(all="ignore"):
            want = spec[0](x[:, k], y[:, k]) if len(spec) > 2 else spec[0](x[:, k])
        with np.errstate(all="ignore"):
            want = to_float(want, t) if t in ("f16", "bf16") else want.astype(DTYPES[t])
        if fn == "nextafter":  # in the type itself
            want = _nextafter(a[:, k], b[:, k], t)
        _check_real(out[:, k].astype(np.float64), want.astype(np.float64), t, fn)


def _nextafter(x: np.ndarray, y: np.ndarray, t: str) -> np.ndarray:
    """numpy's nextafter, by bit steps for bf16 (numpy has no bfloat16 nextafter)."""
    if t != "bf16":
        return np.nextafter(x, y)
    out = x.copy()
    bits = out.view(np.uint16)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    for k in range(x.size):
        if np.isnan(xf[k]) or np.isnan(yf[k]):
            out[k] = np.nan
        elif xf[k] == yf[k]:
            out[k] = y[k]
        elif xf[k] == 0:
            bits[k] = 1 if yf[k] > 0 else 0x8001
        else:
            step = 1 if (xf[k] < yf[k]) == (xf[k] > 0) else -1
            bits[k] = int(bits[k]) + step
    return out


def _check_real(got: np.ndarray, want: np.ndarray, t: str, fn: str) -> None:
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{fn}: NaN positions")
    got, want = got[~nan], want[~nan]
    if fn in EXACT:
        np.testing.assert_array_equal(got, want, err_msg=fn)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=fn)
        return
    ulps = {"lgamma": 64, "pow": 16, "erf": 16, "erfc": 16}.get(fn, 4)
    if t in ("f16", "bf16"):
        ulps = 1  # one rounding of a result accurate in float
    tiny = {"f32": 1e-37, "f64": 1e-300, "f16": 6e-8, "bf16": 1e-37}[t]
    # lgamma has zeros at 1 and 2, where its error is absolute: f64's helper (Stirling's
    # series of x + 8 less the log of the shift's product) ~4e-15 there, XLA's ~2e-15
    atol = tiny + (ULP[t] * (24 if t == "f64" else 4) if fn == "lgamma" else 0)
    np.testing.assert_allclose(got, want, rtol=ulps * ULP[t], atol=atol, err_msg=fn)


@pytest.mark.parametrize("t", FLOATS)
def test_isfinite(module, rng, t: str) -> None:
    x = np.array(SPECIALS + list(rng.standard_normal(9)), np.float64)
    x = to_float(x, t) if t in ("f16", "bf16") else x.astype(DTYPES[t])
    out = np.zeros(x.size, bool)
    getattr(module, f"isfinite_{t}")(x, out)
    np.testing.assert_array_equal(out, np.isfinite(x.astype(np.float64)))


def _int_pow(a: int, b: int) -> int:
    if b < 0:
        return 1 if a == 1 else ((-1) ** (b % 2) if a == -1 else 0)
    return a**b


def _int_reference(fn: str, t: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = np.dtype(DTYPES[t]).itemsize * 8
    xs, ys = a.tolist(), b.tolist()
    table = {
        "abs": lambda x, y: abs(x), "sign": lambda x, y: (x > 0) - (x < 0),
        "popcount": lambda x, y: bin(x % 2**bits).count("1"),
        "clz": lambda x, y: bits - (x % 2**bits).bit_length(),
        "pow": lambda x, y: _int_pow(x, y), "min": lambda x, y: min(x, y),
        "max": lambda x, y: max(x, y),
    }
    return wrap([table[fn](x, y) for x, y in zip(xs, ys, strict=True)], t)


@pytest.mark.parametrize("t", INTS)
def test_integer_functions(module, rng, t: str) -> None:
    n = 64
    info = np.iinfo(DTYPES[t])
    a = rng.integers(info.min, info.max, size=(n, len(INT_FNS)), dtype=DTYPES[t], endpoint=True)
    b = rng.integers(info.min, info.max, size=(n, len(INT_FNS)), dtype=DTYPES[t], endpoint=True)
    edges = [0, 1, info.max, info.min] + ([-1, -2] if info.min < 0 else [2, 3])
    a[:len(edges)] = np.array(edges, dtype=DTYPES[t])[:, None]
    pow_k = [f for f, _ in INT_FNS].index("pow")
    b[:, pow_k] = rng.integers(0 if info.min == 0 else -3, 70, size=n)  # exponents
    a, b = np.asfortranarray(a), np.asfortranarray(b)
    out = np.zeros((n, len(INT_FNS)), DTYPES[t], order="F")
    getattr(module, f"int_{t}")(a, b, out)
    for k, (fn, _) in enumerate(INT_FNS):
        np.testing.assert_array_equal(out[:, k], _int_reference(fn, t, a[:, k], b[:, k]),
                                      err_msg=fn)


def _complex_reference(fn: str, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    table = {
        "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
        "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
        "log1p": lambda v: np.log(1 + v), "expm1": lambda v: np.exp(v) - 1,
        "sign": lambda v: np.where(v == 0, 0, v / np.where(v == 0, 1, np.abs(v))),
        "conj": np.conj, "abs": np.abs, "cbrt": lambda v: np.exp(np.log(v) / 3),
        "logistic": lambda v: 1 / (1 + np.exp(-v)), "real": np.real, "imag": np.imag,
    }
    if fn == "pow":
        return np.power(z, w)
    if fn == "atan2":  # -i log((x + iy) / sqrt(x^2 + y^2)) with y = z, x = w
        return -1j * np.log((w + 1j * z) / np.sqrt(w * w + z * z))
    if fn in ("min", "max"):  # lexicographic on (real, imaginary)
        first = (z.real < w.real) | ((z.real == w.real) & (z.imag < w.imag))
        return np.where(first if fn == "min" else ~first & (z != w), z, w)
    return table[fn](z)


@pytest.mark.parametrize("t", COMPLEX)
@pytest.mark.parametrize("kernel", ["complex", "creal"])
def test_complex_functions(module, rng, t: str, kernel: str) -> None:
    fns = COMPLEX_FNS if kernel == "complex" else COMPLEX_REAL_FNS
    n = 80
    z = rng.uniform(-3, 3, (n, len(fns))) + 1j * rng.uniform(-3, 3, (n, len(fns)))
    z[:4] = np.array([0, 1j, -2, 0.5 - 0.25j])[:, None]
    w = rng.uniform(-2, 2, (n, len(fns))) + 1j * rng.uniform(-2, 2, (n, len(fns)))
    z, w = np.asfortranarray(z.astype(DTYPES[t])), np.asfortranarray(w.astype(DTYPES[t]))
    part = {"c32": np.float32, "c64": np.float64}[t]
    out_dtype = DTYPES[t] if kernel == "complex" else part
    out = np.full((n, len(fns)), np.nan, out_dtype, order="F")
    getattr(module, f"{kernel}_{t}")(z, w, out)
    eps = np.finfo(part).eps
    for k, (fn, _) in enumerate(fns):
        with np.errstate(all="ignore"):
            want = _complex_reference(fn, z[:, k].astype(np.complex128),
                                      w[:, k].astype(np.complex128))
        finite = np.isfinite(want)
        np.testing.assert_array_equal(out[~finite, k], want[~finite], err_msg=fn)
        got, want = out[finite, k], want[finite]
        err = np.abs(got - want)
        bound = 64 * eps * np.maximum(np.abs(want), 1e-3)
        worst = int(np.argmax(err / bound))
        assert (err <= bound).all(), (fn, z[finite, k][worst], got[worst], want[worst])
