"""The interpret suite's multi-process files (../shared/conformance/stablehlo/interpret)
through ``distributed.run_parallel_many``: each module's ``@main`` is evaluated here (its
constants, ``interpreter.run_parallel`` and ``check.expect_eq_const``), so these files
are checked on MPI ranks whether or not ``tlc interpret`` is present; the modules of one
file share one MPI job (as many ranks as the largest needs)."""

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


def _cases(text: str, filename: str) -> tuple[list[distributed.Case], list[object]]:
    """The run_parallel calls of one module's ``@main`` (their inputs are constants) and
    its ops, for checking once the results are in."""
    module = frontend.parse(text, filename=filename)
    env: dict[object, object] = {}
    cases = []
    ops = module.func("main").body.block.ops
    for op in ops:
        if op.name == "stablehlo.constant":
            env[op.results[0]] = np.asarray(op.attrs["value"].array)
        elif op.name == "stablehlo.after_all":
            env[op.results[0]] = None
        elif op.name == "interpreter.run_parallel":
            programs = [[str(p).lstrip("@") for p in row] for row in op.attr("programs")]
            cases.append((text, programs, [env[v] for v in op.operands]))
    return cases, ops


def _check(ops: list[object], results: list[list[object]], name: str) -> int:
    """Compare the ``check.expect_eq_const`` ops with the results; how many held."""
    env: dict[object, object] = {}
    calls = iter(results)
    checks = 0
    for op in ops:
        if op.name == "interpreter.run_parallel":
            env.update(zip(op.results, next(calls), strict=True))
        elif op.name == "check.expect_eq_const":
            want = np.asarray(op.attrs["expected"].array)
            got = env[op.operands[0]]
            assert got is not None and got.dtype == want.dtype, (name, got, want)
            np.testing.assert_array_equal(got, want, err_msg=name)
            checks += 1
    return checks


@pytest.mark.parametrize("name", FILES)
def test_multi_process_interpret_file_passes(name: str) -> None:
    """All modules of the file in one MPI job (run_parallel_many)."""
    path = SUITE / f"{name}.mlir"
    modules = [_cases(chunk, str(path)) for chunk in path.read_text().split("// -----")]
    results = iter(distributed.run_parallel_many([c for cases, _ in modules for c in cases]))
    checks = sum(_check(ops, [next(results) for _ in cases], f"{name}: module {i}")
                 for i, (cases, ops) in enumerate(modules))
    assert checks > 0
