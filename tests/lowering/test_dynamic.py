"""dynamic_pad, dynamic_gather, real_dynamic_slice and dynamic_conv with constant shape
operands, against numpy; run-time shape operands are CompileErrors."""

from __future__ import annotations

import numpy as np
import pytest

from tensorlang.diagnostics import CompileError
from tests.lowering.conftest import module, rand, run
from tests.lowering.interpret_files import interpret_failures


def test_real_dynamic_slice() -> None:
    text = module("(%x: tensor<6x8xf32>) -> tensor<2x3xf32>", """
  %s = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %l = stablehlo.constant dense<[5, 8]> : tensor<2xi64>
  %st = stablehlo.constant dense<[2, 2]> : tensor<2xi64>
  %0 = stablehlo.real_dynamic_slice %x, %s, %l, %st
      : (tensor<6x8xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>""")
    x = rand((6, 8))
    np.testing.assert_array_equal(run(text, x)[0], x[1:5:2, 2:8:2])


def test_dynamic_pad_with_negative_edges() -> None:
    text = module("(%x: tensor<3x4xf32>) -> tensor<6x5xf32>", """
  %p = stablehlo.constant dense<-1.0> : tensor<f32>
  %lo = stablehlo.constant dense<[2, -1]> : tensor<2xi64>
  %hi = stablehlo.constant dense<[1, -1]> : tensor<2xi64>
  %in = stablehlo.constant dense<[0, 1]> : tensor<2xi64>
  %0 = stablehlo.dynamic_pad %x, %p, %lo, %hi, %in
      : (tensor<3x4xf32>, tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>)
      -> tensor<6x5xf32>
  return %0 : tensor<6x5xf32>""")
    x = rand((3, 4))
    want = np.full((6, 7), -1.0, np.float32)
    want[2:5, ::2] = x
    np.testing.assert_array_equal(run(text, x)[0], want[:, 1:6])


def test_runtime_shape_operand_is_a_compile_error() -> None:
    text = module("(%x: tensor<6x8xf32>, %s: tensor<2xi64>) -> tensor<2x3xf32>", """
  %l = stablehlo.constant dense<[5, 8]> : tensor<2xi64>
  %st = stablehlo.constant dense<[2, 2]> : tensor<2xi64>
  %0 = stablehlo.real_dynamic_slice %x, %s, %l, %st
      : (tensor<6x8xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>""")
    with pytest.raises(CompileError, match="shape operands computed at run time"):
        run(text, rand((6, 8)), np.array([1, 2], np.int64))


@pytest.mark.parametrize("name", ["dynamic_pad", "dynamic_gather", "dynamic_conv",
                                  "dynamic_iota", "dynamic_reshape",
                                  "dynamic_broadcast_in_dim", "get_dimension_size"])
def test_interpret_files(name: str) -> None:
    assert interpret_failures(name) == {}
