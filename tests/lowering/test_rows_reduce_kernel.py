"""A plain reduce over the trailing dimensions of many long rows runs as a row kernel of
its own (``reduce_rows.fold_rows_into``: one work-item per row, up to 16 accumulators),
for row lengths splitting into 16, 8, 4, 2 or no accumulators; checked against numpy
with poisoned outputs, NaN propagation included."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import module, rand, reduce_module, run
from tests.lowering.test_fusion import kernels


@pytest.mark.parametrize("length", [512, 136, 260, 258, 129])  # 16, 8, 4, 2, 1 accumulators
def test_row_max_and_sum(length: int) -> None:
    a = rand((70, length))
    got = run(reduce_module((70, length), [1], "f32", "maximum", "0xFF800000"), a)[0]
    np.testing.assert_array_equal(got, a.max(axis=1))
    got = run(reduce_module((70, length), [1], "f32", "add", "1.5"), a)[0]
    np.testing.assert_allclose(got, 1.5 + a.astype(np.float64).sum(axis=1), rtol=1e-5,
                               atol=1e-4)


def test_is_one_row_kernel() -> None:
    text = reduce_module((80, 3, 256), [1, 2], "f32", "maximum", "0xFF800000")
    (kernel,) = kernels(text)
    assert kernel.endswith("rows_reduce")  # not reduce_wg: a work-group per row
    a = rand((80, 3, 256))
    np.testing.assert_array_equal(run(text, a)[0], a.max(axis=(1, 2)))


def test_nan_propagates() -> None:
    a = rand((64, 256))
    a[3, 17] = np.nan
    a[40, 255] = np.nan
    got = run(reduce_module((64, 256), [1], "f32", "maximum", "0xFF800000"), a)[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(a).any(axis=1))
    ok = ~np.isnan(a).any(axis=1)
    np.testing.assert_array_equal(got[ok], a[ok].max(axis=1))


@pytest.mark.parametrize(("body", "init", "fn"), [("minimum", "2147483647", np.min),
                                                  ("add", "0", np.sum),
                                                  ("xor", "0", np.bitwise_xor.reduce)])
def test_integer_rows_exact(body: str, init: str, fn: object) -> None:
    a = rand((66, 1000), np.int32)
    got = run(reduce_module((66, 1000), [1], "i32", body, init), a)[0]
    np.testing.assert_array_equal(got, fn(a, axis=1))  # type: ignore[operator]


@pytest.mark.parametrize(("shape", "dims"), [((512, 512), [0, 1]), ((3, 32768), [1]),
                                             ((16384 * 3,), [0])])
def test_long_rows_fold_in_slices(shape: tuple[int, ...], dims: list[int]) -> None:
    text = reduce_module(shape, dims, "f32", "add", "2.5")
    assert kernels(text)[0].endswith("rows_partials")
    a = rand(shape)
    got = run(text, a)[0]  # the init value is folded once, not once per slice
    np.testing.assert_allclose(got, 2.5 + a.astype(np.float64).sum(axis=tuple(dims)),
                               rtol=1e-4, atol=1e-3)
    got = run(reduce_module(shape, dims, "f32", "minimum", "0x7F800000"), a)[0]
    np.testing.assert_array_equal(got, a.min(axis=tuple(dims)))


@pytest.mark.parametrize("rows", [70, 2])  # a row kernel; slices of two long rows
def test_variadic_argmax_rows(rows: int) -> None:
    n = 512 if rows > 2 else 32768
    text = module(f"(%v: tensor<{rows}x{n}xf32>, %i: tensor<{rows}x{n}xi32>) -> "
                  f"(tensor<{rows}xf32>, tensor<{rows}xi32>)", f"""
  %mv = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %mi = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%v init: %mv), (%i init: %mi) across dimensions = [1]
      : (tensor<{rows}x{n}xf32>, tensor<{rows}x{n}xi32>, tensor<f32>, tensor<i32>)
      -> (tensor<{rows}xf32>, tensor<{rows}xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {{
      %gt = stablehlo.compare GT, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %b, %d : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %take = stablehlo.or %gt, %tie : tensor<i1>
      %v2 = stablehlo.select %take, %a, %c : tensor<i1>, tensor<f32>
      %i2 = stablehlo.select %take, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %v2, %i2 : tensor<f32>, tensor<i32>
    }}
  return %0#0, %0#1 : tensor<{rows}xf32>, tensor<{rows}xi32>""")
    v = rand((rows, n))
    v[0, 5] = v[0, 9] = 100.0  # a tie: the lower index wins
    i = np.broadcast_to(np.arange(n, dtype=np.int32), (rows, n)).copy()
    got_v, got_i = run(text, v, i)
    np.testing.assert_array_equal(got_v, v.max(axis=1))
    np.testing.assert_array_equal(got_i, v.argmax(axis=1))
