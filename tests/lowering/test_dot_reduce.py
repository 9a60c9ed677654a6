"""dot_general (gemm per batch) and reduce (any body) against numpy."""

from __future__ import annotations

import numpy as np

from tests.lowering.conftest import module, rand, run


def test_matmul_and_batched() -> None:
    text = module("(%a: tensor<5x3xf32>, %b: tensor<3x4xf32>, %x: tensor<2x3x5xf64>, "
                  "%y: tensor<2x4x5xf64>) -> (tensor<5x4xf32>, tensor<2x3x4xf64>)", """
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<5x3xf32>,
      tensor<3x4xf32>) -> tensor<5x4xf32>
  %1 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0],
      contracting_dims = [2] x [2] : (tensor<2x3x5xf64>, tensor<2x4x5xf64>) -> tensor<2x3x4xf64>
  return %0, %1 : tensor<5x4xf32>, tensor<2x3x4xf64>""")
    a, b = rand((5, 3)), rand((3, 4))
    x, y = rand((2, 3, 5), np.float64), rand((2, 4, 5), np.float64)
    r0, r1 = run(text, a, b, x, y)
    np.testing.assert_allclose(r0, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r1, np.einsum("bik,bjk->bij", x, y), rtol=1e-12)


def test_reduce_sum_and_variadic_argmax() -> None:
    text = module("(%a: tensor<4x6xf32>) -> (tensor<6xf32>, tensor<4xf32>, tensor<4xi32>)", """
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0]
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
  %i = stablehlo.iota dim = 1 : tensor<4x6xi32>
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zi = stablehlo.constant dense<0> : tensor<i32>
  %1:2 = stablehlo.reduce(%a init: %m),
      (%i init: %zi) across dimensions = [1] : (tensor<4x6xf32>, tensor<4x6xi32>, tensor<f32>,
      tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
   reducer(%x: tensor<f32>, %y: tensor<f32>) (%xi: tensor<i32>, %yi: tensor<i32>) {
    %g = stablehlo.compare GE, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %g, %x, %y : tensor<i1>, tensor<f32>
    %w = stablehlo.select %g, %xi, %yi : tensor<i1>, tensor<i32>
    stablehlo.return %v, %w : tensor<f32>, tensor<i32>
  }
  return %0, %1#0, %1#1 : tensor<6xf32>, tensor<4xf32>, tensor<4xi32>""")
    a = rand((4, 6))
    s, mx, arg = run(text, a)
    np.testing.assert_allclose(s, a.sum(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mx, a.max(axis=1))
    np.testing.assert_array_equal(arg, a.argmax(axis=1))


def test_long_reduction_is_split_and_keeps_a_non_identity_init() -> None:
    text = module("(%a: tensor<3x5000xf64>) -> (tensor<3xf64>, tensor<f64>)", """
  %z = stablehlo.constant dense<7.0> : tensor<f64>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<3x5000xf64>, tensor<f64>) -> tensor<3xf64>
  %1 = stablehlo.reduce(%a init: %z) applies stablehlo.maximum across dimensions = [0, 1]
      : (tensor<3x5000xf64>, tensor<f64>) -> tensor<f64>
  return %0, %1 : tensor<3xf64>, tensor<f64>""")
    a = rand((3, 5000), np.float64)
    s, mx = run(text, a)
    np.testing.assert_allclose(s, a.sum(axis=1) + 7.0, rtol=1e-12)
    assert mx == max(a.max(), 7.0)


def test_batched_matmul_tiles_rows_over_work_groups() -> None:
    text = module("(%x: tensor<3x70x9xf32>, %y: tensor<3x9x5xf32>) -> tensor<3x70x5xf32>", """
  %0 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0], contracting_dims = [2] x [1]
      : (tensor<3x70x9xf32>, tensor<3x9x5xf32>) -> tensor<3x70x5xf32>
  return %0 : tensor<3x70x5xf32>""")
    x, y = rand((3, 70, 9)), rand((3, 9, 5))
    np.testing.assert_allclose(run(text, x, y)[0], x @ y, rtol=1e-5, atol=1e-5)
