"""while / if / call on the host plan."""

from __future__ import annotations

import numpy as np
import pytest

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


ERROR_CHECK = module("(%x: tensor<8xf32>, %i: tensor<i32>) -> (tensor<8xf32>, tensor<8xf32>)", """
  %v = stablehlo.exponential %x : tensor<8xf32>
  %s = stablehlo.sine %x : tensor<8xf32>
  %r:2 = "stablehlo.case"(%i) ({
    stablehlo.return %v, %s : tensor<8xf32>, tensor<8xf32>
  }, {
    %n = stablehlo.negate %x : tensor<8xf32>
    %c = stablehlo.cosine %x : tensor<8xf32>
    stablehlo.return %n, %c : tensor<8xf32>, tensor<8xf32>
  }) : (tensor<i32>) -> (tensor<8xf32>, tensor<8xf32>)
  %after = stablehlo.add %r#0, %x : tensor<8xf32>
  return %after, {after} : tensor<8xf32>, tensor<8xf32>""")
"""An error check's shape: a branch passing values through, another computing others.
``{after}`` is what the second result is: the case's second result (read), or ``%x``
(not read: neither branch computes it)."""


def _case_steps(text: str) -> tuple[tuple, ...]:
    """The steps of each branch of ``text``'s case, as lowered (a kernel per launch)."""
    import frontend
    from frontend.lower import lower_function
    from tensorlang.plan import Case

    steps = lower_function(frontend.parse(text)).plan.steps
    return next(s for s in steps if isinstance(s, Case)).branches


@pytest.mark.parametrize("second", ["%r#1", "%x"])
def test_a_passed_through_result_takes_the_value_buffer(second: str) -> None:
    """The branch passing ``%v`` through copies nothing into the case's result (the
    other branch writes over the dead ``%v``); a result nothing reads is computed by no
    branch.  Both branches against numpy."""
    from tensorlang.plan import Copy, Launch

    text = ERROR_CHECK.replace("{after}", second)
    passing, computing = _case_steps(text)
    assert not any(isinstance(s, Copy) for s in passing)
    assert len([s for s in computing if isinstance(s, Launch)]) == (2 if second == "%r#1" else 1)
    x = rand((8,))
    wide = x.astype(np.float64)
    for index, (first, other) in enumerate([(np.exp(wide), np.sin(wide)),
                                            (-wide, np.cos(wide))]):
        got = run(text, x, np.int32(index))
        # exp(x) + x cancels near x = -0.57: the tolerance is of the addends, in float64
        np.testing.assert_allclose(got[0], first + wide, rtol=1e-6,
                                   atol=1e-6 * np.max(np.abs(first) + np.abs(wide)))
        np.testing.assert_allclose(got[1], other if second == "%r#1" else x, rtol=1e-6)


LAZY_READER = module("(%x: tensor<8xf32>, %i: tensor<i32>) -> (tensor<8xf32>, tensor<8xf32>)", """
  %v = stablehlo.exponential %x : tensor<8xf32>
  %m = stablehlo.reduce(%v init: %z) applies stablehlo.add across dimensions = [0]
       : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  %b = stablehlo.optimization_barrier %v : tensor<8xf32>
  %later = stablehlo.negate %v : tensor<8xf32>
  %r = "stablehlo.case"(%i) ({
    stablehlo.return %b : tensor<8xf32>
  }, {
    %n = stablehlo.negate %x : tensor<8xf32>
    stablehlo.return %n : tensor<8xf32>
  }) : (tensor<i32>) -> tensor<8xf32>
  return %r, %later : tensor<8xf32>, tensor<8xf32>""").replace(
    "%m = ", "%z = stablehlo.constant dense<0.0> : tensor<f32>\n  %m = ")


def test_a_buffer_a_lazy_value_still_reads_is_not_taken() -> None:
    """``%b`` shares ``%v``'s buffer and is passed through, but ``-%v`` is computed
    after the case: the case copies ``%b`` into a result of its own, and the other
    branch leaves ``%v`` intact."""
    from tensorlang.plan import Copy

    passing, _ = _case_steps(LAZY_READER)
    assert any(isinstance(s, Copy) for s in passing)
    x = rand((8,))
    for index, first in enumerate([np.exp(x), -x]):
        got = run(LAZY_READER, x, np.int32(index))
        np.testing.assert_allclose(got[0], first, rtol=1e-6)
        np.testing.assert_allclose(got[1], -np.exp(x), rtol=1e-6)
