"""reduce_window and convolution against numpy (sort and chlo.top_k: test_sort.py)."""

from __future__ import annotations

import numpy as np

from tests.lowering.conftest import module, rand, run


def test_reduce_window_max_pool() -> None:
    text = module("(%a: tensor<4x6xf32>) -> tensor<2x3xf32>", """
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%a, %m) <{window_dimensions = array<i64: 2, 2>,
      window_strides = array<i64: 2, 2>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.maximum %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>""")
    a = rand((4, 6))
    np.testing.assert_array_equal(run(text, a)[0], a.reshape(2, 2, 3, 2).max(axis=(1, 3)))


def test_convolution_nhwc() -> None:
    text = module("(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x5x5x4xf32>",
                  """
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64,
      feature_group_count = 1 : i64} : (tensor<1x5x5x2xf32>, tensor<3x3x2x4xf32>)
      -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>""")
    x, w = rand((1, 5, 5, 2)), rand((3, 3, 2, 4))
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((1, 5, 5, 4), np.float32)
    for i in range(5):
        for j in range(5):
            want[0, i, j] = np.einsum("hwc,hwco->o", padded[0, i:i + 3, j:j + 3], w)
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-5, atol=1e-5)
