"""Single-precision math through the vectorisable inline helpers (backend_opencl/emit/
floatfns.py): within 1 ulp of the correctly rounded value, IEEE special values, pow's
C99 special cases, complex exp and abs; GPUs keep the builtins."""

from __future__ import annotations

import math

import numpy as np
import pytest

import frontend
from backend_opencl.api.compiler import _kernels_program, lower
from backend_opencl.emit import Target
from frontend.lower import lower_function
from tests.lowering.conftest import module, run

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1.0, -1.0, 1e-7,
                    -1e-7, 1e-30, 1e30, -1e30, 3e38, -3e38, 0.5, 2.0, 88.7, -88.7, 100.0,
                    -100.0, 1e-4, -0.999, 1.5707964, 3.1415927, 1e5, 12345.678, 1e10,
                    8.5, -8.5, 4.4, -4.4, 0.99], np.float32)

RNG = np.random.default_rng(11)


def _inputs(n: int = 4000) -> np.ndarray:
    """Random f32 values over many magnitudes, both signs, and the special values."""
    mags = 10.0 ** RNG.uniform(-9, 9, n)
    wide = (RNG.standard_normal(n) * mags).astype(np.float32)
    near = RNG.uniform(-6, 6, n).astype(np.float32)
    return np.concatenate([SPECIAL, wide, near]).reshape(-1, 2)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


UNARY = {"sine": np.sin, "cosine": np.cos, "log": np.log, "log_plus_one": np.log1p,
         "exponential_minus_one": np.expm1, "tanh": np.tanh, "exponential": np.exp}


def _unary(op: str, shape: tuple[int, ...]) -> str:
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    name = f"chlo.{op}" if op == "erf" else f"stablehlo.{op}"
    line = (f"  %0 = {name} %a : {t} -> {t}" if op == "erf" else f"  %0 = {name} %a : {t}")
    return module(f"(%a: {t}) -> {t}", f"{line}\n  return %0 : {t}")


def _assert_close_ulp(got: np.ndarray, want64: np.ndarray, ulps: float = 1.0) -> None:
    """got within ``ulps`` of the f32 rounding of want64, with the same NaNs and infinities."""
    with np.errstate(over="ignore"):
        want = want64.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    spacing = np.spacing(np.abs(want[finite])).astype(np.float64)
    err = np.abs(got[finite].astype(np.float64) - want64[finite]) / spacing
    assert err.max(initial=0.0) <= ulps, f"{err.max()} ulp at {np.argmax(err)}"


@pytest.mark.parametrize("op", [*UNARY, "erf"])
def test_unary_within_one_ulp(op: str) -> None:
    x = _inputs()
    ref = _erf if op == "erf" else UNARY[op]
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    (got,) = run(_unary(op, x.shape), x)
    _assert_close_ulp(got, want)


def test_log_edges() -> None:
    x = np.array([[0.0, -0.0], [-1.0, np.inf], [np.nan, 1e-45], [-1e-45, 1.0]], np.float32)
    (got,) = run(_unary("log", x.shape), x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.log(x))
    (got1p,) = run(_unary("log_plus_one", x.shape), x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got1p, np.log1p(x))


POW = module("(%a: tensor<NxMxf32>, %b: tensor<NxMxf32>) -> tensor<NxMxf32>", """
  %0 = stablehlo.power %a, %b : tensor<NxMxf32>
  return %0 : tensor<NxMxf32>""")


def _pow_text(shape: tuple[int, int]) -> str:
    return POW.replace("NxM", f"{shape[0]}x{shape[1]}")


def test_pow_special_cases_match_c99() -> None:
    values = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5,
                       np.inf, -np.inf, np.nan, 1e-40, 3e38, 2.0**25, -(2.0**25) - 2], np.float32)
    x, y = (np.ascontiguousarray(v) for v in np.meshgrid(values, values, indexing="ij"))
    (got,) = run(_pow_text(x.shape), x, y)
    with np.errstate(all="ignore"):
        # C99 Annex F's special cases are the same for pow and powf; computing in double and
        # rounding once gives the correctly rounded f32 (numpy's own float32 power uses SIMD
        # approximations on AVX-512 machines, 1 ULP off for 3 ** 0.5).
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_pow_random_within_one_ulp() -> None:
    x = np.abs(_inputs(1500))
    x[::3] *= -1
    y = RNG.standard_normal(x.shape).astype(np.float32) * 4
    y[::5] = np.round(y[::5])
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    (got,) = run(_pow_text(x.shape), x, y)
    _assert_close_ulp(got, want)


COMPLEX = module("(%a: tensor<300xcomplex<f32>>) -> (tensor<300xcomplex<f32>>, tensor<300xf32>)",
                 """
  %0 = stablehlo.exponential %a : tensor<300xcomplex<f32>>
  %1 = stablehlo.abs %a : (tensor<300xcomplex<f32>>) -> tensor<300xf32>
  return %0, %1 : tensor<300xcomplex<f32>>, tensor<300xf32>""")


def test_complex_exp_and_abs() -> None:
    re = RNG.uniform(-20, 20, 300)
    im = RNG.standard_normal(300) * 10.0 ** RNG.uniform(-3, 4, 300)
    im[:5] = [0.0, -0.0, 1e30, np.inf, np.nan]
    re[5:9] = [np.inf, 1e30, -np.inf, 0.0]
    a = np.empty(300, np.complex64)
    a.real, a.imag = re, im
    got_exp, got_abs = run(COMPLEX, a)
    with np.errstate(all="ignore"):
        want_exp = np.exp(a.astype(np.complex128))
        want_abs = np.abs(a.astype(np.complex128))
    _assert_close_ulp(got_abs, want_abs)
    ok = np.isfinite(want_exp)
    scale = np.abs(want_exp[ok])
    np.testing.assert_array_less(np.abs(got_exp[ok] - want_exp[ok]), 4e-7 * scale + 1e-37)
    assert got_exp[0].imag == 0 and np.signbit(got_exp[1].imag)  # exp(x + 0i) is real
    _assert_close_ulp(got_exp[:2].real, want_exp[:2].real)  # ... and the real exp


def _source(text: str, target: Target) -> str:
    kernels = _kernels_program(lower_function(frontend.parse(text)))
    return lower(kernels, target).source


def test_cpu_inlines_and_gpu_keeps_builtins() -> None:
    text = _unary("sine", (4, 4))
    cpu = _source(text, Target(kind="cpu"))
    assert "always_inline" in cpu and " sin(" not in cpu
    gpu = _source(text, Target(kind="gpu", max_work_group_size=1024, local_mem_size=65536))
    assert "tlc_sin" not in gpu and "sin(" in gpu
    no_fp64 = _source(_unary("log_plus_one", (4, 4)), Target(kind="cpu", has_fp64=False))
    assert "log1p(" in no_fp64 and "double" not in no_fp64
