"""Executing a host plan (:mod:`tensorlang.plan`) with a compiled kernel module, on any
runtime (:class:`~backend_opencl.exec.runtime.PlanRuntime`).

An :class:`Executable` checks its arguments (count, dtype, shape: LaunchError before
anything runs), binds them, runs the steps (launches, copies, host control flow that
reads predicates back) and returns the results as numpy arrays after one wait for the
queue (results are read back without blocking, one wait for all of them).  Several
threads may call one executable at once.

The plan is resolved once per executable into a tree of step functions: a launch whose
arguments are all plain buffers (the lowering's flat memrefs; no bounds guards) binds its
buffers straight to the kernel (:meth:`PlanRuntime.direct_launch`) and is enqueued without
waiting (the queue is in order; reading results back waits for it).  Other launches go
through the module's checked kernel call.  Freed buffers go to a pool keyed as the
runtime says (dtype and size, or bytes), from which later allocations are served; the pool
outlives a call, so a warm call allocates nothing (except under ``POISON``, where every
call starts from fresh, poisoned buffers).  Constants are uploaded once per executable.
A runtime may run a plan whose launches all bind directly as prepared frames instead
(:meth:`PlanRuntime.frames`: OpenCL, :mod:`backend_opencl.runtime.opencl.frames`).

What each runtime binds and how it returns results (host memory on CPU devices, arrays
bound in place, pyopencl and USM arguments) is in :mod:`backend_opencl.runtime.opencl.plans`
and :mod:`backend_opencl.runtime.sycl.plans`.

Host callbacks (``Callback`` steps, :func:`steps.callback`) call the Python functions
the executable was given (:meth:`Executable.with_callbacks`) in program order, inside host
loops and branches too: a plan with one runs step by step.  A token parameter
(``!stablehlo.token``: no data) takes None, and a token result is None.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, SupportsInt

import numpy as np

from backend_opencl.exec import steps
from backend_opencl.exec.arguments import NUMPY_DTYPES
from backend_opencl.exec.module import Module
from backend_opencl.exec.runtime import InFlight, PlanRuntime
from backend_opencl.runtime import profile
from tensorlang.diagnostics import LaunchError
from tensorlang.plan import Callback, Copy, Launch, Plan, Step, launches

POISON = os.environ.get("TLC_POISON") == "1"
"""Fill every new buffer with 0xFF bytes (tests; ``TLC_POISON=1``)."""

FRAMES_ENV = "TLC_FRAMES"
"""Set to 0 to run plans step by step instead of as prepared frames."""

Pool = dict[object, list[object]]
StepFn = Callable[["Run"], None]


class Executable:
    """A compiled StableHLO function: call it with numpy arrays (or the runtime's own)."""

    def __init__(self, plan: Plan, module: Module | None, runtime: PlanRuntime, name: str,
                 arg_dtypes: list[np.dtype | None], result_dtypes: list[np.dtype | None],
                 host_callbacks: Sequence[Callable[..., object]] = ()) -> None:
        """``module``: the plan's kernels (None: the plan launches none); ``runtime``: the
        device's plan runtime; ``arg_dtypes`` and ``result_dtypes``: the parameters' and
        results' numpy dtypes (None: a token); ``host_callbacks``: the functions the
        plan's ``Callback`` steps call, by index."""
        self.plan = plan
        self.module = module
        self.runtime = runtime
        self.device = runtime.device
        self.name = name
        self.arg_dtypes = arg_dtypes
        self.result_dtypes = result_dtypes
        self.host_callbacks = tuple(host_callbacks)
        self.storage = [np.dtype(NUMPY_DTYPES[b.dtype]) for b in plan.buffers]
        """Each buffer's numpy dtype."""
        self.written: frozenset[int] = frozenset()
        """The buffers the plan writes (known once resolved)."""
        self._constants: dict[int, object] = {}
        self._steps: tuple[StepFn, ...] | None = None
        self._frames: Any = None
        self._quick: Callable[[Sequence[object]], tuple[object, ...] | None] | None = None
        self._stop_prewarm: Callable[[], None] | None = None
        self._pool: Pool = {}
        self._lock = threading.Lock()
        self.in_place_results = runtime.result_hosts(self)
        """Which results kernels write straight into fresh host arrays (CPU devices)."""
        self.params = tuple((bid, None if dtype is None else np.dtype(dtype),
                             plan.buffer(bid).shape)
                            for bid, dtype in zip(plan.params, arg_dtypes, strict=True))
        """(buffer, dtype or None for a token, shape) of each parameter."""

    def __call__(self, *arrays: object) -> tuple[np.ndarray | None, ...]:
        """Check the arguments, run the plan, return the results as numpy arrays (None
        for a token)."""
        start = time.perf_counter()
        args = self.check(arrays)
        if self._steps is None:
            self._resolve()
        profiling = profile.enabled()
        frames, runtime = self._frames, self.runtime
        run: Any = frames.take() if frames is not None else Run(self, self._take_pool())
        try:
            for bets in (True, False):  # a frame whose bet lost runs again without bets
                hosts = self._bind(run, args, profiling)
                if frames is None:
                    run.steps(self._steps)
                else:
                    run.run(profiling, bets=bets)
                out = runtime.collect(self, run, hosts, profiling)
                if frames is None or run.settled():
                    break
        except BaseException:
            runtime.abort()  # nothing in flight reads memory dropped below
            raise
        finally:
            if frames is not None:
                frames.give(run)
            else:
                self._give_back(run)
            self._prewarmed()
        if profiling:
            profile.PROFILE.call(time.perf_counter() - start)
        return out

    def _bind(self, run: Any, args: list[object], profiling: bool
              ) -> list[np.ndarray | None]:
        """Bind the arguments to ``run``; the host arrays of the results the kernels
        write in place (None for the others)."""
        runtime = self.runtime
        for bid, arg in zip(self.plan.params, args, strict=True):
            if arg is not None:  # None: a token
                runtime.bind(self, run, bid, arg, profiling, False)
        return [runtime.result_host(self, run, bid) if direct else None
                for bid, direct in zip(self.plan.results, self.in_place_results, strict=True)]

    def dispatch(self, *arrays: object) -> tuple[object, ...]:
        """Call without waiting: enqueue the call's commands and return its results as
        ``DeviceArray`` s that stay on the device until read (see
        :mod:`backend_opencl.runtime.opencl.device_array`).  Arguments are taken as they
        are at the call (numpy arrays are copied before it returns).  A plan with host
        loops, branches or callbacks waits for the device where it reads it; a runtime
        without prepared frames runs it as a plain call.  The common case takes the
        runtime's short way (:attr:`quick`)."""
        if self._steps is None:
            # no helper compiling kernels: nothing here would stop it when they all ran
            self._resolve(prewarm=False)
        quick = self._quick
        results = None if quick is None else quick(arrays)
        if results is not None:
            return results
        return self.runtime.dispatch(self, self.check(arrays), self._frames)

    @property
    def quick(self) -> Callable[[Sequence[object]], tuple[object, ...] | None] | None:
        """The runtime's short way through this executable's calls that do not wait
        (:meth:`PlanRuntime.quick_dispatch`; None before the first call or where it has
        none): called with the arguments, it is :meth:`dispatch` for the common case
        (checked there) and returns None, with nothing done, for any other call."""
        return self._quick

    def with_callbacks(self, host_callbacks: Sequence[Callable[..., object]]) -> Executable:
        """This executable calling ``host_callbacks`` at its ``Callback`` steps (a new
        executable over the same plan, kernels and runtime)."""
        return Executable(self.plan, self.module, self.runtime, self.name, self.arg_dtypes,
                          self.result_dtypes, host_callbacks)

    def _resolve(self, prewarm: bool = True) -> None:
        """Resolve the plan once (even when the first calls are concurrent): its step
        functions and, where the runtime prepares them, its frames; with ``prewarm``,
        start the runtime's compiling of the kernels beside the first call
        (:meth:`PlanRuntime.prewarm`), which the call stops when it returns."""
        with self._lock:
            if self._steps is None:
                self._check_sizes()
                self.written = steps.written_buffers(self.plan.steps, self.module)
                resolver = Resolver(self)
                frames = None if os.environ.get(FRAMES_ENV) == "0" else \
                    self.runtime.frames(self, resolver.direct)
                self._frames = frames
                self._quick = self.runtime.quick_dispatch(self, frames)
                self._steps = () if frames else resolver.steps(self.plan.steps)
                if prewarm and self.module is not None:
                    direct = [s for s in launches(self.plan.steps) if resolver.direct(s)]
                    self._stop_prewarm = self.runtime.prewarm(self, direct)

    def _prewarmed(self) -> None:
        """Stop the first call's helper compiling kernels, if one runs (its work is done:
        the call launched every kernel)."""
        stop, self._stop_prewarm = self._stop_prewarm, None
        if stop is not None:
            stop()

    def _check_sizes(self) -> None:
        """LaunchError when a buffer of the plan exceeds the device's largest allocation
        (instead of a failed allocation in the middle of a call)."""
        limit = self.runtime.max_bytes()
        for bid, b in enumerate(self.plan.buffers):
            nbytes = b.size * self.storage[bid].itemsize
            if limit and nbytes > limit:
                shape = "x".join(map(str, b.shape))
                raise LaunchError(f"@{self.name}: a {shape} {b.dtype} buffer needs {nbytes} "
                                  f"bytes but the device's largest buffer is {limit} bytes")

    @property
    def poison(self) -> bool:
        """Whether new buffers are filled with 0xFF bytes and every call gets fresh ones
        (``POISON``, read at each use: tests switch it)."""
        return POISON

    def kernels(self) -> Module:
        """Its module (a plan that launches kernels has one)."""
        assert self.module is not None, f"@{self.name} launches kernels without a module"
        return self.module

    def new_buffer(self, bid: int) -> object:
        """New memory for buffer ``bid`` (poisoned under ``POISON``)."""
        return self.runtime.new_buffer(self, bid)

    def constant(self, bid: int) -> object:
        """The device memory of constant buffer ``bid`` (uploaded once)."""
        if bid not in self._constants:
            b = self.plan.buffer(bid)
            self._constants[bid] = self.runtime.upload(
                np.frombuffer(b.init or b"", dtype=self.storage[bid]))
        return self._constants[bid]

    def _take_pool(self) -> Pool:
        with self._lock:  # a concurrent call starts with an empty pool of its own
            pool, self._pool = self._pool, {}
        return pool

    def _give_back(self, run: Run) -> None:
        if POISON:
            return
        run.free(tuple(run.live))  # borrowed memory is dropped, not pooled
        with self._lock:
            for key, arrays in run.pool.items():
                self._pool.setdefault(key, []).extend(arrays)

    def check(self, arrays: tuple[object, ...]) -> list[object]:
        """The arguments as numpy arrays (the runtime's device memory as it checks it),
        or LaunchError naming the first mistake."""
        params, runtime = self.params, self.runtime
        steps.check_argument_count(self.name, arrays, params)
        hosts: list[object] = []
        for i, (a, (bid, dtype, shape)) in enumerate(zip(arrays, params, strict=True)):
            if type(a) is np.ndarray and a.dtype == dtype and a.shape == shape:
                hosts.append(a)  # the common case, checked
                continue
            if dtype is None:
                steps.token_argument(self.name, i, a)
                hosts.append(None)
                continue
            arr = runtime.check_argument(self, i, a, bid)
            if arr is None:
                arr = a if isinstance(a, np.ndarray) else np.asarray(a)
            hosts.append(steps.checked_array(self.name, i, arr, dtype, shape))
        return hosts


class Resolver:
    """Turns plan steps into step functions, resolving kernels and launches once."""

    def __init__(self, exe: Executable) -> None:
        self.exe = exe

    def steps(self, plan_steps: tuple[Step, ...]) -> tuple[StepFn, ...]:
        """The step functions of ``plan_steps``."""
        return tuple(self.step(s) for s in plan_steps)

    def step(self, step: Step) -> StepFn:
        """The step function of one step."""
        exe = self.exe
        if isinstance(step, Launch):
            return self.launch(step)
        if isinstance(step, Copy):
            src, dst, runtime = step.src, step.dst, exe.runtime
            return lambda run: runtime.copy(exe, run, dst, src)
        if isinstance(step, Callback):
            return steps.callback(step, exe.plan, exe.storage, exe.host_callbacks, exe.name)
        control = steps.control_step(step, self.step)
        assert control is not None, step
        return control

    def launch(self, step: Launch) -> StepFn:
        """A launch: bound directly when every argument is a plain buffer, else checked."""
        exe = self.exe
        module = exe.kernels()
        kernel = module.kernels[step.kernel]
        args, groups, runtime = step.args, step.num_groups, exe.runtime
        if not self.direct(step):
            def checked(run: Run) -> None:
                kernel(*[runtime.checked_view(exe, run, b) for b in args], num_groups=groups)
                run.last = None  # the checked call waited for the queue
            return checked
        enqueue = runtime.direct_launch(module, kernel, groups)
        return lambda run: enqueue(run, [run.get(b) for b in args])

    def direct(self, step: Launch) -> bool:
        """True when the launch's kernel takes exactly its buffers as flat memrefs of their
        dtype and size (one pointer parameter each) and has no bounds guards."""
        exe = self.exe
        return steps.takes_flat_buffers(exe.kernels().kernels[step.kernel].info, step.args,
                                        exe.plan, exe.storage)


class Run(InFlight):
    """One execution: live device memory by buffer id and the reuse pool."""

    def __init__(self, exe: Executable, pool: Pool) -> None:
        super().__init__()
        self.exe = exe
        self.live: dict[int, object] = {}
        self.pool = pool
        self.borrowed: set[int] = set()  # buffers bound to the caller's or result memory

    def borrow(self, bid: int, arr: object) -> None:
        """Make ``arr`` (memory that is not the pool's) buffer ``bid``."""
        self.live[bid] = arr
        self.borrowed.add(bid)

    def get(self, bid: int) -> object:
        """The device memory of buffer ``bid``, allocated (or reused) on first use."""
        arr = self.live.get(bid)
        if arr is None:
            exe = self.exe
            if exe.plan.buffers[bid].init is not None:
                return exe.constant(bid)
            free = self.pool.get(exe.runtime.pool_key(exe, bid))
            arr = free.pop() if free else exe.new_buffer(bid)
            self.live[bid] = arr
        return arr

    def steps(self, fns: tuple[StepFn, ...]) -> None:
        """Run step functions in order."""
        for fn in fns:
            fn(self)

    def scalar(self, bid: int) -> SupportsInt:
        """The one element of buffer ``bid`` (waits for the commands before)."""
        return self.read(bid, 1)[0]

    def read(self, bid: int, n: int | None = None) -> np.ndarray:
        """A copy of buffer ``bid``'s first ``n`` elements (default: all), flat, once the
        commands before have run."""
        exe = self.exe
        return exe.runtime.read(exe, self, bid, exe.plan.buffers[bid].size if n is None else n)

    def write(self, bid: int, flat: np.ndarray) -> None:
        """Make buffer ``bid`` hold ``flat`` for the commands enqueued after."""
        self.exe.runtime.write(self.exe, self, bid, flat)

    def free(self, bids: tuple[int, ...]) -> None:
        """Return buffers to the pool (borrowed and constant memory is dropped)."""
        exe = self.exe
        for bid in bids:
            arr = self.live.pop(bid, None)
            if arr is not None and bid not in self.borrowed:
                self.pool.setdefault(exe.runtime.pool_key(exe, bid), []).append(arr)
