"""Kernels of a module on an OpenCL device through pyopencl: the
:class:`~backend_opencl.exec.runtime.KernelRuntime` of :class:`~backend_opencl.exec.module.Module`.

numpy arrays bind to memrefs by shape and strides; on a CPU device aligned numpy arrays
are used in place (``CL_MEM_USE_HOST_PTR``: the kernel writes into them), elsewhere, or
when misaligned, they are copied and results copied back into the arrays the kernel
writes.  pyopencl arrays are used in place; a group of pyopencl arrays is bound on the
device (``docs/abi.md``, "Groups of pyopencl arrays" and "numpy arrays in place").  A
kernel object's arguments are shared state, so each launch sets them under its lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from backend_opencl.abi import ArgAbi, ParamKind
from backend_opencl.exec.arguments import (
    RECORD_LONGS,
    array_layout,
    check_allocation,
    dynamic_values,
    group_members,
    max_groups,
    member_layout,
)
from backend_opencl.exec.runtime import Binder, Writeback
from backend_opencl.runtime import profile
from backend_opencl.runtime.opencl import (
    buffers,
    build,
    device_groups,
    launch,
    memory,
    prewarm,
)
from backend_opencl.runtime.opencl.devices import Device
from tensorlang.diagnostics import LaunchError
from tensorlang.ir.types import GroupType, MemRefType


@dataclass(frozen=True)
class OpenCLKernel:
    """A kernel object of a built program and the lock its arguments are set under."""

    kernel: cl.Kernel
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False)


@dataclass(frozen=True)
class OpenCLBuilt:
    """A built OpenCL program (the plan executor prepares its launches from it) and
    whether the build compiled it (found it in no cache)."""

    program: cl.Program
    fresh: bool = False

    def kernel(self, c_name: str) -> OpenCLKernel:
        """A kernel object of its own for kernel ``c_name``."""
        return OpenCLKernel(launch.get_kernel(self.program, c_name))


def max_allocation(device: Device) -> int:
    """The device's largest buffer in bytes (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``; 0: unknown)."""
    return int(getattr(device.cl_device, "max_mem_alloc_size", 0) or 0)


class OpenCLKernels:
    """The OpenCL :class:`~backend_opencl.exec.runtime.KernelRuntime` of one device."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self._align = memory.host_alignment(device)  # 0: numpy arrays are copied
        self._anywhere = memory.binds_anywhere(device)
        self._max_bytes = max_allocation(device)

    def build(self, source: str, names: Sequence[str]) -> OpenCLBuilt:
        """``source`` built for the device (through the build cache)."""
        start = time.perf_counter()
        program = build.build_program(self.device, source, (), tuple(names))
        fresh = time.perf_counter() - start > prewarm.FRESH_BUILD_S
        return OpenCLBuilt(program, fresh)

    def warm_up(self, text: str) -> None:
        """Set the device's compiler up in the background (:func:`build.warm_up`)."""
        build.warm_up(self.device, text)

    def max_groups(self, work_group_size: tuple[int, int]) -> int:
        """The most work-groups of ``work_group_size`` one launch may have."""
        return max_groups(self.device, work_group_size)

    def memref(self, value: object, t: MemRefType, arg: ArgAbi, where: str,
               writes: bool) -> tuple[object, Binder]:
        """Check a memref argument (numpy or pyopencl array); the argument and its binder."""
        bind = _memref_binder(value, t, arg, where, writes, self._align, self.device.context,
                              self._max_bytes, self._anywhere)
        ctx, queue = self.device.context, self.device.queue
        return value, lambda: bind(ctx, queue)

    def group(self, value: object, t: GroupType, arg: ArgAbi, where: str, writes: bool,
              num_groups: int) -> tuple[object, Binder]:
        """Check a group argument (numpy or pyopencl members); the argument and its binder."""
        svm = all(p.kind is not ParamKind.GROUP_BASE for p in arg.params)
        # a table of host addresses needs kernels in the host's address space (PoCL)
        align = self._align if self.device.is_pocl else 0
        bind = _group_binder(value, t, arg, where, writes, num_groups, svm, self.device,
                             align, self._max_bytes)
        ctx, queue = self.device.context, self.device.queue
        return value, lambda: bind(ctx, queue)

    def record(self) -> cl_array.Array:
        """A zeroed bounds-guard error record on the device."""
        return buffers.upload(self.device, np.zeros(RECORD_LONGS, np.int64))

    def record_arg(self, record: cl_array.Array) -> cl.Buffer:
        """The record's buffer."""
        return memory.device_buffer(record)

    def read_record(self, record: cl_array.Array) -> np.ndarray:
        """The record's longs."""
        return buffers.download(record, RECORD_LONGS)

    def launch(self, kernel: OpenCLKernel, args: Sequence[Any], num_groups: int,
               work_group_size: tuple[int, int]) -> cl.Event:
        """Set the arguments and enqueue, under the kernel object's lock; the event
        (``args``: the binders' values, ``object`` to the executor, pyopencl's
        ``KernelArg`` s)."""
        with kernel.lock:
            return launch.launch(self.device.queue, kernel.kernel, args, num_groups,
                                 work_group_size)

    def finish(self, event: cl.Event) -> None:
        """Wait for ``event`` (the queue is in order: everything before it is done)."""
        launch.finish(self.device.queue, event)

    def profiled(self, name: str, event: cl.Event, seconds: float) -> None:
        """The launch's device time and the call's wall time in the profile."""
        profile.PROFILE.launch(name, event)
        profile.PROFILE.call(seconds)


ContextBinder = Callable[[cl.Context, cl.CommandQueue], tuple[list[object], Writeback | None]]
"""Binds a checked argument given the context and queue (how the binders of
:func:`_memref_binder` and :func:`_group_binder` are called)."""


def _memref_binder(value: Any, t: MemRefType, arg: ArgAbi, where: str, writes: bool,
                   align: int = 0, context: cl.Context | None = None, max_bytes: int = 0,
                   anywhere: bool = True) -> ContextBinder:
    shape, strides, span = array_layout(value, t, where)
    check_allocation(span * value.dtype.itemsize, max_bytes, where)
    dims = [np.int64(v) for v in dynamic_values(t, arg, shape, strides)]
    if memory.is_device_array(value):
        if context is not None and device_groups.foreign_members([value], context):
            raise LaunchError(f"{where}: the pyopencl array belongs to another OpenCL "
                              "context than the kernel's (use the device's context)")
        return lambda ctx, queue: ([memory.device_buffer(value), *dims], None)
    if not isinstance(value, np.ndarray):
        raise LaunchError(f"{where}: expected a numpy or pyopencl array")
    if writes and not value.flags.writeable:
        raise LaunchError(f"{where}: the kernel writes this argument but the array is "
                          "read-only")

    def bind(ctx: cl.Context, queue: cl.CommandQueue) -> tuple[list[object], Writeback | None]:
        buf, back = memory.upload(ctx, queue, value, span, writes, align, anywhere)
        return [buf, *dims], back

    return bind


def _group_binder(value: object, t: GroupType, arg: ArgAbi, where: str, writes: bool,
                  num_groups: int, svm: bool, device: Device, align: int = 0,
                  max_bytes: int = 0) -> ContextBinder:
    """Check a group argument (a list, tuple or :class:`Group` of numpy arrays or of
    pyopencl arrays) and return how to bind it (``align``: numpy members aligned to it
    are used in place, see :func:`memory.upload_group`)."""
    members, offset = group_members(value, t, where, num_groups)
    on_device = _members_on_device(members, where, device)
    layouts = _member_layouts(members, t, where, offset)
    for k, (_, _, span) in enumerate(layouts):
        check_allocation(span * members[k].dtype.itemsize, max_bytes, f"{where}, member {k}")
    per_param = list(zip(*[dynamic_values(t.memref, arg, s, st) for s, st, _ in layouts],
                         strict=True)) if layouts and t.memref.dynamic_dims else []
    if writes and not on_device and not all(m.flags.writeable for m in members):
        raise LaunchError(f"{where}: the kernel writes this group but an array is read-only")

    def bind(ctx: cl.Context, queue: cl.CommandQueue) -> tuple[list[object], Writeback | None]:
        spans = [span for _, _, span in layouts]
        if on_device:
            args, keep, back = device_groups.bind_device_group(ctx, queue, members, spans,
                                                               writes, svm)
        else:
            args, keep, back = memory.upload_group(ctx, queue, members, spans, writes, svm,
                                                   align)
        extra: list[object] = [memory.index_array(ctx, values) for values in per_param]
        if t.offset is None:
            extra.append(np.int64(offset))
        return args + extra, _keep_alive(back, keep)

    return bind


def _members_on_device(members: list[object] | tuple[object, ...], where: str, device: Device
                       ) -> bool:
    """True when the members are pyopencl arrays (of ``device``'s context), False when
    they are numpy arrays; LaunchError for a mix."""
    if all(type(m) is np.ndarray for m in members):  # the common case, quickly
        return False
    kinds = [_array_kind(m) for m in members]
    present = [kind for kind in kinds if kind is not None]
    if "pyopencl" not in present:
        return False
    if "numpy" in present:
        other = "numpy" if present[0] == "pyopencl" else "pyopencl"
        raise LaunchError(f"{where}: member {kinds.index(other)} is a {other} array but the "
                          f"group starts with a {present[0]} array; a group's members must "
                          "be all numpy or all pyopencl arrays")
    foreign = device_groups.foreign_members(members, device.context)
    if foreign:
        raise LaunchError(f"{where}: member {foreign[0]} is a pyopencl array of another "
                          "OpenCL context than the kernel's (use the device's context)")
    return True


def _array_kind(value: object) -> str | None:
    """``"pyopencl"`` or ``"numpy"`` for arrays, None for anything else."""
    if memory.is_device_array(value):
        return "pyopencl"
    return "numpy" if isinstance(value, np.ndarray) else None


def _keep_alive(back: Writeback | None, keep: list[object]) -> Callable[[], None]:
    def run() -> None:
        if back is not None:
            back()
        keep.clear()

    return run


def _member_layouts(members: list[object] | tuple[object, ...], t: GroupType, where: str,
                    offset: int) -> list[tuple[list[int], list[int], int]]:
    """Check every member; members with the same dtype, shape and strides are checked once."""
    seen: dict[tuple[object, ...], tuple[list[int], list[int], int]] = {}
    layouts = []
    for k, member in enumerate(members):
        key = (member.dtype, member.shape, member.strides) if type(member) is np.ndarray \
            else (type(member), getattr(member, "dtype", None),
                  getattr(member, "shape", None), getattr(member, "strides", None))
        layout = seen.get(key)
        if layout is None:
            layout = seen[key] = _member_layout(member, t, where, k, offset)
        layouts.append(layout)
    return layouts


def _member_layout(member: object, t: GroupType, where: str, k: int,
                   offset: int) -> tuple[list[int], list[int], int]:
    if not isinstance(member, np.ndarray) and not memory.is_device_array(member):
        raise LaunchError(f"{where}: member {k} must be a numpy or pyopencl array, "
                          f"got {type(member).__name__}")
    return member_layout(member, t, where, k, offset)
