"""A large concatenation (or element-wise ops of one) is written by a kernel per input,
each over its slice of the result (frontend/lower/core/concat_slices.py)."""

from __future__ import annotations

import numpy as np
import pytest

from frontend.lower.core import concat_slices
from tests.lowering.conftest import module, rand, run
from tests.lowering.test_fusion import kernels


def _ty(shape: tuple[int, ...]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def transpose_concat(b: int, m: int, n: int, r: int) -> str:
    """``concatenate([x.transpose(0, 2, 1), y], axis=1) * 2`` for x (b, m, n), y (b, r, m)."""
    x, xt, y, out = _ty((b, m, n)), _ty((b, n, m)), _ty((b, r, m)), _ty((b, n + r, m))
    return module(f"(%x: {x}, %y: {y}) -> {out}", f"""
  %0 = stablehlo.transpose %x, dims = [0, 2, 1] : ({x}) -> {xt}
  %1 = stablehlo.concatenate %0, %y, dim = 1 : ({xt}, {y}) -> {out}
  %c = stablehlo.constant dense<2.0> : tensor<f32>
  %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> {out}
  %3 = stablehlo.multiply %1, %2 : {out}
  return %3 : {out}""")


@pytest.mark.parametrize("shape", [(64, 128, 64, 32), (3, 129, 67, 5), (2, 300, 17, 1)])
def test_transposed_input_and_second_input_each_write_their_slice(
        shape: tuple[int, int, int, int]) -> None:
    b, m, n, r = shape
    x, y = rand((b, m, n)), rand((b, r, m))
    (got,) = run(transpose_concat(b, m, n, r), x, y)
    want = np.concatenate([x.transpose(0, 2, 1), y], axis=1) * 2
    np.testing.assert_array_equal(got, want)


def test_large_concatenation_is_a_kernel_per_input() -> None:
    names = kernels(transpose_concat(64, 128, 64, 32))
    assert len(names) == 2 and all("concat" in name for name in names)


def test_small_concatenation_stays_one_kernel() -> None:
    assert len(kernels(transpose_concat(2, 8, 4, 3))) == 1


def test_concatenation_along_the_last_dimension_with_three_inputs() -> None:
    a, b, c = rand((257, 100)), rand((257, 1)), rand((257, 163))
    ta, tb, tc, out = _ty(a.shape), _ty(b.shape), _ty(c.shape), _ty((257, 264))
    text = module(f"(%a: {ta}, %b: {tb}, %c: {tc}) -> {out}", f"""
  %0 = stablehlo.concatenate %a, %b, %c, dim = 1 : ({ta}, {tb}, {tc}) -> {out}
  %1 = stablehlo.exponential %0 : {out}
  return %1 : {out}""")
    assert len(kernels(text)) == 3
    (got,) = run(text, a, b, c)
    np.testing.assert_allclose(got, np.exp(np.concatenate([a, b, c], axis=1)), rtol=2e-6)


def test_concatenation_read_twice_by_the_result() -> None:
    """A concatenation read twice is written by its slice kernels, then read by a kernel."""
    a, b = rand((300, 256)), rand((300, 256))
    ta, out = _ty(a.shape), _ty((600, 256))
    text = module(f"(%a: {ta}, %b: {ta}) -> {out}", f"""
  %0 = stablehlo.concatenate %a, %b, dim = 0 : ({ta}, {ta}) -> {out}
  %1 = stablehlo.multiply %0, %0 : {out}
  %2 = stablehlo.subtract %1, %0 : {out}
  return %2 : {out}""")
    assert kernels(text) == ["k0_concat0", "k1_concat300", "k2_subtract"]
    (got,) = run(text, a, b)
    x = np.concatenate([a, b])
    np.testing.assert_allclose(got, x * x - x, rtol=1e-6, atol=1e-6)


def test_more_inputs_than_the_limit_stay_one_kernel() -> None:
    n = concat_slices.MAX_INPUTS + 1
    t, out = _ty((400, 200)), _ty((400 * n, 200))
    args = ", ".join(f"%a{i}: {t}" for i in range(n))
    ops = ", ".join(f"%a{i}" for i in range(n))
    text = module(f"({args}) -> {out}", f"""
  %0 = stablehlo.concatenate {ops}, dim = 0 : ({", ".join([t] * n)}) -> {out}
  return %0 : {out}""")
    assert len(kernels(text)) == 1
    arrays = [rand((400, 200)) for _ in range(n)]
    (got,) = run(text, *arrays)
    np.testing.assert_array_equal(got, np.concatenate(arrays))
