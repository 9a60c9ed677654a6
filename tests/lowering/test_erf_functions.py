"""chlo.erf, chlo.erfc and chlo.erf_inv (backend_opencl/emit/erffns.py): accuracy over
wide ranges (tails down to the results' underflow, arguments next to 0 and to +-1), IEEE
special values, and agreement with XLA through jax (exact GELU emits chlo.erfc)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tests.lowering.conftest import module, run
from tests.lowering.test_special_functions import _erfinv_ref

TYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
EPS = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-10, "bf16": 2.0**-7}
TINY = {"f32": 2.0**-126, "f64": 2.0**-1022, "f16": 2.0**-14, "bf16": 2.0**-126}


def _apply(op: str, x: np.ndarray, t: str) -> np.ndarray:
    shape = f"tensor<{x.size}x{t}>"
    text = module(f"(%a: {shape}) -> {shape}",
                  f"  %0 = {op} %a : {shape} -> {shape}\n  return %0 : {shape}")
    return run(text, x)[0]


def _ulps(got: np.ndarray, want: np.ndarray, t: str) -> np.ndarray:
    """|got - want| in ulp of the type at |want| (subnormal results: of the smallest
    normal, so that their absolute error counts)."""
    got = np.asarray(got, np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want) / (np.maximum(np.abs(want), TINY[t]) * EPS[t])
    return np.where(got == want, 0.0, err)


def _arguments(t: str, seed: int, top: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-6, top, 3000), rng.uniform(-1, 1, 500),
                        np.exp(rng.uniform(-80, 0, 300)) * rng.choice([-1, 1], 300),
                        [0.5, -0.5, 0.4999999, 2.459, 1e-30, top - 0.01]])
    return x.astype(TYPES[t])


@pytest.mark.parametrize("t,tol", [("f64", 6), ("f32", 0.6), ("f16", 0.6), ("bf16", 0.6)])
def test_erfc_accuracy(t: str, tol: float) -> None:
    """Within ``tol`` ulp of math.erfc (measured: f64 4.0, XLA's 258 near 24; f32 0.5
    against XLA's 0.84), down to the underflow (f64 27.2, f32 10.05)."""
    x = _arguments(t, 1, {"f64": 27.2, "f32": 10.1, "bf16": 10.1, "f16": 4.0}[t])
    want = np.array([math.erfc(float(v)) for v in x])
    assert _ulps(_apply("chlo.erfc", x, t), want, t).max() <= tol


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_erfc_special_values(t: str) -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 30, -30, 1e-40], TYPES[t])
    got = _apply("chlo.erfc", x, t)
    np.testing.assert_array_equal(got[[0, 1, 2, 3, 5, 6, 7]], [1, 1, 0, 2, 0, 2, 1])
    assert np.isnan(got[4])


def test_erf_f64_accuracy() -> None:
    """f64 erf: the series below 1, 1 - erfc beyond (measured 1.8 ulp)."""
    x = _arguments("f64", 2, 8.0)
    want = np.array([math.erf(float(v)) for v in x])
    assert _ulps(_apply("chlo.erf", x, "f64"), want, "f64").max() <= 4


def test_erf_f64_special_values() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-300, 7.0])
    got = _apply("chlo.erf", x, "f64")
    np.testing.assert_array_equal(got[[0, 1, 2, 3, 7]], [0, -0.0, 1, -1, 1])
    assert np.signbit(got[1]) and np.isnan(got[4])
    np.testing.assert_allclose(got[5:7], 2 / math.sqrt(math.pi) * x[5:7], rtol=2 * EPS["f64"])


@pytest.mark.parametrize("t,tol", [("f64", 4), ("f32", 2)])
def test_erf_inv_near_one(t: str, tol: float) -> None:
    """Giles' approximations in double with an accurate log: within ``tol`` ulp (measured
    f64 2.9, f32 1.4 against XLA's 48) up to the last float below 1."""
    rng = np.random.default_rng(3)
    last = {"f64": 15, "f32": 7.2}[t]
    x = np.concatenate([rng.uniform(-1, 1, 1000), 1 - 10.0 ** -rng.uniform(1, last, 300),
                        -1 + 10.0 ** -rng.uniform(1, last, 100), [1e-30, 0.5]]).astype(TYPES[t])
    want = np.array([_erfinv_ref(float(v)) for v in x])
    assert _ulps(_apply("chlo.erf_inv", x, t), want, t).max() <= tol


@pytest.mark.parametrize("fn", ["erfc", "gelu", "erfinv"])
def test_matches_xla(fn: str) -> None:
    """jax.scipy.special.erfc / erfinv and jax.nn.gelu(approximate=False) through tlc
    against jax.jit on the CPU (f32): within a few ulp of XLA."""
    jax = pytest.importorskip("jax")
    from jax.scipy import special

    f = {"erfc": special.erfc, "erfinv": special.erfinv,
         "gelu": lambda v: jax.nn.gelu(v, approximate=False)}[fn]
    x = np.random.default_rng(4).uniform(-0.999 if fn == "erfinv" else -6,
                                         0.999 if fn == "erfinv" else 6, 4096)
    x = x.astype(np.float32)
    jitted = jax.jit(f)
    (got,) = run(jitted.lower(x).as_text(), x)
    want = np.asarray(jitted(x), np.float64)
    scale = np.maximum(np.abs(want), 1e-3 if fn == "gelu" else TINY["f32"])
    assert (np.abs(got - want) / scale).max() <= 64 * EPS["f32"]
