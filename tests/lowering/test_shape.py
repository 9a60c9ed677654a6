"""Shape ops (index maps) against numpy."""

from __future__ import annotations

import numpy as np

from tests.lowering.conftest import module, rand, run


def test_broadcast_transpose_reshape_slice() -> None:
    text = module("(%a: tensor<3xf32>, %b: tensor<2x3x4xf32>) -> "
                  "(tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<1x2x2xf32>)", """
  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.transpose %b, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %2 = stablehlo.reshape %b : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %3 = stablehlo.slice %b [1:2, 0:3:2, 1:4:2] : (tensor<2x3x4xf32>) -> tensor<1x2x2xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<6x4xf32>, tensor<1x2x2xf32>""")
    a, b = rand((3,)), rand((2, 3, 4))
    r0, r1, r2, r3 = run(text, a, b)
    np.testing.assert_array_equal(r0, np.broadcast_to(a, (2, 3)))
    np.testing.assert_array_equal(r1, b.transpose(2, 0, 1))
    np.testing.assert_array_equal(r2, b.reshape(6, 4))
    np.testing.assert_array_equal(r3, b[1:2, 0:3:2, 1:4:2])


def test_concatenate_pad_reverse_iota() -> None:
    text = module("(%a: tensor<2x3xi32>, %b: tensor<2x2xi32>) -> "
                  "(tensor<2x5xi32>, tensor<4x7xi32>, tensor<2x3xi32>, tensor<2x3xi32>)", """
  %0 = stablehlo.concatenate %a, %b, dim = 1 : (tensor<2x3xi32>, tensor<2x2xi32>) -> tensor<2x5xi32>
  %z = stablehlo.constant dense<7> : tensor<i32>
  %1 = stablehlo.pad %a, %z, low = [1, 0], high = [1, 2], interior = [0, 1] : (tensor<2x3xi32>,
      tensor<i32>) -> tensor<4x7xi32>
  %2 = stablehlo.reverse %a, dims = [0, 1] : tensor<2x3xi32>
  %3 = stablehlo.iota dim = 1 : tensor<2x3xi32>
  return %0, %1, %2, %3 : tensor<2x5xi32>, tensor<4x7xi32>, tensor<2x3xi32>, tensor<2x3xi32>""")
    a, b = rand((2, 3), np.int32), rand((2, 2), np.int32)
    r0, r1, r2, r3 = run(text, a, b)
    np.testing.assert_array_equal(r0, np.concatenate([a, b], axis=1))
    padded = np.full((4, 7), 7, np.int32)
    padded[1:3, 0:5:2] = a
    np.testing.assert_array_equal(r1, padded)
    np.testing.assert_array_equal(r2, a[::-1, ::-1])
    np.testing.assert_array_equal(r3, np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)))


def test_dense_constant_becomes_a_buffer() -> None:
    text = module("(%a: tensor<2x2xf64>) -> tensor<2x2xf64>", """
  %c = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>
  %0 = stablehlo.add %a, %c : tensor<2x2xf64>
  return %0 : tensor<2x2xf64>""")
    a = rand((2, 2), np.float64)
    np.testing.assert_array_equal(run(text, a)[0], a + [[1, 2], [3, 4]])


def test_pad_tests_only_the_bounds_it_can_cross() -> None:
    """No padding (jax's irfft pads its spectrum by nothing) and negative padding read the
    operand with no branch; each padded side still gets its padding value."""
    import frontend
    from frontend.lower import lower_function

    signature = ("(%a: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<2x3xf32>, "
                 "tensor<5x6xf32>, tensor<4x8xf32>, tensor<4x11xf32>)")
    body = """
  %z = stablehlo.constant dense<-2.5> : tensor<f32>
  %0 = stablehlo.pad %a, %z, low = [0, 0], high = [0, 0], interior = [0, 0]
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %1 = stablehlo.pad %a, %z, low = [-1, -2], high = [-1, -1], interior = [0, 0]
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = stablehlo.pad %a, %z, low = [1, 0], high = [0, 0], interior = [0, 0]
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<5x6xf32>
  %3 = stablehlo.pad %a, %z, low = [0, -1], high = [0, 3], interior = [0, 0]
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x8xf32>
  %4 = stablehlo.pad %a, %z, low = [0, 0], high = [0, 0], interior = [0, 1]
      : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x11xf32>
  return %0, %1, %2, %3, %4 : tensor<4x6xf32>, tensor<2x3xf32>, tensor<5x6xf32>,
      tensor<4x8xf32>, tensor<4x11xf32>"""
    a = rand((4, 6))
    r0, r1, r2, r3, r4 = run(module(signature, body), a)
    np.testing.assert_array_equal(r0, a)
    np.testing.assert_array_equal(r1, a[1:3, 2:5])
    np.testing.assert_array_equal(r2, np.pad(a, ((1, 0), (0, 0)), constant_values=-2.5))
    np.testing.assert_array_equal(r3, np.pad(a[:, 1:], ((0, 0), (0, 3)), constant_values=-2.5))
    interior = np.full((4, 11), -2.5, np.float32)
    interior[:, ::2] = a
    np.testing.assert_array_equal(r4, interior)
    only_slices = module("(%a: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<2x3xf32>)",
                         body.split("  %2 =")[0] + "  return %0, %1 : tensor<4x6xf32>, "
                         "tensor<2x3xf32>")
    kernels = lower_function(frontend.parse(only_slices)).kernels or ""
    assert " if " not in kernels and "select" not in kernels, kernels
