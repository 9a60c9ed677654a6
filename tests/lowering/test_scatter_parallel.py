"""Parallel scatter: unique indices (one work-item per update) and owner-partitioned
results (several work-groups, updates applied in order per target; small results
written by the same kernel) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from frontend.lower.families import scatter_gather
from tests.lowering.conftest import module, rand, run


def _scatter(n: int, m: int, body: str, unique: bool, t: str = "i32") -> str:
    attr = ", unique_indices = true" if unique else ""
    return module(f"(%a: tensor<{n}x{t}>, %i: tensor<{m}x1xi64>, %u: tensor<{m}x{t}>) -> "
                  f"tensor<{n}x{t}>", f"""
  %0 = "stablehlo.scatter"(%a, %i,
      %u) <{{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>{attr}}}> ({{
  ^bb0(%x: tensor<{t}>, %y: tensor<{t}>):
    {body}
  }}) : (tensor<{n}x{t}>, tensor<{m}x1xi64>, tensor<{m}x{t}>) -> tensor<{n}x{t}>
  return %0 : tensor<{n}x{t}>""")


ADD = "%s = stablehlo.add %x, %y : tensor<i32>\n    stablehlo.return %s : tensor<i32>"
REPLACE = "stablehlo.return %y : tensor<i32>"


def test_unique_indices_parallel() -> None:
    n, m = 5003, 3001
    rng = np.random.default_rng(3)
    idx = rng.permutation(n + 50)[:m].astype(np.int64)  # some out of bounds: skipped
    a, u = rand((n,), np.int32), rand((m,), np.int32)
    want = a.copy()
    inside = idx < n
    want[idx[inside]] += u[inside]
    got = run(_scatter(n, m, ADD, True), a, idx[:, None], u)[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("body", [ADD, REPLACE])
@pytest.mark.parametrize("n", [4099, 10007])
def test_owned_parts_keep_update_order(body: str, n: int) -> None:
    m = 6000
    rng = np.random.default_rng(n)
    idx = rng.integers(-5, n + 5, size=m).astype(np.int64)  # duplicates and out of bounds
    a, u = rand((n,), np.int32), rand((m,), np.int32)
    want = a.copy()
    for j, v in zip(idx, u, strict=True):
        if 0 <= j < n:
            want[j] = want[j] + v if body is ADD else v
    assert n >= scatter_gather.OWNED_MIN
    got = run(_scatter(n, m, body, False), a, idx[:, None], u)[0]
    np.testing.assert_array_equal(got, want)


def test_batched_scatter_add_copies_in_its_kernel() -> None:
    """take_along_axis's gradient (batching dimensions, no window): the operand (a
    computed one) is written by the scatter's own kernel before the updates."""
    rows, cols = 130, 10
    rng = np.random.default_rng(8)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    idx = rng.integers(-1, cols + 1, size=(rows, 3, 1)).astype(np.int32)  # repeats, outside
    u = rng.standard_normal((rows, 3)).astype(np.float32)
    text = module(f"(%a: tensor<{rows}x{cols}xf32>, %i: tensor<{rows}x3x1xi32>, "
                  f"%u: tensor<{rows}x3xf32>) -> tensor<{rows}x{cols}xf32>", f"""
  %a2 = stablehlo.multiply %a, %a : tensor<{rows}x{cols}xf32>
  %0 = "stablehlo.scatter"(%a2, %i, %u) <{{indices_are_sorted = false,
      scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [1],
      input_batching_dims = [0], scatter_indices_batching_dims = [0],
      scatter_dims_to_operand_dims = [1], index_vector_dim = 2>, unique_indices = false}}> ({{
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }}) : (tensor<{rows}x{cols}xf32>, tensor<{rows}x3x1xi32>, tensor<{rows}x3xf32>)
      -> tensor<{rows}x{cols}xf32>
  return %0 : tensor<{rows}x{cols}xf32>""")
    want = a * a
    for r in range(rows):
        for j in range(3):
            c = idx[r, j, 0]
            if 0 <= c < cols:
                want[r, c] += u[r, j]
    np.testing.assert_array_equal(run(text, a, idx, u)[0], want)
    kernels = lower_function(frontend.parse(text)).kernels
    assert kernels.count("func @") == 1
