"""Sliced column reductions (few outputs along a kept innermost dimension, many reduced
positions: a batch norm's statistics) against numpy: slices that do and do not divide
the positions, column blocks of 32 / 16 / 4, a fused producer, integers exact, the init
value folded once, a variadic reduce; and which kernels they take."""

from __future__ import annotations

import numpy as np
import pytest

from frontend import parse
from frontend.lower import lower_function
from tests.lowering.conftest import module, rand, reduce_module, run

SHAPES = [((16, 32, 32, 32), [0, 1, 2]),   # 16384 positions x 32 channels
          ((8, 30, 17, 64), [0, 1, 2]),    # 4080: slices do not divide it
          ((100, 40, 12), [0, 1]),         # 12 outputs: blocks of 4
          ((3, 1500, 16), [0, 1])]


@pytest.mark.parametrize(("shape", "dims"), SHAPES)
def test_float_sum(shape: tuple[int, ...], dims: list[int]) -> None:
    a = rand(shape)
    text = reduce_module(shape, dims, "f32", "add", "0.0")
    assert "reduce_cols_sliced" in lower_function(parse(text)).kernels
    got = run(text, a)[0]
    np.testing.assert_allclose(got, a.astype(np.float64).sum(axis=tuple(dims)), rtol=1e-4,
                               atol=1e-3)


@pytest.mark.parametrize(("body", "fn", "init"), [("add", np.sum, "7"),
                                                  ("maximum", np.max, "-2147483648")])
def test_integer_exact_with_init(body: str, fn: object, init: str) -> None:
    shape, dims = (12, 50, 16), [0, 1]
    a = rand(shape, np.int32)
    got = run(reduce_module(shape, dims, "i32", body, init), a)[0]
    want = fn(a, axis=(0, 1))  # type: ignore[operator]
    np.testing.assert_array_equal(got, want + (7 if body == "add" else 0))


def test_fused_variance() -> None:
    """sum((x - 0.5)^2) over the batch and spatial dimensions, the producer computed
    where the slices read it."""
    ty, oty = "tensor<16x16x16x64xf32>", "tensor<64xf32>"
    text = module(f"(%x: {ty}) -> {oty}", f"""
  %h = stablehlo.constant dense<0.5> : {ty}
  %d = stablehlo.subtract %x, %h : {ty}
  %s = stablehlo.multiply %d, %d : {ty}
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%s init: %z) applies stablehlo.add across dimensions = [0, 1, 2]
      : ({ty}, tensor<f32>) -> {oty}
  return %0 : {oty}""")
    x = rand((16, 16, 16, 64))
    want = ((x.astype(np.float64) - 0.5) ** 2).sum(axis=(0, 1, 2))
    np.testing.assert_allclose(run(text, x)[0], want, rtol=1e-4)


def test_variadic_min_and_max() -> None:
    ty, oty = "tensor<64x40x8xf32>", "tensor<8xf32>"
    text = module(f"(%a: {ty}, %b: {ty}) -> ({oty}, {oty})", f"""
  %lo = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %hi = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0:2 = stablehlo.reduce(%a init: %lo), (%b init: %hi) across dimensions = [0, 1]
      : ({ty}, {ty}, tensor<f32>, tensor<f32>) -> ({oty}, {oty})
    reducer(%p: tensor<f32>, %q: tensor<f32>) (%r: tensor<f32>, %s: tensor<f32>) {{
      %m = stablehlo.minimum %p, %q : tensor<f32>
      %n = stablehlo.maximum %r, %s : tensor<f32>
      stablehlo.return %m, %n : tensor<f32>, tensor<f32>
    }}
  return %0#0, %0#1 : {oty}, {oty}""")
    a, b = rand((64, 40, 8)), rand((64, 40, 8))
    assert "reduce_cols_sliced" in lower_function(parse(text)).kernels
    got_min, got_max = run(text, a, b)
    np.testing.assert_array_equal(got_min, a.min(axis=(0, 1)))
    np.testing.assert_array_equal(got_max, b.max(axis=(0, 1)))


def test_short_or_wide_reductions_take_other_kernels() -> None:
    for shape, dims in (((8, 100, 32), [0]), ((64, 40, 128), [0, 1])):
        kernels = lower_function(parse(reduce_module(shape, dims, "f32", "add", "0.0"))).kernels
        assert "reduce_cols_sliced" not in kernels
