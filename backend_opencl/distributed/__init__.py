"""StableHLO programs across processes over MPI (docs/distributed.md).

Each MPI rank is one StableHLO process ``(replica_id, partition_id)`` with its own
OpenCL device: rank = ``replica_id * num_partitions + partition_id``.  The ops between
collectives run as tlc kernels on the device; each collective, ``send`` and ``recv``
moves bytes with mpi4py on the spec's process groups.

Public API::

    from backend_opencl import distributed
    # under `mpirun -n N python script.py`, every rank:
    exe = distributed.compile_stablehlo(text)        # num_replicas/num_partitions from the module
    outs = exe(*this_ranks_inputs)                     # numpy arrays
    # from one process (ranks spawned with mpiexec when there are several):
    outs = distributed.run_parallel(text, [["f"], ["f"]], inputs)  # interpreter.run_parallel

``mpirun -n N tlc run prog.mlir --inputs in.{rank}.npz -o out.{rank}.npz`` runs a
program from the command line.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from backend_opencl.distributed.grid import ProcessGrid
from backend_opencl.distributed.program import RankProgram, grid_counts, grid_for, receivers
from backend_opencl.distributed.transport import (
    LocalTransport,
    MpiTransport,
    Transport,
    under_mpi_launcher,
)
from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from backend_opencl.distributed.shardy import ShardedProgram
    from frontend.ir.core import Module

__all__ = ["ProcessGrid", "RankProgram", "compile_stablehlo", "spmd_program", "run_parallel",
           "run_parallel_many", "run_rank", "run_cases",
           "wanted", "describe_failure", "world_transport"]


def world_transport() -> Transport:
    """MPI's world when started by an MPI launcher, else a single local process."""
    return MpiTransport() if under_mpi_launcher() else LocalTransport()


def _parse(text: str, filename: str) -> Module:
    import frontend

    module = frontend.parse(text, filename=filename)
    if module.parts:
        raise TlcError(f"{filename}: error: a file split with '// -----' holds several "
                       "modules; give one")
    return module


def compile_stablehlo(text: str, device: object = None, entry: str = "main",
                      transport: Transport | None = None,
                      filename: str = "<string>") -> RankProgram | ShardedProgram:
    """This rank's executable of an SPMD program (every rank runs ``@entry``); the grid
    comes from ``mhlo.num_replicas`` / ``mhlo.num_partitions`` (replicas default to the
    world size), and a mismatch with the world size is a TlcError on every rank."""
    transport = transport or world_transport()
    return spmd_program(text, entry, transport, device, filename).compile()


def spmd_program(text: str, entry: str, transport: Transport, device: object = None,
                 filename: str = "<string>") -> RankProgram | ShardedProgram:
    """This rank's program of an SPMD module, or of a JAX ``shard_map`` export in Shardy
    form (global arrays in and out: :mod:`backend_opencl.distributed.shardy`)."""
    from backend_opencl.distributed import shardy

    manual = shardy.from_shardy(text) if shardy.is_shardy(text) else None
    if manual is not None:
        text, entry = manual.text, "main"
    grid = grid_for(text, transport.size, transport.rank)
    module = _parse(text, filename)
    programs = [[entry] * grid.num_partitions for _ in range(grid.num_replicas)]
    program = RankProgram(module, entry, grid, transport, device, receivers(module, programs))
    return program if manual is None else shardy.ShardedProgram(manual, program)


def run_rank(text: str, programs: list[list[str]], inputs: list[object],
             transport: Transport, device: object = None) -> list[np.ndarray | None]:
    """This rank's results of ``programs[replica][partition]`` over flat ``inputs`` (each
    process takes as many as its function has arguments, in rank order)."""
    grid = _grid(programs, transport)
    module = _parse(text, "<run_parallel>")
    names = [[name.lstrip("@") for name in row] for row in programs]
    mine = _inputs_of(module, names, inputs)[grid.rank]
    program = RankProgram(module, names[grid.replica_id][grid.partition_id], grid,
                          transport, device, receivers(module, names))
    return program(*mine)


def _inputs_of(module: Module, names: list[list[str]], inputs: list[object]
               ) -> list[list[object]]:
    """``inputs`` split per rank by the number of arguments of each rank's function."""
    counts = []
    for name in [n for row in names for n in row]:
        func = module.func(name)
        if func is None or func.body is None:
            raise TlcError(f"error: run_parallel: no function @{name} in the module")
        counts.append(len(func.arg_types))
    if sum(counts) != len(inputs):
        raise TlcError(f"error: run_parallel: the programs take {sum(counts)} inputs, "
                       f"{len(inputs)} were given")
    starts = np.cumsum([0] + counts)
    return [list(inputs[a:b]) for a, b in zip(starts[:-1], starts[1:], strict=True)]


def _grid(programs: list[list[str]], transport: Transport) -> ProcessGrid:
    replicas = len(programs)
    partitions = len(programs[0]) if programs else 0
    if not replicas or not partitions or any(len(r) != partitions for r in programs):
        raise TlcError("error: run_parallel: programs must be a non-empty rectangular "
                       "grid [replica][partition] of function names")
    if replicas * partitions != transport.size:
        raise TlcError(f"error: run_parallel: {replicas} x {partitions} programs on "
                       f"{transport.size} processes")
    return ProcessGrid(replicas, partitions, transport.rank)


def run_parallel(text: str, programs: list[list[str]], inputs: list[object], *,
                 device: object = None, timeout_s: float = 120.0,
                 infeed: list[object] | None = None) -> list[np.ndarray | None]:
    """``interpreter.run_parallel``: run ``programs[replica][partition]`` (functions of the
    module ``text``) as one process each and return their results, flat in rank order
    (tokens are None).  One process runs here; several are spawned with ``mpiexec``
    (each a fresh Python running :mod:`backend_opencl.distributed.worker`)."""
    del infeed  # infeed / outfeed queues: not carried across processes yet
    n = len(programs) * (len(programs[0]) if programs else 0)
    if n == 1:
        return run_rank(text, programs, inputs, LocalTransport(), device)
    if under_mpi_launcher():
        world = MpiTransport()
        if world.size == n:  # already the ranks: each runs its part, all get every result
            return _run_in_world(text, programs, inputs, world, device)
        if world.size > 1:
            raise TlcError(f"error: run_parallel of {n} processes inside an MPI job of "
                           f"{world.size}: start the job with {n} ranks, or with one")
    return run_parallel_many([(text, programs, inputs)], device=device,
                             timeout_s=timeout_s)[0]


Case = tuple[str, list[list[str]], list[object]]
"""One ``run_parallel``: module text, ``programs[replica][partition]``, flat inputs."""


def run_parallel_many(cases: list[Case], *, device: object = None,
                      timeout_s: float = 300.0) -> list[list[np.ndarray | None]]:
    """Several independent ``run_parallel`` calls in one MPI job of as many ranks as the
    largest needs (one launch instead of one each); case k runs on ranks
    ``0..n_k-1`` over a communicator of its own, in order."""
    from backend_opencl.distributed.launch import run_job

    sizes = []
    for text, programs, inputs in cases:  # mistakes every rank would see: reported here
        n = len(programs) * (len(programs[0]) if programs else 0)
        _grid(programs, _Sized(max(n, 1)))
        _inputs_of(_parse(text, "<run_parallel>"),
                   [[name.lstrip("@") for name in row] for row in programs], inputs)
        sizes.append(n)
    if not cases:
        return []
    job = {"cases": [(t, p, list(i)) for t, p, i in cases], "device": device}
    per_rank = run_job(job, max(sizes), timeout_s)
    return [[r for rank in range(n) for r in per_rank[rank][k]]
            for k, n in enumerate(sizes)]


def run_cases(cases: list[Case], world: MpiTransport, device: object = None) -> list[object]:
    """This rank's results of each case it takes part in (None for the others)."""
    out: list[object] = []
    for text, programs, inputs in cases:
        n = len(programs) * len(programs[0])
        if world.rank >= n:
            out.append(None)
            continue
        out.append(run_rank(text, programs, inputs, world.first(n), device))
    return out


def _run_in_world(text: str, programs: list[list[str]], inputs: list[object],
                  world: MpiTransport, device: object) -> list[np.ndarray | None]:
    """run_parallel by the ranks of the current MPI job; a failing rank aborts it."""
    try:
        mine = run_rank(text, programs, inputs, world, device)
    except BaseException as err:  # noqa: B036 -- one failing rank stops them all
        import sys

        sys.stderr.write(describe_failure(err, world) + "\n")
        sys.stderr.flush()
        world.abort(1)
        raise
    return [r for results in world.world.allgather(mine) for r in results]


class _Sized(Transport):
    def __init__(self, n: int) -> None:
        self.rank, self.size = 0, n


def describe_failure(err: BaseException, transport: Transport) -> str:
    """The message a failing rank prints: its coordinates and the error (an internal
    error's traceback too)."""
    head = f"rank {transport.rank} of {transport.size}"
    if isinstance(err, TlcError):
        return f"{head}: {err}"
    if isinstance(err, SystemExit | KeyboardInterrupt):
        return f"{head}: stopped"
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return f"{head}: internal error: {type(err).__name__}: {err}\n{tb}"


def wanted(path: str) -> bool:
    """True when ``tlc run path`` should run as MPI ranks: under ``mpirun`` or for a
    module with several replicas or partitions."""
    if under_mpi_launcher():
        return True
    try:
        replicas, partitions = grid_counts(Path(path).read_text())
    except (OSError, UnicodeDecodeError):
        return False
    return (replicas or 1) * (partitions or 1) > 1
