"""SYCL through dpctl: the only module of tlc that imports dpctl (``pip install 'tlc[sycl]'``).

A ``dpctl.SyclQueue`` on an OpenCL-backend device stands where a
:class:`~backend_opencl.runtime.opencl.devices.Device` does: tlc builds its OpenCL C through
dpctl (``dpctl.program.create_program_from_source``), allocates USM memory on the
queue and submits kernels to it.  Code generation uses the facts of the same device as
pyopencl sees it (matched by platform, name and driver version), so a kernel is the same
OpenCL C on both routes.

dpctl's loader reads the OpenCL vendor folder once, when dpctl first lists devices: make
queues with :func:`queue` (or call :func:`prepare` before importing dpctl) so that it
sees Intel's pip-installed CPU runtime through tlc's vendor folder (``docs/devices.md``).
dpctl is imported only when a queue is used; :func:`is_queue` never imports it.
"""

from __future__ import annotations

import ctypes
import hashlib
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from backend_opencl.runtime import stress
from backend_opencl.runtime.errors import DeviceError

if TYPE_CHECKING:
    # dpctl ships no type information: these document what is passed (untyped to mypy)
    import dpctl
    import dpctl.memory
    import dpctl.program
    import dpctl.tensor
    from typing_extensions import TypeIs

    from backend_opencl.runtime.opencl.devices import Device

    Memory: TypeAlias = dpctl.memory.MemoryUSMShared | dpctl.memory.MemoryUSMDevice \
        | dpctl.memory.MemoryUSMHost
    """USM memory, as dpctl allocates it."""
    SyclKernel: TypeAlias = dpctl.program.SyclKernel
    SyclEvent: TypeAlias = dpctl.SyclEvent

INSTALL_HINT = "pip install 'tlc[sycl]' (dpctl with Intel's SYCL and OpenCL CPU runtimes)"

_CTYPES = {  # dpctl refuses ctypes.c_int8: an i8 goes as the unsigned byte of its bits
    "i2": ctypes.c_int16, "i4": ctypes.c_int32, "i8": ctypes.c_int64,
    "u1": ctypes.c_uint8, "u2": ctypes.c_uint16, "u4": ctypes.c_uint32,
    "u8": ctypes.c_uint64, "f4": ctypes.c_float, "f8": ctypes.c_double,
}
_LOCK = threading.RLock()
_PROGRAMS: dict[tuple[dpctl.SyclContext, str, str], dpctl.program.SyclProgram] = {}
_DEVICES: dict[dpctl.SyclQueue, SyclDevice] = {}
_MEMORY_TYPES: tuple[type, ...] = ()  #: dpctl's USM memory classes, once dpctl is imported
_HOST_MEMORY: tuple[type, ...] = ()  #: those the host reads and writes directly


def is_queue(obj: object) -> bool:
    """Whether ``obj`` is a ``dpctl.SyclQueue`` (without importing dpctl)."""
    dpctl = sys.modules.get("dpctl")
    return dpctl is not None and isinstance(obj, dpctl.SyclQueue)


def prepare() -> ModuleType:
    """Import dpctl with the OpenCL loader pointed at tlc's vendor folder (Intel's
    pip-installed CPU runtime beside the system's drivers) while it first lists devices;
    return the dpctl module.  After dpctl was imported elsewhere it only returns it.
    DeviceError when dpctl is not installed."""
    with _LOCK:
        if "dpctl" in sys.modules:
            return _import()
        from backend_opencl.runtime import icd

        _, old = icd.prepare_loader(False)
        try:
            dpctl = _import()
            dpctl.get_num_devices()  # the loader reads its vendor folder now
        finally:
            icd.restore_env(old)
        return dpctl


def _import() -> ModuleType:
    try:
        import dpctl
        import dpctl.memory
        import dpctl.program
    except ImportError as err:
        raise DeviceError(f"error: SYCL queues need dpctl ({err}); {INSTALL_HINT}") from None
    global _MEMORY_TYPES, _HOST_MEMORY
    m = dpctl.memory
    _HOST_MEMORY = (m.MemoryUSMShared, m.MemoryUSMHost)
    _MEMORY_TYPES = (*_HOST_MEMORY, m.MemoryUSMDevice)
    return dpctl


def queue(spec: str = "opencl:cpu") -> dpctl.SyclQueue:
    """An in-order ``dpctl.SyclQueue`` for the SYCL filter string ``spec`` (OpenCL backend)."""
    dpctl = prepare()
    try:
        return dpctl.SyclQueue(spec, property="in_order")
    except (dpctl.SyclQueueCreationError, ValueError, TypeError) as err:
        raise DeviceError(f"error: no SYCL queue for {spec!r}: {err} "
                          "(`python -m dpctl -f` lists the devices)") from None


def describe() -> str:
    """What ``tlc devices --sycl`` adds: dpctl's devices, by filter string, and whether a
    queue on each can run tlc's kernels."""
    try:
        dpctl = prepare()
    except DeviceError as err:
        return f"SYCL devices: none ({err})"
    lines = ["SYCL devices (dpctl; compile(..., device=dpctl.SyclQueue(filter))):"]
    for d in dpctl.get_devices():
        usable = "OpenCL, USM" if d.backend == dpctl.backend_type.opencl \
            and d.has_aspect_usm_device_allocations else "not usable: needs OpenCL with USM"
        lines.append(f"  {d.filter_string:<14} {d.sycl_platform.name.strip()}: "
                     f"{d.name.strip()} [{usable}]")
    return "\n".join(lines)


@dataclass(frozen=True)
class SyclDevice:
    """A SYCL queue and the OpenCL device facts code generation uses for it."""

    queue: dpctl.SyclQueue
    facts: Device  #: ``cl_device`` only when pyopencl sees the device
    max_bytes: int  #: the largest USM allocation
    in_order: bool  #: whether the queue runs commands in submission order
    context: dpctl.SyclContext  #: the queue's context
    shared: bool  #: tlc's own memory is USM shared memory (CPU devices: host memory)

    @property
    def name(self) -> str:
        """The device's name."""
        return str(self.facts.name)

    @property
    def key(self) -> str:
        """Identity for caches (the OpenCL device's, marked as a SYCL one)."""
        return f"{self.facts.key}|sycl"


def sycl_device(q: dpctl.SyclQueue) -> SyclDevice:
    """The :class:`SyclDevice` of queue ``q``; DeviceError unless the queue runs on the
    OpenCL backend of a device with USM device allocations."""
    dpctl = prepare()
    with _LOCK:
        found = _DEVICES.get(q)
        if found is not None:
            return found
    d = q.sycl_device
    if d.backend != dpctl.backend_type.opencl:
        raise DeviceError(f"error: tlc builds OpenCL C, but this SYCL queue runs on the "
                          f"{d.backend.name} backend ({d.name}); use an OpenCL one, e.g. "
                          "dpctl.SyclQueue('opencl:cpu')")
    if not d.has_aspect_usm_device_allocations:
        raise DeviceError(f"error: the SYCL device {d.name!r} ({d.sycl_platform.name}) has no "
                          "USM device allocations, which tlc's SYCL route needs")
    found = SyclDevice(q, _facts(d), int(d.max_mem_alloc_size), bool(q.is_in_order),
                        q.sycl_context, bool(d.is_cpu and d.has_aspect_usm_shared_allocations))
    with _LOCK:
        _DEVICES[q] = found
    return found


def _facts(d: dpctl.SyclDevice) -> Device:
    """The pyopencl view of SYCL device ``d`` when there is one, else facts from dpctl."""
    from backend_opencl.runtime.opencl.devices import Device, list_devices

    name, driver, platform = d.name.strip(), d.driver_version.strip(), d.sycl_platform.name
    try:
        known = list_devices()
    except DeviceError:
        known = []
    for dev in known:
        if (dev.name, dev.driver_version, dev.platform_name) == (name, driver, platform.strip()):
            return replace(dev, has_svm=True)  # USM: a group's table holds its addresses
    widths = {t: int(getattr(d, f"preferred_vector_width_{t}", 0))
              for t in ("char", "short", "int", "long", "half", "float", "double")}
    return Device(
        name=name, platform_name=platform.strip(), vendor=d.vendor, driver_version=driver,
        kind="gpu" if d.is_gpu else "cpu" if d.is_cpu else "accelerator",
        is_pocl="pocl" in platform.lower() or "portable" in platform.lower(),
        is_system_driver=True, max_work_group_size=int(d.max_work_group_size),
        max_work_item_sizes=tuple(d.max_work_item_sizes3d), local_mem_size=int(d.local_mem_size),
        has_fp64=bool(d.has_aspect_fp64), has_svm=True, has_svm_fine_grain=False,
        subgroup_sizes=(), preferred_vector_width=widths,
        extensions=frozenset({"cl_khr_int64_base_atomics"} if d.has_aspect_atomic64 else ()),
        key=f"sycl|{platform}|{name}|{driver}")


def build(device: SyclDevice, source: str, names: Sequence[str]
          ) -> dict[str, dpctl.program.SyclKernel]:
    """The kernels ``names`` of OpenCL C ``source`` built for the queue's context (cached)."""
    from backend_opencl.runtime.opencl.build import OpenCLBuildError, _save_failed_source

    dpctl = prepare()
    key = (device.context, device.key, hashlib.sha256(source.encode()).hexdigest())
    with _LOCK:
        program = _PROGRAMS.get(key)
    if program is None:
        try:
            program = dpctl.program.create_program_from_source(device.queue, source, "")
        except dpctl.program.SyclProgramCompilationError as err:
            raise OpenCLBuildError(
                f"internal compiler error: the SYCL runtime rejected the OpenCL C tlc "
                f"generated for kernel(s) {', '.join(names)} on {device.name!r} ({err}).\n"
                f"This is a bug in tlc; source saved as: {_save_failed_source(source)}"
            ) from None
        with _LOCK:
            _PROGRAMS[key] = program
    return {name: program.get_sycl_kernel(name) for name in names}


# -- USM memory ------------------------------------------------------------------------------


@dataclass(frozen=True)
class UsmArray:
    """What tlc reads of a USM array (``__sycl_usm_array_interface__``): numpy's array
    attributes (``strides`` in bytes), the memory to pass and its queue."""

    memory: Memory  #: starting at the first element
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    readonly: bool
    raw: bool  #: a plain ``MemoryUSM*`` (bytes, no shape of its own)

    @property
    def ndim(self) -> int:
        """The number of modes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """The bytes of the memory."""
        return int(self.memory.nbytes)


def is_usm(obj: object) -> bool:
    """Whether ``obj`` is USM memory or a USM array (``__sycl_usm_array_interface__``)."""
    return hasattr(obj, "__sycl_usm_array_interface__")


def is_memory(obj: object) -> TypeIs[Memory]:
    """Whether ``obj`` is plain USM memory (``dpctl.memory.MemoryUSM*``)."""
    return isinstance(obj, _MEMORY_TYPES)


def usm_array(obj: Memory | dpctl.tensor.usm_ndarray) -> UsmArray:
    """The :class:`UsmArray` view of a USM memory object or USM array."""
    dpctl = prepare()
    info = obj.__sycl_usm_array_interface__
    raw = is_memory(obj)
    dtype = np.dtype(info.get("typestr", "|u1"))
    shape = tuple(int(n) for n in info["shape"])
    strides = info.get("strides") or row_major_strides(shape, 1)  # None: C-contiguous
    memory = obj if raw else dpctl.memory.as_usm_memory(obj)
    return UsmArray(memory, shape, tuple(int(s) * dtype.itemsize for s in strides), dtype,
                    bool(info["data"][1]) and not raw, raw)


def row_major_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-contiguous array of ``shape``, in units of ``itemsize``."""
    strides: list[int] = []
    step = itemsize
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(int(n), 1)
    return tuple(strides)


def alloc(device: SyclDevice, nbytes: int) -> Memory:
    """``nbytes`` (at least 1) of USM memory on the queue: shared memory on CPU devices
    (the host reads and writes it directly), else device memory."""
    memory = prepare().memory
    kind = memory.MemoryUSMShared if device.shared else memory.MemoryUSMDevice
    return kind(max(int(nbytes), 1), queue=device.queue)


def to_device(device: SyclDevice, host: np.ndarray) -> Memory:
    """New USM memory (:func:`alloc`) holding a copy of ``host``."""
    mem = alloc(device, host.nbytes)
    write(mem, host)
    return mem


def write(mem: Memory, host: np.ndarray) -> None:
    """Copy ``host`` into the start of USM memory ``mem`` that no queued command uses
    (host-accessible memory by memcpy, device memory by a copy command; waits)."""
    data = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
    if not data.nbytes:
        return
    if _host_accessible(mem):  # shared or host memory: the host's to write
        np.frombuffer(mem, np.uint8, data.nbytes)[...] = data
    else:
        mem.copy_from_host(data)


def _host_accessible(mem: Memory) -> bool:
    """Whether USM memory ``mem`` is shared or host memory (the host reads and writes it)."""
    return isinstance(mem, _HOST_MEMORY)


def read(mem: Memory, host: np.ndarray) -> None:
    """Copy the start of USM memory ``mem``, which no queued command writes, into
    contiguous ``host``."""
    view = host.reshape(-1).view(np.uint8)
    if not view.nbytes:
        return
    if _host_accessible(mem):
        view[...] = np.frombuffer(mem, np.uint8, view.nbytes)
    elif view.nbytes == mem.nbytes:
        mem.copy_to_host(view)
    else:
        view[...] = np.frombuffer(mem.copy_to_host(), np.uint8, view.nbytes)


def copy(device: SyclDevice, dst: Memory, src: Memory, nbytes: int) -> None:
    """Enqueue a copy of ``nbytes`` from USM memory ``src`` to ``dst`` (on an
    out-of-order queue: and wait for it)."""
    if nbytes:
        if stress.ACTIVE:
            _stall(device)
        if device.in_order:
            device.queue.memcpy_async(dst, src, nbytes)
        else:
            device.queue.memcpy(dst, src, nbytes)


def address(mem: Memory) -> int:
    """The USM address of memory ``mem``'s first byte."""
    return int(mem.__sycl_usm_array_interface__["data"][0])


def same_context(device: SyclDevice, mem: Memory) -> bool:
    """Whether USM memory ``mem`` lives in the queue's context."""
    return bool(mem.sycl_context == device.context)


# -- launches --------------------------------------------------------------------------------


def kernel_arg(value: object) -> object:
    """A kernel argument as dpctl takes it: USM memory as it is, a numpy scalar as its
    ctypes kind (complex ones as raw bytes)."""
    if isinstance(value, np.generic):
        kind = value.dtype.str[1:]
        if kind == "i1":
            return ctypes.c_uint8(int(value.view(np.uint8)))
        if kind in _CTYPES:
            return _CTYPES[kind](value.item())
        return prepare().RawKernelArg(np.ascontiguousarray(value))
    return value


def launch(device: SyclDevice, kernel: dpctl.program.SyclKernel, args: Sequence[object],
           num_groups: int, work_group_size: tuple[int, int]) -> dpctl.SyclEvent:
    """Submit ``num_groups`` work-groups of ``work_group_size``; return the event
    (dpctl orders ranges slowest first: OpenCL's dimension 0 comes last).  On an
    in-order queue it does not wait; on an out-of-order one it waits (later commands
    are submitted without dependencies)."""
    wgx, wgy = work_group_size
    if stress.ACTIVE:
        _stall(device)
    event = device.queue.submit_async(kernel, [kernel_arg(a) for a in args],
                                      [wgy, num_groups * wgx], [wgy, wgx])
    if not device.in_order:
        event.wait()
    return event


def wait(device: SyclDevice) -> None:
    """Wait for everything submitted to the queue."""
    device.queue.wait()


# -- a late device for tests (TLC_STRESS) ---------------------------------------------------

_STALL = """
kernel void tlc_stall(long n, global long* sink) {
  volatile long x = n;  /* volatile: the compiler may not fold the loop */
  for (long i = 0; i < n; ++i) x = x * 6364136223846793005L + 1442695040888963407L;
  if (x == 42) sink[0] = x;
}
"""
_STALLS: dict[str, tuple[dpctl.program.SyclKernel, Memory]] = {}


def _stall(device: SyclDevice) -> None:
    """Under ``TLC_STRESS`` (:mod:`.stress`): submit a kernel that keeps the queue busy
    for a random time before the command that follows (SYCL has no user events to hold
    a queue with, as the OpenCL route does)."""
    with _LOCK:
        found = _STALLS.get(device.key)
    if found is None:
        kernel = build(device, _STALL, ["tlc_stall"])["tlc_stall"]
        found = kernel, alloc(device, 8)
        with _LOCK:
            _STALLS[device.key] = found
    kernel, sink = found
    device.queue.submit_async(kernel, [ctypes.c_int64(stress.stall_iterations()), sink],
                              [1], [1])
