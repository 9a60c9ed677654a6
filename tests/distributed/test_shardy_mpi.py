"""JAX ``shard_map`` exports in Shardy form (``sdy.manual_computation``): the per-device
program, the shards of global inputs, and (on 4 ranks) global outputs equal to numpy's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backend_opencl.distributed import shardy
from backend_opencl.distributed.launch import child_environment, mpiexec_command
from tensorlang.diagnostics import TlcError
from tests.distributed.mpi_env import needs_mpi

# data/shard_map_2x2.mlir, from jax 0.8: jax.jit(jax.shard_map(step,
#   mesh=Mesh(devices.reshape(2, 2), ("x", "y")), in_specs=(P("x", "y"), P("y", None)),
#   out_specs=(P("x", None), P(None, None)), check_vma=False)).lower(a, b).as_text(),
#   where step(a, b) computes s = psum(sin(a) @ b, "y") and returns s and
#   all_gather(s, "x", axis=0, tiled=True).
EXPORT = (Path(__file__).parent / "data" / "shard_map_2x2.mlir").read_text()


def test_the_manual_region_becomes_a_per_device_module() -> None:
    program = shardy.from_shardy(EXPORT)
    assert program.axes == [("x", 2), ("y", 2)] and program.devices == 4
    assert program.in_specs == [[["x"], ["y"]], [["y"], []]]
    assert program.out_specs == [[["x"], []], [[], []]]
    assert "mhlo.num_partitions = 4" in program.text and "sdy." not in program.text


def test_each_device_holds_its_block() -> None:
    program = shardy.from_shardy(EXPORT)
    # device 3 = (x=1, y=1): rows 2..3 of a, columns 3..5
    assert shardy.shard_slices(program, [["x"], ["y"]], (4, 6), 3) == (slice(2, 4),
                                                                       slice(3, 6))
    assert shardy.shard_slices(program, [["y"], []], (6, 5), 2) == (slice(0, 3), slice(0, 5))


@needs_mpi
def test_a_shard_map_export_runs_on_four_ranks(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32)
    (tmp_path / "prog.mlir").write_text(EXPORT)
    np.savez(tmp_path / "in.npz", a=a, b=b)
    tlc = str(Path(sys.executable).parent / "tlc")
    cmd = mpiexec_command(4, [tlc, "run", "prog.mlir", "--inputs", "in.npz", "-o", "out.npz"])
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          env=child_environment(4))
    assert done.returncode == 0, done.stdout + done.stderr
    want = np.sin(a) @ b
    for rank in range(4):
        with np.load(tmp_path / f"out.{rank}.npz") as out:
            np.testing.assert_allclose(out["result0"], want, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(out["result1"], want, rtol=1e-5, atol=1e-5)


def test_a_main_doing_more_than_the_manual_computation_is_refused() -> None:
    swapped = EXPORT.replace("return %0#0, %0#1", "return %0#1, %0#0")
    with pytest.raises(TlcError, match="one sdy.manual_computation"):
        shardy.from_shardy(swapped)
