"""The Python API under ``mpiexec -n 2 python script.py``: ``distributed.compile_stablehlo``
on every rank (a 1 x 2 grid from the module's attributes), and ``run_parallel`` inside a
job of its size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from backend_opencl.distributed.launch import child_environment, mpiexec_command
from tests.distributed.mpi_env import needs_mpi

SCRIPT = '''
import sys
import numpy as np
from backend_opencl import distributed

text = """
module @tp attributes {mhlo.num_replicas = 1 : i32, mhlo.num_partitions = 2 : i32} {
  func.func @main(%x: tensor<3x4xf32>, %w: tensor<4x2xf32>) -> tensor<3x4xf32> {
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
        : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %g = "stablehlo.all_gather"(%y) {all_gather_dim = 1 : i64,
        replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        use_global_device_ids} : (tensor<3x2xf32>) -> tensor<3x4xf32>
    return %g : tensor<3x4xf32>
  }
}
"""
exe = distributed.compile_stablehlo(text)
rank = exe.ctx.grid.rank
data = np.load(sys.argv[1])
(out,) = exe(data["x"], data[f"w{rank}"])
np.save(sys.argv[1].replace(".npz", f".out{rank}.npy"), out)
'''


@needs_mpi
def test_tensor_parallel_matmul_through_the_python_api(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, w0=w[:, :2], w1=w[:, 2:])
    (tmp_path / "script.py").write_text(SCRIPT)
    cmd = mpiexec_command(2, [sys.executable, str(tmp_path / "script.py"),
                              str(tmp_path / "in.npz")])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=child_environment(2))
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in range(2):
        got = np.load(tmp_path / f"in.out{rank}.npy")
        np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)


RUN_PARALLEL_SCRIPT = '''
import sys
import numpy as np
from backend_opencl import distributed

text = """
module @m {
  func.func @f(%x: tensor<3xi32>) -> tensor<6xi32> {
    %g = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64,
        replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>} : (tensor<3xi32>) -> tensor<6xi32>
    return %g : tensor<6xi32>
  }
}
"""
a, b = np.arange(3, dtype=np.int32), np.arange(3, 6, dtype=np.int32)
flat = distributed.run_parallel(text, [["f"], ["f"]], [a, b])
from mpi4py import MPI
np.save(sys.argv[1] + f".{MPI.COMM_WORLD.rank}.npy", np.stack(flat))
'''


@needs_mpi
def test_run_parallel_inside_a_job_of_that_size_uses_its_ranks(tmp_path: Path) -> None:
    """Under mpiexec -n 2, run_parallel of 2 processes runs on the job's own ranks (no
    nested launch) and every rank gets every result."""
    (tmp_path / "script.py").write_text(RUN_PARALLEL_SCRIPT)
    cmd = mpiexec_command(2, [sys.executable, str(tmp_path / "script.py"),
                              str(tmp_path / "out")])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=child_environment(2))
    assert done.returncode == 0, done.stdout + done.stderr
    want = np.array([3, 4, 5, 0, 1, 2], dtype=np.int32)  # group [1, 0]: rank 1's first
    for rank in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / f"out.{rank}.npy"),
                                      np.stack([want, want]))
