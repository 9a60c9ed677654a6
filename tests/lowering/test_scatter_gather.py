"""gather, dynamic_slice, dynamic_update_slice and scatter against numpy."""

from __future__ import annotations

import numpy as np

from tests.lowering.conftest import module, rand, run


def test_gather_and_dynamic_slices() -> None:
    text = module("(%a: tensor<5x4xf32>, %i: tensor<3x1xi32>, %s: tensor<i32>, "
                  "%u: tensor<2x2xf32>) -> (tensor<3x4xf32>, tensor<2x2xf32>, tensor<5x4xf32>)", """
  %0 = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
      slice_sizes = array<i64: 1, 4>}> : (tensor<5x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  %1 = stablehlo.dynamic_slice %a, %s, %s, sizes = [2, 2] : (tensor<5x4xf32>, tensor<i32>,
      tensor<i32>) -> tensor<2x2xf32>
  %2 = stablehlo.dynamic_update_slice %a, %u, %s, %s : (tensor<5x4xf32>, tensor<2x2xf32>,
      tensor<i32>, tensor<i32>) -> tensor<5x4xf32>
  return %0, %1, %2 : tensor<3x4xf32>, tensor<2x2xf32>, tensor<5x4xf32>""")
    a, u = rand((5, 4)), rand((2, 2))
    i = np.array([[4], [0], [9]], np.int32)  # 9 clamps to 4
    g, ds, dus = run(text, a, i, np.array(3, np.int32), u)
    np.testing.assert_array_equal(g, a[[4, 0, 4]])
    np.testing.assert_array_equal(ds, a[3:5, 2:4])  # start 3 clamps to 2 in dim 1
    want = a.copy()
    want[3:5, 2:4] = u
    np.testing.assert_array_equal(dus, want)


def test_scatter_add_with_duplicates_and_out_of_bounds() -> None:
    text = module("(%a: tensor<6xi32>, %i: tensor<4x1xi64>, %u: tensor<4xi32>) -> tensor<6xi32>",
                  """
  %0 = "stablehlo.scatter"(%a, %i,
      %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<i32>, %y: tensor<i32>):
    %s = stablehlo.add %x, %y : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<6xi32>, tensor<4x1xi64>, tensor<4xi32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>""")
    a = rand((6,), np.int32)
    i = np.array([[1], [1], [7], [5]], np.int64)
    u = np.array([10, 20, 30, 40], np.int32)
    want = a.copy()
    want[1] += 30
    want[5] += 40
    np.testing.assert_array_equal(run(text, a, i, u)[0], want)
