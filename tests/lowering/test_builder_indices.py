"""The kernel builder's index arithmetic (:class:`frontend.lower.core.builder.KernelBuilder`):
a multi-index linearized and delinearized again costs no division, also across reshapes
that add or drop unit modes (one time step of a sequence); a row's index is divided once
and extended per element; index arithmetic is emitted once per scope; and the result of
a program reading such a step in a loop against numpy."""

from __future__ import annotations

import numpy as np

from frontend.lower.core.builder import KernelBuilder

from .conftest import module, rand, run


def divisions(k: KernelBuilder) -> int:
    return sum(" arith.div " in line or " arith.rem " in line for line in k.lines)


def test_delinearize_finds_the_index_across_unit_modes() -> None:
    k = KernelBuilder("k")
    i, j = k.emit("group_id", "i"), k.emit("group_id", "j")
    flat = k.linear([i, j], [16, 384])
    assert k.delinearize(flat, [1, 16, 384]) == [0, i, j]
    assert k.delinearize(flat, [16, 1, 384, 1]) == [i, 0, j, 0]
    assert divisions(k) == 0
    assert k.delinearize(flat, [32, 192]) != [i, j] and divisions(k) > 0  # another shape


def test_linearize_with_zero_unit_indices() -> None:
    k = KernelBuilder("k")
    i, j = k.emit("group_id", "i"), k.emit("group_id", "j")
    flat = k.linear([0, i, j], [1, 16, 8])
    assert k.delinearize(flat, [16, 8]) == [i, j]
    assert divisions(k) == 0


def test_a_delinearized_row_is_divided_once_and_extended() -> None:
    """The elements of one row (a reduced position's channels): the row's multi-index is
    divided out once, and each element's linear index extends the row's linear index
    instead of recomputing it."""
    k = KernelBuilder("k")
    r = k.emit("group_id", "r")
    flats = []
    for j in range(4):
        row = k.delinearize(r, [16, 32, 32])
        flats.append(k.linear([*row, j], [16, 32, 32, 32]))
    assert divisions(k) == 4  # r / 32, r % 32, (r / 32) % 32, (r / 32) / 32: once
    multiplies = sum(" arith.mul " in line for line in k.lines)
    assert multiplies == 1 and len(set(flats)) == 4  # r * 32, then + j


def test_index_arithmetic_is_not_repeated_in_a_scope() -> None:
    k = KernelBuilder("k")
    i = k.emit("group_id", "i")
    assert k.imul(i, 7) == k.imul(i, 7) and k.iadd(i, 3) == k.iadd(i, 3)
    with k.scope():
        inner = k.irem(i, 5)
        assert k.irem(i, 5) == inner
    assert k.irem(i, 5) != inner  # made again outside the scope it was made in


def test_a_step_of_a_projection_in_a_loop() -> None:
    """``h <- tanh(reshape(dynamic_slice(P, t)) + h)``: each step reads one time step of
    the projection ``P [T, B, N]`` through a reshape of its unit mode."""
    t, b, n = 6, 4, 96
    body = f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %h = %h0) : tensor<i32>, tensor<{b}x{n}xf32>
  cond {{
    %steps = stablehlo.constant dense<{t}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %steps, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
      %z = stablehlo.constant dense<0> : tensor<i32>
      %s = stablehlo.dynamic_slice %proj, %i, %z, %z, sizes = [1, {b}, {n}]
          : (tensor<{t}x{b}x{n}xf32>, tensor<i32>, tensor<i32>, tensor<i32>)
          -> tensor<1x{b}x{n}xf32>
      %x = stablehlo.reshape %s : (tensor<1x{b}x{n}xf32>) -> tensor<{b}x{n}xf32>
      %a = stablehlo.add %x, %h : tensor<{b}x{n}xf32>
      %hn = stablehlo.tanh %a : tensor<{b}x{n}xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %in = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %in, %hn : tensor<i32>, tensor<{b}x{n}xf32>
  }}
  return %r#1 : tensor<{b}x{n}xf32>"""
    text = module(f"(%proj: tensor<{t}x{b}x{n}xf32>, %h0: tensor<{b}x{n}xf32>) "
                  f"-> tensor<{b}x{n}xf32>", body)
    proj, h = rand((t, b, n)), rand((b, n))
    want = h.astype(np.float64)
    for step in range(t):
        want = np.tanh(proj[step] + want)
    (got,) = run(text, proj, h)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_integer_compared_with_itself_is_a_constant() -> None:
    """The C compiler warns of an integer's self-comparison (PoCL printed "3 warnings
    generated." building optax's update kernels); a float's is the NaN test and stays."""
    k = KernelBuilder("k")
    x = k.emit("constant 3 -> i32", "c")
    assert [k.cmp(c, x, x, "i32") for c in ("lt", "le", "eq", "ne", "gt", "ge")] == [
        k.const(False, "i1"), k.const(True, "i1"), k.const(True, "i1"),
        k.const(False, "i1"), k.const(False, "i1"), k.const(True, "i1")]
    assert not any("cmp." in line for line in k.lines)
    y = k.emit("constant 1.5 -> f32", "c")
    nan_test = k.cmp("ne", y, y, "f32")
    assert f"{nan_test} = cmp.ne {y}, {y} : f32" in "\n".join(k.lines)
