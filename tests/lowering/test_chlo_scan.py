"""chlo.scan: elementwise bodies (one kernel) giving cumulative sums/products/maxima
along any dimension, forwards and reversed, several inputs and carries; other bodies (a
reduction, a matrix product, a reverse) as a while loop; against numpy on random data."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from tensorlang.diagnostics import CompileError
from tests.lowering.conftest import run
from tests.lowering.interpret_files import interpret_failures

RNG = np.random.default_rng(23)


def _t(shape: tuple[int, ...], e: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{e}>"


def _scan(shape: tuple[int, ...], dim: int, e: str, op: str, reverse: bool) -> str:
    carry = shape[:dim] + shape[dim + 1:]
    ti, tc = _t(shape, e), _t(carry, e)
    rev = " attributes {is_reverse = true}" if reverse else ""
    return f"""func.func public @main(%x: {ti}, %init: {tc}) -> ({ti}, {tc}) {{
  %0:2 = chlo.scan(%x) inits(%init) dimension={dim}{rev} {{
  ^bb0(%a: {tc}, %c: {tc}):
    %1 = stablehlo.{op} %a, %c : {tc}
    stablehlo.return %1, %1 : {tc}, {tc}
  }} : ({ti}, {tc}) -> ({ti}, {tc})
  return %0#0, %0#1 : {ti}, {tc}
}}
"""


_NUMPY = {"add": np.cumsum, "multiply": np.cumprod, "maximum": np.maximum.accumulate}


@pytest.mark.parametrize("shape,dim", [((50,), 0), ((6, 40), 1), ((33, 5, 3), 0),
                                        ((4, 1100), 0)])
@pytest.mark.parametrize("op", ["add", "multiply", "maximum"])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_ops_match_numpy(shape: tuple[int, ...], dim: int, op: str,
                                    reverse: bool) -> None:
    x = (1 + 0.01 * RNG.standard_normal(shape)).astype(np.float32) if op == "multiply" \
        else RNG.standard_normal(shape).astype(np.float32)
    init = RNG.standard_normal(shape[:dim] + shape[dim + 1:]).astype(np.float32)
    out, carry = run(_scan(shape, dim, "f32", op, reverse), x, init)
    xs = np.flip(x, dim) if reverse else x
    full = np.concatenate([np.expand_dims(init, dim), xs], axis=dim)
    want = np.delete(_NUMPY[op](full, axis=dim), 0, axis=dim)
    want_carry = np.take(want, -1, axis=dim)
    want = np.flip(want, dim) if reverse else want
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(carry, want_carry, rtol=1e-5, atol=1e-5)


def test_elementwise_body_is_one_kernel_and_others_a_loop() -> None:
    from frontend.lower import lower_function

    text = _scan((6, 40), 1, "f32", "add", False)
    kernels = lower_function(frontend.parse(text), "main").kernels
    assert kernels.count("func @") == 1 and "_scan(" in kernels
    looped = text.replace("%1 = stablehlo.add %a, %c : tensor<6xf32>",
                          "%r = stablehlo.reverse %a, dims = [0] : tensor<6xf32>\n"
                          "    %1 = stablehlo.add %r, %c : tensor<6xf32>")
    kernels = lower_function(frontend.parse(looped), "main").kernels
    assert "_while(" in kernels and "_scan(" not in kernels  # here a device loop


def test_integer_cumsum_is_exact() -> None:
    x = RNG.integers(-1000, 1000, (7, 300)).astype(np.int32)
    init = RNG.integers(-5, 5, (7,)).astype(np.int32)
    out, carry = run(_scan((7, 300), 1, "i32", "add", False), x, init)
    want = init[:, None] + np.cumsum(x, axis=1)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(carry, want[:, -1])


def test_two_inputs_two_carries_running_argmax() -> None:
    """The suite's cummax-with-index pattern on random data with ties."""
    n = 200
    x = RNG.integers(0, 20, n).astype(np.int32)
    idx = np.arange(n, dtype=np.int32)
    text = """func.func public @main(%x: tensor<200xi32>, %i: tensor<200xi32>)
    -> (tensor<200xi32>, tensor<200xi32>) {
  %v0 = stablehlo.constant dense<-2147483648> : tensor<i32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %0:4 = chlo.scan(%x, %i) inits(%v0, %i0) dimension=0 {
  ^bb0(%cv: tensor<i32>, %ci: tensor<i32>, %rv: tensor<i32>, %ri: tensor<i32>):
    %nv = stablehlo.maximum %rv, %cv : tensor<i32>
    %gt = stablehlo.compare GT, %rv, %cv : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %ni = stablehlo.select %gt, %ri, %ci : tensor<i1>, tensor<i32>
    stablehlo.return %nv, %ni, %nv, %ni : tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>
  } : (tensor<200xi32>, tensor<200xi32>, tensor<i32>, tensor<i32>)
      -> (tensor<200xi32>, tensor<200xi32>, tensor<i32>, tensor<i32>)
  return %0#0, %0#1 : tensor<200xi32>, tensor<200xi32>
}
"""
    vals, where = run(text, x, idx)
    np.testing.assert_array_equal(vals, np.maximum.accumulate(x))
    want = [max(j for j in range(i + 1) if x[j] == vals[i]) for i in range(n)]
    np.testing.assert_array_equal(where, want)


def test_empty_scan_gives_the_inits() -> None:
    x = np.zeros((0, 3), np.float32)
    init = RNG.standard_normal(3).astype(np.float32)
    out, carry = run(_scan((0, 3), 0, "f32", "add", False), x, init)
    assert out.shape == (0, 3)
    np.testing.assert_array_equal(carry, init)


def test_body_reducing_the_slice_runs_as_a_loop() -> None:
    """carry = carry + sum(row): not elementwise over the slice, so the while loop."""
    text = """func.func public @main(%x: tensor<5x3xf32>, %c: tensor<f32>)
    -> (tensor<5xf32>, tensor<f32>) {
  %0:2 = chlo.scan(%x) inits(%c) dimension=0 {
  ^bb0(%a: tensor<3xf32>, %acc: tensor<f32>):
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0]
        : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
    %n = stablehlo.add %s, %acc : tensor<f32>
    stablehlo.return %n, %n : tensor<f32>, tensor<f32>
  } : (tensor<5x3xf32>, tensor<f32>) -> (tensor<5xf32>, tensor<f32>)
  return %0#0, %0#1 : tensor<5xf32>, tensor<f32>
}
"""
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    c = np.float32(0.75)
    out, carry = run(text, x, np.array(c))
    want = c + np.cumsum(x.sum(axis=1))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(carry, want[-1], rtol=1e-5, atol=1e-5)


def test_rnn_like_body_with_a_matrix_product_reversed() -> None:
    """h = tanh(x_t + h @ W) over dimension 1, from the end; outputs every h."""
    b, t, d = 3, 6, 4
    x = RNG.standard_normal((b, t, d)).astype(np.float32)
    w = (0.5 * RNG.standard_normal((d, d))).astype(np.float32)
    h0 = RNG.standard_normal((b, d)).astype(np.float32)
    text = f"""func.func public @main(%x: tensor<{b}x{t}x{d}xf32>, %w: tensor<{d}x{d}xf32>,
    %h: tensor<{b}x{d}xf32>) -> (tensor<{b}x{t}x{d}xf32>, tensor<{b}x{d}xf32>) {{
  %0:2 = chlo.scan(%x) inits(%h) dimension=1 attributes {{is_reverse = true}} {{
  ^bb0(%xt: tensor<{b}x{d}xf32>, %hp: tensor<{b}x{d}xf32>):
    %m = stablehlo.dot_general %hp, %w, contracting_dims = [1] x [0]
        : (tensor<{b}x{d}xf32>, tensor<{d}x{d}xf32>) -> tensor<{b}x{d}xf32>
    %s = stablehlo.add %xt, %m : tensor<{b}x{d}xf32>
    %y = stablehlo.tanh %s : tensor<{b}x{d}xf32>
    stablehlo.return %y, %y : tensor<{b}x{d}xf32>, tensor<{b}x{d}xf32>
  }} : (tensor<{b}x{t}x{d}xf32>, tensor<{b}x{d}xf32>)
      -> (tensor<{b}x{t}x{d}xf32>, tensor<{b}x{d}xf32>)
  return %0#0, %0#1 : tensor<{b}x{t}x{d}xf32>, tensor<{b}x{d}xf32>
}}
"""
    out, carry = run(text, x, w, h0)
    h, want = h0, np.zeros_like(x)
    for i in reversed(range(t)):
        h = np.tanh(x[:, i] + h @ w)
        want[:, i] = h
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(carry, h, rtol=1e-5, atol=1e-5)


def test_body_reading_other_elements_runs_as_a_loop() -> None:
    """A reverse inside the body reads another element of the slice."""
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    init = RNG.standard_normal(3).astype(np.float32)
    text = _scan((5, 3), 0, "f32", "add", False).replace(
        "%1 = stablehlo.add %a, %c : tensor<3xf32>",
        "%r = stablehlo.reverse %a, dims = [0] : tensor<3xf32>\n"
        "    %1 = stablehlo.add %r, %c : tensor<3xf32>")
    out, carry = run(text, x, init)
    want = init + np.cumsum(x[:, ::-1], axis=0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(carry, want[-1], rtol=1e-5, atol=1e-5)


def test_non_splat_constant_in_the_body() -> None:
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    init = RNG.standard_normal(3).astype(np.float32)
    text = _scan((5, 3), 0, "f32", "add", False).replace(
        "%1 = stablehlo.add %a, %c : tensor<3xf32>",
        "%k = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>\n"
        "    %s = stablehlo.add %a, %k : tensor<3xf32>\n"
        "    %1 = stablehlo.add %s, %c : tensor<3xf32>")
    out, carry = run(text, x, init)
    want = init + np.cumsum(x + np.array([1, 2, 3], np.float32), axis=0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(carry, want[-1], rtol=1e-5, atol=1e-5)


def test_constants_and_scalar_broadcasts_in_the_body() -> None:
    """acc = 0.5 * acc + x with a splat constant and a broadcast scalar."""
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    init = RNG.standard_normal(4).astype(np.float32)
    text = _scan((6, 4), 0, "f32", "add", False).replace(
        "%1 = stablehlo.add %a, %c : tensor<4xf32>",
        "%h = stablehlo.constant dense<0.5> : tensor<f32>\n"
        "    %hb = stablehlo.broadcast_in_dim %h, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
        "    %d = stablehlo.multiply %c, %hb : tensor<4xf32>\n"
        "    %1 = stablehlo.add %a, %d : tensor<4xf32>")
    out, carry = run(text, x, init)
    acc, want = init.copy(), []
    for row in x:
        acc = row + np.float32(0.5) * acc
        want.append(acc)
    np.testing.assert_allclose(out, np.stack(want), rtol=1e-6)
    np.testing.assert_allclose(carry, acc, rtol=1e-6)


def test_wrong_body_types_are_a_diagnostic() -> None:
    text = _scan((4, 3), 1, "f32", "add", False).replace("dimension=1", "dimension=0")
    with pytest.raises(CompileError, match="body arguments must be the input slices"):
        frontend.parse(text)


def test_interpret_file() -> None:
    assert interpret_failures("chlo/scan") == {}
