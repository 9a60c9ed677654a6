"""Device loops (one kernel per while) whose body reads large loop-invariant values or
updates a large carried buffer a slice at a time, and dots contracting contiguous
dimensions (partial sums in lanes), against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower.core.driver import lower_function
from frontend.lower.families.control import device_loop
from tensorlang.plan import Launch, While
from tests.lowering.conftest import module, rand, run

pytestmark = pytest.mark.usefixtures("uncached")


def loop_kernels(text: str) -> tuple[int, int]:
    """(while-loop kernels launched at top level, host whiles) of the program's plan."""
    steps = lower_function(frontend.parse(text)).plan.steps
    return (sum(isinstance(s, Launch) and "while" in s.kernel for s in steps),
            sum(isinstance(s, While) for s in steps))


def power(n: int, trips: int, contract: str = "[1] x [0]") -> str:
    """``trips`` steps of power iteration with an ``n x n`` matrix carried unchanged."""
    return module(f"(%a: tensor<{n}x{n}xf32>, %v: tensor<{n}xf32>) -> tensor<{n}xf32>", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:3 = stablehlo.while(%m = %a, %i = %c0, %x = %v) : tensor<{n}x{n}xf32>, tensor<i32>,
      tensor<{n}xf32>
   cond {{
    %k = stablehlo.constant dense<{trips}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %w = stablehlo.dot_general %m, %x, contracting_dims = {contract}
        : (tensor<{n}x{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
    %sq = stablehlo.multiply %w, %w : tensor<{n}xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [0]
        : (tensor<{n}xf32>, tensor<f32>) -> tensor<f32>
    %r = stablehlo.rsqrt %s : tensor<f32>
    %rb = stablehlo.broadcast_in_dim %r, dims = [] : (tensor<f32>) -> tensor<{n}xf32>
    %y = stablehlo.multiply %w, %rb : tensor<{n}xf32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %m, %j, %y : tensor<{n}x{n}xf32>, tensor<i32>, tensor<{n}xf32>
  }}
  return %0#2 : tensor<{n}xf32>""")


def power_expected(a: np.ndarray, v: np.ndarray, trips: int) -> np.ndarray:
    """power() in float64 numpy."""
    x = v.astype(np.float64)
    for _ in range(trips):
        w = a.astype(np.float64) @ x
        x = w / np.linalg.norm(w)
    return x


@pytest.mark.parametrize("n,contract", [(128, "[1] x [0]"), (72, "[1] x [0]"),
                                        (80, "[0] x [0]")])
def test_large_invariant_matrix_runs_in_the_loop_kernel(n: int, contract: str) -> None:
    text = power(n, 7, contract)
    assert loop_kernels(text) == (1, 0)  # the 64x64+ matrix is only read
    a, v = rand((n, n)), rand((n,))
    (got,) = run(text, a, v)
    want = power_expected(a if contract == "[1] x [0]" else a.T, v, 7)
    np.testing.assert_allclose(got, want, atol=2e-5)


def test_zero_trips_return_the_operands() -> None:
    text = power(64, 0)
    a, v = rand((64, 64)), rand((64,))
    (got,) = run(text, a, v)
    np.testing.assert_array_equal(got, v)


def test_too_much_work_per_iteration_stays_on_the_host(monkeypatch: pytest.MonkeyPatch) \
        -> None:
    monkeypatch.setattr(device_loop, "MAX_WORK", 128 * 128 - 1)
    text = power(128, 3)
    assert loop_kernels(text) == (0, 1)
    a, v = rand((128, 128)), rand((128,))
    (got,) = run(text, a, v)
    np.testing.assert_allclose(got, power_expected(a, v, 3), atol=2e-5)


def scan_stack(t: int) -> str:
    """An RNN-like scan: ``h = tanh(x_i W^T + h)`` (W: 16x32, contracting the last
    dimension of both), stacking every h into a carried ``t x 4 x 16`` buffer."""
    return module(f"(%xs: tensor<{t}x4x32xf32>, %w: tensor<16x32xf32>, %h0: tensor<4x16xf32>,"
                  f" %o: tensor<{t}x4x16xf32>) -> (tensor<4x16xf32>, tensor<{t}x4x16xf32>)", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:4 = stablehlo.while(%i = %c0, %h = %h0, %out = %o, %ww = %w) : tensor<i32>,
      tensor<4x16xf32>, tensor<{t}x4x16xf32>, tensor<16x32xf32>
   cond {{
    %n = stablehlo.constant dense<{t}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %z = stablehlo.constant dense<0> : tensor<i32>
    %x3 = stablehlo.dynamic_slice %xs, %i, %z, %z, sizes = [1, 4, 32]
        : (tensor<{t}x4x32xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x32xf32>
    %x = stablehlo.reshape %x3 : (tensor<1x4x32xf32>) -> tensor<4x32xf32>
    %d = stablehlo.dot_general %x, %ww, contracting_dims = [1] x [1]
        : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32>
    %s = stablehlo.add %d, %h : tensor<4x16xf32>
    %h2 = stablehlo.tanh %s : tensor<4x16xf32>
    %h3 = stablehlo.reshape %h2 : (tensor<4x16xf32>) -> tensor<1x4x16xf32>
    %new = stablehlo.dynamic_update_slice %out, %h3, %i, %z, %z
        : (tensor<{t}x4x16xf32>, tensor<1x4x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>)
        -> tensor<{t}x4x16xf32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %h2, %new, %ww : tensor<i32>, tensor<4x16xf32>,
        tensor<{t}x4x16xf32>, tensor<16x32xf32>
  }}
  return %0#1, %0#2 : tensor<4x16xf32>, tensor<{t}x4x16xf32>""")


def test_large_carried_stack_updated_in_place_runs_in_the_loop_kernel() -> None:
    t = 80  # the stack: 80x4x16 = 5120 elements, over MAX_ELEMENTS
    text = scan_stack(t)
    assert loop_kernels(text) == (1, 0)
    xs, w, h0, o = rand((t, 4, 32)), 0.2 * rand((16, 32)), rand((4, 16)), rand((t, 4, 16))
    got_h, got_o = run(text, xs, w, h0, o)
    h, hs = h0.astype(np.float64), []
    for x in xs.astype(np.float64):
        h = np.tanh(x @ w.T.astype(np.float64) + h)
        hs.append(h)
    np.testing.assert_allclose(got_h, h, atol=2e-5)
    np.testing.assert_allclose(got_o, np.array(hs), atol=2e-5)


def nested(inner_init: str) -> str:
    """An outer counted loop (3 trips) whose body runs an inner loop (4 trips) adding
    ``%a`` to a carry initialized with ``inner_init`` (%z: computed once before the outer
    loop; %zz: computed in the outer body), then adds the result to the outer carry."""
    return module("(%a: tensor<6xf32>, %x0: tensor<6xf32>) -> tensor<6xf32>", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %z = stablehlo.negate %x0 : tensor<6xf32>
  %0:2 = stablehlo.while(%i = %c0, %x = %x0) : tensor<i32>, tensor<6xf32>
   cond {{
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %zz = stablehlo.negate %x0 : tensor<6xf32>
    %c00 = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.while(%j = %c00, %y = {inner_init}) : tensor<i32>, tensor<6xf32>
     cond {{
      %m = stablehlo.constant dense<4> : tensor<i32>
      %q = stablehlo.compare LT, %j, %m, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %q : tensor<i1>
    }} do {{
      %y2 = stablehlo.add %y, %a : tensor<6xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j2 = stablehlo.add %j, %one : tensor<i32>
      stablehlo.return %j2, %y2 : tensor<i32>, tensor<6xf32>
    }}
    %x2 = stablehlo.add %x, %1#1 : tensor<6xf32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i2 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %i2, %x2 : tensor<i32>, tensor<6xf32>
  }}
  return %0#1 : tensor<6xf32>""")


@pytest.mark.parametrize("init", ["%z", "%zz", "%x0"])
@pytest.mark.parametrize("where", ["device", "host"])
def test_carry_takes_the_operand_buffer_only_when_safe(init: str, where: str,
                                                       monkeypatch: pytest.MonkeyPatch) \
        -> None:
    if where == "host":
        monkeypatch.setattr(device_loop, "MAX_ELEMENTS", 0)
    a, x0 = rand((6,)), rand((6,))
    keep = x0.copy()
    (got,) = run(nested(init), a, x0)
    np.testing.assert_allclose(got, x0 + 3 * (-x0 + 4 * a) if init != "%x0"
                               else x0 + 3 * (x0 + 4 * a), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x0, keep)  # the argument is not modified


def test_loop_of_a_parameter_leaves_the_argument_alone() -> None:
    text = power(64, 3)
    a, v = rand((64, 64)), rand((64,))
    keep = v.copy()
    (got,) = run(text, a, v)
    np.testing.assert_allclose(got, power_expected(a, v, 3), atol=2e-5)
    np.testing.assert_array_equal(v, keep)
