"""Loop-invariant weights read across their rows, transposed once before the loop
(:mod:`frontend.lower.families.dot.pretranspose_weights`): captured weights, weights
carried through the loop unchanged (also through two nested loops), a weight the loop
changes left alone; results against numpy with poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.ir.core import Op, walk
from frontend.lower.core.inline import inline_calls
from frontend.lower.families.dot.pretranspose_weights import pretranspose_loop_weights
from frontend.syntax.printer import print_module
from frontend.verify import verify_module

from .conftest import RNG, module, run

STEPS, B, H = 4, 16, 32
HB, HH, WW = f"tensor<{B}x{H}xf32>", f"tensor<{H}x{H}xf32>", f"tensor<{H}x{H}xf32>"


def cell(carried: bool, changed: bool = False) -> str:
    """``h <- tanh(h @ W^T)`` for ``STEPS`` trips, ``W`` captured or ``carried`` through
    the loop (``changed``: the loop scales it by 0.5 every trip)."""
    w = "%wc" if carried else "%w"
    state = ", %wc = %w" if carried else ""
    types = f", {WW}" if carried else ""
    new_w = (f"%wn = stablehlo.multiply %wc, %half : {WW}" if changed else "")
    ret_w = (", %wn" if changed else ", %wc") if carried else ""
    body = f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:{3 if carried else 2} = stablehlo.while(%i = %c0, %h = %h0{state}) : tensor<i32>, {HB}{types}
  cond {{
    %n = stablehlo.constant dense<{STEPS}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
      %d = stablehlo.dot_general %h, {w}, contracting_dims = [1] x [1]
          : ({HB}, {WW}) -> {HB}
      %hn = stablehlo.tanh %d : {HB}
      %half0 = stablehlo.constant dense<0.5> : tensor<f32>
      %half = stablehlo.broadcast_in_dim %half0, dims = [] : (tensor<f32>) -> {WW}
      {new_w}
      %one = stablehlo.constant dense<1> : tensor<i32>
      %in = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %in, %hn{ret_w} : tensor<i32>, {HB}{types}
  }}
  return %r#1 : {HB}"""
    return module(f"(%w: {WW}, %h0: {HB}) -> {HB}", body)


def reference(w: np.ndarray, h: np.ndarray, changed: bool) -> np.ndarray:
    w, h = w.astype(np.float64), h.astype(np.float64)
    for _ in range(STEPS):
        h = np.tanh(h @ w.T)
        w = w * 0.5 if changed else w
    return h


def rewritten(text: str) -> tuple[list[Op], Op]:
    """``main``'s ops after the rewrite (which must verify and print back) and the
    product in the loop."""
    mod = frontend.parse(text)
    func = mod.func("main")
    assert func is not None
    func.body = pretranspose_loop_weights(inline_calls(mod, func))
    verify_module(mod)
    frontend.parse(print_module(mod))
    (dot,) = [op for op in walk(func.body) if op.name == "stablehlo.dot_general"]
    return list(func.body.block.ops), dot


@pytest.mark.parametrize(("carried", "changed"), [(False, False), (True, False), (True, True)])
def test_loop_weights(carried: bool, changed: bool) -> None:
    text = cell(carried, changed)
    ops, dot = rewritten(text)
    names = [op.name for op in ops]
    if changed:  # the weight varies: left as it is
        assert "stablehlo.transpose" not in names
        assert dot.struct_ints("dot_dimension_numbers", "rhs_contracting_dimensions") == [1]
    else:  # transposed before the loop, from the function's argument
        t = ops[names.index("stablehlo.transpose")]
        assert names.index("stablehlo.transpose") < names.index("stablehlo.while")
        assert t.operands[0].name == "w" and dot.operands[1] is t.result
        assert dot.struct_ints("dot_dimension_numbers", "rhs_contracting_dimensions") == [0]
    w, h = ((RNG.standard_normal(s) * 0.3).astype(np.float32) for s in ((H, H), (B, H)))
    (got,) = run(text, w, h)
    np.testing.assert_allclose(got, reference(w, h, changed), rtol=2e-5, atol=2e-6)


def test_nested_loops() -> None:
    """A weight carried unchanged through an outer loop and captured by an inner one is
    transposed before the outer loop."""
    inner = f"""
      %j0 = stablehlo.constant dense<0> : tensor<i32>
      %q:2 = stablehlo.while(%j = %j0, %g = %h) : tensor<i32>, {HB}
      cond {{
        %m = stablehlo.constant dense<2> : tensor<i32>
        %pj = stablehlo.compare LT, %j, %m, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %pj : tensor<i1>
      }} do {{
          %d = stablehlo.dot_general %g, %wc, contracting_dims = [1] x [1]
              : ({HB}, {WW}) -> {HB}
          %gn = stablehlo.tanh %d : {HB}
          %one1 = stablehlo.constant dense<1> : tensor<i32>
          %jn = stablehlo.add %j, %one1 : tensor<i32>
          stablehlo.return %jn, %gn : tensor<i32>, {HB}
      }}"""
    body = f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %c0, %h = %h0, %wc = %w) : tensor<i32>, {HB}, {WW}
  cond {{
    %n = stablehlo.constant dense<{STEPS}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{{inner}
      %one = stablehlo.constant dense<1> : tensor<i32>
      %in = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %in, %q#1, %wc : tensor<i32>, {HB}, {WW}
  }}
  return %r#1 : {HB}"""
    text = module(f"(%w: {WW}, %h0: {HB}) -> {HB}", body)
    ops, dot = rewritten(text)
    assert [op.name for op in ops][-3:] == ["stablehlo.transpose", "stablehlo.while",
                                            "func.return"]
    assert dot.operands[1] is ops[-3].result
    w, h = ((RNG.standard_normal(s) * 0.3).astype(np.float32) for s in ((H, H), (B, H)))
    (got,) = run(text, w, h)
    want = h.astype(np.float64)
    for _ in range(STEPS * 2):
        want = np.tanh(want @ w.T.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
