"""Collectives across 2 and 4 MPI ranks (spawned by run_parallel) against numpy.

One module per grid so each case costs one ``mpiexec``: device ops before and after the
collectives, random non-zero data, every result compared with a numpy model of the
spec's semantics written here independently of the implementation's group code.
"""

from __future__ import annotations

import numpy as np
import pytest

from backend_opencl import distributed
from tensorlang.diagnostics import TlcError
from tests.distributed.mpi_env import needs_mpi

ADD = """({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r0 = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %r0 : tensor<f32>
})"""
CUSTOM = """({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r1 = stablehlo.multiply %a, %b : tensor<f32>
    %r2 = stablehlo.add %r1, %a : tensor<f32>
    stablehlo.return %r2 : tensor<f32>
})"""
MAX_I = """({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %r3 = stablehlo.maximum %a, %b : tensor<i32>
    stablehlo.return %r3 : tensor<i32>
})"""


def _module(groups: str, channel: str, n: int) -> str:
    """``@step``: every collective once, over ``groups`` (``n`` processes per group)."""
    ch = f", channel_handle = #stablehlo.channel_handle<handle = {channel}, type = 0>"
    g = f"replica_groups = dense<{groups}> : tensor<1x{n}xi64>{ch}"
    pairs = [[k, (k + 1) % n] for k in range(n)]  # a ring
    return f"""
module @m {{
  func.func @step(%x: tensor<4x6xf32>, %i: tensor<6xi32>) -> (tensor<4x6xf32>,
      tensor<4x6xf32>, tensor<4x{6 * n}xf32>, tensor<{4 // n}x6xf32>, tensor<{4 * n}x{6 // n}xf32>,
      tensor<4x6xf32>, tensor<6xi32>, tensor<6xi32>) {{
    %e = stablehlo.exponential %x : tensor<4x6xf32>
    %s = "stablehlo.all_reduce"(%e) {ADD} {{{g}}} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %c = "stablehlo.all_reduce"(%x) {CUSTOM} {{{g}}} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %ga = "stablehlo.all_gather"(%x) {{all_gather_dim = 1 : i64, {g}}}
        : (tensor<4x6xf32>) -> tensor<4x{6 * n}xf32>
    %rs = "stablehlo.reduce_scatter"(%x) {ADD} {{scatter_dimension = 0 : i64, {g}}}
        : (tensor<4x6xf32>) -> tensor<{4 // n}x6xf32>
    %aa = "stablehlo.all_to_all"(%x) {{split_dimension = 1 : i64, concat_dimension = 0 : i64,
        split_count = {n} : i64, {g}}} : (tensor<4x6xf32>) -> tensor<{4 * n}x{6 // n}xf32>
    %p = "stablehlo.collective_permute"(%x) {{source_target_pairs = dense<{pairs}>
        : tensor<{n}x2xi64>{ch}}} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %bc = "stablehlo.collective_broadcast"(%i) {{{g}}} : (tensor<6xi32>) -> tensor<6xi32>
    %m = "stablehlo.all_reduce"(%i) {MAX_I} {{{g}}} : (tensor<6xi32>) -> tensor<6xi32>
    %after = stablehlo.subtract %s, %p : tensor<4x6xf32>
    return %after, %c, %ga, %rs, %aa, %p, %bc, %m : tensor<4x6xf32>, tensor<4x6xf32>,
        tensor<4x{6 * n}xf32>, tensor<{4 // n}x6xf32>, tensor<{4 * n}x{6 // n}xf32>,
        tensor<4x6xf32>, tensor<6xi32>, tensor<6xi32>
  }}
}}
"""


def _inputs(n: int, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(0.5, 1.5, (4, 6)).astype(np.float32) for _ in range(n)]
    ins = [rng.integers(-50, 50, 6).astype(np.int32) for _ in range(n)]
    return xs, ins


def _expected(wide: list[int], narrow: list[int], me: int, xs: list[np.ndarray],
              ins: list[np.ndarray], partner: int) -> list[np.ndarray]:
    """The spec's results on process ``me``: ``wide`` is its group for all_reduce,
    all_gather and reduce_scatter, ``narrow`` for all_to_all and collective_broadcast;
    ``partner`` sends it the permute."""
    gx = [xs[r] for r in wide]
    custom = gx[0]
    for x in gx[1:]:
        custom = custom * x + custom
    k, n = wide.index(me), len(wide)
    j = narrow.index(me)
    a2a = np.concatenate([np.split(xs[r], len(narrow), axis=1)[j] for r in narrow], axis=0)
    return [sum(np.exp(x) for x in gx) - xs[partner], custom, np.concatenate(gx, axis=1),
            np.split(sum(gx), n, axis=0)[k], a2a, xs[partner], ins[narrow[0]],
            np.max([ins[r] for r in wide], axis=0)]


def _check(results: list[np.ndarray], expected: list[np.ndarray]) -> None:
    for got, want in zip(results, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@needs_mpi
def test_two_replicas_run_every_collective() -> None:
    xs, ins = _inputs(2, 0)
    flat = distributed.run_parallel(_module("[[0, 1]]", "0", 2), [["step"], ["step"]],
                                    [a for pair in zip(xs, ins, strict=True) for a in pair])
    for rank in range(2):
        _check(flat[8 * rank:8 * rank + 8], _expected([0, 1], [0, 1], rank, xs, ins, 1 - rank))


@needs_mpi
def test_two_by_two_grid_groups_across_partitions() -> None:
    """channel_handle > 0: all_reduce / all_gather / reduce_scatter group replicas and
    partitions ([[0,1]] x 2 partitions = all four, partition-major); all_to_all,
    collective_broadcast and collective_permute group the partitions of one replica."""
    xs, ins = _inputs(4, 1)
    module = _module("[[0, 1]]", "1", 2).replace("tensor<4x12xf32>", "tensor<4x24xf32>") \
        .replace("tensor<2x6xf32>", "tensor<1x6xf32>")
    flat = distributed.run_parallel(module, [["step", "step"], ["step", "step"]],
                                    [a for pair in zip(xs, ins, strict=True) for a in pair])
    for rank in range(4):
        wide = [0, 2, 1, 3]  # cross_replica_and_partition: (0,0), (1,0), (0,1), (1,1)
        narrow = [rank - rank % 2, rank - rank % 2 + 1]  # cross_partition: one replica's
        want = _expected(wide, narrow, rank, xs, ins, partner=rank ^ 1)
        _check(flat[8 * rank:8 * rank + 8], want)


@needs_mpi
def test_a_failing_rank_stops_the_job_with_its_message(capfd: pytest.CaptureFixture) -> None:
    """Rank 1 reads an input of the wrong shape: the job ends (no hang), naming the rank."""
    module = _module("[[0, 1]]", "0", 2)
    xs, ins = _inputs(2, 2)
    with pytest.raises(TlcError, match="failed"):
        distributed.run_parallel(module, [["step"], ["step"]],
                                 [xs[0], ins[0], xs[1][:2], ins[1]], timeout_s=60)
    assert "rank 1 of 2" in capfd.readouterr().err


def test_one_process_runs_here_without_mpi() -> None:
    xs, ins = _inputs(1, 3)
    module = _module("[[0]]", "0", 1)
    flat = distributed.run_parallel(module, [["step"]], [xs[0], ins[0]])
    _check(flat, _expected([0], [0], 0, xs, ins, 0))


def test_a_grid_that_is_not_rectangular_is_an_error() -> None:
    with pytest.raises(TlcError, match="rectangular"):
        distributed.run_parallel("module {}", [["a", "b"], ["c"]], [])
