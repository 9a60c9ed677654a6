"""Products read transposed, computed transposed
(:mod:`frontend.lower.families.dot.transposed_products`): in loop bodies, through the
element-wise ops between the product and its transpose, and outside loops; what it
leaves alone, and the results against numpy with poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.ir.core import Op
from frontend.lower.core.inline import inline_calls
from frontend.lower.families.dot.transposed_products import swap_transposed_products
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
    # the extra reader adds the sum of all 128 f32 products to every element, each step
    atol = 1e-4 if extra_use else 2e-6
    np.testing.assert_allclose(got, reference(w, h, b, extra_use), rtol=2e-5, atol=atol)


def gate(rows: int, cols: int, k: int) -> str:
    """``tanh(transpose(clamp(Wx @ x^T + Wh @ h^T) * z) + b)``: a vmapped cell's gate
    outside a loop, with the two products ``rows x cols`` (units x batch)."""
    mat = f"tensor<{rows}x{cols}xf32>"
    body = f"""
  %dx = stablehlo.dot_general %wx, %x, contracting_dims = [1] x [1]
      : (tensor<{rows}x{k}xf32>, tensor<{cols}x{k}xf32>) -> {mat}
  %dh = stablehlo.dot_general %wh, %h, contracting_dims = [1] x [1]
      : (tensor<{rows}x{k}xf32>, tensor<{cols}x{k}xf32>) -> {mat}
  %s = stablehlo.add %dx, %dh : {mat}
  %lo = stablehlo.constant dense<-1.0> : tensor<f32>
  %hi = stablehlo.constant dense<1.5> : tensor<f32>
  %c = stablehlo.clamp %lo, %s, %hi : (tensor<f32>, {mat}, tensor<f32>) -> {mat}
  %m = stablehlo.multiply %c, %z : {mat}
  %t = stablehlo.transpose %m, dims = [1, 0] : ({mat}) -> tensor<{cols}x{rows}xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1]
      : (tensor<{rows}xf32>) -> tensor<{cols}x{rows}xf32>
  %a = stablehlo.add %t, %bb : tensor<{cols}x{rows}xf32>
  %y = stablehlo.tanh %a : tensor<{cols}x{rows}xf32>
  return %y : tensor<{cols}x{rows}xf32>"""
    return module(f"(%wx: tensor<{rows}x{k}xf32>, %x: tensor<{cols}x{k}xf32>, "
                  f"%wh: tensor<{rows}x{k}xf32>, %h: tensor<{cols}x{k}xf32>, %z: {mat}, "
                  f"%b: tensor<{rows}xf32>) -> tensor<{cols}x{rows}xf32>", body)


def top_ops(text: str) -> list[Op]:
    """The ops of ``main`` after the rewrite (which must verify and print back)."""
    mod = frontend.parse(text)
    func = mod.func("main")
    assert func is not None
    func.body = swap_transposed_products(inline_calls(mod, func))
    verify_module(mod)
    frontend.parse(print_module(mod))
    return list(func.body.block.ops)


@pytest.mark.parametrize(("rows", "cols", "swapped"), [(48, 16, True), (8, 40, False)])
def test_a_transpose_moves_up_through_element_wise_ops(rows: int, cols: int,
                                                       swapped: bool) -> None:
    """The transpose reaches both products through ``multiply``, ``clamp`` (scalar bounds
    kept) and ``add``; products with fewer rows than columns (the gemm's vector
    direction) stay as they are outside loops."""
    text = gate(rows, cols, 24)
    ops = top_ops(text)
    (transpose,) = [op for op in ops if op.name == "stablehlo.transpose"]
    dots = [op for op in ops if op.name == "stablehlo.dot_general"]
    # swapped: the one transpose left is the leaf's (z), an index map its reader reads
    assert (transpose.operands[0].name == "z") == swapped
    assert all(str(d.result.type) == (f"tensor<{cols}x{rows}xf32>" if swapped else
                                      f"tensor<{rows}x{cols}xf32>") for d in dots)
    wx, x, wh, h = (RNG.standard_normal(s).astype(np.float32) * 0.3
                    for s in ((rows, 24), (cols, 24), (rows, 24), (cols, 24)))
    z, b = RNG.standard_normal((rows, cols)).astype(np.float32), \
        RNG.standard_normal(rows).astype(np.float32)
    (got,) = run(text, wx, x, wh, h, z, b)
    s = wx.astype(np.float64) @ x.T + wh.astype(np.float64) @ h.T
    want = np.tanh((np.clip(s, -1, 1.5) * z).T + b)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_a_transpose_that_reaches_no_product_stays() -> None:
    text = module("(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<16x8xf32>", """
  %s = stablehlo.add %x, %y : tensor<8x16xf32>
  %t = stablehlo.transpose %s, dims = [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>""")
    assert [op.name for op in top_ops(text)] == ["stablehlo.add", "stablehlo.transpose",
                                                 "func.return"]
