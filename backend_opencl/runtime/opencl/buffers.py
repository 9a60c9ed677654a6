"""Device arrays for the host-plan executor: allocation, upload, download and copies.

Booleans live in byte arrays viewed as ``bool`` (pyopencl cannot create bool arrays).
On CPU devices numpy memory itself can be a device array (:class:`HostArray`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from backend_opencl.runtime.profile import PROFILE, enabled

if TYPE_CHECKING:
    from backend_opencl.runtime.opencl.devices import Device


class DeviceMemory(Protocol):
    """What the executor and the group binder read of a flat device array: a
    ``pyopencl.array.Array`` or a :class:`HostArray`."""

    @property
    def base_data(self) -> cl.MemoryObjectHolder | cl.SVMPointer | None:
        """The memory object holding the elements (see :func:`memory_of`)."""

    @property
    def offset(self) -> int:
        """The byte offset of the first element in ``base_data``."""

    @property
    def nbytes(self) -> int:
        """The size in bytes."""

    @property
    def dtype(self) -> np.dtype:
        """The elements' dtype."""

    @property
    def queue(self) -> cl.CommandQueue | None:
        """The queue its commands go to."""


class BufferMemory(DeviceMemory, Protocol):
    """Device memory held by a buffer (at ``offset``): what a prepared launch binds, a
    plan buffer's memory (:data:`PlanMemory`, whose ``base_data`` pyopencl annotates
    wider, see :func:`memory_of`)."""

    @property
    def base_data(self) -> cl.Buffer:
        """The buffer holding the elements."""


def memory_of(arr: DeviceMemory) -> cl.Buffer:
    """``arr.base_data`` as pyopencl's copies and kernel arguments take it: pyopencl
    annotates it wider (an ``SVMPointer``, or None for an empty array), and such values
    pass through these calls unchanged."""
    return cast("cl.Buffer", arr.base_data)


def queue_of(arr: DeviceMemory) -> cl.CommandQueue:
    """``arr.queue``: the executor's arrays are made on a queue (pyopencl annotates it
    optional for arrays made without one)."""
    return cast("cl.CommandQueue", arr.queue)


_WRITES = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
_READS = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR


class HostArray:
    """A flat array in host memory bound to the device in place (``CL_MEM_USE_HOST_PTR``
    on a CPU device): it stands where the executor keeps pyopencl arrays (``base_data``,
    ``offset``, ``nbytes``, ``dtype``) and ``host`` is the memory itself."""

    __slots__ = ("base_data", "host", "queue", "_view")
    offset = 0

    def __init__(self, device: Device, host: np.ndarray, writes: bool) -> None:
        self._set(device.context, device.queue, host, writes)

    @classmethod
    def over(cls, ctx: cl.Context, queue: cl.CommandQueue, host: np.ndarray, writes: bool
             ) -> HostArray:
        """A host array over flat ``host`` in context ``ctx`` (``queue``: its queue)."""
        arr = cls.__new__(cls)
        arr._set(ctx, queue, host, writes)
        return arr

    def _set(self, ctx: cl.Context, queue: cl.CommandQueue, host: np.ndarray, writes: bool) -> None:
        self.host = host
        self.queue = queue
        self.base_data = cl.Buffer(ctx, _WRITES if writes else _READS, hostbuf=host)
        self._view: np.ndarray | None = None

    def fill(self, values: np.ndarray) -> None:
        """Copy ``values`` (of this array's dtype, row-major) into the first elements."""
        view = self._view
        if view is None or view.shape != values.shape:
            view = self._view = self.host[:values.size].reshape(values.shape)
        view[...] = values

    @property
    def dtype(self) -> np.dtype:
        """The elements' dtype."""
        return self.host.dtype

    @property
    def nbytes(self) -> int:
        """The size in bytes."""
        return self.host.nbytes


PlanMemory = cl_array.Array | HostArray
"""The memory of a plan buffer on OpenCL: a flat device array, or host memory on CPUs."""


def part(memory: PlanMemory, dtype: np.dtype, nbytes: int) -> PlanMemory:
    """The first ``nbytes`` of byte memory ``memory`` (a frame's slot, which buffers of
    any dtype and size share) as elements of ``dtype``, memory of their own: host memory
    gets a buffer of its own over its first bytes, a device array is viewed (its buffer,
    the slot's, starts where the part does)."""
    if isinstance(memory, HostArray):
        return HostArray.over(memory.queue.context, memory.queue,
                              memory.host[:nbytes].view(dtype), writes=True)
    return memory[:nbytes].view(dtype)


def alloc(device: Device, dtype: np.dtype, n: int, poison: bool = False) -> cl_array.Array:
    """A flat device array of ``max(n, 1)`` elements: uninitialized, or all bytes 0xFF
    when ``poison`` (tests use it to catch elements a kernel forgets to write)."""
    dtype = np.dtype(dtype)
    raw = cl_array.empty(device.queue, (max(n, 1) * dtype.itemsize,), np.uint8)
    if poison:
        raw.set(np.full(raw.shape, 0xFF, np.uint8))
    return raw.view(dtype)


def upload(device: Device, host: np.ndarray) -> cl_array.Array:
    """A flat device array holding ``host``'s elements in row-major order."""
    flat = np.ascontiguousarray(host).reshape(-1)
    arr = alloc(device, flat.dtype, flat.size)
    if flat.size:
        arr.set(flat)
        if enabled():
            PROFILE.moved(to_device=flat.nbytes)
    return arr


def write(arr: DeviceMemory, host: np.ndarray) -> cl.Event | None:
    """Copy ``host``'s elements (row-major, ``arr``'s dtype and size) into device array
    ``arr`` without waiting: ``host`` must stay alive until the queue has run the copy.
    Return the copy's event (None when there is nothing to copy)."""
    flat = np.ascontiguousarray(host).reshape(-1)
    if not flat.size:
        return None
    if enabled():
        PROFILE.moved(to_device=flat.nbytes)
    return cl.enqueue_copy(queue_of(arr), memory_of(arr), flat, dst_offset=arr.offset,
                           is_blocking=False)


def download(arr: PlanMemory, n: int) -> np.ndarray:
    """The first ``n`` elements of a flat device array (waits for the queue)."""
    if isinstance(arr, HostArray):
        arr.queue.finish()
        return arr.host[:n].copy()
    if enabled():
        PROFILE.moved(to_host=arr.nbytes)
    return arr.get()[:n].copy()


def read_async(queue: cl.CommandQueue, arr: DeviceMemory, host: np.ndarray) -> cl.Event | None:
    """Enqueue a copy of device array ``arr``'s first ``host.size`` elements into
    ``host`` without waiting (``host`` must stay alive until the queue has run it);
    return its event (None when there is nothing to copy)."""
    if not host.nbytes:
        return None
    if enabled():
        PROFILE.moved(to_host=host.nbytes)
    return cl.enqueue_copy(queue, host, memory_of(arr), src_offset=arr.offset,
                           is_blocking=False)


def copy(device: Device, dst: DeviceMemory, src: DeviceMemory) -> cl.Event | None:
    """Copy ``src``'s elements into ``dst`` on the device's queue; return the copy's event
    (None when there is nothing to copy)."""
    return copy_on(device.queue, dst, src)


def copy_on(queue: cl.CommandQueue, dst: DeviceMemory, src: DeviceMemory) -> cl.Event | None:
    """Copy ``src``'s elements into ``dst`` on ``queue``; return the copy's event (None
    when there is nothing to copy)."""
    nbytes = min(dst.nbytes, src.nbytes)
    if not nbytes:
        return None
    return cl.enqueue_copy(queue, memory_of(dst), memory_of(src), src_offset=src.offset,
                           dst_offset=dst.offset, byte_count=nbytes)
