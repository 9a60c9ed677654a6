"""Hoisting loop invariants out of ``while`` bodies (:mod:`frontend.lower.core.loop_invariants`):
what moves and what stays, and the programs' results against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.ir.core import Op
from frontend.lower.core.inline import inline_calls
from frontend.lower.core.loop_invariants import hoist_loop_invariants
from tests.lowering.conftest import module, rand, run

# A scan-like loop over 6 steps whose body concatenates two weight matrices it passes
# through unchanged (as flax's LSTM cell does), adds a bias (a broadcast, which stays),
# takes the product with the carry and a tanh; a constant chain stays in the body too.
CELL = module("(%h0: tensor<4x8xf32>, %wa: tensor<8x4xf32>, %wb: tensor<8x4xf32>, "
              "%b: tensor<8xf32>) -> tensor<4x8xf32>", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:5 = stablehlo.while(%i = %c0, %h = %h0, %a = %wa, %w = %wb, %bb = %b)
      : tensor<i32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8xf32>
    cond {
      %n = stablehlo.constant dense<6> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %half = stablehlo.constant dense<0.5> : tensor<f32>
      %hb = stablehlo.broadcast_in_dim %half, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %k = stablehlo.concatenate %a, %w, dim = 1
          : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
      %ks = stablehlo.multiply %k, %k : tensor<8x8xf32>
      %d = stablehlo.dot_general %h, %ks, contracting_dims = [1] x [0]
          : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %bias = stablehlo.broadcast_in_dim %bb, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
      %s = stablehlo.add %d, %bias : tensor<4x8xf32>
      %t = stablehlo.tanh %s : tensor<4x8xf32>
      %y = stablehlo.multiply %t, %hb : tensor<4x8xf32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %y, %a, %w, %bb : tensor<i32>, tensor<4x8xf32>, tensor<8x4xf32>,
          tensor<8x4xf32>, tensor<8xf32>
    }
  return %0#1 : tensor<4x8xf32>""")


def _hoisted(text: str) -> tuple[list[str], list[str]]:
    """(ops before the first while, ops of its body) once invariants are hoisted."""
    mod = frontend.parse(text)
    region = hoist_loop_invariants(inline_calls(mod, mod.func("main")))
    ops = region.block.ops
    loop = next(o for o in ops if o.name == "stablehlo.while")
    before = [o.name for o in ops[:ops.index(loop)]]
    return before, [o.name for o in loop.regions[1].block.ops]


def _cell(h: np.ndarray, wa: np.ndarray, wb: np.ndarray, b: np.ndarray) -> np.ndarray:
    k = np.concatenate([wa, wb], axis=1).astype(np.float64) ** 2
    for _ in range(6):
        h = np.tanh(h @ k + b) * 0.5
    return h


def test_the_weights_move_and_the_rest_stays() -> None:
    before, body = _hoisted(CELL)
    assert before.count("stablehlo.concatenate") == 1 and "stablehlo.multiply" in before
    assert "stablehlo.concatenate" not in body and body.count("stablehlo.multiply") == 1
    for stays in ("stablehlo.dot_general", "stablehlo.broadcast_in_dim", "stablehlo.tanh",
                  "stablehlo.constant"):
        assert stays in body, stays


def test_an_op_reading_a_changed_carry_stays() -> None:
    text = CELL.replace("%a, %w, %bb : tensor<i32>", "%w, %a, %bb : tensor<i32>")  # swapped
    before, body = _hoisted(text)
    assert "stablehlo.concatenate" in body and "stablehlo.concatenate" not in before


def test_nested_loops_hoist_to_the_outermost_invariant_level() -> None:
    inner = module("(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32>", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:3 = stablehlo.while(%i = %c0, %y = %x, %v = %w) : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<0> : tensor<i32>
      %1:3 = stablehlo.while(%j = %c1, %z = %y, %u = %v) : tensor<i32>, tensor<4xf32>, tensor<4xf32>
        cond {
          %m = stablehlo.constant dense<2> : tensor<i32>
          %q = stablehlo.compare LT, %j, %m : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %q : tensor<i1>
        } do {
          %e = stablehlo.exponential %u : tensor<4xf32>
          %s = stablehlo.add %z, %e : tensor<4xf32>
          %one = stablehlo.constant dense<1> : tensor<i32>
          %k = stablehlo.add %j, %one : tensor<i32>
          stablehlo.return %k, %s, %u : tensor<i32>, tensor<4xf32>, tensor<4xf32>
        }
      %one2 = stablehlo.constant dense<1> : tensor<i32>
      %l = stablehlo.add %i, %one2 : tensor<i32>
      stablehlo.return %l, %1#1, %v : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    }
  return %0#1 : tensor<4xf32>""")
    before, _ = _hoisted(inner)
    assert "stablehlo.exponential" in before  # out of both loops
    x, w = rand((4,)), rand((4,))
    (got,) = run(inner, x, w)
    np.testing.assert_allclose(got, x + 6 * np.exp(w), rtol=1e-5)


@pytest.mark.usefixtures("uncached")
@pytest.mark.parametrize("where", ["device", "host"])
def test_the_cell_computes_what_numpy_does(where: str, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    from frontend.lower.families.control import device_loop

    if where == "host":
        monkeypatch.setattr(device_loop, "MAX_ELEMENTS", 0)
    h, wa, wb = rand((4, 8)), rand((8, 4)), rand((8, 4))
    b = rand((8,))
    (got,) = run(CELL, h, wa, wb, b)
    np.testing.assert_allclose(got, _cell(h, wa, wb, b), rtol=1e-4, atol=1e-5)


def test_hoisted_ops_read_the_loop_operands() -> None:
    mod = frontend.parse(CELL)
    region = hoist_loop_invariants(inline_calls(mod, mod.func("main")))
    concat = next(o for o in region.block.ops if o.name == "stablehlo.concatenate")
    params = region.block.args
    assert concat.operands == [params[1], params[2]]
    assert all(isinstance(o, Op) for o in region.block.ops)


def test_the_device_loop_reads_hoisted_weights_from_a_buffer(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """The hoisted product's operand is computed before the loop, so the loop's dot is a
    ``gemm`` over buffers (fused in, it was a sum of outer products choosing a weight
    matrix per element)."""
    from frontend.lower.core.driver import lower_function

    lowered = lower_function(frontend.parse(CELL))
    loop = next(k for k in lowered.kernels.split("\nfunc ") if "_while(" in k)
    assert "gemm" in loop and "concatenate" not in loop
