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


CASE = module("(%x: tensor<16x8xf32>, %w: tensor<8x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>)",
              """
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1]
       : (tensor<16x8xf32>, tensor<f32>) -> tensor<f32>
  %p = stablehlo.compare GT, %s, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %i = stablehlo.convert %p : (tensor<i1>) -> tensor<i32>
  %r:2 = "stablehlo.case"(%i) ({
    %c = stablehlo.cosine %x : tensor<16x8xf32>
    %d = stablehlo.dot_general %c, %w, contracting_dims = [1] x [0]
         : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
    stablehlo.return %d, %x : tensor<16x8xf32>, tensor<16x8xf32>
  }, {
    %e = stablehlo.sine %x : tensor<16x8xf32>
    %f = stablehlo.dot_general %e, %w, contracting_dims = [1] x [0]
         : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
    stablehlo.return %f, %f : tensor<16x8xf32>, tensor<16x8xf32>
  }) : (tensor<i32>) -> (tensor<16x8xf32>, tensor<16x8xf32>)
  return %r#0, %r#1 : tensor<16x8xf32>, tensor<16x8xf32>""")


def test_case_branches_compute_into_the_results() -> None:
    """A branch's own result buffer is the case's result (no copy); a parameter is still
    copied, and a buffer returned twice is copied from the first result.  Both branches
    against numpy."""
    import backend_opencl
    from tensorlang.plan import Case, Copy

    exe = backend_opencl.compile_stablehlo(CASE)
    case = next(s for s in exe.plan.steps if isinstance(s, Case))
    first, second = case.branches
    assert [s for s in first if isinstance(s, Copy)] == [Copy(exe.plan.params[0],
                                                              exe.plan.results[1])]
    assert [s for s in second if isinstance(s, Copy)] == [Copy(*exe.plan.results)]
    w = rand((8, 8))
    for sign in (1, -1):
        x = sign * np.abs(rand((16, 8)))
        got = exe(x, w)
        want = (np.sin(x) @ w, np.sin(x) @ w) if sign > 0 else (np.cos(x) @ w, x)
        for g, v in zip(got, want, strict=True):
            np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-5)
