"""StableHLO programs on the f8/f6/f4 element types: convert, arithmetic rounded to the
type, TOTALORDER compare and dot_general, against ml_dtypes."""

from __future__ import annotations

import numpy as np
import pytest

from tensorlang.ir.dtypes import NARROW_DTYPES
from tests.lowering.conftest import module, run

STABLEHLO = {"f8e4m3fn": "f8E4M3FN", "f8e5m2": "f8E5M2", "f8e4m3fnuz": "f8E4M3FNUZ",
             "f8e5m2fnuz": "f8E5M2FNUZ", "f8e4m3b11fnuz": "f8E4M3B11FNUZ",
             "f8e4m3": "f8E4M3", "f8e3m4": "f8E3M4", "f8e8m0fnu": "f8E8M0FNU",
             "f6e2m3fn": "f6E2M3FN", "f6e3m2fn": "f6E3M2FN", "f4e2m1fn": "f4E2M1FN"}


@pytest.mark.parametrize("t", sorted(STABLEHLO))
def test_convert_and_multiply(t: str) -> None:
    e = STABLEHLO[t]
    text = module(f"(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64x{e}>, tensor<64xf32>)",
                  f"""
  %0 = stablehlo.convert %a : (tensor<64xf32>) -> tensor<64x{e}>
  %1 = stablehlo.convert %b : (tensor<64xf32>) -> tensor<64x{e}>
  %2 = stablehlo.multiply %0, %1 : tensor<64x{e}>
  %3 = stablehlo.convert %2 : (tensor<64x{e}>) -> tensor<64xf32>
  return %2, %3 : tensor<64x{e}>, tensor<64xf32>""")
    rng = np.random.default_rng(9)
    a = (rng.standard_normal(64) * 3).astype(np.float32)
    b = (rng.standard_normal(64) * 3).astype(np.float32)
    if t == "f8e8m0fnu":
        a, b = np.abs(a), np.abs(b)
    dtype = NARROW_DTYPES[t]
    got, wide = run(text, a, b)
    with np.errstate(all="ignore"):
        want = (a.astype(dtype).astype(np.float32) * b.astype(dtype).astype(np.float32))
        want = want.astype(dtype)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(wide, want.astype(np.float32))


def test_totalorder_compare() -> None:
    t = "tensor<6xf8E5M2>"
    text = module(f"(%a: {t}, %b: {t}) -> tensor<6xi1>", f"""
  %0 = stablehlo.compare LT, %a, %b, TOTALORDER : ({t}, {t}) -> tensor<6xi1>
  return %0 : tensor<6xi1>""")
    dtype = NARROW_DTYPES["f8e5m2"]
    a = np.array([-0.0, 1, -2, np.nan, 3, -np.inf], dtype)
    b = np.array([0.0, 1, -1, 4, np.inf, -np.nan], dtype)
    np.testing.assert_array_equal(run(text, a, b)[0], [True, False, True, False, True, False])


def test_dot_general() -> None:
    a_t, b_t, c_t = "tensor<4x8xf8E4M3FN>", "tensor<8x3xf8E4M3FN>", "tensor<4x3xf8E4M3FN>"
    text = module(f"(%a: {a_t}, %b: {b_t}) -> tensor<4x3xf32>", f"""
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({a_t}, {b_t}) -> {c_t}
  %1 = stablehlo.convert %0 : ({c_t}) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>""")
    dtype = NARROW_DTYPES["f8e4m3fn"]
    rng = np.random.default_rng(4)
    a = rng.integers(-2, 3, (4, 8)).astype(dtype)
    b = rng.integers(-2, 3, (8, 3)).astype(dtype)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype).astype(np.float32)
    np.testing.assert_array_equal(run(text, a, b)[0], want)
