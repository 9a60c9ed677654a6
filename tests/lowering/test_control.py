"""while / if / call on the host plan."""

from __future__ import annotations

import numpy as np

from tests.lowering.conftest import module, rand, run


def test_while_loop_accumulates() -> None:
    text = module("(%a: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>)", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<3xf32>
   cond {
    %n = stablehlo.constant dense<5> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %y = stablehlo.add %x, %a : tensor<3xf32>
    stablehlo.return %j, %y : tensor<i32>, tensor<3xf32>
  }
  return %0#0, %0#1 : tensor<i32>, tensor<3xf32>""")
    a = rand((3,))
    i, x = run(text, a)
    assert int(i) == 5
    np.testing.assert_allclose(x, 6 * a, rtol=1e-6)


def test_if_and_call() -> None:
    text = """
func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %x, %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func public @main(%p: tensor<i1>, %a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.if"(%p) ({
    %t = func.call @twice(%a) : (tensor<2xf32>) -> tensor<2xf32>
    stablehlo.return %t : tensor<2xf32>
  }, {
    %e = stablehlo.negate %a : tensor<2xf32>
    stablehlo.return %e : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""
    a = rand((2,))
    np.testing.assert_array_equal(run(text, np.array(True), a)[0], 2 * a)
    np.testing.assert_array_equal(run(text, np.array(False), a)[0], -a)
