"""``mpiexec -n N tlc run``: sharded inputs, per-rank outputs, the world-size check and a
failing rank ending the job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from backend_opencl.distributed.launch import child_environment, mpiexec_command
from tests.distributed.mpi_env import needs_mpi

PROGRAM = """
module @dp attributes {mhlo.num_replicas = 2 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @main(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<3x2xf32>) {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
        : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %t = stablehlo.tanh %y : tensor<4x2xf32>
    %g = stablehlo.dot_general %x, %t, contracting_dims = [0] x [0]
        : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %s = "stablehlo.all_reduce"(%g) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %0 = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %0 : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %r = stablehlo.replica_id : tensor<ui32>
    %rf = stablehlo.convert %r : (tensor<ui32>) -> tensor<f32>
    %rb = stablehlo.broadcast_in_dim %rf, dims = [] : (tensor<f32>) -> tensor<3x2xf32>
    %o = stablehlo.add %s, %rb : tensor<3x2xf32>
    return %t, %o : tensor<4x2xf32>, tensor<3x2xf32>
  }
}
"""

TLC = str(Path(sys.executable).parent / "tlc")


def _run(n: int, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    cmd = mpiexec_command(n, [TLC, "run", "prog.mlir", *args])
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=child_environment())


def _shards(tmp_path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    (tmp_path / "prog.mlir").write_text(PROGRAM)
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    shards = []
    for rank in range(2):
        x = rng.standard_normal((4, 3)).astype(np.float32)
        np.savez(tmp_path / f"in.{rank}.npz", x=x, w=w)
        shards.append((x, w))
    return shards


@needs_mpi
def test_each_rank_runs_its_shard_and_gradients_are_summed(tmp_path: Path) -> None:
    shards = _shards(tmp_path)
    done = _run(2, ["--inputs", "in.{rank}.npz", "-o", "out.{rank}.npz"], tmp_path)
    assert done.returncode == 0, done.stderr
    ts = [np.tanh(x @ w) for x, w in shards]
    grad = sum(x.T @ t for (x, _), t in zip(shards, ts, strict=True))
    for rank in range(2):
        with np.load(tmp_path / f"out.{rank}.npz") as out:
            np.testing.assert_allclose(out["result0"], ts[rank], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["result1"], grad + rank, rtol=1e-5, atol=1e-5)


@needs_mpi
def test_a_wrong_process_count_is_reported_by_every_rank(tmp_path: Path) -> None:
    _shards(tmp_path)
    done = _run(3, ["--inputs", "in.0.npz"], tmp_path)
    assert done.returncode != 0
    for rank in range(3):
        assert f"rank {rank} of 3: prog.mlir: error: the program runs on" in done.stderr


@needs_mpi
def test_one_failing_rank_ends_the_job(tmp_path: Path) -> None:
    """Only rank 0 has an input file: rank 1 fails, rank 0 must not wait forever in the
    all_reduce."""
    _shards(tmp_path)
    (tmp_path / "in.1.npz").unlink()
    done = _run(2, ["--inputs", "in.{rank}.npz"], tmp_path)
    assert done.returncode != 0
    assert "rank 1 of 2: in.1.npz: error: cannot read inputs" in done.stderr


def test_without_mpirun_a_multi_process_program_says_how_to_start_it(tmp_path: Path) -> None:
    _shards(tmp_path)
    done = subprocess.run([TLC, "run", "prog.mlir", "--inputs", "in.0.npz"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env=child_environment())
    assert done.returncode == 1
    assert "2 processes, but 1 was started: mpirun -n 2" in done.stderr
    assert "Traceback" not in done.stderr
