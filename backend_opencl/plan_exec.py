"""Executing a host plan (:mod:`tensorlang.plan`) with a compiled kernel module.

An :class:`Executable` checks its arguments (count, dtype, shape: LaunchError before
anything runs), uploads them, runs the steps (launches, copies, host control flow that
reads predicates back) and returns the results as numpy arrays.

The plan is resolved once per executable into a tree of step functions: a launch whose
arguments are all plain buffers (the lowering's flat memrefs; no bounds guards) binds its
device arrays straight to a kernel object of its own and is enqueued without waiting (the
queue is in order; reading results back waits for it).  Other launches go through the
module's checked kernel call.  Freed buffers go to a pool keyed by dtype and size, from
which later allocations are served; the pool outlives a call, so a warm call allocates
nothing (except under ``POISON``, where every call starts from fresh, poisoned buffers).
Constants are uploaded once per executable.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from backend_opencl import plan_loops
from backend_opencl.module import NUMPY_DTYPES
from backend_opencl.runtime import buffers, launch
from tensorlang.diagnostics import LaunchError
from tensorlang.ir.types import MemRefType
from tensorlang.plan import Case, Copy, Free, If, Launch, Plan, Step, While

POISON = os.environ.get("TLC_POISON") == "1"
"""Fill every new buffer with 0xFF bytes (tests; ``TLC_POISON=1``)."""

Pool = dict[tuple[str, int], list[Any]]
StepFn = Callable[["_Run"], None]


class Executable:
    """A compiled StableHLO function: call it with numpy arrays."""

    def __init__(self, plan: Plan, module: Any, device: Any, name: str,
                 arg_dtypes: list[np.dtype], result_dtypes: list[np.dtype]) -> None:
        self.plan = plan
        self.module = module
        self.device = device
        self.name = name
        self.arg_dtypes = arg_dtypes
        self.result_dtypes = result_dtypes
        self._constants: dict[int, Any] = {}
        self._storage = [np.dtype(NUMPY_DTYPES[b.dtype]) for b in plan.buffers]
        self._steps: tuple[StepFn, ...] | None = None
        self._pool: Pool = {}
        self._lock = threading.Lock()

    def __call__(self, *arrays: Any) -> tuple[np.ndarray, ...]:
        hosts = self.check(arrays)
        if self._steps is None:
            self._steps = _Resolver(self).steps(self.plan.steps)
        run = _Run(self, self._take_pool())
        try:
            for bid, host in zip(self.plan.params, hosts, strict=True):
                host = host.astype(self._storage[bid], copy=False)
                run.keep.append(host)  # alive until the upload has run
                buffers.write(run.get(bid), host)
            run.steps(self._steps)
            out = []
            for bid, dtype in zip(self.plan.results, self.result_dtypes, strict=True):
                b = self.plan.buffer(bid)
                host = buffers.download(run.get(bid), b.size).reshape(b.shape)
                out.append(host.astype(dtype, copy=False))
        finally:
            self._give_back(run)
        return tuple(out)

    def _take_pool(self) -> Pool:
        with self._lock:  # a concurrent call starts with an empty pool of its own
            pool, self._pool = self._pool, {}
        return pool

    def _give_back(self, run: _Run) -> None:
        if POISON:
            return
        run.free(tuple(run.live))
        with self._lock:
            for key, arrays in run.pool.items():
                self._pool.setdefault(key, []).extend(arrays)

    def check(self, arrays: tuple[Any, ...]) -> list[np.ndarray]:
        """The arguments as numpy arrays, or LaunchError naming the first mistake."""
        params = self.plan.params
        if len(arrays) != len(params):
            raise LaunchError(f"@{self.name}: expected {len(params)} arguments, "
                              f"got {len(arrays)}")
        hosts = []
        for i, (a, bid, dtype) in enumerate(zip(arrays, params, self.arg_dtypes, strict=True)):
            shape = self.plan.buffer(bid).shape
            arr = np.asarray(a) if not isinstance(a, np.ndarray) else a
            if arr.dtype != dtype:
                raise LaunchError(f"@{self.name}: argument {i} must have dtype {dtype.name}, "
                                  f"got {arr.dtype.name}")
            if arr.shape != shape:
                raise LaunchError(f"@{self.name}: argument {i} must have shape {shape}, "
                                  f"got {arr.shape}")
            hosts.append(arr)
        return hosts

    def constant(self, bid: int) -> Any:
        """The device array of constant buffer ``bid`` (uploaded once)."""
        if bid not in self._constants:
            b = self.plan.buffer(bid)
            host = np.frombuffer(b.init or b"", dtype=self._storage[bid])
            self._constants[bid] = buffers.upload(self.device, host)
        return self._constants[bid]


class _Resolver:
    """Turns plan steps into step functions, resolving kernels and launches once."""

    def __init__(self, exe: Executable) -> None:
        self.exe = exe

    def steps(self, steps: tuple[Step, ...]) -> tuple[StepFn, ...]:
        """The step functions of ``steps``."""
        return tuple(self.step(s) for s in steps)

    def step(self, step: Step) -> StepFn:
        """The step function of one step."""
        if isinstance(step, Launch):
            return self.launch(step)
        if isinstance(step, Copy):
            src, dst, device = step.src, step.dst, self.exe.device
            return lambda run: buffers.copy(device, run.get(dst), run.get(src))
        if isinstance(step, Free):
            bids = step.buffers
            return lambda run: run.free(bids)
        if isinstance(step, While):
            body = self.steps(step.body)
            loop = _while(self.steps(step.cond), step.pred, body)
            return loop if step.trips is None else plan_loops.counted(step.trips, body, loop)
        if isinstance(step, If):
            return _if(step.pred, self.steps(step.then), self.steps(step.otherwise))
        assert isinstance(step, Case), step
        return _case(step.index, tuple(self.steps(b) for b in step.branches))

    def launch(self, step: Launch) -> StepFn:
        """A launch: bound directly when every argument is a plain buffer, else checked."""
        kernel = self.exe.module.kernels[step.kernel]
        args, groups = step.args, step.num_groups
        if not self._direct(kernel.info, args):
            return lambda run: kernel(*[run.get(b) for b in args], num_groups=groups)
        run_kernel = launch.prepared(self.exe.device.queue, self.exe.module.program,
                                     kernel.info.c_name, groups,
                                     kernel.info.plan.work_group_size)
        return lambda run: run_kernel([run.get(b) for b in args])

    def _direct(self, info: Any, args: tuple[int, ...]) -> bool:
        """True when the kernel takes exactly these buffers as flat memrefs of their dtype
        and size (one pointer parameter each) and has no bounds guards."""
        if info.guards or len(info.abi) != len(args):
            return False
        for arg, bid in zip(info.abi, args, strict=True):
            t, b = arg.type, self.exe.plan.buffer(bid)
            if not isinstance(t, MemRefType) or len(arg.params) != 1 or t.order != 1 \
                    or t.shape[0] != max(b.size, 1) \
                    or np.dtype(NUMPY_DTYPES[t.element.name]) != self.exe._storage[bid]:
                return False
        return True


def _while(cond: tuple[StepFn, ...], pred: int, body: tuple[StepFn, ...]) -> StepFn:
    def run_while(run: _Run) -> None:
        run.steps(cond)
        while run.scalar(pred):
            run.steps(body)
            run.steps(cond)
    return run_while


def _if(pred: int, then: tuple[StepFn, ...], otherwise: tuple[StepFn, ...]) -> StepFn:
    return lambda run: run.steps(then if run.scalar(pred) else otherwise)


def _case(index: int, branches: tuple[tuple[StepFn, ...], ...]) -> StepFn:
    def run_case(run: _Run) -> None:
        i = int(run.scalar(index))
        run.steps(branches[i] if 0 <= i < len(branches) else branches[-1])
    return run_case


class _Run:
    """One execution: live device arrays by buffer id and the reuse pool."""

    def __init__(self, exe: Executable, pool: Pool) -> None:
        self.exe = exe
        self.live: dict[int, Any] = {}
        self.pool = pool
        self.keep: list[np.ndarray] = []  # host arrays of uploads not yet waited for

    def get(self, bid: int) -> Any:
        """The device array of buffer ``bid``, allocated (or reused) on first use."""
        arr = self.live.get(bid)
        if arr is None:
            b = self.exe.plan.buffers[bid]
            if b.init is not None:
                return self.exe.constant(bid)
            free = self.pool.get((b.dtype, b.size))
            arr = free.pop() if free else buffers.alloc(
                self.exe.device, self.exe._storage[bid], b.size, POISON)
            self.live[bid] = arr
        return arr

    def steps(self, steps: tuple[StepFn, ...]) -> None:
        """Run step functions in order."""
        for step in steps:
            step(self)

    def scalar(self, bid: int) -> Any:
        """Read a one-element buffer back to the host."""
        return buffers.download(self.get(bid), 1)[0]

    def free(self, bids: tuple[int, ...]) -> None:
        """Return buffers to the pool."""
        for bid in bids:
            arr = self.live.pop(bid, None)
            if arr is not None:
                b = self.exe.plan.buffers[bid]
                self.pool.setdefault((b.dtype, b.size), []).append(arr)
