"""A compiled module on a SYCL queue: ``backend_opencl.compile(text, device=queue)``.

The kernels are the OpenCL C of the OpenCL route, built through dpctl and submitted to
the ``dpctl.SyclQueue`` (:mod:`backend_opencl.runtime.sycl.queue`).  A kernel takes what a
:class:`~backend_opencl.exec.module.Kernel` takes, checked the same way before anything runs
(:class:`~tensorlang.diagnostics.LaunchError` naming the argument), plus USM memory:

- a USM array (``__sycl_usm_array_interface__``: ``dpctl.tensor``, dpnp) binds to a memref
  or group member by its shape, strides and dtype, in place;
- plain USM memory (``dpctl.memory.MemoryUSMShared/Device/Host``) has only a size in
  bytes: it binds to a memref of static type when it holds the memref's span;
- numpy arrays are copied to USM device memory and, when the kernel writes them, back.

A call waits for its kernel.  See ``docs/devices.md``, "SYCL through dpctl".
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from backend_opencl.abi import ArgAbi, ParamKind
from backend_opencl.exec.module import (
    NUMPY_DTYPES,
    RECORD_LONGS,
    Group,
    KernelTable,
    _dynamic_values,
    _group_members,
    array_layout,
    check_allocation,
    check_call,
    check_contract,
    check_scalar,
    member_layout,
    raise_recorded_violation,
    written_by_kernel,
)
from backend_opencl.runtime.opencl import launch, memory
from backend_opencl.runtime.sycl import queue as sycl
from tensorlang.diagnostics import LaunchError
from tensorlang.ir.types import GroupType, MemRefType, ScalarType

# binds an argument at launch: its kernel arguments and how to copy results back
Binder = Callable[[], tuple[list[Any], Callable[[], None] | None]]


def compile_for_queue(program: Any, queue: Any, check_bounds: bool = False,
                      launch_checks: bool = True) -> SyclModule:
    """Compile tensor-language text or a Program for the device of SYCL ``queue``."""
    from backend_opencl.api import compiler
    from backend_opencl.api.tuned import cached_target

    device = sycl.sycl_device(queue)
    prog = compiler.as_program(program)
    target = cached_target(prog, device.facts, compiler.target_from_device(device.facts))
    contracts: dict[str, tuple[Any, ...]] | None = {} if launch_checks else None
    emitted = compiler.lower(prog, target, check_bounds, contracts)
    return SyclModule(emitted, prog, device, contracts)


class SyclModule(KernelTable):
    """The kernels of one compiled program on a SYCL queue, callable by name."""

    def __init__(self, emitted: Any, program: Any, device: sycl.SyclDevice,
                 checks: dict[str, tuple[Any, ...]] | None,
                 written: dict[str, frozenset[int]] | None = None) -> None:
        """``emitted``: an ``EmittedProgram`` (then ``program`` gives the written
        arguments) or a ``StoredProgram`` from a disk cache with ``written``."""
        written = written_by_kernel(emitted, program, written)
        self.source = emitted.source
        self.device = device
        built = sycl.build(device, emitted.source,
                           [info.c_name for info in emitted.kernels.values()])
        self.kernels = {
            name: SyclKernel(info, built[info.c_name], device, written[name],
                             (checks or {}).get(name, getattr(info, "checks", ())))
            for name, info in emitted.kernels.items()
        }


class SyclKernel:
    """One kernel on a SYCL queue: ``kernel(*args, num_groups=n)``."""

    def __init__(self, info: Any, kernel: Any, device: sycl.SyclDevice,
                 written: frozenset[int], checks: tuple[Any, ...] = ()) -> None:
        self.info = info
        self.name = info.name
        self.device = device
        self.written = written
        self.checks = checks
        """The launch checks run before a launch (as :class:`~backend_opencl.exec.module.Kernel`)."""
        self.kernel = kernel
        self._max_groups = launch.max_groups(device.facts, info.plan.work_group_size)

    def __call__(self, *args: Any, num_groups: int | None = None) -> None:
        """Check the arguments, run ``num_groups`` work-groups (omitted: as
        :func:`~backend_opencl.exec.module.default_num_groups` says), copy numpy results back."""
        abi = self.info.abi
        num_groups = check_call(self.name, self.info, args, num_groups, self._max_groups)
        checked = [self._check(i, a, v, num_groups)
                   for i, (a, v) in enumerate(zip(abi, args, strict=True))]
        if num_groups == 0:
            return
        if self.checks:
            check_contract(self, tuple(view for view, _ in checked), num_groups)
        self.launch([binder for _, binder in checked], num_groups)

    def launch(self, binders: list[Binder], num_groups: int) -> None:
        """Bind, submit, wait and copy numpy results back."""
        kernel_args: list[Any] = []
        backs = []
        for binder in binders:
            values, back = binder()
            kernel_args += values
            if back is not None:
                backs.append(back)
        record = sycl.to_device(self.device, np.zeros(RECORD_LONGS, np.int64)) \
            if self.info.guards else None
        if record is not None:
            kernel_args.append(record)
        # a SYCL submission carries its own arguments: concurrent calls share nothing
        sycl.launch(self.device, self.kernel, kernel_args, num_groups,
                    self.info.plan.work_group_size)
        sycl.wait(self.device)
        for back in backs:
            back()
        if record is not None:
            found = np.empty(RECORD_LONGS, np.int64)
            sycl.read(record, found)
            raise_recorded_violation(self.name, self.info, found)

    def _check(self, index: int, arg: ArgAbi, value: Any,
               num_groups: int) -> tuple[Any, Binder]:
        """The argument as the launch checks read it (USM as :class:`sycl.UsmArray`) and
        how to bind it; LaunchError naming the argument when it does not fit."""
        where = f"{self.name}: argument {index + 1} (%{arg.value.name}: {arg.type})"
        t, writes = arg.type, index in self.written
        if isinstance(t, ScalarType):
            scalar = check_scalar(value, t, where)
            return value, lambda: ([scalar], None)
        if isinstance(t, MemRefType):
            view, binder = _memref(value, t, arg, where, writes, self.device)
            return view, binder
        assert isinstance(t, GroupType)
        return _group(value, t, arg, where, writes, num_groups, self.device)


def _as_array(value: Any, t: MemRefType, where: str, writes: bool,
              device: sycl.SyclDevice, offset: int = 0) -> Any:
    """``value`` as an array whose layout can be checked: numpy as it is, USM as a
    :class:`sycl.UsmArray` (plain USM memory typed by the static memref type)."""
    if isinstance(value, np.ndarray):
        if writes and not value.flags.writeable:
            raise LaunchError(f"{where}: the kernel writes this argument but the array is "
                              "read-only")
        return value
    if sycl.is_memory(value):
        if not sycl.same_context(device, value):
            raise LaunchError(f"{where}: the USM memory belongs to another SYCL context than "
                              "the queue's")
        return _typed(value, t, where, offset)
    if not sycl.is_usm(value):
        raise LaunchError(f"{where}: expected a numpy array or USM memory (dpctl.memory, "
                          f"dpctl.tensor), got {type(value).__name__}")
    arr = sycl.usm_array(value)
    if not sycl.same_context(device, arr.memory):
        raise LaunchError(f"{where}: the USM array belongs to another SYCL context than "
                          "the queue's")
    if writes and arr.readonly:
        raise LaunchError(f"{where}: the kernel writes this argument but the USM array is "
                          "read-only")
    return arr


def _typed(mem: Any, t: MemRefType, where: str, offset: int) -> sycl.UsmArray:
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
    return sycl.UsmArray(mem, shape, strides, dtype, False, True)


@functools.lru_cache(maxsize=256)
def _static_layout(t: MemRefType, offset: int) -> tuple[np.dtype, tuple[int, ...],
                                                         tuple[int, ...], int]:
    """dtype, shape, byte strides and bytes spanned of static memref type ``t`` (with
    a group's ``offset``: a flat array holding the offset and the span)."""
    dtype = np.dtype(NUMPY_DTYPES[t.element.name])
    shape = [int(n) for n in t.shape]  # type: ignore[arg-type]
    strides = [int(s) for s in t.strides]  # type: ignore[arg-type]
    elements = offset + memory.span_elements(shape, strides)
    if offset:
        shape, strides = [elements], [1]
    return dtype, tuple(shape), tuple(s * dtype.itemsize for s in strides), \
        elements * dtype.itemsize


def _memref(value: Any, t: MemRefType, arg: ArgAbi, where: str, writes: bool,
            device: sycl.SyclDevice) -> tuple[Any, Binder]:
    arr = _as_array(value, t, where, writes, device)
    if isinstance(arr, sycl.UsmArray) and arr.raw:  # typed by ``t``: nothing to check
        return arr, lambda: ([arr.memory], None)
    shape, strides, span = array_layout(arr, t, where)
    check_allocation(span * arr.dtype.itemsize, device.max_bytes, where)
    dims = [np.int64(v) for v in _dynamic_values(t, arg, shape, strides)]
    if isinstance(arr, sycl.UsmArray):
        return arr, lambda: ([arr.memory] + dims, None)

    def bind() -> tuple[list[Any], Callable[[], None] | None]:
        mem, back = _upload(device, arr, span, writes)
        return [mem] + dims, back

    return arr, bind


def _upload(device: sycl.SyclDevice, arr: np.ndarray, span: int,
            writes: bool) -> tuple[Any, Callable[[], None] | None]:
    """USM device memory holding numpy ``arr``'s span, and how to copy it back."""
    host = memory.host_span(arr, span)
    mem = sycl.to_device(device, np.ascontiguousarray(host))
    if not writes or not span:
        return mem, None

    def back() -> None:
        out = np.empty_like(host)
        sycl.read(mem, out)
        host[...] = out

    return mem, back


def _group(value: Any, t: GroupType, arg: ArgAbi, where: str, writes: bool, num_groups: int,
           device: sycl.SyclDevice) -> tuple[Any, Binder]:
    """Check a group (a list, tuple or :class:`Group` of numpy or USM arrays) and return
    its checked form and how to bind it: a USM table of the members' addresses."""
    if any(p.kind is ParamKind.GROUP_BASE for p in arg.params):
        raise LaunchError(f"{where}: this kernel was compiled without address tables")
    members, offset = _group_members(value, t, where, num_groups)
    arrays = [_as_array(m, t.memref, f"{where}, member {k}", writes, device, offset)
              for k, m in enumerate(members)]
    layouts = [member_layout(a, t, where, k, offset) for k, a in enumerate(arrays)]
    for k, (_, _, span) in enumerate(layouts):
        check_allocation(span * arrays[k].dtype.itemsize, device.max_bytes,
                         f"{where}, member {k}")
    per_param = list(zip(*[_dynamic_values(t.memref, arg, s, st) for s, st, _ in layouts],
                         strict=True)) if layouts and t.memref.dynamic_dims else []

    def bind() -> tuple[list[Any], Callable[[], None] | None]:
        mems, backs = [], []
        for arr, (_, _, span) in zip(arrays, layouts, strict=True):
            if isinstance(arr, sycl.UsmArray):
                mems.append(arr.memory)
                continue
            mem, back = _upload(device, arr, span, writes)
            mems.append(mem)
            if back is not None:
                backs.append(back)
        table = np.array([sycl.address(m) for m in mems] or [0], np.uint64)
        extra = [sycl.to_device(device, np.array(list(v) or [0], np.int64)) for v in per_param]
        if t.offset is None:
            extra.append(np.int64(offset))
        keep = [mems]  # the members' memory stays alive until the kernel has run

        def run_backs() -> None:
            for back in backs:
                back()
            keep.clear()

        return [sycl.to_device(device, table)] + extra, run_backs

    return Group(arrays, offset), bind
