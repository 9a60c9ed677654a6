"""Executing a host plan (:mod:`tensorlang.plan`) with a compiled kernel module.

An :class:`Executable` checks its arguments (count, dtype, shape: LaunchError before
anything runs), binds them, runs the steps (launches, copies, host control flow that
reads predicates back) and returns the results as numpy arrays after one wait for the
queue (results are read back without blocking, one wait for all of them).

Arguments: on a CPU device (``memory.host_alignment``) pooled buffers are host memory
(``CL_MEM_USE_HOST_PTR``), so arguments are copied in and small results out by memcpy;
a C-contiguous numpy argument of at least ``IN_PLACE_BYTES`` that the plan never writes
is bound in place (no copy), and results of that size are new host arrays (aligned to
the device's base address alignment) the kernels write into: their memory comes from a
pool it returns to only when the result and all its views are gone
(:func:`memory.leased_empty`), so a warm call writes into memory that is already mapped
(``transcendental12``'s twelve 512 KiB results: ~2.7 -> ~1.4 ms a call).  An argument bound in place
gets a fresh read-only ``USE_HOST_PTR`` buffer per call, so it may sit at any
element-aligned address: a driver that wanted its base alignment would copy it when the
buffer is made, which is what tlc would otherwise do (PoCL 3.1 copies nothing: measured
at offsets of 4 to 128 bytes on 16 MiB arrays).  Elsewhere numpy arguments are copied
to pooled device buffers without waiting and results read back without blocking.
``pyopencl.array.Array`` arguments (contiguous, of the device's context) stay on the
device: used in place when the plan does not write them, else copied device-to-device.
Several threads may call one executable at once.

A plan without host loops (launches of flat-buffer kernels, copies, frees and branches of
such steps: most programs) runs as prepared frames (:mod:`backend_opencl.exec.frame`):
buffers assigned and kernel arguments set once, a warm call only binds its parameters and
enqueues. Other plans are resolved once per executable into a tree of step functions: a
launch whose arguments are all plain buffers (the lowering's flat memrefs; no bounds
guards) binds its device arrays straight to a kernel object of its own and is enqueued
without waiting (the queue is in order; reading results back waits for it). Other
launches go through the module's checked kernel call. Freed buffers go to a pool keyed by
dtype and size, from which later allocations are served; the pool outlives a call, so a
warm call allocates nothing (except under ``POISON``, where every call starts from fresh,
poisoned buffers). Constants are uploaded once per executable.

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
from typing import Any

import numpy as np

from backend_opencl.exec import frame, steps
from backend_opencl.exec.device_array import DeviceArray
from backend_opencl.exec.module import NUMPY_DTYPES, max_allocation
from backend_opencl.runtime import profile
from backend_opencl.runtime.opencl import buffers, launch, memory
from tensorlang.diagnostics import LaunchError
from tensorlang.plan import Callback, Copy, Launch, Plan, Step

POISON = os.environ.get("TLC_POISON") == "1"
"""Fill every new buffer with 0xFF bytes (tests; ``TLC_POISON=1``)."""

IN_PLACE_BYTES = 1 << 16
"""Smallest argument or result bound in place: on PoCL a ``USE_HOST_PTR`` buffer costs
about what a small copy does (an implicit migration command); above this size the copy's
memcpy dominates (measured on the mlp and batched-GEMM examples)."""

LEASED = True
"""Results bound in place come from a pool of result memory (off: fresh arrays)."""

FRAMES_ENV = "TLC_FRAMES"
"""Set to 0 to run plans step by step instead of as prepared frames."""

Pool = dict[tuple[str, int], list[Any]]
StepFn = Callable[["_Run"], None]


class Executable:
    """A compiled StableHLO function: call it with numpy arrays."""

    def __init__(self, plan: Plan, module: Any, device: Any, name: str,
                 arg_dtypes: list[np.dtype | None], result_dtypes: list[np.dtype | None],
                 host_callbacks: Sequence[Callable[..., Any]] = ()) -> None:
        """``arg_dtypes`` and ``result_dtypes``: the parameters' and results' numpy dtypes
        (None: a token); ``host_callbacks``: the functions the plan's ``Callback`` steps
        call, by index."""
        self.plan = plan
        self.module = module
        self.device = device
        self.name = name
        self.arg_dtypes = arg_dtypes
        self.result_dtypes = result_dtypes
        self.host_callbacks = tuple(host_callbacks)
        self._constants: dict[int, Any] = {}
        self._storage = [np.dtype(NUMPY_DTYPES[b.dtype]) for b in plan.buffers]
        self._steps: tuple[StepFn, ...] | None = None
        self._pool: Pool = {}
        self._lock = threading.Lock()
        self._align = memory.host_alignment(device)  # 0: numpy arrays are copied
        self._anywhere = memory.binds_anywhere(device)
        self._written: frozenset[int] | None = None
        self._frames: frame.Frames | None = None
        self._in_place_results = self._results_in_place()
        self._params = tuple((bid, None if dtype is None else np.dtype(dtype),
                              plan.buffer(bid).shape)
                             for bid, dtype in zip(plan.params, arg_dtypes, strict=True))
        self._ctx, self._queue = device.context, device.queue
        self._spin = launch.Spin(bool(self._align))  # the final wait of a call
        self.pred_spin = launch.Spin(bool(self._align))
        """How a read of a branch's or loop's predicate waits."""

    def __call__(self, *arrays: Any) -> tuple[np.ndarray | None, ...]:
        start = time.perf_counter()
        args = self.check(arrays)
        if self._steps is None:
            self._resolve()
        profiling = profile.enabled()
        frames = self._frames
        run: Any = frames.take() if frames is not None else _Run(self, self._take_pool())
        try:
            for bid, arg in zip(self.plan.params, args, strict=True):
                if arg is not None:  # None: a token
                    self._bind(run, bid, arg, profiling)
            hosts = [self._result_host(run, bid) if direct else None
                     for bid, direct in zip(self.plan.results, self._in_place_results,
                                            strict=True)]
            if frames is not None:
                run.run(profiling)
            else:
                run.steps(self._steps)
            out = self._collect(run, hosts, profiling)
        except BaseException:
            self.device.queue.finish()  # nothing in flight reads memory dropped below
            raise
        finally:
            if frames is not None:
                frames.give(run)
            else:
                self._give_back(run)
        if profiling:
            profile.PROFILE.call(time.perf_counter() - start)
        return out

    def dispatch(self, *arrays: Any) -> tuple[DeviceArray | None, ...]:
        """Call without waiting: enqueue the call's commands and return its results as
        :class:`DeviceArray` s that stay on the device until read (see
        :mod:`backend_opencl.exec.device_array`).  Arguments are taken as they are at the call
        (numpy arrays are copied before it returns).  A plan with host loops or
        callbacks, which reads the device as it goes, runs as a plain call."""
        args = self.check(arrays)
        if self._steps is None:
            self._resolve()
        frames = self._frames
        if frames is None:
            return tuple(None if r is None else DeviceArray.of_host(r) for r in self(*args))
        run = frames.take()
        try:
            for bid, arg in zip(self.plan.params, args, strict=True):
                if arg is not None:
                    self._bind(run, bid, arg, False, snapshot=True)
            for bid, direct in zip(self.plan.results, self._in_place_results, strict=True):
                if direct:
                    self._result_host(run, bid)
            run.run(False, gated=False)
            return self._device_results(run, args, frames)
        except BaseException:
            self.device.queue.finish()
            frames.give(run)
            raise

    def _device_results(self, run: Any, args: list[Any], frames: frame.Frames
                        ) -> tuple[DeviceArray | None, ...]:
        """The results of a call that did not wait; its frame goes back once the results
        over the frame's own memory are read or dropped."""
        plan, lease = self.plan, None
        outs: list[DeviceArray | None] = []
        for bid, direct, dtype in zip(plan.results, self._in_place_results,
                                      self.result_dtypes, strict=True):
            if dtype is None:
                outs.append(None)
            elif bid in plan.params:  # the argument itself
                arg = args[plan.params.index(bid)]
                host = arg.get() if memory.is_device_array(arg) else arg
                outs.append(arg if isinstance(arg, DeviceArray)
                            else DeviceArray.of_host(np.array(host, dtype)))
            else:
                slot = not direct and plan.buffer(bid).init is None
                if slot and lease is None:
                    lease = frames.lease(run)
                outs.append(DeviceArray(run.get(bid), plan.buffer(bid).shape, dtype,
                                        self._storage[bid], run.last, self._queue,
                                        self._spin, lease if slot else None))
        if lease is None:
            frames.release(run)
        return tuple(outs)

    def with_callbacks(self, host_callbacks: Sequence[Callable[..., Any]]) -> Executable:
        """This executable calling ``host_callbacks`` at its ``Callback`` steps (a new
        executable over the same plan and kernels)."""
        return Executable(self.plan, self.module, self.device, self.name, self.arg_dtypes,
                          self.result_dtypes, host_callbacks)

    def _resolve(self) -> None:
        """Resolve the plan once (even when the first calls are concurrent): its step
        functions and, for a plan without host loops, its prepared frames."""
        with self._lock:
            if self._steps is None:
                self._check_sizes()
                self._written = steps.written_buffers(self.plan.steps, self.module)
                resolver = _Resolver(self)
                self._frames = self._prepared_frames(resolver)
                self._steps = () if self._frames else resolver.steps(self.plan.steps)

    def _prepared_frames(self, resolver: _Resolver) -> frame.Frames | None:
        """The frames of a plan without host loops (None: the plan has a host loop or a
        launch that needs the checked kernel call; ``TLC_FRAMES=0`` turns them off)."""
        plan = self.plan
        if os.environ.get(FRAMES_ENV) == "0" or not frame.framed(
                plan.steps, resolver.direct_launch):
            return None
        dynamic = frozenset(plan.params) | {bid for bid, direct in
                                            zip(plan.results, self._in_place_results,
                                                strict=True) if direct}
        constants = frozenset(bid for bid, b in enumerate(plan.buffers) if b.init is not None)
        layout = frame.Layout(plan, dynamic, constants)
        return frame.Frames(self, layout, fresh=lambda: POISON) if layout.ok else None

    def _check_sizes(self) -> None:
        """LaunchError when a buffer of the plan exceeds the device's largest allocation
        (instead of a failed clCreateBuffer in the middle of a call)."""
        limit = max_allocation(self.device)
        for bid, b in enumerate(self.plan.buffers):
            nbytes = b.size * self._storage[bid].itemsize
            if limit and nbytes > limit:
                shape = "x".join(map(str, b.shape))
                raise LaunchError(f"@{self.name}: a {shape} {b.dtype} buffer needs {nbytes} "
                                  f"bytes but the device's largest buffer is {limit} bytes")

    def _results_in_place(self) -> tuple[bool, ...]:
        """Which results the kernels write straight into host arrays (CPU devices): each
        one that is neither a parameter, nor a constant, nor a repeated result."""
        plan = self.plan
        return tuple(bool(self._align) and bid not in plan.params
                     and plan.buffer(bid).init is None and plan.results.count(bid) == 1
                     and plan.buffer(bid).size * self._storage[bid].itemsize
                     >= IN_PLACE_BYTES for bid in plan.results)

    def _bind(self, run: Any, bid: int, arg: Any, profiling: bool,
              snapshot: bool = False) -> None:
        """Make ``arg`` (checked) the contents of parameter buffer ``bid`` (``snapshot``:
        of a call that does not wait, so the caller's numpy memory is copied now)."""
        written = bid in (self._written or ())
        if type(arg) is DeviceArray:
            if self._bind_device_array(run, bid, arg, written):
                return
            arg = arg.host()
        if type(arg) is not np.ndarray and memory.is_device_array(arg):
            if not written and arg.offset == 0 and arg.size:
                run.borrow(bid, arg if arg.ndim == 1 else arg.reshape(-1))
            else:
                run.enqueued(buffers.copy(self.device, run.get(bid), arg))
            return
        storage = self._storage[bid]
        host = arg if arg.dtype is storage else arg.astype(storage, copy=False)
        if self._align and not written and not snapshot and host.nbytes >= IN_PLACE_BYTES \
                and host.flags.c_contiguous and host.flags.aligned \
                and (self._anywhere or host.ctypes.data % self._align == 0):  # see top
            run.borrow(bid, buffers.HostArray.over(self._ctx, self._queue, host.reshape(-1),
                                                   writes=False))
            return
        target = run.get(bid)
        if isinstance(target, buffers.HostArray):  # host memory: a memcpy, no command
            target.fill(host)
            if profiling:
                profile.PROFILE.moved(to_device=host.nbytes)
            return
        run.transfer(buffers.write(target, host.copy() if snapshot else host))

    def _bind_device_array(self, run: Any, bid: int, arg: DeviceArray, written: bool
                           ) -> bool:
        """Bind a tlc result still on this executable's device as parameter ``bid``: its
        buffer itself when the plan only reads it, else a device copy (the in-order
        queue runs them after the commands that compute it).  False when it is not on
        this device (or already read): the caller binds its host copy."""
        buffer = arg.buffer
        if buffer is None or arg.storage != self._storage[bid] or arg.context != self._ctx:
            return False
        run.keep.append(arg)  # its memory (and frame) stay until this call's commands ran
        if written:
            run.enqueued(buffers.copy(self.device, run.get(bid), buffer))
        else:
            run.borrow(bid, buffer)
        return True

    def new_buffer(self, bid: int) -> Any:
        """A new buffer for ``bid``: in host memory on CPU devices (pooled, so its
        ``USE_HOST_PTR`` buffer is made once), else a device array; poisoned under
        ``POISON``."""
        if not self._align:
            return buffers.alloc(self.device, self._storage[bid], self.plan.buffer(bid).size,
                                 POISON)
        return buffers.HostArray.over(self._ctx, self._queue, self._host_array(bid),
                                      writes=True)

    def _host_array(self, bid: int, leased: bool = False) -> np.ndarray:
        """A fresh flat host array for buffer ``bid``, aligned for in-place binding
        (``leased``: from the pool of result memory, :func:`memory.leased_empty`)."""
        b, dtype = self.plan.buffer(bid), self._storage[bid]
        empty = memory.leased_empty if leased and LEASED else memory.aligned_empty
        host = empty(max(b.size, 1) * dtype.itemsize, self._align)
        if POISON:
            host[...] = 0xFF
        return host.view(dtype)

    def _result_host(self, run: Any, bid: int) -> np.ndarray:
        """A fresh host array that is result buffer ``bid`` for this call (in place)."""
        host = self._host_array(bid, leased=True)
        run.borrow(bid, buffers.HostArray.over(self._ctx, self._queue, host, writes=True))
        return host

    def _collect(self, run: Any, hosts: list[np.ndarray | None],
                 profiling: bool) -> tuple[np.ndarray | None, ...]:
        """The results, after one wait: results bound in place are already in their
        arrays, device results are read back without blocking first, and results in
        pooled host memory are copied out after the wait (a token is None)."""
        flats: list[tuple[np.ndarray, bool] | None] = []
        for bid, host, dtype in zip(self.plan.results, hosts, self.result_dtypes,
                                    strict=True):
            if dtype is None:
                flats.append(None)
                continue
            arr = run.get(bid)
            pooled = host is None and isinstance(arr, buffers.HostArray)
            if host is None and not pooled:
                host = np.empty(self.plan.buffer(bid).size, self._storage[bid])
                run.transfer(buffers.read_async(self.device.queue, arr, host))
            flats.append((arr.host, True) if pooled else (host, False))
        launch.finish(self.device.queue, run.last, self._spin)
        run.keep.clear()
        return tuple(None if flat is None else self._result(bid, *flat, dtype, profiling)
                     for bid, flat, dtype in zip(self.plan.results, flats, self.result_dtypes,
                                                 strict=True))

    def _result(self, bid: int, flat: np.ndarray, copy: bool, dtype: Any,
                profiling: bool) -> np.ndarray:
        """Result ``bid`` shaped and typed from its flat host array (a copy when the
        array is pooled memory)."""
        b = self.plan.buffer(bid)
        out = flat[:b.size].reshape(b.shape)
        if copy:
            out = out.copy()
            if profiling:
                profile.PROFILE.moved(to_host=out.nbytes)
        return out.astype(dtype, copy=False)

    def _take_pool(self) -> Pool:
        with self._lock:  # a concurrent call starts with an empty pool of its own
            pool, self._pool = self._pool, {}
        return pool

    def _give_back(self, run: _Run) -> None:
        if POISON:
            return
        run.free(tuple(run.live))  # borrowed arrays are dropped, not pooled
        with self._lock:
            for key, arrays in run.pool.items():
                self._pool.setdefault(key, []).extend(arrays)

    def check(self, arrays: tuple[Any, ...]) -> list[Any]:
        """The arguments as numpy arrays (pyopencl arrays as they are), or LaunchError
        naming the first mistake."""
        params = self._params
        steps.check_argument_count(self.name, arrays, params)
        hosts = []
        for i, (a, (_, dtype, shape)) in enumerate(zip(arrays, params, strict=True)):
            if type(a) is np.ndarray and a.dtype == dtype and a.shape == shape:
                hosts.append(a)  # the common case, checked
                continue
            if dtype is None:
                hosts.append(steps.token_argument(self.name, i, a))
                continue
            if memory.is_device_array(a):
                self._check_device_array(i, a)
            arr = a if isinstance(a, (np.ndarray, DeviceArray)) or memory.is_device_array(a) \
                else np.asarray(a)
            hosts.append(steps.checked_array(self.name, i, arr, dtype, shape))
        return hosts

    def _check_device_array(self, i: int, arr: Any) -> None:
        """LaunchError unless pyopencl array ``arr`` can stand for argument ``i``."""
        if arr.context != self.device.context:
            raise LaunchError(f"@{self.name}: argument {i} is a pyopencl array of another "
                              "OpenCL context than the executable's (use the device's)")
        if not arr.flags.c_contiguous:
            raise LaunchError(f"@{self.name}: argument {i} must be a C-contiguous pyopencl "
                              "array")
        if arr.queue is not None and arr.queue != self.device.queue:
            arr.queue.finish()  # its pending writes precede this call's reads

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
            return lambda run: run.enqueued(buffers.copy(device, run.get(dst), run.get(src)))
        if isinstance(step, Callback):
            exe = self.exe
            return steps.callback(step, exe.plan, exe._storage, exe.host_callbacks,
                                       exe.name)
        control = steps.control_step(step, self.step)
        assert control is not None, step
        return control

    def launch(self, step: Launch) -> StepFn:
        """A launch: bound directly when every argument is a plain buffer, else checked."""
        kernel = self.exe.module.kernels[step.kernel]
        args, groups = step.args, step.num_groups
        if not self.direct_launch(step):
            def checked(run: _Run) -> None:
                kernel(*[run.checked(b) for b in args], num_groups=groups)
                run.last = None  # the checked call waited for the queue
            return checked
        run_kernel = launch.prepared(self.exe.device.queue, self.exe.module.program,
                                     kernel.info.c_name, groups,
                                     kernel.info.plan.work_group_size, kernel.name)
        return lambda run: run.enqueued(run_kernel([run.get(b) for b in args]))

    def direct_launch(self, step: Launch) -> bool:
        """True when the launch's kernel takes exactly its buffers as flat memrefs of their
        dtype and size (one pointer parameter each) and has no bounds guards."""
        exe = self.exe
        return steps.takes_flat_buffers(exe.module.kernels[step.kernel].info, step.args,
                                             exe.plan, exe._storage)


class _Run(launch.InFlight):
    """One execution: live device arrays by buffer id and the reuse pool."""

    def __init__(self, exe: Executable, pool: Pool) -> None:
        super().__init__()
        self.exe = exe
        self.live: dict[int, Any] = {}
        self.pool = pool
        self.borrowed: set[int] = set()  # buffers bound to the caller's or result memory

    def borrow(self, bid: int, arr: Any) -> None:
        """Make ``arr`` (a pyopencl or host array that is not the pool's) buffer ``bid``."""
        self.live[bid] = arr
        self.borrowed.add(bid)

    def checked(self, bid: int) -> Any:
        """Buffer ``bid`` as the module's checked kernel call takes it (host memory as
        its numpy array: the call binds it in place)."""
        arr = self.get(bid)
        return arr.host if isinstance(arr, buffers.HostArray) else arr

    def get(self, bid: int) -> Any:
        """The device array of buffer ``bid``, allocated (or reused) on first use."""
        arr = self.live.get(bid)
        if arr is None:
            b = self.exe.plan.buffers[bid]
            if b.init is not None:
                return self.exe.constant(bid)
            free = self.pool.get((b.dtype, b.size))
            arr = free.pop() if free else self.exe.new_buffer(bid)
            self.live[bid] = arr
        return arr

    def steps(self, steps: tuple[StepFn, ...]) -> None:
        """Run step functions in order."""
        for step in steps:
            step(self)

    def scalar(self, bid: int) -> Any:
        """Read a one-element buffer back to the host."""
        return self.read(bid, 1)[0]

    def read(self, bid: int, n: int | None = None) -> np.ndarray:
        """A copy of buffer ``bid``'s first ``n`` elements (default: all), flat, once the
        commands before have run (host memory: after waiting for the last command,
        polling as :class:`launch.Spin` does; device memory: a blocking read on the
        in-order queue)."""
        arr = self.get(bid)
        n = self.exe.plan.buffers[bid].size if n is None else n
        if isinstance(arr, buffers.HostArray):
            launch.finish(self.exe.device.queue, self.last, self.exe.pred_spin)
            return arr.host[:n].copy()
        return buffers.download(arr, n)

    def write(self, bid: int, flat: np.ndarray) -> None:
        """Make buffer ``bid`` hold ``flat`` for the commands enqueued after (host
        memory: written once the commands before, which may use it, have run)."""
        arr = self.get(bid)
        if isinstance(arr, buffers.HostArray):
            launch.finish(self.exe.device.queue, self.last, self.exe.pred_spin)
            arr.fill(flat)
        else:
            self.transfer(buffers.write(arr, flat))

    def free(self, bids: tuple[int, ...]) -> None:
        """Return buffers to the pool."""
        for bid in bids:
            arr = self.live.pop(bid, None)
            if arr is not None and bid not in self.borrowed:
                b = self.exe.plan.buffers[bid]
                self.pool.setdefault((b.dtype, b.size), []).append(arr)
