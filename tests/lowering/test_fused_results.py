"""A function's lazy results of one shape are computed by one kernel (a loop per result):
every element of every output written (poisoned buffers), numbers as numpy's."""

from __future__ import annotations

import numpy as np

import frontend
from frontend.lower import lower_function
from tests.lowering.conftest import module, rand, run

RESULTS = module(
    "(%a: tensor<37x45xf32>, %b: tensor<37x45xf32>, %c: tensor<45xf32>) -> (tensor<37x45xf32>, "
    "tensor<37x45xf32>, tensor<37x45xi32>, tensor<45xf32>, tensor<37x45xf32>, tensor<37x45xf32>,"
    " tensor<37x45xf32>)", """
  %0 = stablehlo.exponential %a : tensor<37x45xf32>
  %1 = stablehlo.multiply %a, %b : tensor<37x45xf32>
  %2 = stablehlo.convert %b : (tensor<37x45xf32>) -> tensor<37x45xi32>
  %3 = stablehlo.negate %c : tensor<45xf32>
  %4 = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<45xf32>) -> tensor<37x45xf32>
  %5 = stablehlo.add %a, %4 : tensor<37x45xf32>
  return %0, %1, %2, %3, %5, %a, %b : tensor<37x45xf32>, tensor<37x45xf32>,
    tensor<37x45xi32>, tensor<45xf32>, tensor<37x45xf32>, tensor<37x45xf32>, tensor<37x45xf32>""")


def test_results_of_one_shape_share_a_kernel() -> None:
    lowered = lower_function(frontend.parse(RESULTS))
    heads = [line for line in lowered.kernels.splitlines() if line.startswith("func @")]
    assert len(heads) == 2  # the lazy 37x45 results together, the 45 one alone
    assert heads[0].startswith("func @k0_4_results")


def test_every_result_written_and_correct() -> None:
    a, b, c = rand((37, 45)), rand((37, 45)) * 100, rand((45,))
    e, prod, conv, neg, shifted, same_a, same_b = run(RESULTS, a, b, c)
    np.testing.assert_allclose(e, np.exp(a), rtol=1e-6)
    np.testing.assert_array_equal(prod, a * b)
    np.testing.assert_array_equal(conv, b.astype(np.int32))
    np.testing.assert_array_equal(neg, -c)
    np.testing.assert_array_equal(shifted, a + c)
    np.testing.assert_array_equal(same_a, a)
    np.testing.assert_array_equal(same_b, b)


FLOOR_DIV = module("(%a: tensor<9x70xi32>) -> (tensor<9x70xi32>, tensor<9x70xi32>)", """
  %c = stablehlo.constant dense<7> : tensor<i32>
  %d = stablehlo.convert %c : tensor<i32>
  %s = stablehlo.sign %d : tensor<i32>
  %0 = stablehlo.broadcast_in_dim %d, dims = [] : (tensor<i32>) -> tensor<9x70xi32>
  %1 = stablehlo.divide %a, %0 : tensor<9x70xi32>
  %2 = stablehlo.remainder %a, %0 : tensor<9x70xi32>
  %3 = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<i32>) -> tensor<9x70xi32>
  %4 = stablehlo.multiply %2, %3 : tensor<9x70xi32>
  return %1, %4 : tensor<9x70xi32>, tensor<9x70xi32>""")


def test_splat_constant_values_are_not_materialized() -> None:
    kernels = lower_function(frontend.parse(FLOOR_DIV)).kernels
    assert kernels.count("func @") == 1  # no kernel writing the converted divisor
    assert "constant 7" in kernels
    a = np.arange(-315, 315, dtype=np.int32).reshape(9, 70)
    quotient, rem = run(FLOOR_DIV, a)
    np.testing.assert_array_equal(quotient, np.fix(a / 7).astype(np.int32))
    np.testing.assert_array_equal(rem, np.fmod(a, 7))


SHARED = module("(%a: tensor<6x50xf32>, %b: tensor<6x50xf32>) -> (tensor<6x50xf32>, "
                "tensor<6x50xf32>, tensor<6x50xf32>, tensor<6x50xf32>)", """
  %0 = stablehlo.subtract %a, %b : tensor<6x50xf32>
  %1 = stablehlo.exponential %0 : tensor<6x50xf32>
  %2 = stablehlo.multiply %0, %0 : tensor<6x50xf32>
  %3 = stablehlo.add %1, %b : tensor<6x50xf32>
  %4 = stablehlo.sine %3 : tensor<6x50xf32>
  %5 = stablehlo.cosine %3 : tensor<6x50xf32>
  return %1, %2, %4, %5 : tensor<6x50xf32>, tensor<6x50xf32>, tensor<6x50xf32>,
    tensor<6x50xf32>""")


def test_light_shared_ops_over_buffers_are_recomputed() -> None:
    kernels = lower_function(frontend.parse(SHARED)).kernels
    heads = [line for line in kernels.splitlines() if line.startswith("func @")]
    # exp(a - b), not light, gets a buffer when defined; a - b and then exp(a - b) + b
    # (one light op over buffers each) are recomputed: the other results in one kernel
    assert len(heads) == 2 and heads[0].startswith("func @k0_exponential")
    assert heads[1].startswith("func @k1_3_results")
    a, b = rand((6, 50)), rand((6, 50))
    e, sq, s, c = run(SHARED, a, b)
    d = a - b
    np.testing.assert_allclose(e, np.exp(d), rtol=1e-6)
    np.testing.assert_array_equal(sq, d * d)
    arg = (e + b).astype(np.float64)  # sin/cos of large arguments: from tlc's own exp
    np.testing.assert_allclose(s, np.sin(arg), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(c, np.cos(arg), rtol=1e-6, atol=1e-7)


RELU_DOT = module("(%a: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> (tensor<8x4xf32>, "
                  "tensor<8x16xf32>)", """
  %z = stablehlo.constant dense<0.0> : tensor<8x16xf32>
  %r = stablehlo.maximum %a, %z : tensor<8x16xf32>
  %d = stablehlo.dot_general %r, %w, contracting_dims = [1] x [0]
    : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %s = stablehlo.multiply %r, %a : tensor<8x16xf32>
  return %d, %s : tensor<8x4xf32>, tensor<8x16xf32>""")


def test_light_op_shared_with_a_kernel_op_gets_a_buffer() -> None:
    kernels = lower_function(frontend.parse(RELU_DOT)).kernels
    assert "func @k0_maximum" in kernels  # the dot would copy it anyway
    a, w = rand((8, 16)), rand((16, 4))
    d, s = run(RELU_DOT, a, w)
    r = np.maximum(a, 0)
    np.testing.assert_allclose(d, r @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(s, r * a)
