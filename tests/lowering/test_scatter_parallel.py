"""Parallel scatter: unique indices (one work-item per update) and owner-partitioned
results (several work-groups, updates applied in order per target) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from frontend.lower import scatter_gather
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
