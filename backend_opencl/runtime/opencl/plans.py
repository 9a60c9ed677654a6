"""Host plans on an OpenCL device through pyopencl: the
:class:`~backend_opencl.exec.runtime.PlanRuntime` of
:class:`~backend_opencl.exec.executable.Executable`.

Arguments: on a CPU device (``memory.host_alignment``) pooled buffers are host memory
(``CL_MEM_USE_HOST_PTR``), so arguments are copied in and small results out by memcpy;
a C-contiguous numpy argument of at least ``IN_PLACE_BYTES`` that the plan never writes
is bound in place (no copy), and results of that size are new host arrays (aligned to
the device's base address alignment) the kernels write into: their memory comes from a
pool it returns to only when the result and all its views are gone
(:func:`memory.leased_empty`), so a warm call writes into memory that is already mapped
(``transcendental12``'s twelve 512 KiB results: ~2.7 -> ~1.4 ms a call).  An argument
bound in place gets a fresh read-only ``USE_HOST_PTR`` buffer per call, so it may sit at
any element-aligned address: a driver that wanted its base alignment would copy it when
the buffer is made, which is what tlc would otherwise do (PoCL 3.1 copies nothing:
measured at offsets of 4 to 128 bytes on 16 MiB arrays).  Elsewhere numpy arguments are
copied to pooled device buffers without waiting and results read back without blocking.
``pyopencl.array.Array`` arguments (contiguous, of the device's context) stay on the
device: used in place when the plan does not write them, else copied device-to-device;
so do :class:`DeviceArray` results of this device.

A plan whose launches all bind flat buffers (no bounds guards: most programs; host loops,
branches and callbacks included) runs as prepared frames (:mod:`.frames`): buffers
assigned and kernel arguments set once, a warm call only binds its parameters and
enqueues; such a plan can also be called without waiting (:meth:`OpenCLPlans.dispatch`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from backend_opencl.exec import runtime, speculation, steps
from backend_opencl.exec.runtime import Kernel, Module
from backend_opencl.runtime import profile
from backend_opencl.runtime.opencl import buffers, launch, memory, prewarm
from backend_opencl.runtime.opencl.device_array import DeviceArray
from backend_opencl.runtime.opencl.devices import Device
from backend_opencl.runtime.opencl.frames import Frame, FramedExecutable, Frames, Layout, framed
from backend_opencl.runtime.opencl.kernels import OpenCLBuilt, max_allocation
from backend_opencl.runtime.opencl.quick import QuickDispatch
from tensorlang.diagnostics import LaunchError
from tensorlang.plan import Launch

if TYPE_CHECKING:
    from backend_opencl.exec.module import KernelTable

IN_PLACE_BYTES = 1 << 16
"""Smallest argument or result bound in place: on PoCL a ``USE_HOST_PTR`` buffer costs
about what a small copy does (an implicit migration command); above this size the copy's
memcpy dominates (measured on the mlp and batched-GEMM examples)."""

Executable = runtime.Executable[buffers.PlanMemory, cl.Event]
"""An executable on OpenCL, as its plan runtime sees it."""
Run = runtime.Run[buffers.PlanMemory, cl.Event]
"""A call's state on OpenCL (the executor's run or a :class:`Frame`)."""

LEASED = True
"""Results bound in place come from a pool of result memory (off: fresh arrays)."""


class OpenCLPlans:
    """The OpenCL :class:`~backend_opencl.exec.runtime.PlanRuntime` of one device."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.align = memory.host_alignment(device)  # 0: numpy arrays are copied
        self.anywhere = memory.binds_anywhere(device)
        self.ctx, self.queue = device.context, device.queue
        self.spin = launch.Spin(bool(self.align))  # the final wait of a call
        self.pred_spin = launch.Spin(bool(self.align))
        """How a read of a branch's or loop's predicate waits."""

    def max_bytes(self) -> int:
        """The device's largest buffer in bytes (0: unknown)."""
        return max_allocation(self.device)

    def frames(self, exe: Executable, direct: Callable[[Launch], bool]
               ) -> Frames | None:
        """The frames of a plan (None: a launch of the plan needs the checked kernel
        call)."""
        plan = exe.plan
        if not framed(plan.steps, direct):
            return None
        dynamic = frozenset(plan.params) | {bid for bid, direct_result in
                                            zip(plan.results, exe.in_place_results,
                                                strict=True) if direct_result}
        constants = frozenset(bid for bid, b in enumerate(plan.buffers) if b.init is not None)
        module = cast("KernelTable | None", exe.module)  # None: a plan without launches
        bets = speculation.bets(plan.steps, lambda s: steps.written_buffers((s,), module)) \
            if os.environ.get(speculation.ENV) != "0" else {}
        layout = Layout(plan, dynamic, constants, bets)
        if not layout.ok:
            return None
        # its runtime is this one (its device this one's), its module built by OpenCLKernels
        return Frames(cast("FramedExecutable", exe), layout, fresh=lambda: exe.poison)

    def prewarm(self, exe: Executable, launches: Sequence[Launch]
                ) -> Callable[[], None] | None:
        """A helper process compiling the kernels of ``launches`` into PoCL's cache, the
        last first (:mod:`.prewarm`); the function that stops it."""
        module = cast("KernelTable", exe.module)  # a plan with launches has one
        built = cast("Module[object]", exe.module).built
        assert isinstance(built, OpenCLBuilt)
        kernels: dict[str, prewarm.KernelLaunch] = {}
        for step in reversed(launches):
            info = module.kernels[step.kernel].info
            if info.c_name not in kernels:
                sizes = tuple(exe.plan.buffers[b].size * exe.storage[b].itemsize
                              for b in step.args)
                kernels[info.c_name] = prewarm.KernelLaunch(
                    info.c_name, info.plan.work_group_size, sizes)
        helper = prewarm.start(self.device, module.source, built.fresh, list(kernels.values()))
        return None if helper is None else helper.stop

    # -- arguments ---------------------------------------------------------------------------

    def check_argument(self, exe: Executable, i: int, value: object, bid: int
                       ) -> cl_array.Array | DeviceArray | None:
        """A pyopencl array (checked: context, contiguity) or a :class:`DeviceArray` as it
        is; None for anything else."""
        if isinstance(value, DeviceArray):
            return value
        if not memory.is_device_array(value):
            return None
        if value.context != self.ctx:
            raise LaunchError(f"@{exe.name}: argument {i} is a pyopencl array of another "
                              "OpenCL context than the executable's (use the device's)")
        if not value.flags.c_contiguous:
            raise LaunchError(f"@{exe.name}: argument {i} must be a C-contiguous pyopencl "
                              "array")
        if value.queue is not None and value.queue != self.queue:
            value.queue.finish()  # its pending writes precede this call's reads
        return value

    def bind(self, exe: Executable, run: Run, bid: int, arg: Any, profiling: bool,
             snapshot: bool) -> None:
        """Make ``arg`` (checked) the contents of parameter buffer ``bid`` (``snapshot``:
        of a call that does not wait, so the caller's numpy memory is copied now)."""
        written = bid in exe.written
        if type(arg) is DeviceArray:
            if self._bind_device_array(exe, run, bid, arg, written):
                return
            arg = arg.host()
        if type(arg) is not np.ndarray and memory.is_device_array(arg):
            if not written and arg.offset == 0 and arg.size:
                run.borrow(bid, arg if arg.ndim == 1 else arg.reshape(-1))
            else:
                run.enqueued(buffers.copy(self.device, run.get(bid), arg))
            return
        storage = exe.storage[bid]
        host = arg if arg.dtype is storage else arg.astype(storage, copy=False)
        if self.align and not written and not snapshot and host.nbytes >= IN_PLACE_BYTES \
                and host.flags.c_contiguous and host.flags.aligned \
                and (self.anywhere or host.ctypes.data % self.align == 0):  # see top
            run.borrow(bid, buffers.HostArray.over(self.ctx, self.queue, host.reshape(-1),
                                                   writes=False))
            return
        target = run.get(bid)
        if isinstance(target, buffers.HostArray):  # host memory: a memcpy, no command
            target.fill(host)
            if profiling:
                profile.PROFILE.moved(to_device=host.nbytes)
            return
        run.transfer(buffers.write(target, host.copy() if snapshot else host))

    def _bind_device_array(self, exe: Executable, run: Run, bid: int, arg: DeviceArray,
                           written: bool) -> bool:
        """Bind a tlc result still on this device as parameter ``bid``: its buffer itself
        when the plan only reads it, else a device copy (the in-order queue runs them
        after the commands that compute it).  False when it is not on this device (or
        already read): the caller binds its host copy."""
        held = arg.borrow(self.queue)
        if held is None and arg.borrow() is not None:  # on tlc's held queue (.quick)
            arg.block_until_ready()  # ordered before this call's commands by the wait
            held = arg.borrow()
        if held is None or arg.storage != exe.storage[bid] or arg.context != self.ctx:
            return False
        buffer, lease = held
        run.keep += (arg, lease)  # its memory (and frame) stay until this call's commands ran
        if written:
            run.enqueued(buffers.copy(self.device, run.get(bid), buffer))
        else:
            run.borrow(bid, buffer)
        return True

    # -- buffers -----------------------------------------------------------------------------

    def pool_key(self, exe: Executable, bid: int) -> tuple[str, int]:
        """Pooled by dtype and size."""
        b = exe.plan.buffers[bid]
        return b.dtype, b.size

    def new_buffer(self, exe: Executable, bid: int) -> cl_array.Array | buffers.HostArray:
        """A new buffer for ``bid``: in host memory on CPU devices (pooled, so its
        ``USE_HOST_PTR`` buffer is made once), else a device array."""
        if not self.align:
            return buffers.alloc(self.device, exe.storage[bid], exe.plan.buffer(bid).size,
                                 exe.poison)
        return buffers.HostArray.over(self.ctx, self.queue, self._host_array(exe, bid),
                                      writes=True)

    def new_memory(self, exe: FramedExecutable, nbytes: int
                   ) -> cl_array.Array | buffers.HostArray:
        """New memory of ``nbytes`` bytes for a frame's slot (as :meth:`new_buffer`)."""
        if not self.align:
            return buffers.alloc(self.device, np.dtype(np.uint8), nbytes, exe.poison)
        return buffers.HostArray.over(self.ctx, self.queue, self._host_bytes(exe, nbytes),
                                      writes=True)

    def _host_array(self, exe: Executable, bid: int, leased: bool = False) -> np.ndarray:
        """A fresh flat host array for buffer ``bid``, aligned for in-place binding
        (``leased``: from the pool of result memory, :func:`memory.leased_empty`)."""
        b, dtype = exe.plan.buffer(bid), exe.storage[bid]
        return self._host_bytes(exe, max(b.size, 1) * dtype.itemsize, leased).view(dtype)

    def _host_bytes(self, exe: Executable | FramedExecutable, nbytes: int,
                    leased: bool = False) -> np.ndarray:
        """``nbytes`` fresh aligned host bytes, all 0xFF under ``exe.poison``."""
        empty = memory.leased_empty if leased and LEASED else memory.aligned_empty
        host = empty(nbytes, self.align)
        if exe.poison:
            host[...] = 0xFF
        return host

    def upload(self, host: np.ndarray) -> cl_array.Array:
        """A device array holding ``host``."""
        return buffers.upload(self.device, host)

    def result_hosts(self, exe: Executable) -> tuple[bool, ...]:
        """Which results the kernels write straight into host arrays (CPU devices): each
        one that is neither a parameter, nor a constant, nor a repeated result."""
        plan = exe.plan
        return tuple(bool(self.align) and bid not in plan.params
                     and plan.buffer(bid).init is None and plan.results.count(bid) == 1
                     and plan.buffer(bid).size * exe.storage[bid].itemsize
                     >= IN_PLACE_BYTES for bid in plan.results)

    def result_host(self, exe: Executable, run: Run, bid: int) -> np.ndarray:
        """A fresh host array that is result buffer ``bid`` for this call (in place)."""
        host = self._host_array(exe, bid, leased=True)
        run.borrow(bid, buffers.HostArray.over(self.ctx, self.queue, host, writes=True))
        return host

    # -- steps -------------------------------------------------------------------------------

    def copy(self, exe: Executable, run: Run, dst: int, src: int) -> None:
        """Enqueue a device copy."""
        run.enqueued(buffers.copy(self.device, run.get(dst), run.get(src)))

    def direct_launch(self, module: Module[object], kernel: Kernel[object], num_groups: int
                      ) -> Callable[[Run, Sequence[buffers.PlanMemory]], None]:
        """A launch with a kernel object of its own, its NDRange fixed
        (:func:`launch.prepared`)."""
        built = module.built
        assert isinstance(built, OpenCLBuilt)
        # plan memory is held by a buffer (pyopencl annotates an array's base_data wider)
        enqueue = cast("Callable[[Sequence[buffers.PlanMemory]], cl.Event]",
                       launch.prepared(self.queue, built.program, kernel.info.c_name,
                                       num_groups, kernel.info.plan.work_group_size,
                                       kernel.name))
        return lambda run, arrays: run.enqueued(enqueue(arrays))

    def checked_view(self, exe: Executable, run: Run, bid: int
                     ) -> cl_array.Array | np.ndarray:
        """Buffer ``bid`` as the module's checked kernel call takes it (host memory as
        its numpy array: the call binds it in place)."""
        arr = run.get(bid)
        return arr.host if isinstance(arr, buffers.HostArray) else arr

    def read(self, exe: Executable, run: Run, bid: int, n: int) -> np.ndarray:
        """Host memory: after waiting for the last command, polling as
        :class:`launch.Spin` does; device memory: a blocking read on the in-order queue."""
        return launch.read_back(self.queue, run.get(bid), n, run.last, self.pred_spin)

    def write(self, exe: Executable, run: Run, bid: int, flat: np.ndarray) -> None:
        """Host memory: written once the commands before, which may use it, have run."""
        run.transfer(launch.write_back(self.queue, run.get(bid), flat, run.last,
                                       self.pred_spin))

    def collect(self, exe: Executable, run: Run, hosts: Sequence[np.ndarray | None],
                profiling: bool) -> tuple[np.ndarray | None, ...]:
        """The results, after one wait: results bound in place are already in their
        arrays, device results are read back without blocking first, and results in
        pooled host memory are copied out after the wait (a token is None)."""
        plan = exe.plan
        flats: list[tuple[np.ndarray, bool] | None] = []
        for bid, host, dtype in zip(plan.results, hosts, exe.result_dtypes, strict=True):
            if dtype is None:
                flats.append(None)
                continue
            arr = run.get(bid)
            if host is not None:  # bound in place: the kernels wrote into it
                flats.append((host, False))
            elif isinstance(arr, buffers.HostArray):  # pooled host memory: copied out
                flats.append((arr.host, True))
            else:
                fresh = np.empty(plan.buffer(bid).size, exe.storage[bid])
                run.transfer(buffers.read_async(self.queue, arr, fresh))
                flats.append((fresh, False))
        launch.finish(self.queue, run.last, self.spin)
        run.keep.clear()
        return tuple(None if flat is None else _result(exe, bid, *flat, dtype, profiling)
                     for bid, flat, dtype in zip(plan.results, flats, exe.result_dtypes,
                                                 strict=True))

    def abort(self) -> None:
        """Wait for the queue."""
        self.queue.finish()

    # -- calls that do not wait --------------------------------------------------------------

    def dispatch(self, exe: Executable, args: list[object], frames: Frames | None
                 ) -> tuple[DeviceArray | None, ...]:
        """Enqueue a call on a prepared frame and return its results as
        :class:`DeviceArray` s; without frames, a plain call's results."""
        if frames is None:
            return tuple(None if r is None else DeviceArray.of_host(r) for r in exe(*args))
        run = frames.take()
        try:
            for bid, arg in zip(exe.plan.params, args, strict=True):
                if arg is not None:
                    self.bind(exe, run, bid, arg, False, snapshot=True)
            for bid, direct in zip(exe.plan.results, exe.in_place_results, strict=True):
                if direct:
                    self.result_host(exe, run, bid)
            run.run(False, gated=False, bets=False)
            return self._device_results(exe, run, args, frames)
        except BaseException:
            self.queue.finish()
            frames.give(run)
            raise

    def quick_dispatch(self, exe: Executable, frames: Frames | None) -> QuickDispatch | None:
        """The common case of :meth:`dispatch`, done in one function (:mod:`.quick`)."""
        return None if frames is None else QuickDispatch.of(exe, frames, self)

    def _device_results(self, exe: Executable, run: Frame, args: list[object],
                        frames: Frames) -> tuple[DeviceArray | None, ...]:
        """The results of a call that did not wait; its frame goes back once the results
        over the frame's own memory are read or dropped."""
        plan, lease = exe.plan, None
        outs: list[DeviceArray | None] = []
        for bid, direct, dtype in zip(plan.results, exe.in_place_results,
                                      exe.result_dtypes, strict=True):
            if dtype is None:
                outs.append(None)
            elif bid in plan.params and bid not in exe.written:  # the argument itself
                arg = args[plan.params.index(bid)]
                host = arg.get() if memory.is_device_array(arg) else arg
                outs.append(arg if isinstance(arg, DeviceArray)
                            else DeviceArray.of_host(np.array(host, dtype)))
            else:
                slot = not direct and plan.buffer(bid).init is None
                if slot and lease is None:
                    lease = frames.lease(run)
                outs.append(DeviceArray(run.get(bid), plan.buffer(bid).shape, dtype,
                                        exe.storage[bid], run.last, self.queue,
                                        self.spin, lease if slot else None))
        if lease is None:
            frames.release(run)
        return tuple(outs)


def _result(exe: Executable, bid: int, flat: np.ndarray, copy: bool, dtype: np.dtype | None,
            profiling: bool) -> np.ndarray:
    """Result ``bid`` shaped and typed from its flat host array (a copy when the array
    is pooled memory)."""
    b = exe.plan.buffer(bid)
    out = flat[:b.size].reshape(b.shape)
    if copy:
        out = out.copy()
        if profiling:
            profile.PROFILE.moved(to_host=out.nbytes)
    return out.astype(dtype, copy=False)
