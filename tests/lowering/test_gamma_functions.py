"""chlo.lgamma and chlo.digamma (backend_opencl/emit/gammafns.py): accuracy over wide
ranges (negative arguments, the zeros of lgamma, tiny, huge and subnormal arguments), the
poles and IEEE special values, and agreement with XLA through jax.

Errors are relative to ``max(1, |want|)``: both functions have zeros (lgamma at 1, 2 and
between the negative integers, digamma at 1.46 and between them) where no formula that
adds terms of size ~1 keeps a relative error; elsewhere that is the relative error."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tests.lowering.conftest import module, run

TYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
EPS = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-10, "bf16": 2.0**-7}


def _apply(op: str, x: np.ndarray, t: str) -> np.ndarray:
    shape = f"tensor<{x.size}x{t}>"
    text = module(f"(%a: {shape}) -> {shape}",
                  f"  %0 = {op} %a : {shape} -> {shape}\n  return %0 : {shape}")
    return run(text, x)[0]


def _lgamma_ref(x: float) -> float:
    """math.lgamma (glibc's, within an ulp or two), +inf at the poles and at -inf."""
    if math.isinf(x):
        return math.inf
    try:
        return math.lgamma(x)
    except ValueError:
        return math.inf


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _digamma_ref(x: float) -> float:
    """Reflection below 1/2 (the cotangent of the exact ``x - round(x)``), recurrence up
    to 20, then the asymptotic series."""
    if x < 0.5:
        r = x - round(x)
        return _digamma_ref(1 - x) - math.pi / math.tan(math.pi * r)
    acc = 0.0
    while x < 20:
        acc -= 1 / x
        x += 1
    series = sum(b / (2 * (k + 1) * x ** (2 * (k + 1))) for k, b in enumerate(_BERNOULLI))
    return acc + math.log(x) - 1 / (2 * x) - series


def _inputs(t: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    top = {"f64": 300, "f32": 35, "bf16": 35, "f16": 4}[t]
    magnitudes = np.exp(rng.uniform(-top * 2.3, top * 2.3, 400))
    x = np.concatenate([
        rng.uniform(-30, 30, 1500), rng.uniform(-4, 4, 500), rng.uniform(0.5, 3, 300),
        magnitudes, -magnitudes - 0.25, 1 + rng.uniform(-1e-3, 1e-3, 50),
        2 + rng.uniform(-1e-3, 1e-3, 50), [0.5, 1.5, 2.5, -0.5, -2.5, 1e-30, 7.99, 8.0]])
    return x.astype(TYPES[t])


def _errors(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    got = np.asarray(got, np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want) / np.maximum(np.abs(want), 1.0)
    return np.where(got == want, 0.0, err)


@pytest.mark.parametrize("t,tol", [("f64", 40), ("f32", 1.5), ("f16", 1), ("bf16", 1)])
def test_lgamma_accuracy(t: str, tol: float) -> None:
    """Within ``tol`` ulp of max(1, |lgamma|) (measured: f64 30-36, next to the zeros,
    XLA's 17-24; f32 0.5, XLA's several ulp and 4.8e-7 at x = 1)."""
    x = _inputs(t, 1)
    with np.errstate(over="ignore"):
        want = np.array([_lgamma_ref(float(v)) for v in x]).astype(TYPES[t]).astype(np.float64)
    got = _apply("chlo.lgamma", x, t)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.asarray(got, np.float64)[~finite], want[~finite])
    assert _errors(got, want)[finite].max() <= tol * EPS[t]


def test_lgamma_relative_error_away_from_zeros() -> None:
    """Where |lgamma| >= 1/2, f32 results are within 1 ulp relative (one rounding of a
    double result)."""
    x = _inputs("f32", 2)
    want = np.array([_lgamma_ref(float(v)) for v in x])
    keep = np.isfinite(want) & (np.abs(want) >= 0.5) & (np.abs(want) < 3e38)
    got = np.asarray(_apply("chlo.lgamma", x, "f32"), np.float64)
    assert (np.abs(got[keep] - want[keep]) / np.abs(want[keep])).max() <= EPS["f32"]


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_lgamma_special_values(t: str) -> None:
    x = np.array([0.0, -0.0, -1, -2, -1e6, np.inf, -np.inf, np.nan, 1e-38, 2.0**-30],
                 TYPES[t])
    got = _apply("chlo.lgamma", x, t)
    assert np.all(got[:7] == np.inf)
    assert np.isnan(got[7])
    tiny = x[8:].astype(np.float64)
    np.testing.assert_allclose(got[8:], -np.log(tiny) - 0.5772156649015329 * tiny,
                               rtol=2 * EPS[t])


def test_lgamma_f64_extremes() -> None:
    """Subnormal arguments (-log x), huge ones (overflow to inf beyond ~2.5e305) and
    negative ones next to 2^52 (the reduction's edge)."""
    x = np.array([5e-324, 1e-310, 2e305, 1e307, -2613617158430325.5, -4503599627370495.5])
    got = _apply("chlo.lgamma", x, "f64")
    want = [-math.log(5e-324), -math.log(1e-310), _lgamma_ref(2e305), math.inf,
            _lgamma_ref(-2613617158430325.5), _lgamma_ref(-4503599627370495.5)]
    np.testing.assert_allclose(got, want, rtol=4 * EPS["f64"])


@pytest.mark.parametrize("t,tol", [("f64", 1e-13), ("f32", 1.5 * EPS["f32"]),
                                   ("f16", EPS["f16"]), ("bf16", EPS["bf16"])])
def test_digamma_accuracy(t: str, tol: float) -> None:
    """Relative to max(1, |digamma|); the reference (reflection, recurrence, asymptotic
    series in Python floats) is itself good to ~1e-14 on these inputs."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-30, 30, 1500), rng.uniform(-3, 3, 300),
                        np.exp(rng.uniform(-20, 30, 200)), -np.exp(rng.uniform(-3, 20, 200))])
    x = x[np.abs(x) < (1e4 if t in ("f16", "bf16") else 1e300)].astype(TYPES[t])
    x = x[(x > 0) | (x != np.floor(x))]
    with np.errstate(over="ignore"):
        want = np.array([_digamma_ref(float(v)) for v in x]).astype(TYPES[t]).astype(np.float64)
    got = _apply("chlo.digamma", x, t)
    assert _errors(got, want).max() <= tol


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_digamma_special_values(t: str) -> None:
    """NaN at the poles (XLA's choice) and at -inf; -1/x at tiny x (overflowing to -inf)."""
    x = np.array([0.0, -0.0, -1, -7, -1e6, -np.inf, np.nan, np.inf, 1e-30, 2.0**-30],
                 TYPES[t])
    got = _apply("chlo.digamma", x, t)
    assert np.isnan(got[:7]).all()
    assert got[7] == np.inf
    with np.errstate(over="ignore"):
        want = (-1 / x[8:].astype(np.float64) - 0.5772156649015329).astype(TYPES[t])
    np.testing.assert_allclose(got[8:], want, rtol=2 * EPS[t])


@pytest.mark.parametrize("name", ["gammaln", "digamma"])
def test_matches_xla(name: str) -> None:
    """jax.scipy.special through tlc against jax.jit on the CPU (f32, the same chlo op):
    within XLA's own error (a few ulp, absolute near the zeros)."""
    jax = pytest.importorskip("jax")
    from jax.scipy import special

    x = np.random.default_rng(4).uniform(-12, 12, 4096).astype(np.float32)
    x = x[x != np.floor(x)]
    fn = jax.jit(getattr(special, name))
    text = fn.lower(x).as_text()
    assert f"chlo.{'lgamma' if name == 'gammaln' else name}" in text
    (got,) = run(text, x)
    want = np.asarray(fn(x), np.float64)
    assert _errors(got, want).max() <= 2e-5
