"""The interpret suite's multi-process files (../shared/conformance/stablehlo/interpret)
through ``distributed.run_parallel``: each module's ``@main`` is evaluated here (its
constants, ``interpreter.run_parallel`` and ``check.expect_eq_const``), so these files
are checked on MPI ranks whether or not ``tlc interpret`` is present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import frontend
from backend_opencl import distributed
from frontend.ir.ops import OPS
from tests.distributed.mpi_env import needs_mpi

SUITE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "stablehlo" \
    / "interpret"
FILES = ["all_gather", "all_reduce", "all_to_all", "collective_broadcast",
         "collective_permute", "collective_reduce", "reduce_scatter", "send_recv",
         "partition_id", "replica_id"]

pytestmark = [
    needs_mpi,
    pytest.mark.skipif(not SUITE.is_dir(), reason="needs ../shared/conformance"),
    pytest.mark.skipif("interpreter.run_parallel" not in OPS,
                       reason="the parser does not know interpreter.run_parallel"),
]


def _run_module(text: str, filename: str) -> int:
    """Evaluate ``@main`` of one module; the number of checks that held (a mismatch
    fails the test)."""
    module = frontend.parse(text, filename=filename)
    env: dict[object, object] = {}
    checks = 0
    for op in module.func("main").body.block.ops:
        if op.name == "stablehlo.constant":
            env[op.results[0]] = np.asarray(op.attrs["value"].array)
        elif op.name == "stablehlo.after_all":
            env[op.results[0]] = None
        elif op.name == "interpreter.run_parallel":
            programs = [[str(p).lstrip("@") for p in row] for row in op.attr("programs")]
            results = distributed.run_parallel(text, programs, [env[v] for v in op.operands])
            env.update(zip(op.results, results, strict=True))
        elif op.name == "check.expect_eq_const":
            want = np.asarray(op.attrs["expected"].array)
            got = env[op.operands[0]]
            assert got is not None and got.dtype == want.dtype, (module.name, got, want)
            np.testing.assert_array_equal(got, want, err_msg=f"module @{module.name}")
            checks += 1
    return checks


@pytest.mark.parametrize("name", FILES)
def test_multi_process_interpret_file_passes(name: str) -> None:
    path = SUITE / f"{name}.mlir"
    chunks = path.read_text().split("// -----")
    checks = sum(_run_module(chunk, str(path)) for chunk in chunks)
    assert checks > 0
