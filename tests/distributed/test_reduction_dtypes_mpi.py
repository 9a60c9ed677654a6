"""all_reduce over dtypes MPI does not reduce itself (bf16, bool) or must not (float
max with NaN), and integer wrap-around, on 2 ranks."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from backend_opencl import distributed
from tests.distributed.mpi_env import needs_mpi


def _reduce(name: str, t: str, op: str) -> str:
    return f"""
    %{name} = "stablehlo.all_reduce"(%{name}_in) ({{
      ^bb0(%{name}_a: tensor<{t}>, %{name}_b: tensor<{t}>):
        %{name}_r = stablehlo.{op} %{name}_a, %{name}_b : tensor<{t}>
        stablehlo.return %{name}_r : tensor<{t}>
    }}) {{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}} : (tensor<8x{t}>) -> tensor<8x{t}>"""


MODULE = f"""
module @dtypes {{
  func.func @f(%h_in: tensor<8xbf16>, %b_in: tensor<8xi1>, %o_in: tensor<8xi1>,
               %m_in: tensor<8xf32>, %w_in: tensor<8xi8>)
      -> (tensor<8xbf16>, tensor<8xi1>, tensor<8xi1>, tensor<8xf32>, tensor<8xi8>) {{
    {_reduce("h", "bf16", "add")}
    {_reduce("b", "i1", "and")}
    {_reduce("o", "i1", "or")}
    {_reduce("m", "f32", "maximum")}
    {_reduce("w", "i8", "add")}
    return %h, %b, %o, %m, %w : tensor<8xbf16>, tensor<8xi1>, tensor<8xi1>, tensor<8xf32>,
        tensor<8xi8>
  }}
}}
"""


@needs_mpi
def test_bf16_bool_nan_and_wrapping_reductions() -> None:
    rng = np.random.default_rng(3)
    per_rank = []
    for rank in range(2):
        m = rng.standard_normal(8).astype(np.float32)
        if rank == 1:
            m[2] = np.nan
        per_rank.append([rng.standard_normal(8).astype(ml_dtypes.bfloat16),
                         rng.integers(0, 2, 8).astype(bool), rng.integers(0, 2, 8).astype(bool),
                         m, rng.integers(60, 127, 8).astype(np.int8)])
    flat = distributed.run_parallel(MODULE, [["f"], ["f"]], per_rank[0] + per_rank[1])
    a, b = per_rank
    want = [(a[0].astype(np.float32) + b[0].astype(np.float32)).astype(ml_dtypes.bfloat16),
            a[1] & b[1], a[2] | b[2], np.maximum(a[3], b[3]),
            (a[4].astype(np.int16) + b[4]).astype(np.int8)]
    for rank in range(2):
        got = flat[5 * rank:5 * rank + 5]
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    assert np.isnan(flat[3][2])
