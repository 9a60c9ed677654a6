"""chlo special functions (erf_inv, digamma, bessel_i1e), complex inverse trigonometric and
hyperbolic functions, and XLA-compatible f32 sinh/cosh, against independent references."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tensorlang.diagnostics import CompileError
from tests.lowering.conftest import module, run

TYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
EPS = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-10, "bf16": 2.0**-7}


def _unary(op: str, t: str, n: int, result: str | None = None) -> str:
    shape = f"tensor<{n}x{t}>"
    out = f"tensor<{n}x{result or t}>"
    return module(f"(%a: {shape}) -> {out}",
                  f"  %0 = {op} %a : {shape} -> {out}\n  return %0 : {out}")


def _apply(op: str, x: np.ndarray, t: str) -> np.ndarray:
    return run(_unary(op, t, x.size), x)[0]


def _erfinv_ref(y: float) -> float:
    """Bisection then Newton on erf, or on erfc(|x|) = 1 - |y| (exact) for |y| > 1/2."""
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    tail = abs(y) > 0.5
    target, fn = (1 - abs(y), math.erfc) if tail else (y, math.erf)
    lo, hi = (0.0, 7.0) if tail else (-1.0, 1.0)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if (fn(mid) > target) == tail else (lo, mid)
    x = 0.5 * (lo + hi)
    for _ in range(3):
        slope = (-1 if tail else 1) * 2 / math.sqrt(math.pi) * math.exp(-x * x)
        x -= (fn(x) - target) / slope
    return math.copysign(x, y) if tail else x


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _digamma_ref(x: float) -> float:
    """Reflection below 1/2, recurrence up to 20, then the asymptotic series."""
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0.5:
        return _digamma_ref(1 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 20:
        acc -= 1 / x
        x += 1
    series = sum(b / (2 * (k + 1) * x ** (2 * (k + 1))) for k, b in enumerate(_BERNOULLI))
    return acc + math.log(x) - 1 / (2 * x) - series


def _i1e_ref(x: float) -> float:
    """exp(-|x|) I1(x) by its power series (all terms positive: no cancellation)."""
    half, term, total, k = abs(x) / 2, abs(x) / 2, 0.0, 0
    while term > 1e-18 * total or k < 5:
        total += term
        k += 1
        term *= half * half / (k * (k + 1))
    return math.copysign(total * math.exp(-abs(x)), x)


def _check(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    got64 = np.asarray(got, np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got64 - want) / np.maximum(np.abs(want), 1.0)
    err = np.where(got64 == want, 0.0, err)  # equal infinities
    assert np.array_equal(np.isnan(got64), np.isnan(want))
    ok = ~np.isnan(want)
    assert err[ok].max() <= tol, (err[ok].max(), tol)


@pytest.mark.parametrize("t,ulps", [("f64", 8), ("f32", 4), ("f16", 1), ("bf16", 1)])
def test_erf_inv(t: str, ulps: int) -> None:
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-1, 1, 200), 1 - 10.0 ** -rng.uniform(1, 6, 20),
                        [0.0, -0.5, 0.999]]).astype(TYPES[t])
    want = np.array([_erfinv_ref(float(v)) for v in x])
    _check(_apply("chlo.erf_inv", x, t), want, ulps * EPS[t])


def test_erf_inv_edges() -> None:
    x = np.array([1, -1, 1.5, -2, np.nan, 0, -0.0], np.float32)
    got = _apply("chlo.erf_inv", x, "f32")
    np.testing.assert_array_equal(got[:2], [np.inf, -np.inf])
    assert np.isnan(got[2:5]).all() and got[5] == 0


@pytest.mark.parametrize("t,tol", [("f64", 1e-13), ("f32", 2e-6), ("f16", EPS["f16"]),
                                   ("bf16", EPS["bf16"])])
def test_digamma(t: str, tol: float) -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-10, 30, 200), rng.uniform(0.01, 3, 50)])
    x = x.astype(TYPES[t])
    want = np.array([_digamma_ref(float(v)) for v in x])
    _check(_apply("chlo.digamma", x, t), want, tol)


def test_digamma_known_values_and_poles() -> None:
    x = np.array([1, 0.5, 2, 0, -1, -7, np.inf], np.float64)
    got = _apply("chlo.digamma", x, "f64")
    gamma = 0.5772156649015329
    np.testing.assert_allclose(got[:3], [-gamma, -gamma - 2 * math.log(2), 1 - gamma],
                               rtol=1e-13)
    assert np.isnan(got[3:6]).all() and got[6] == np.inf


@pytest.mark.parametrize("t,tol", [("f64", 1e-14), ("f32", 4e-7), ("f16", EPS["f16"]),
                                   ("bf16", EPS["bf16"])])
def test_bessel_i1e(t: str, tol: float) -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-30, 30, 200), rng.uniform(-8.5, 8.5, 100), [0, 8, -8]])
    x = x.astype(TYPES[t])
    want = np.array([_i1e_ref(float(v)) for v in x])
    _check(_apply("chlo.bessel_i1e", x, t), want, tol)


CTYPE = {"c32": "complex<f32>", "c64": "complex<f64>"}
COMPLEX = {"asin": np.arcsin, "acos": np.arccos, "asinh": np.arcsinh, "acosh": np.arccosh,
           "atan": np.arctan, "atanh": np.arctanh, "sinh": np.sinh, "cosh": np.cosh}


@pytest.mark.parametrize("t", ["c32", "c64"])
@pytest.mark.parametrize("fn", sorted(COMPLEX))
def test_complex_functions(fn: str, t: str) -> None:
    part = np.float32 if t == "c32" else np.float64
    rng = np.random.default_rng(5)
    z = rng.standard_normal(1000) * 4 + 1j * rng.standard_normal(1000) * 4
    z = np.concatenate([z, [0.5 + 0j, -3 + 0.25j, 1e-4 - 2e-4j, 2j]])
    z = z.astype(np.complex64 if t == "c32" else np.complex128)
    want = COMPLEX[fn](z.astype(np.complex128))
    got = _apply(f"chlo.{fn}", z, CTYPE[t]).astype(np.complex128)
    eps = float(np.finfo(part).eps)
    scale = np.maximum(np.abs(want), 1e-300)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        assert (np.abs(g - w) / scale).max() <= 4 * eps


def _xla_sinh_cosh(fn: str, x: np.ndarray) -> np.ndarray:
    """XLA's f32 formulas, emulated in numpy f32 with exponentials rounded from f64."""
    f32 = np.float32
    half = f32(math.log(0.5))

    def exp(v: np.ndarray) -> np.ndarray:
        return np.exp(v.astype(np.float64)).astype(f32)

    up, down = exp(x + half), exp(half - x)
    if fn == "cosh":
        return up + down
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        e = np.expm1(x.astype(np.float64)).astype(f32)
        return np.where(np.abs(x) < 1, (e + e / (e + f32(1))) * f32(0.5), up - down)


def test_f32_sinh_cosh_match_xla() -> None:
    """Within 1 ulp of XLA's formulas, which are within (2 + |x|) ulp of the true values
    (x + log(1/2) rounds), and finite where e^x overflows but e^x / 2 does not."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-12, 12, 300), [1e-30, -1e-8, 0.5, -0.999, 1, 89.0, -89]])
    x = x.astype(np.float32)
    for fn in ("sinh", "cosh"):
        got = _apply(f"chlo.{fn}", x, "f32")
        np.testing.assert_array_max_ulp(got, _xla_sinh_cosh(fn, x), maxulp=1)
        want = getattr(np, fn)(x.astype(np.float64))
        err = np.abs(got.astype(np.float64) - want) / np.abs(want)
        assert (err <= (2 + np.abs(x)) * EPS["f32"]).all(), fn
        assert np.isfinite(got).all()


def test_sinh_matches_conformance_expectation() -> None:
    """XLA gives -14654.525 here where the true sinh rounds to -14654.519."""
    x = np.array([-10.285651], np.float32)
    got = _apply("chlo.sinh", x, "f32")
    assert abs(float(got[0]) - float(np.float32(-14654.525))) <= 1e-3


def test_special_function_on_complex_is_a_located_error() -> None:
    with pytest.raises(CompileError, match=r"2:8: .*'chlo.digamma' on c32"):
        run(_unary("chlo.digamma", "complex<f32>", 4), np.zeros(4, np.complex64))
