"""Executing a host plan (:mod:`tensorlang.plan`) with a compiled kernel module.

An :class:`Executable` checks its arguments (count, dtype, shape: LaunchError before
anything runs), uploads them, runs the steps (launches, copies, host control flow that
reads predicates back) and returns the results as numpy arrays.  Freed buffers go to a
pool keyed by dtype and size, from which later allocations are served; constants are
uploaded once per executable.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from backend_opencl.module import NUMPY_DTYPES
from backend_opencl.runtime import buffers
from tensorlang.diagnostics import LaunchError
from tensorlang.plan import Case, Copy, Free, If, Launch, Plan, Step, While

POISON = os.environ.get("TLC_POISON") == "1"
"""Fill every new buffer with 0xFF bytes (tests; ``TLC_POISON=1``)."""


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

    def __call__(self, *arrays: Any) -> tuple[np.ndarray, ...]:
        hosts = self.check(arrays)
        run = _Run(self)
        for bid, host in zip(self.plan.params, hosts, strict=True):
            run.live[bid] = buffers.upload(self.device, host.astype(self._storage(bid)))
        run.steps(self.plan.steps)
        out = []
        for bid, dtype in zip(self.plan.results, self.result_dtypes, strict=True):
            b = self.plan.buffer(bid)
            host = buffers.download(run.get(bid), b.size).reshape(b.shape)
            out.append(host.astype(dtype, copy=False))
        return tuple(out)

    def _storage(self, bid: int) -> np.dtype:
        return np.dtype(NUMPY_DTYPES[self.plan.buffer(bid).dtype])

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
            host = np.frombuffer(b.init or b"", dtype=self._storage(bid))
            self._constants[bid] = buffers.upload(self.device, host)
        return self._constants[bid]


class _Run:
    """One execution: live device arrays by buffer id and the reuse pool."""

    def __init__(self, exe: Executable) -> None:
        self.exe = exe
        self.live: dict[int, Any] = {}
        self.pool: dict[tuple[str, int], list[Any]] = {}

    def get(self, bid: int) -> Any:
        """The device array of buffer ``bid``, allocated (or reused) on first use."""
        arr = self.live.get(bid)
        if arr is None:
            b = self.exe.plan.buffer(bid)
            if b.init is not None:
                return self.exe.constant(bid)
            free = self.pool.get((b.dtype, b.size))
            arr = free.pop() if free else buffers.alloc(
                self.exe.device, self.exe._storage(bid), b.size, POISON)
            self.live[bid] = arr
        return arr

    def steps(self, steps: tuple[Step, ...]) -> None:
        """Run ``steps`` in order."""
        for step in steps:
            self.step(step)

    def step(self, step: Step) -> None:
        """Run one step."""
        if isinstance(step, Launch):
            kernel = self.exe.module.kernels[step.kernel]
            kernel(*[self.get(b) for b in step.args], num_groups=step.num_groups)
        elif isinstance(step, Copy):
            buffers.copy(self.exe.device, self.get(step.dst), self.get(step.src))
        elif isinstance(step, Free):
            self.free(step.buffers)
        elif isinstance(step, While):
            self.steps(step.cond)
            while self.scalar(step.pred):
                self.steps(step.body)
                self.steps(step.cond)
        elif isinstance(step, If):
            self.steps(step.then if self.scalar(step.pred) else step.otherwise)
        elif isinstance(step, Case):
            i = int(self.scalar(step.index))
            branches = step.branches
            self.steps(branches[i] if 0 <= i < len(branches) else branches[-1])

    def scalar(self, bid: int) -> Any:
        """Read a one-element buffer back to the host."""
        return buffers.download(self.get(bid), 1)[0]

    def free(self, bids: tuple[int, ...]) -> None:
        """Return buffers to the pool."""
        for bid in bids:
            arr = self.live.pop(bid, None)
            if arr is not None:
                b = self.exe.plan.buffer(bid)
                self.pool.setdefault((b.dtype, b.size), []).append(arr)
