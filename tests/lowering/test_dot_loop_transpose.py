"""Products a loop body transposes, computed transposed
(:mod:`frontend.lower.families.dot.loop_transpose`): the rewrite, what it leaves alone, and the
loop's results against numpy with poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower.core.inline import inline_calls
from frontend.lower.families.dot.loop_transpose import swap_transposed_products
from frontend.syntax.printer import print_module
from frontend.verify import verify_module

from .conftest import RNG, module, run

STEPS, B, H = 5, 8, 16


def vmapped_cell(extra_use: bool = False) -> str:
    """``h <- tanh((W h^T)^T + b)`` for ``STEPS`` trips, as jax's vmap of a per-sample cell
    writes it; ``extra_use``: the product is read by a second op too."""
    tail = (f"%s2 = stablehlo.add %t, %t : tensor<{B}x{H}xf32>" if not extra_use else
            f"%sum = stablehlo.reduce(%d init: %zero) applies stablehlo.add across dimensions "
            f"= [0, 1] : (tensor<{H}x{B}xf32>, tensor<f32>) -> tensor<f32>\n"
            f"      %sb = stablehlo.broadcast_in_dim %sum, dims = [] : (tensor<f32>) -> "
            f"tensor<{B}x{H}xf32>\n"
            f"      %s2 = stablehlo.add %t, %sb : tensor<{B}x{H}xf32>")
    body = f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r:2 = stablehlo.while(%i = %c0, %h = %h0) : tensor<i32>, tensor<{B}x{H}xf32>
  cond {{
    %n = stablehlo.constant dense<{STEPS}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
      %d = stablehlo.dot_general %w, %h, contracting_dims = [1] x [1],
          precision = [DEFAULT, HIGHEST]
          : (tensor<{H}x{H}xf32>, tensor<{B}x{H}xf32>) -> tensor<{H}x{B}xf32>
      %t = stablehlo.transpose %d, dims = [1, 0] : (tensor<{H}x{B}xf32>) -> tensor<{B}x{H}xf32>
      {tail}
      %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<{H}xf32>) -> tensor<{B}x{H}xf32>
      %a = stablehlo.add %s2, %bb : tensor<{B}x{H}xf32>
      %hn = stablehlo.tanh %a : tensor<{B}x{H}xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %in = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %in, %hn : tensor<i32>, tensor<{B}x{H}xf32>
  }}
  return %r#1 : tensor<{B}x{H}xf32>"""
    return module(f"(%w: tensor<{H}x{H}xf32>, %h0: tensor<{B}x{H}xf32>, %b: tensor<{H}xf32>)"
                  f" -> tensor<{B}x{H}xf32>", body)


def reference(w: np.ndarray, h: np.ndarray, b: np.ndarray, extra_use: bool) -> np.ndarray:
    h = h.astype(np.float64)
    for _ in range(STEPS):
        t = (w @ h.T).T
        h = np.tanh(2 * t + b if not extra_use else t + t.sum() + b)
    return h


def body_ops(text: str) -> tuple[list[str], str]:
    """The op names of the loop body after the rewrite (which must verify and print), and
    the module's text."""
    mod = frontend.parse(text)
    func = mod.func("main")
    assert func is not None
    func.body = swap_transposed_products(inline_calls(mod, func))
    verify_module(mod)
    printed = print_module(mod)
    frontend.parse(printed)
    (loop,) = [op for op in func.body.block.ops if op.name == "stablehlo.while"]
    return [op.name for op in loop.regions[1].block.ops], printed


@pytest.mark.parametrize("extra_use", [False, True])
def test_a_transposed_product_in_a_loop(extra_use: bool) -> None:
    text = vmapped_cell(extra_use)
    names, printed = body_ops(text)
    assert ("stablehlo.transpose" in names) == extra_use  # a second reader keeps it
    if not extra_use:  # the operands swapped, and their precisions with them
        assert "contracting_dims = [1] x [1], precision = [HIGHEST, DEFAULT] : " \
            "(tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>" in printed
    w, h, b = ((RNG.standard_normal(s) * 0.3).astype(np.float32)
               for s in ((H, H), (B, H), (H,)))
    (got,) = run(text, w, h, b)
    np.testing.assert_allclose(got, reference(w, h, b, extra_use), rtol=2e-5, atol=2e-6)
