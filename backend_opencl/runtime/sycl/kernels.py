"""Kernels of a module on a SYCL queue through dpctl: the
:class:`~backend_opencl.exec.runtime.KernelRuntime` of :class:`~backend_opencl.exec.module.Module`
for ``backend_opencl.compile(text, device=queue)``.

The kernels are the OpenCL C of the OpenCL route, built through dpctl and submitted to
the ``dpctl.SyclQueue`` (:mod:`backend_opencl.runtime.sycl.queue`).  A kernel takes what
it takes on OpenCL, checked the same way before anything runs
(:class:`~tensorlang.diagnostics.LaunchError` naming the argument), plus USM memory:

- a USM array (``__sycl_usm_array_interface__``: ``dpctl.tensor``, dpnp) binds to a memref
  or group member by its shape, strides and dtype, in place;
- plain USM memory (``dpctl.memory.MemoryUSMShared/Device/Host``) has only a size in
  bytes: it binds to a memref of static type when it holds the memref's span;
- numpy arrays are copied to USM device memory and, when the kernel writes them, back.

A call waits for its kernel; a SYCL submission carries its own arguments, so concurrent
calls share nothing.  See ``docs/devices.md``, "SYCL through dpctl".
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from backend_opencl.abi import ArgAbi, ParamKind
from backend_opencl.exec.arguments import (
    NUMPY_DTYPES,
    RECORD_LONGS,
    Group,
    array_layout,
    check_allocation,
    dynamic_values,
    group_members,
    max_groups,
    member_layout,
)
from backend_opencl.exec.runtime import Binder
from backend_opencl.runtime.host import host_span, span_elements, static_layout
from backend_opencl.runtime.sycl import queue
from backend_opencl.runtime.sycl.queue import SyclDevice, UsmArray
from tensorlang.diagnostics import LaunchError
from tensorlang.ir.types import GroupType, MemRefType

if TYPE_CHECKING:
    from backend_opencl.runtime.sycl.queue import Memory, SyclEvent, SyclKernel


@dataclass(frozen=True)
class SyclBuilt:
    """A program built on the queue's context: its kernels by C name."""

    kernels: dict[str, SyclKernel]

    def kernel(self, c_name: str) -> SyclKernel:
        """The kernel ``c_name``."""
        return self.kernels[c_name]


class SyclKernels:
    """The SYCL :class:`~backend_opencl.exec.runtime.KernelRuntime` of one queue."""

    def __init__(self, device: SyclDevice) -> None:
        self.device = device

    def build(self, source: str, names: Sequence[str]) -> SyclBuilt:
        """``source`` built for the queue's context (cached)."""
        return SyclBuilt(queue.build(self.device, source, list(names)))

    def warm_up(self, text: str) -> None:
        """Nothing: SYCL queues come with their compiler set up."""

    def max_groups(self, work_group_size: tuple[int, int]) -> int:
        """The most work-groups of ``work_group_size`` one launch may have."""
        return max_groups(self.device.facts, work_group_size)

    def memref(self, value: object, t: MemRefType, arg: ArgAbi, where: str,
               writes: bool) -> tuple[np.ndarray | UsmArray, Binder]:
        """Check a memref argument (numpy or USM); its view (USM as a :class:`UsmArray`)
        and its binder."""
        return _memref(value, t, arg, where, writes, self.device)

    def group(self, value: object, t: GroupType, arg: ArgAbi, where: str, writes: bool,
              num_groups: int) -> tuple[Group, Binder]:
        """Check a group argument; its view and its binder (a USM table of addresses)."""
        return _group(value, t, arg, where, writes, num_groups, self.device)

    def record(self) -> Memory:
        """A zeroed bounds-guard error record in USM memory."""
        return queue.to_device(self.device, np.zeros(RECORD_LONGS, np.int64))

    def record_arg(self, record: Memory) -> Memory:
        """The record's USM memory."""
        return record

    def read_record(self, record: Memory) -> np.ndarray:
        """The record's longs."""
        found = np.empty(RECORD_LONGS, np.int64)
        queue.read(record, found)
        return found

    def launch(self, kernel: SyclKernel, args: Sequence[object], num_groups: int,
               work_group_size: tuple[int, int]) -> SyclEvent:
        """Submit to the queue; the event."""
        return queue.launch(self.device, kernel, args, num_groups, work_group_size)

    def finish(self, event: object) -> None:
        """Wait for everything submitted to the queue."""
        queue.wait(self.device)

    def profiled(self, name: str, event: object, seconds: float) -> None:
        """Nothing: profiles read OpenCL events (``TLC_PROFILE`` is for the OpenCL route)."""


def _as_array(value: object, t: MemRefType, where: str, writes: bool,
              device: SyclDevice, offset: int = 0) -> np.ndarray | UsmArray:
    """``value`` as an array whose layout can be checked: numpy as it is, USM as a
    :class:`UsmArray` (plain USM memory typed by the static memref type)."""
    if isinstance(value, np.ndarray):
        if writes and not value.flags.writeable:
            raise LaunchError(f"{where}: the kernel writes this argument but the array is "
                              "read-only")
        return value
    if queue.is_memory(value):
        if not queue.same_context(device, value):
            raise LaunchError(f"{where}: the USM memory belongs to another SYCL context than "
                              "the queue's")
        return _typed(value, t, where, offset)
    if not queue.is_usm(value):
        raise LaunchError(f"{where}: expected a numpy array or USM memory (dpctl.memory, "
                          f"dpctl.tensor), got {type(value).__name__}")
    arr = queue.usm_array(value)
    if not queue.same_context(device, arr.memory):
        raise LaunchError(f"{where}: the USM array belongs to another SYCL context than "
                          "the queue's")
    if writes and arr.readonly:
        raise LaunchError(f"{where}: the kernel writes this argument but the USM array is "
                          "read-only")
    return arr


def _typed(mem: Memory, t: MemRefType, where: str, offset: int) -> UsmArray:
    """Plain USM memory as an array of memref type ``t`` (its static shape and
    strides); LaunchError when the type is dynamic or the memory too small."""
    if not t.is_static:
        raise LaunchError(f"{where}: plain USM memory has no shape, and this memref's sizes "
                          "or strides are dynamic; pass a USM array (dpctl.tensor) or a "
                          "numpy array")
    dtype, shape, strides, need = _static_layout(t, offset)
    if mem.nbytes < need:
        raise LaunchError(f"{where}: the USM memory has {mem.nbytes} bytes but the memref "
                          f"spans {need} bytes")
    return UsmArray(mem, shape, strides, dtype, False, True)


@functools.lru_cache(maxsize=256)
def _static_layout(t: MemRefType, offset: int) -> tuple[np.dtype, tuple[int, ...],
                                                         tuple[int, ...], int]:
    """dtype, shape, byte strides and bytes spanned of static memref type ``t`` (with
    a group's ``offset``: a flat array holding the offset and the span)."""
    dtype = np.dtype(NUMPY_DTYPES[t.element.name])
    static_shape, static_strides = static_layout(t)
    shape, strides = list(static_shape), list(static_strides)
    elements = offset + span_elements(shape, strides)
    if offset:
        shape, strides = [elements], [1]
    return dtype, tuple(shape), tuple(s * dtype.itemsize for s in strides), \
        elements * dtype.itemsize


def _memref(value: object, t: MemRefType, arg: ArgAbi, where: str, writes: bool,
            device: SyclDevice) -> tuple[np.ndarray | UsmArray, Binder]:
    arr = _as_array(value, t, where, writes, device)
    if isinstance(arr, UsmArray) and arr.raw:  # typed by ``t``: nothing to check
        return arr, lambda: ([arr.memory], None)
    shape, strides, span = array_layout(arr, t, where)
    check_allocation(span * arr.dtype.itemsize, device.max_bytes, where)
    dims = [np.int64(v) for v in dynamic_values(t, arg, shape, strides)]
    if isinstance(arr, UsmArray):
        return arr, lambda: ([arr.memory] + dims, None)

    def bind() -> tuple[list[object], Callable[[], None] | None]:
        mem, back = _upload(device, arr, span, writes)
        return [mem] + dims, back

    return arr, bind


def _upload(device: SyclDevice, arr: np.ndarray, span: int,
            writes: bool) -> tuple[Memory, Callable[[], None] | None]:
    """USM device memory holding numpy ``arr``'s span, and how to copy it back."""
    host = host_span(arr, span)
    mem = queue.to_device(device, np.ascontiguousarray(host))
    if not writes or not span:
        return mem, None

    def back() -> None:
        out = np.empty_like(host)
        queue.read(mem, out)
        host[...] = out

    return mem, back


def _group(value: object, t: GroupType, arg: ArgAbi, where: str, writes: bool, num_groups: int,
           device: SyclDevice) -> tuple[Group, Binder]:
    """Check a group (a list, tuple or :class:`Group` of numpy or USM arrays) and return
    its checked form and how to bind it: a USM table of the members' addresses."""
    if any(p.kind is ParamKind.GROUP_BASE for p in arg.params):
        raise LaunchError(f"{where}: this kernel was compiled without address tables")
    members, offset = group_members(value, t, where, num_groups)
    arrays = [_as_array(m, t.memref, f"{where}, member {k}", writes, device, offset)
              for k, m in enumerate(members)]
    layouts = [member_layout(a, t, where, k, offset) for k, a in enumerate(arrays)]
    for k, (_, _, span) in enumerate(layouts):
        check_allocation(span * arrays[k].dtype.itemsize, device.max_bytes,
                         f"{where}, member {k}")
    per_param = list(zip(*[dynamic_values(t.memref, arg, s, st) for s, st, _ in layouts],
                         strict=True)) if layouts and t.memref.dynamic_dims else []

    def bind() -> tuple[list[object], Callable[[], None] | None]:
        mems, backs = [], []
        for arr, (_, _, span) in zip(arrays, layouts, strict=True):
            if isinstance(arr, UsmArray):
                mems.append(arr.memory)
                continue
            mem, back = _upload(device, arr, span, writes)
            mems.append(mem)
            if back is not None:
                backs.append(back)
        table = np.array([queue.address(m) for m in mems] or [0], np.uint64)
        extra = [queue.to_device(device, np.array(list(v) or [0], np.int64)) for v in per_param]
        if t.offset is None:
            extra.append(np.int64(offset))
        keep = [mems]  # the members' memory stays alive until the kernel has run

        def run_backs() -> None:
            for back in backs:
                back()
            keep.clear()

        return [queue.to_device(device, table)] + extra, run_backs

    return Group(arrays, offset), bind
