"""Executing a StableHLO program's host plan on a SYCL queue.

``backend_opencl.compile_stablehlo(text, device=queue)`` lowers the program as for an
OpenCL device and returns a :class:`SyclExecutable`: its buffers are USM device memory
of the queue (pooled across calls), its kernels a :class:`~backend_opencl.exec.sycl_module.
SyclModule`.  Arguments are numpy arrays (copied in), C-contiguous USM arrays of the
queue's context or plain USM memory holding the argument's row-major bytes (USM is used in
place when the plan never writes it); they are checked as
:class:`~backend_opencl.exec.executable.Executable` checks them.  Results come back as numpy
arrays after one wait.  On an in-order queue launches and copies are submitted without
waiting; on an out-of-order queue each waits for its predecessor.  Host callbacks and
tokens are handled as :mod:`backend_opencl.exec.executable` handles them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from backend_opencl.api.compiler import EXECUTABLES_KEPT
from backend_opencl.exec import steps
from backend_opencl.exec.module import NUMPY_DTYPES
from backend_opencl.exec.sycl_module import SyclModule, compile_for_queue
from backend_opencl.memo import Memo
from backend_opencl.runtime.sycl import queue as sycl
from tensorlang.diagnostics import LaunchError
from tensorlang.plan import Callback, Copy, Launch, Plan, Step

StepFn = Callable[["_Run"], None]
_EXECUTABLES: Memo[tuple[Any, ...], SyclExecutable] = Memo(EXECUTABLES_KEPT)


def compile_stablehlo_for_queue(text: str, queue: Any, filename: str = "<string>",
                                check_bounds: bool = False, entry: str = "main",
                                host_callbacks: Sequence[Callable[..., Any]] | None = None
                                ) -> SyclExecutable:
    """Parse, verify and lower StableHLO text; build its kernels for SYCL ``queue``
    (cached per text and queue in this process; the lowered program also on disk, as
    :func:`backend_opencl.api.compiler.compile_stablehlo_program` keeps it, which also says
    what ``host_callbacks`` are)."""
    from backend_opencl.api import compiler

    count = None if host_callbacks is None else len(host_callbacks)
    key = (text, filename, entry, queue, count, check_bounds)
    exe = _EXECUTABLES.get(key)
    if exe is None:
        device = sycl.sycl_device(queue)
        disk = compiler._lowered_cache_file((text, filename, entry, device.key, count,
                                           check_bounds))
        exe = _load(disk, device) if disk is not None else None
        if exe is None:
            exe = _lowered(text, device, filename, entry, check_bounds, count)
            if disk is not None:
                compiler._store_executable(disk, exe)
        _EXECUTABLES[key] = exe
    return exe.with_callbacks(host_callbacks) if host_callbacks else exe


def _lowered(text: str, device: sycl.SyclDevice, filename: str, entry: str,
             check_bounds: bool, callbacks: int | None) -> SyclExecutable:
    """Parse, verify and lower StableHLO text (``callbacks``: how many host callbacks the
    executable will have); build its kernels on the queue."""
    import frontend
    from backend_opencl.api import compiler
    from frontend.lower import lower_function

    module = frontend.parse(text, filename=filename)
    lowered = lower_function(compiler._part_with(module.parts or [module], entry), entry,
                             callbacks)
    program = compiler._kernels_program(lowered)
    kernels = compile_for_queue(program, device.queue, check_bounds=check_bounds,
                                launch_checks=False) if program.functions else None
    return SyclExecutable(lowered.plan, kernels, device, entry, *compiler.value_dtypes(lowered))


def _load(path: Any, device: sycl.SyclDevice) -> SyclExecutable | None:
    """The executable whose lowered program ``path`` keeps (None: none or unreadable)."""
    from backend_opencl.api import compiler

    stored = compiler._load_stored(path)
    if stored is None:
        return None
    plan, program, written, entry, arg_dtypes, result_dtypes = stored
    module = SyclModule(program, None, device, None, written) if program is not None else None
    return SyclExecutable(plan, module, device, entry, arg_dtypes, result_dtypes)


class SyclExecutable:
    """A compiled StableHLO function on a SYCL queue: call it with numpy or USM arrays."""

    def __init__(self, plan: Plan, module: SyclModule | None, device: sycl.SyclDevice,
                 name: str, arg_dtypes: list[Any], result_dtypes: list[Any],
                 host_callbacks: Sequence[Callable[..., Any]] = ()) -> None:
        """As :class:`backend_opencl.exec.executable.Executable`'s."""
        self.plan = plan
        self.module = module
        self.device = device
        self.name = name
        self.arg_dtypes = arg_dtypes
        self.result_dtypes = result_dtypes
        self.host_callbacks = tuple(host_callbacks)
        self.storage = [np.dtype(NUMPY_DTYPES[b.dtype]) for b in plan.buffers]
        self.nbytes = [max(b.size, 1) * dtype.itemsize
                       for b, dtype in zip(plan.buffers, self.storage, strict=True)]
        """The bytes of each buffer (at least one element's)."""
        self._constants: dict[int, Any] = {}
        self._pool: dict[int, list[Any]] = {}  # free USM memory by size in bytes
        self._lock = threading.Lock()
        self._written = steps.written_buffers(plan.steps, module)
        self._steps = tuple(self._step(s) for s in plan.steps)

    def __call__(self, *arrays: Any) -> tuple[np.ndarray | None, ...]:
        """Check the arguments, run the plan, return the results as numpy arrays (None
        for a token)."""
        args = self.check(arrays)
        with self._lock:
            pool, self._pool = self._pool, {}
        run = _Run(self, pool)
        try:
            for bid, arg in zip(self.plan.params, args, strict=True):
                if arg is not None:  # None: a token
                    self._bind(run, bid, arg)
            run.steps(self._steps)
            return self._collect(run)
        except BaseException:
            sycl.wait(self.device)  # nothing in flight uses memory given back
            raise
        finally:
            run.free(tuple(run.live))
            with self._lock:
                for size, mems in run.pool.items():
                    self._pool.setdefault(size, []).extend(mems)

    def with_callbacks(self, host_callbacks: Sequence[Callable[..., Any]]
                       ) -> SyclExecutable:
        """This executable calling ``host_callbacks`` at its ``Callback`` steps."""
        return SyclExecutable(self.plan, self.module, self.device, self.name,
                              self.arg_dtypes, self.result_dtypes, host_callbacks)

    def check(self, arrays: tuple[Any, ...]) -> list[Any]:
        """The arguments as numpy arrays or :class:`sycl.UsmArray` views, or LaunchError
        naming the first mistake."""
        params = self.plan.params
        steps.check_argument_count(self.name, arrays, params)
        out = []
        for i, (a, bid, dtype) in enumerate(zip(arrays, params, self.arg_dtypes, strict=True)):
            if dtype is None:
                out.append(steps.token_argument(self.name, i, a))
                continue
            arr = self._usm_argument(i, a, bid) if sycl.is_usm(a) else np.asarray(a)
            out.append(steps.checked_array(self.name, i, arr, dtype,
                                                self.plan.buffer(bid).shape))
        return out

    def _usm_argument(self, i: int, value: Any, bid: int) -> sycl.UsmArray:
        """USM argument ``i`` as a C-contiguous :class:`sycl.UsmArray` of parameter
        buffer ``bid``'s layout (plain USM memory: when it holds the array's bytes)."""
        dtype, shape = self.storage[bid], self.plan.buffer(bid).shape
        if sycl.is_memory(value):
            need = self.plan.buffer(bid).size * dtype.itemsize
            if value.nbytes < need:
                raise LaunchError(f"@{self.name}: argument {i} is USM memory of "
                                  f"{value.nbytes} bytes; the {'x'.join(map(str, shape))} "
                                  f"{dtype.name} array it stands for needs {need}")
            strides = sycl.row_major_strides(shape, dtype.itemsize)
            arr = sycl.UsmArray(value, shape, strides, self.arg_dtypes[i], False, True)
        else:
            arr = sycl.usm_array(value)
        if not sycl.same_context(self.device, arr.memory):
            raise LaunchError(f"@{self.name}: argument {i} is USM memory of another SYCL "
                              "context than the queue's")
        if arr.dtype.itemsize != dtype.itemsize:  # the plan stores it in another type
            raise LaunchError(f"@{self.name}: argument {i} must be a numpy array (its "
                              f"{arr.dtype.name} elements are stored as {dtype.name})")
        step = arr.dtype.itemsize
        for n, stride in zip(reversed(arr.shape), reversed(arr.strides), strict=True):
            if n > 1 and stride != step:
                raise LaunchError(f"@{self.name}: argument {i} must be a C-contiguous USM "
                                  "array")
            step *= n
        return arr

    def _bind(self, run: _Run, bid: int, arg: Any) -> None:
        """Make checked ``arg`` the contents of parameter buffer ``bid``."""
        if isinstance(arg, sycl.UsmArray):
            if bid not in self._written and arg.size:
                run.borrow(bid, arg.memory)
            else:
                sycl.copy(self.device, run.get(bid), arg.memory, arg.size * arg.dtype.itemsize)
            return
        sycl.write(run.get(bid), arg.astype(self.storage[bid], copy=False))

    def _collect(self, run: _Run) -> tuple[np.ndarray | None, ...]:
        """The results as numpy arrays, None for a token (after one wait for the queue)."""
        sycl.wait(self.device)
        out: list[np.ndarray | None] = []
        for bid, dtype in zip(self.plan.results, self.result_dtypes, strict=True):
            if dtype is None:
                out.append(None)
                continue
            b = self.plan.buffer(bid)
            host = np.empty(b.size, self.storage[bid])
            sycl.read(run.get(bid), host)
            out.append(host.reshape(b.shape).astype(dtype, copy=False))
        return tuple(out)

    def constant(self, bid: int) -> Any:
        """The USM memory of constant buffer ``bid`` (uploaded once)."""
        if bid not in self._constants:
            b = self.plan.buffer(bid)
            host = np.frombuffer(b.init or b"", dtype=self.storage[bid])
            self._constants[bid] = sycl.to_device(self.device, host)
        return self._constants[bid]

    # -- step functions ------------------------------------------------------------------------

    def _step(self, step: Step) -> StepFn:
        """The step function of one plan step."""
        if isinstance(step, Launch):
            return self._launch(step)
        if isinstance(step, Copy):
            src, dst, device = step.src, step.dst, self.device
            return lambda run: sycl.copy(device, run.get(dst), run.get(src),
                                         self.nbytes[src])
        if isinstance(step, Callback):
            return steps.callback(step, self.plan, self.storage, self.host_callbacks,
                                       self.name)
        control = steps.control_step(step, self._step)
        assert control is not None, step
        return control

    def _launch(self, step: Launch) -> StepFn:
        """A launch: its buffers passed straight when the kernel takes each as one flat
        pointer, else through the kernel's checked call (flat USM arrays)."""
        assert self.module is not None
        kernel = self.module.kernels[step.kernel]
        args, groups, device = step.args, step.num_groups, self.device
        if steps.takes_flat_buffers(kernel.info, args, self.plan, self.storage):
            wgs, sycl_kernel = kernel.info.plan.work_group_size, kernel.kernel
            return lambda run: sycl.launch(device, sycl_kernel, [run.get(b) for b in args],
                                           groups, wgs)
        return lambda run: kernel(*[run.flat(b) for b in args], num_groups=groups)


class _Run:
    """One call: live USM memory by buffer id and the pool of free memory."""

    def __init__(self, exe: SyclExecutable, pool: dict[int, list[Any]]) -> None:
        self.exe = exe
        self.live: dict[int, Any] = {}
        self.pool = pool
        self.borrowed: set[int] = set()

    def borrow(self, bid: int, mem: Any) -> None:
        """Make the caller's USM memory ``mem`` buffer ``bid`` (never pooled)."""
        self.live[bid] = mem
        self.borrowed.add(bid)

    def get(self, bid: int) -> Any:
        """The USM memory of buffer ``bid``, allocated (or reused) on first use."""
        mem = self.live.get(bid)
        if mem is None:
            if self.exe.plan.buffers[bid].init is not None:
                return self.exe.constant(bid)
            free = self.pool.get(self.exe.nbytes[bid])
            mem = free.pop() if free else sycl.alloc(self.exe.device, self.exe.nbytes[bid])
            self.live[bid] = mem
        return mem

    def flat(self, bid: int) -> sycl.UsmArray:
        """Buffer ``bid`` as a flat USM array (for a kernel's checked call)."""
        dtype = self.exe.storage[bid]
        n = max(self.exe.plan.buffer(bid).size, 1)
        return sycl.UsmArray(self.get(bid), (n,), (dtype.itemsize,), dtype, False, False)

    def steps(self, steps: tuple[StepFn, ...]) -> None:
        """Run step functions in order."""
        for step in steps:
            step(self)

    def scalar(self, bid: int) -> Any:
        """The one element of buffer ``bid`` (waits for the queue)."""
        return self.read(bid, 1)[0]

    def read(self, bid: int, n: int | None = None) -> np.ndarray:
        """Buffer ``bid``'s first ``n`` elements (default: all), flat (waits for the
        queue)."""
        sycl.wait(self.exe.device)
        host = np.empty(self.exe.plan.buffer(bid).size if n is None else n,
                        self.exe.storage[bid])
        sycl.read(self.get(bid), host)
        return host

    def write(self, bid: int, flat: np.ndarray) -> None:
        """Make buffer ``bid`` hold ``flat`` (waits for the queue: no queued command may
        use the memory written)."""
        sycl.wait(self.exe.device)
        sycl.write(self.get(bid), flat)

    def free(self, bids: tuple[int, ...]) -> None:
        """Return buffers to the pool (borrowed and constant memory is dropped)."""
        for bid in bids:
            mem = self.live.pop(bid, None)
            if mem is not None and bid not in self.borrowed:
                self.pool.setdefault(self.exe.nbytes[bid], []).append(mem)
