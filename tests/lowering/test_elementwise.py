"""Elementwise ops fuse into one kernel and match numpy."""

from __future__ import annotations

import numpy as np

import frontend
from frontend.lower import lower_function
from tests.lowering.conftest import module, rand, run

CHAIN = module("(%a: tensor<3x5xf32>, %b: tensor<3x5xf32>) -> "
               "(tensor<3x5xf32>, tensor<3x5xi1>)", """
  %0 = stablehlo.add %a, %b : tensor<3x5xf32>
  %1 = stablehlo.multiply %0, %a : tensor<3x5xf32>
  %2 = stablehlo.maximum %1, %b : tensor<3x5xf32>
  %3 = stablehlo.negate %2 : tensor<3x5xf32>
  %4 = stablehlo.compare GT, %a, %b : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xi1>
  %5 = stablehlo.select %4, %3, %a : tensor<3x5xi1>, tensor<3x5xf32>
  return %5, %4 : tensor<3x5xf32>, tensor<3x5xi1>""")


def test_chain_matches_numpy() -> None:
    a, b = rand((3, 5)), rand((3, 5))
    out, gt = run(CHAIN, a, b)
    want = np.where(a > b, -np.maximum((a + b) * a, b), a)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_array_equal(gt, a > b)


def test_chain_fuses_into_consumers() -> None:
    lowered = lower_function(frontend.parse(CHAIN))
    assert lowered.kernels.count("func @") == 1  # both results, no intermediates


def test_integer_ops_and_convert() -> None:
    text = module("(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xf64>)", """
  %0 = stablehlo.xor %a, %b : tensor<8xi32>
  %1 = stablehlo.shift_left %0, %b : tensor<8xi32>
  %2 = stablehlo.subtract %1, %a : tensor<8xi32>
  %3 = stablehlo.convert %a : (tensor<8xi32>) -> tensor<8xf64>
  return %2, %3 : tensor<8xi32>, tensor<8xf64>""")
    a = rand((8,), np.int32)
    b = np.arange(8, dtype=np.int32) % 5
    got, conv = run(text, a, b)
    np.testing.assert_array_equal(got, ((a ^ b) << b) - a)
    np.testing.assert_array_equal(conv, a.astype(np.float64))


def test_maximum_propagates_nan() -> None:
    text = module("(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32>", """
  %0 = stablehlo.maximum %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>""")
    a = np.array([1, np.nan, 3, -1], np.float32)
    b = np.array([2, 0, np.nan, -2], np.float32)
    np.testing.assert_array_equal(run(text, a, b)[0], np.maximum(a, b))


def _power(ct: str, n: int) -> str:
    return module(f"(%z: tensor<{n}x{ct}>) -> tensor<{n}x{ct[8:11]}>", f"""
  %a = stablehlo.abs %z : (tensor<{n}x{ct}>) -> tensor<{n}x{ct[8:11]}>
  %p = stablehlo.multiply %a, %a : tensor<{n}x{ct[8:11]}>
  return %p : tensor<{n}x{ct[8:11]}>""")


def _spectrum(n: int, dtype: type) -> np.ndarray:
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(n) * 10.0 ** rng.uniform(-20, 20, n)
         + 1j * rng.standard_normal(n) * 10.0 ** rng.uniform(-20, 20, n)).astype(dtype)
    z[:5] = [complex(np.inf, np.nan), complex(np.nan, -np.inf), complex(np.nan, 1.0),
             complex(-np.inf, 2.0), complex(0.0, -0.0)]
    return z


def test_power_spectrum_is_squared_parts_within_half_an_ulp() -> None:
    """``abs(z) * abs(z)`` is ``re^2 + im^2`` in double, rounded once (``|z|`` rounded and
    squared was ~1.5 ulp); infinite where a part is, NaN where a part is NaN and none is
    infinite, as numpy's ``abs(z) ** 2``."""
    z = _spectrum(4096, np.complex64)
    (got,) = run(_power("complex<f32>", z.size), z)
    with np.errstate(all="ignore"):
        want = np.abs(z.astype(np.complex128)) ** 2
        rounded = want.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(rounded))
    finite = np.isfinite(rounded) & (rounded > np.finfo(np.float32).tiny)
    ulps = np.abs(got[finite] - want[finite]) / np.spacing(rounded[finite])
    assert ulps.max() <= 0.5 + 1e-6


def test_power_spectrum_f64_and_no_square_root() -> None:
    """f64 within about an ulp of the exact ``re^2 + im^2``; the kernel takes no complex
    ``abs`` (a square root) at all."""
    z = _spectrum(512, np.complex128)
    (got,) = run(_power("complex<f64>", z.size), z)
    re, im = z.real.astype(np.longdouble), z.imag.astype(np.longdouble)
    with np.errstate(all="ignore"):
        exact = (re * re + im * im).astype(np.float64)
    nan = (np.isnan(z.real) | np.isnan(z.imag)) & ~(np.isinf(z.real) | np.isinf(z.imag))
    np.testing.assert_array_equal(np.isnan(got), nan)
    infinite = np.isinf(z.real) | np.isinf(z.imag) | np.isinf(exact)
    np.testing.assert_array_equal(np.isinf(got), infinite)
    finite = np.isfinite(exact) & ~infinite
    np.testing.assert_allclose(got[finite], exact[finite], rtol=3e-16)
    lowered = lower_function(frontend.parse(_power("complex<f32>", 8)))
    assert not [line for line in lowered.kernels.splitlines()
                if "math.abs" in line and "c32" in line]
    assert "math.real" in lowered.kernels and "math.imag" in lowered.kernels
