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
