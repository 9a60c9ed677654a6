"""``tlc run`` as one MPI rank: ``mpirun -n N tlc run FILE.mlir --inputs IN.npz``.

Every rank runs the module's entry function as its process.  ``--inputs`` (comma-separated
``.npz`` / ``.npy`` files, as for one process) and ``-o`` may contain ``{rank}``,
``{replica}`` and ``{partition}`` to give each rank its own shard (without them every
rank reads the same inputs, and with several ranks the output ``out.npz`` becomes
``out.RANK.npz``).  A mistake every rank sees (the process count against
``num_replicas`` x ``num_partitions``, a missing file) is reported by every rank; any
failure of one rank aborts the job so the others never wait forever.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from backend_opencl.distributed.grid import ProcessGrid
from backend_opencl.distributed.program import grid_for
from backend_opencl.distributed.transport import Transport
from backend_opencl.tools.files import read_input_arrays
from tensorlang.diagnostics import TlcError


def shard_path(pattern: str, grid: ProcessGrid, output: bool = False) -> str:
    """``pattern`` with ``{rank}``, ``{replica}``, ``{partition}`` filled in (an output
    without them gets ``.RANK`` before its suffix when there are several ranks)."""
    if "{" in pattern:
        try:
            return pattern.format(rank=grid.rank, replica=grid.replica_id,
                                  partition=grid.partition_id)
        except (KeyError, IndexError, ValueError) as err:
            raise TlcError(f"{pattern}: error: bad placeholder {err} (use {{rank}}, "
                           "{replica} or {partition})") from None
    if output and grid.size > 1:
        p = Path(pattern)
        return str(p.with_name(f"{p.stem}.{grid.rank}{p.suffix}"))
    return pattern


LOCAL_RANK_ENV = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK")
"""Where MPI launchers put a rank's index among the ranks of its machine."""


def local_rank(grid: ProcessGrid) -> int:
    """This rank's index on its machine (its world rank when the launcher does not say)."""
    for name in LOCAL_RANK_ENV:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return grid.rank


def rank_device(spec: str | None, grid: ProcessGrid) -> str | None:
    """``--device`` with ``{local_rank}`` / ``{rank}`` filled in, so each rank of a machine
    with several devices takes its own: ``tlc --device '{local_rank}' run ...``."""
    if spec is None or "{" not in spec:
        return spec
    try:
        return spec.format(local_rank=local_rank(grid), rank=grid.rank)
    except (KeyError, IndexError, ValueError) as err:
        raise TlcError(f"--device {spec}: error: bad placeholder {err} (use {{local_rank}} "
                       "or {rank})") from None


def run_cli(args: argparse.Namespace) -> int:
    """This rank's ``tlc run``; 0 on success (errors: TlcError, or an abort)."""
    from backend_opencl.distributed import world_transport

    transport = world_transport()
    text = _read(args.file)
    try:  # the same verdict on every rank: each reports it and exits
        grid = grid_for(text, transport.size, transport.rank)
    except TlcError as err:
        who = f"rank {transport.rank} of {transport.size}: " if transport.size > 1 else ""
        raise TlcError(f"{who}{args.file}: {err}") from None
    try:
        results = _run(args, text, grid, transport)
    except BaseException as err:  # noqa: B036 -- one failing rank stops them all
        if transport.size == 1:
            raise
        from backend_opencl.distributed import describe_failure

        sys.stderr.write(describe_failure(err, transport) + "\n")
        sys.stderr.flush()
        transport.abort(1)
        return 1
    _write(args, results, grid)
    return 0


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise TlcError(f"{path}: error: cannot read file: {err}") from None


def _run(args: argparse.Namespace, text: str, grid: ProcessGrid,
         transport: Transport) -> list[np.ndarray | None]:
    from backend_opencl.distributed import spmd_program

    device = rank_device(args.device, grid)
    program = spmd_program(text, args.entry, transport, device, args.file)
    inputs = [a for part in args.inputs.split(",") if part.strip()
              for a in read_input_arrays(shard_path(part.strip(), grid))] if args.inputs else []
    results: list[np.ndarray | None] = []
    for _ in range(max(getattr(args, "repeat", 1), 1)):
        results = program(*inputs)
    return results


def _write(args: argparse.Namespace, results: list[np.ndarray | None], grid: ProcessGrid
           ) -> None:
    out: dict[str, Any] = {  # Any: numpy's stub of savez types **kwds as allow_pickle too
       f"result{i}": r for i, r in enumerate(results) if r is not None}
    if args.output:
        np.savez(shard_path(args.output, grid, output=True), **out)
        return
    prefix = f"[rank {grid.rank}] " if grid.size > 1 else ""
    lines = [f"{prefix}{k} = {np.array2string(r, threshold=64)}" for k, r in out.items()]
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()
