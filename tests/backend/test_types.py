"""Extension scalar types through the whole stack: u8..u64, f16, bf16 in memrefs and scalar
arguments; the defined integer semantics (division by zero, INT_MIN / -1, wide shifts);
arithmetic on f16/bf16 rounded to the type; the full cast matrix."""

from __future__ import annotations

import importlib.util
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
DTYPES, float_to_int, int_div, int_rem = _ref.DTYPES, _ref.float_to_int, _ref.int_div, _ref.int_rem
shift, to_float, wrap = _ref.shift, _ref.to_float, _ref.wrap

INT_OPS = ["add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor", "neg", "not"]
FLOAT_OPS = ["add", "sub", "mul", "div", "rem", "neg"]
INTS = ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64"]
HALVES = ["f16", "bf16"]


def _ops(t: str) -> list[str]:
    return FLOAT_OPS if t in HALVES else INT_OPS


def arith_source(t: str) -> str:
    ops = _ops(t)
    lines = []
    for k, op in enumerate(ops):
        args = "%x" if op in ("neg", "not") else "%x, %y"
        lines.append(f"    %r{k} = arith.{op} {args} : {t}\n    %k{k} = constant {k} : index\n"
                     f"    store %r{k}, %out[%i, %k{k}] : memref<{t}x?x{len(ops)}>")
    body = "\n".join(lines)
    return f"""
func @arith_{t}(%a: memref<{t}x?>, %b: memref<{t}x?>, %out: memref<{t}x?x{len(ops)}>)
    work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{t}x?>
    %y = load %b[%i] : memref<{t}x?>
{body}
  }}
}}
"""


CASTS = [
    ("f32", "f16"), ("f64", "f16"), ("f16", "f32"), ("f32", "bf16"), ("f64", "bf16"),
    ("bf16", "f64"), ("f16", "bf16"), ("bf16", "f16"), ("i32", "f16"), ("i64", "bf16"),
    ("u64", "bf16"), ("u32", "bf16"), ("i16", "f16"), ("f16", "i32"), ("bf16", "u8"),
    ("f32", "i8"), ("f32", "u16"), ("f64", "i64"), ("f64", "u64"), ("f32", "u32"),
    ("f64", "i32"), ("i64", "u8"), ("u64", "i32"), ("i8", "u64"), ("u32", "f32"),
    ("u64", "f64"), ("i64", "f32"), ("c32", "f32"), ("c64", "i32"), ("f16", "c32"),
    ("u16", "c64"), ("f32", "i1"), ("u8", "i1"), ("c32", "i1"), ("i1", "f16"), ("i1", "u32"),
]


def cast_source(src: str, dst: str) -> str:
    return f"""
func @cast_{src}_{dst}(%a: memref<{src}x?>, %out: memref<{dst}x?>) work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{src}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{src}x?>
    %y = cast %x : {src} -> {dst}
    store %y, %out[%i] : memref<{dst}x?>
  }}
}}
"""


SCALARS = """
func @scalars(%h: f16, %b: bf16, %u: u64, %w: u8, %out16: memref<f16x3>, %outb: memref<bf16x3>,
              %outu: memref<u64x2>, %outw: memref<u8x2>) {
  %i0 = constant 0 : index
  %i1 = constant 1 : index
  %i2 = constant 2 : index
  %c = constant 0.1 : f16
  %cb = constant 0.1 : bf16
  %big = constant -1 : u64
  %hb = arith.add %h, %c : f16
  %bb = arith.mul %b, %cb : bf16
  %ub = arith.div %big, %u : u64
  %wb = arith.add %w, 200 : u8
  parallel {
    store %h, %out16[%i0] : memref<f16x3>
    store %c, %out16[%i1] : memref<f16x3>
    store %hb, %out16[%i2] : memref<f16x3>
    store %b, %outb[%i0] : memref<bf16x3>
    store %cb, %outb[%i1] : memref<bf16x3>
    store %bb, %outb[%i2] : memref<bf16x3>
    store %ub, %outu[%i0] : memref<u64x2>
    store %big, %outu[%i1] : memref<u64x2>
    store %wb, %outw[%i0] : memref<u8x2>
    store %w, %outw[%i1] : memref<u8x2>
  }
}
"""


@pytest.fixture(scope="module")
def module() -> object:
    parts = [arith_source(t) for t in INTS + HALVES]
    parts += [cast_source(s, d) for s, d in CASTS] + [SCALARS]
    return backend_opencl.compile("\n".join(parts))


def special_floats(rng: np.random.Generator, n: int, t: str) -> np.ndarray:
    """Random values across the type's range plus NaN, infinities, signed zeros, subnormals."""
    scale = {"f16": (-26, 17), "bf16": (-135, 128), "f32": (-150, 128), "f64": (-70, 70)}[t]
    x = rng.standard_normal(n) * np.exp2(rng.integers(*scale, size=n).astype(np.float64))
    x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 0.5]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asfortranarray(to_float(x, t) if t in HALVES else x.astype(DTYPES[t]))


def special_ints(rng: np.random.Generator, n: int, t: str) -> np.ndarray:
    info = np.iinfo(DTYPES[t])
    edges = [0, 1, info.max, info.min, info.max - 1, info.min + 1, 2, 3]
    if info.min < 0:
        edges += [-1, -2]
    x = rng.integers(info.min, info.max, size=n, dtype=DTYPES[t], endpoint=True)
    x[:len(edges)] = edges
    return x


def _int_reference(op: str, t: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = np.dtype(DTYPES[t]).itemsize * 8
    signed = t.startswith("i")
    pairs = list(zip(a.tolist(), b.tolist(), strict=True))
    table = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
        "div": lambda x, y: int_div(x, y, t), "rem": lambda x, y: int_rem(x, y),
        "shl": lambda x, y: shift("shl", x, y, bits, signed),
        "shr": lambda x, y: shift("shr", x, y, bits, signed),
        "and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y,
        "neg": lambda x, y: -x, "not": lambda x, y: ~x,
    }
    return wrap([table[op](x, y) for x, y in pairs], t)


@pytest.mark.parametrize("t", INTS)
def test_integer_semantics(module, rng, t: str) -> None:
    n = 64
    a, b = special_ints(rng, n, t), special_ints(rng, n, t)
    b[10:20] = 0  # division by zero
    bits = np.iinfo(DTYPES[t]).bits
    b[20:30] = [min(v, np.iinfo(DTYPES[t]).max) for v in (bits, bits + 1, bits - 1, 1, 0, 63,
                                                           64, 65, 8, 9)]  # wide shifts
    if t.startswith("i"):
        b[30:34] = -1  # INT_MIN / -1 and friends
        a[30:34] = np.iinfo(DTYPES[t]).min
        b[34:38] = [-1, -5, -64, -128]  # negative shift amounts
    out = np.full((n, len(INT_OPS)), 99, dtype=DTYPES[t], order="F")
    getattr(module, f"arith_{t}")(a, b, out)
    for k, op in enumerate(INT_OPS):
        np.testing.assert_array_equal(out[:, k], _int_reference(op, t, a, b), err_msg=op)


@pytest.mark.parametrize("t", HALVES)
def test_half_arithmetic_is_rounded(module, rng, t: str) -> None:
    """Each result equals the exact result rounded once to the type (as numpy computes)."""
    n = 200
    a, b = special_floats(rng, n, t), special_floats(rng, n, t)
    b[40:50] = 0.0
    out = np.full((n, len(FLOAT_OPS)), np.nan, dtype=DTYPES[t], order="F")
    getattr(module, f"arith_{t}")(a, b, out)
    x, y = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        want = [x + y, x - y, x * y, x / y, np.fmod(x, y), -x]
    for k, op in enumerate(FLOAT_OPS):
        expected = to_float(want[k], t)
        np.testing.assert_array_equal(out[:, k].view(np.uint16)[~np.isnan(expected)],
                                      expected.view(np.uint16)[~np.isnan(expected)],
                                      err_msg=op)
        assert np.isnan(out[:, k].astype(np.float32)[np.isnan(expected)]).all(), op


def _sample(rng: np.random.Generator, t: str, n: int) -> np.ndarray:
    if t == "i1":
        return rng.integers(0, 2, size=n).astype(bool)
    if t.startswith("c"):
        re, im = special_floats(rng, n, "f32"), special_floats(rng, n, "f32")
        z = np.empty(n, DTYPES[t])
        z.real, z.imag = re / np.float32(1e30), im / np.float32(1e30)
        z[8:12] = [0, 1j, -0.0, 3]
        return z
    if t in ("f16", "bf16", "f32", "f64"):
        x = special_floats(rng, n, t)
        return x
    return special_ints(rng, n, t)


def _cast_reference(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if dst == "i1":
        return x != 0
    if src.startswith("c") and not dst.startswith("c"):
        return _cast_reference(x.real.copy(), {"c32": "f32", "c64": "f64"}[src], dst)
    if dst.startswith("c"):
        part = {"c32": "f32", "c64": "f64"}[dst]
        return _cast_reference(x, src, part).astype(DTYPES[dst])
    if src == "i1":
        x = x.astype(np.int64)
    if dst in ("f16", "bf16", "f32") and src not in ("f16", "bf16", "f32"):
        values = x.astype(object) if x.dtype.kind in "iu" else x.astype(np.float64)
        return to_float(np.array([int(v) if x.dtype.kind in "iu" else float(v)
                                  for v in values.ravel()], dtype=object), dst)
    if dst in ("f16", "bf16", "f32", "f64"):
        return x.astype(np.float64).astype(DTYPES[dst])
    if src in ("f16", "bf16", "f32", "f64"):
        return float_to_int(x.astype(np.float64), dst)
    return wrap([int(v) for v in x.tolist()], dst)


@pytest.mark.parametrize(("src", "dst"), CASTS, ids=[f"{s}-{d}" for s, d in CASTS])
def test_cast(module, rng, src: str, dst: str) -> None:
    n = 96
    x = _sample(rng, src, n)
    if src in ("f32", "f64") and dst in ("f16", "bf16"):
        # halfway cases, double-rounding traps, subnormals, overflow (3.5e38 is inf in f32)
        with np.errstate(over="ignore"):
            x[40:48] = np.array([65519.99, 65520.0, 2.0**-25, 3 * 2.0**-26,
                                 1 + 2.0**-8 + 2.0**-30, -(1 + 2.0**-11 + 2.0**-40), 1e-40,
                                 3.5e38]).astype(x.dtype)
    out = np.zeros(n, dtype=DTYPES[dst])
    with np.errstate(all="ignore"):
        want = _cast_reference(x, src, dst)
    getattr(module, f"cast_{src}_{dst}")(x, out)
    if dst.startswith("c"):
        np.testing.assert_array_equal(out, want)
    elif dst in ("f16", "bf16", "f32", "f64"):
        got, ref = out.astype(np.float64), want.astype(np.float64)
        nan = np.isnan(ref)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan], ref[~nan])
        np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(ref[~nan]))
    else:
        np.testing.assert_array_equal(out, want)


def test_scalar_arguments_and_constants(module) -> None:
    out16 = np.full(3, np.nan, np.float16)
    outb = np.full(3, np.nan, DTYPES["bf16"])
    outu = np.zeros(2, np.uint64)
    outw = np.zeros(2, np.uint8)
    h, b = np.float16(1.5), DTYPES["bf16"](3.0)
    module.scalars(h, b, np.uint64(7), 100, out16, outb, outu, outw)
    c, cb = np.float16(0.1), DTYPES["bf16"](0.1)
    np.testing.assert_array_equal(out16, [h, c, np.float16(np.float32(h) + np.float32(c))])
    want_b = to_float(np.array([3.0 * float(cb)]), "bf16")[0]
    np.testing.assert_array_equal(outb.astype(np.float32), np.array([3.0, cb, want_b],
                                                                    np.float32))
    np.testing.assert_array_equal(outu, [(2**64 - 1) // 7, 2**64 - 1])
    np.testing.assert_array_equal(outw, [(100 + 200) % 256, 100])


BLAS_UNSIGNED = """
func @gemm_u32(%a: memref<u32x8x5>, %b: memref<u32x5x6>, %c: memref<u32x8x6>, %alpha: u32,
               %beta: u32) work_group_size(4, 1) {
  gemm.n.n %alpha, %a, %b, %beta, %c : u32, memref<u32x8x5>, memref<u32x5x6>, u32,
      memref<u32x8x6>
}

func @axpby_u8(%a: memref<u8x?>, %b: memref<u8x?>, %alpha: u8) work_group_size(4, 1) {
  axpby.n %alpha, %a, 1, %b : u8, memref<u8x?>, u8, memref<u8x?>
}
"""


def test_blas_on_unsigned_types_wraps(rng) -> None:
    """gemm and axpby on unsigned integers: arithmetic modulo 2^n."""
    module = backend_opencl.compile(BLAS_UNSIGNED)
    a = np.asfortranarray(rng.integers(0, 2**32, (8, 5), dtype=np.uint32))
    b = np.asfortranarray(rng.integers(0, 2**32, (5, 6), dtype=np.uint32))
    c = np.asfortranarray(rng.integers(0, 2**32, (8, 6), dtype=np.uint32))
    want = (3 * (a.astype(object) @ b.astype(object)) + 5 * c.astype(object)) % 2**32
    module.gemm_u32(a, b, c, 3, 5)
    np.testing.assert_array_equal(c, want.astype(np.uint32))
    x, y = rng.integers(0, 256, 37, dtype=np.uint8), rng.integers(0, 256, 37, dtype=np.uint8)
    want8 = ((200 * x.astype(int) + y) % 256).astype(np.uint8)
    module.axpby_u8(x, y, 200)
    np.testing.assert_array_equal(y, want8)


def half_blas_source(t: str) -> str:
    m = f"memref<{t}x?x?>"
    v = f"memref<{t}x?>"
    return f"""
func @blas_{t}(%a: {m}, %b: {m}, %c: {m}, %x: {v}, %y: {v}, %z: {v}, %s: memref<{t}>,
               %g: {m}, %r: {m}, %alpha: {t}, %beta: {t}) work_group_size(4, 2) {{
  gemm.n.t %alpha, %a, %b, %beta, %c : {t}, {m}, {m}, {t}, {m}
  gemv.t %alpha, %a, %x, %beta, %z : {t}, {m}, {v}, {t}, {v}
  ger %alpha, %x, %y, %beta, %g : {t}, {v}, {v}, {t}, {m}
  hadamard_product %alpha, %x, %x, %beta, %y : {t}, {v}, {v}, {t}, {v}
  axpby.t %alpha, %a, %beta, %r : {t}, {m}, {t}, {m}
  sum.n %alpha, %x, %beta, %s : {t}, {v}, {t}, memref<{t}>
}}
"""


@pytest.mark.parametrize("beta", [0.0, -0.75])
@pytest.mark.parametrize("t", HALVES)
def test_blas_on_16_bit_floats(rng, t: str, beta: float) -> None:
    """Lowered to foreach loops accumulating in f32, rounded once; beta 0 reads nothing."""
    module = _half_blas_module()
    k, m, n = 9, 6, 5
    def rand(*shape: int) -> np.ndarray:
        return np.asfortranarray(to_float(rng.standard_normal(shape), t).reshape(shape))
    def out(*shape: int) -> np.ndarray:
        fill = np.nan if beta == 0 else 0.5
        return np.array(to_float(np.full(shape, fill) * rng.uniform(1, 2, shape), t), order="F")
    a, b, x = rand(k, m), rand(n, m), rand(k)
    c, z, g, r, s = out(k, n), out(m), out(k, k), out(m, k), out(*())
    y = out(k) if beta else rand(k)  # y is both an input of ger and hadamard's output
    f64 = {name: arr.astype(np.float64) for name, arr in
           dict(a=a, b=b, x=x, c=c, z=z, g=g, r=r, s=s, y=y).items()}
    alpha = to_float(np.array([1.25]), t)[0]
    getattr(module, f"blas_{t}")(a, b, c, x, y, z, s, g, r, alpha,
                                 to_float(np.array([beta]), t)[0])
    al = float(alpha)
    def scaled(prod: np.ndarray, magnitude: np.ndarray, old: np.ndarray) -> tuple:
        keep = 0 if beta == 0 else beta * np.nan_to_num(old)
        return al * prod + keep, abs(al) * magnitude + abs(keep)
    ulp = {"f16": 2.0**-10, "bf16": 2.0**-7}[t]
    ga, gb = f64["a"], f64["b"]
    checks = {
        "gemm": (c, *scaled(ga @ gb.T, np.abs(ga) @ np.abs(gb.T), f64["c"])),
        "gemv": (z, *scaled(ga.T @ f64["x"], np.abs(ga.T) @ np.abs(f64["x"]), f64["z"])),
        "ger": (g, *scaled(np.outer(f64["x"], f64["y"]), np.abs(np.outer(f64["x"], f64["y"])),
                           f64["g"])),
        "hadamard": (y, *scaled(f64["x"] ** 2, f64["x"] ** 2, f64["y"])),
        "axpby": (r, *scaled(ga.T, np.abs(ga.T), f64["r"])),
        "sum": (s, *scaled(f64["x"].sum(), np.abs(f64["x"]).sum(), f64["s"])),
    }
    for name, (got, want, magnitude) in checks.items():
        got = got.astype(np.float64)
        assert not np.isnan(got).any(), name
        np.testing.assert_array_less(np.abs(got - want), 2 * ulp * magnitude + 1e-30,
                                     err_msg=name)


_HALF_BLAS: list[object] = []


def _half_blas_module() -> object:
    if not _HALF_BLAS:
        _HALF_BLAS.append(backend_opencl.compile("\n".join(half_blas_source(t)
                                                            for t in HALVES)))
    return _HALF_BLAS[0]


@pytest.mark.parametrize("t", HALVES)
def test_atomic_blas_on_16_bit_floats_is_a_diagnostic(t: str) -> None:
    """No atomic update of 16-bit floats: a CompileError at the instruction."""
    from tensorlang.diagnostics import CompileError

    text = (f"func @g(%a: memref<{t}x4x4>, %c: memref<{t}x4x4>) {{\n  axpby.n.atomic 1.0, %a, "
            f"1.0, %c : {t}, memref<{t}x4x4>, {t}, memref<{t}x4x4>\n}}\n")
    with pytest.raises(CompileError) as info:
        backend_opencl.compile(text)
    assert f"2:3: error: axpby.atomic on {t} is not supported" in str(info.value)


CMP_TYPES = ["u8", "u32", "u64", "f16", "bf16"]
CONDS = ["eq", "ne", "lt", "le", "gt", "ge"]


def cmp_source(t: str) -> str:
    lines = "\n".join(f"    %c{k} = cmp.{c} %x, %y : {t}\n    %k{k} = constant {k} : index\n"
                      f"    store %c{k}, %out[%i, %k{k}] : memref<i1x?x6>"
                      for k, c in enumerate(CONDS))
    return f"""
func @cmp_{t}(%a: memref<{t}x?>, %b: memref<{t}x?>, %out: memref<i1x?x6>) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{t}x?>
    %y = load %b[%i] : memref<{t}x?>
{lines}
  }}
}}
"""


@pytest.mark.parametrize("t", CMP_TYPES)
def test_compare_unsigned_and_half(rng, t: str) -> None:
    """Unsigned comparisons see 2^(n-1) and above as large; NaN compares unordered."""
    module = _cmp_module()
    n = 50
    if t in HALVES:
        a, b = special_floats(rng, n, t), special_floats(rng, n, t)
        b[20:30] = a[20:30]
    else:
        a, b = special_ints(rng, n, t), special_ints(rng, n, t)
        b[20:30] = a[20:30]
    out = np.zeros((n, 6), bool, order="F")
    getattr(module, f"cmp_{t}")(a, b, out)
    x, y = (a.astype(np.float64), b.astype(np.float64)) if t in HALVES else (a, b)
    want = np.stack([x == y, x != y, x < y, x <= y, x > y, x >= y], axis=1)
    np.testing.assert_array_equal(out, want)


_CMP_MODULE: list[object] = []


def _cmp_module() -> object:
    if not _CMP_MODULE:
        _CMP_MODULE.append(backend_opencl.compile("\n".join(cmp_source(t) for t in CMP_TYPES)))
    return _CMP_MODULE[0]


BOOL_DIV = """
func @bool_div(%a: memref<i1x4>, %b: memref<i1x4>, %out: memref<i1x4x4>) {
  %zero = constant 0 : index
  %one = constant 1 : index
  %four = constant 4 : index
  foreach %i = %zero, %four {
    %x = load %a[%i] : memref<i1x4>
    %y = load %b[%i] : memref<i1x4>
    %two = constant 2 : index
    %three = constant 3 : index
    %d = arith.div %x, %y : i1
    %r = arith.rem %x, %y : i1
    %mn = math.min %x, %y : i1
    %mx = math.max %x, %y : i1
    store %d, %out[%i, %zero] : memref<i1x4x4>
    store %r, %out[%i, %one] : memref<i1x4x4>
    store %mn, %out[%i, %two] : memref<i1x4x4>
    store %mx, %out[%i, %three] : memref<i1x4x4>
  }
}
"""


def test_i1_division_is_defined() -> None:
    """x div false = true, x rem false = x; by true: x and false; min/max are and/or."""
    module = backend_opencl.compile(BOOL_DIV)
    a = np.array([False, True, False, True])
    b = np.array([False, False, True, True])
    out = np.zeros((4, 4), bool, order="F")
    module.bool_div(a, b, out)
    np.testing.assert_array_equal(out[:, 2], a & b)
    np.testing.assert_array_equal(out[:, 3], a | b)
    np.testing.assert_array_equal(out[:, 0], np.where(b, a, True))
    np.testing.assert_array_equal(out[:, 1], np.where(b, False, a))


LOCAL_MEMORY = """
func @local_memory(%a: memref<bf16x16>, %out: memref<bf16x16>) work_group_size(4, 1) {
  %t = alloca -> memref<bf16x16>
  %zero = constant 0 : index
  %n = constant 16 : index
  foreach %i = %zero, %n {
    %x = load %a[%i] : memref<bf16x16>
    %y = arith.mul %x, 3.0 : bf16
    store %y, %t[%i] : memref<bf16x16>
  }
  barrier.local
  foreach %i = %zero, %n {
    %x = load %t[%i] : memref<bf16x16>
    store %x, %out[%i] : memref<bf16x16>
  }
}
"""

GROUPS_AND_CONTROL_FLOW = """
func @group_if(%g: group<memref<f16x4>>, %hout: memref<f16x?x4>) work_group_size(4, 1) {
  %zero = constant 0 : index
  %four = constant 4 : index
  %gid = group_id
  %m = load %g[%gid] : group<memref<f16x4>>
  foreach %i = %zero, %four {
    %x = load %m[%i] : memref<f16x4>
    %c = cmp.gt %x, 0.0 : f16
    %r = if %c -> (f16) {
      %s = math.sqrt %x : f16
      yield %s : f16
    } else {
      yield %x : f16
    }
    store %r, %hout[%gid, %i] : memref<f16x?x4>
  }
}
"""


def test_half_types_in_local_memory(rng) -> None:
    module = backend_opencl.compile(LOCAL_MEMORY)
    a = to_float(rng.standard_normal(16), "bf16")
    out = np.full(16, np.nan, DTYPES["bf16"])
    module.local_memory(a, out)
    want = to_float(a.astype(np.float64) * 3, "bf16")
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


def test_half_types_in_groups_and_control_flow(rng) -> None:
    module = backend_opencl.compile(GROUPS_AND_CONTROL_FLOW)
    members = [to_float(rng.standard_normal(4) * 10, "f16") for _ in range(3)]
    hout = np.full((3, 4), np.nan, np.float16, order="F")
    module.group_if(members, hout, num_groups=3)
    for k, x in enumerate(members):
        xs = x.astype(np.float64)
        with np.errstate(invalid="ignore"):
            ref = to_float(np.where(xs > 0, np.sqrt(np.abs(xs)), xs), "f16")
        np.testing.assert_array_equal(hout[k].view(np.uint16), ref.view(np.uint16))
