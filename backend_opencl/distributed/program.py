"""One process's part of an SPMD / MPMD StableHLO program: segments on its OpenCL device,
collectives on the host over MPI."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import numpy as np

from backend_opencl.distributed.collectives import Context, run_host_op
from backend_opencl.distributed.grid import ProcessGrid
from backend_opencl.distributed.segments import (
    ControlStep,
    DeviceStep,
    SegmentedFunc,
    is_data,
    segment,
)
from backend_opencl.distributed.transport import Transport
from frontend.ir.core import Module, Value, walk
from frontend.ir.types import TensorType
from frontend.lower.core.inline import inline_calls
from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from backend_opencl.exec.executable import Executable

_COUNT = re.compile(r"mhlo\.num_(replicas|partitions)\s*=\s*(\d+)")


def grid_counts(text: str) -> tuple[int | None, int | None]:
    """``mhlo.num_replicas`` and ``mhlo.num_partitions`` of a module's text (None when
    absent)."""
    found = {k: int(v) for k, v in _COUNT.findall(text)}
    return found.get("replicas"), found.get("partitions")


def grid_for(text: str, size: int, rank: int) -> ProcessGrid:
    """The process grid of a program run by ``size`` processes; a TlcError (the same on
    every rank) when the module's counts disagree with ``size``."""
    replicas, partitions = grid_counts(text)
    partitions = partitions or 1
    replicas = replicas or max(size // partitions, 1)
    if replicas * partitions != size:
        n = replicas * partitions
        raise TlcError(f"error: the program runs on num_replicas x num_partitions = "
                       f"{replicas} x {partitions} = {n} processes, but {size} "
                       f"{'was' if size == 1 else 'were'} started: mpirun -n {n} ...")
    return ProcessGrid(replicas, partitions, rank)


def receivers(module: Module, programs: list[list[str]]) -> dict[int, list[int]]:
    """For each channel id, the ranks whose program has a ``recv`` on it."""
    from backend_opencl.distributed.collectives import channel_id

    out: dict[int, list[int]] = {}
    flat = [name for row in programs for name in row]
    for rank, name in enumerate(flat):
        func = module.func(name)
        if func is None or func.body is None:
            continue
        for op in walk(inline_calls(module, func)):
            ranks = out.setdefault(channel_id(op), [])
            if op.name == "stablehlo.recv" and rank not in ranks:
                ranks.append(rank)
    return out


class RankProgram:
    """``@name`` of a module run as process ``grid.rank``: call it with this process's
    inputs (numpy arrays) to get its results (numpy arrays; tokens are None)."""

    def __init__(self, module: Module, name: str, grid: ProcessGrid, transport: Transport,
                 device: object = None, receivers: dict[int, list[int]] | None = None) -> None:
        self.func: SegmentedFunc = segment(module, name, grid)
        self.ctx = Context(grid, transport, device, receivers or {})
        self.executables: dict[int, Executable] = {}
        self.stats = {"segments_s": 0.0, "collectives_s": 0.0}
        """Seconds spent so far in device segments (launches, copies, waits included) and
        in host collectives (MPI transfers, waiting for the other ranks included)."""

    @property
    def num_args(self) -> int:
        """How many inputs a call takes (tokens included)."""
        return len(self.func.args)

    def compile(self) -> RankProgram:
        """Build every segment's kernels now (else on first use)."""
        for step in self.func.steps:
            if isinstance(step, DeviceStep):
                self._executable(step)
        return self

    def _executable(self, step: DeviceStep) -> Executable:
        exe = self.executables.get(id(step))
        if exe is None:
            from backend_opencl.api.compiler import compile_stablehlo_program

            exe = self.executables[id(step)] = compile_stablehlo_program(
                step.text, device=self.ctx.device,
                filename=f"<@{self.func.name} segment>")
        return exe

    def __call__(self, *inputs: object) -> list[np.ndarray | None]:
        """Run this process's program; collectives wait for the other processes."""
        env = self._bind(inputs)
        self._run_steps(self.func, env)
        self.ctx.transport.finish()
        return [np.asarray(env[v]) if is_data(v) else None for v in self.func.returns]

    def _run_steps(self, func: SegmentedFunc, env: dict[Value, object]) -> None:
        """Run ``func``'s steps, adding what they define to ``env``."""
        for step in func.steps:
            start = time.perf_counter()
            if isinstance(step, DeviceStep):
                results = self._executable(step)(*[env[v] for v in step.inputs])
                env.update(zip(step.outputs, results, strict=False))
                self.stats["segments_s"] += time.perf_counter() - start
            elif isinstance(step, ControlStep):
                env.update(zip(step.op.results, self._control(step, env), strict=True))
            else:
                args = [env.get(v) for v in step.op.operands]
                env.update(zip(step.op.results, run_host_op(step.op, args, self.ctx),
                               strict=True))
                self.stats["collectives_s"] += time.perf_counter() - start

    def _region(self, region: SegmentedFunc, env: dict[Value, object], args: list[object]
                ) -> list[object]:
        """The values ``region`` yields for block arguments ``args``."""
        inner = dict(env)
        inner.update(zip(region.args, args, strict=True))
        self._run_steps(region, inner)
        return [inner.get(v) if is_data(v) else None for v in region.returns]

    def _control(self, step: ControlStep, env: dict[Value, object]) -> list[object]:
        """``while`` / ``if`` / ``case`` run by the host (its regions exchange data)."""
        op, regions = step.op, step.regions
        operands = [env.get(v) for v in op.operands]
        if op.name == "stablehlo.while":
            cond, body = regions
            while bool(np.asarray(self._region(cond, env, operands)[0])):
                operands = self._region(body, env, operands)
            return operands
        if op.name == "stablehlo.if":
            branch = regions[0] if bool(np.asarray(operands[0])) else regions[1]
            return self._region(branch, env, [])
        index = int(np.asarray(operands[0]))
        if not 0 <= index < len(regions):  # the spec: out of range runs the last branch
            index = len(regions) - 1
        return self._region(regions[index], env, [])

    def _bind(self, inputs: tuple[object, ...]) -> dict[Value, object]:
        args = self.func.args
        if len(inputs) != len(args):
            raise TlcError(f"error: @{self.func.name} takes {len(args)} inputs, "
                           f"{len(inputs)} were given")
        env: dict[Value, object] = {}
        for i, (v, x) in enumerate(zip(args, inputs, strict=True)):
            if not is_data(v):
                env[v] = None
                continue
            t = v.type
            assert isinstance(t, TensorType)
            a = np.asarray(x)
            if a.shape != tuple(t.shape) or a.dtype != t.element.dtype:
                raise TlcError(f"error: input {i} of @{self.func.name} must be "
                               f"{t.element.dtype}{list(t.shape)}, got {a.dtype}"
                               f"{list(a.shape)}")
            env[v] = a
        return env
