"""Moving arguments to the device: buffers for memrefs, shared virtual memory for groups.

A numpy array travels as the bytes from its first to its last element (so subviews of
larger arrays keep their strides) and is copied back after the launch when the kernel
writes it.  A group's members are packed into one SVM allocation whose member addresses
form the group's pointer table.

On a CPU device whose buffers can live in host memory (:func:`host_alignment` non-zero),
an array aligned to the device's ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (4096 bytes on other
CPU drivers than PoCL: :data:`OTHER_CPU_ALIGN`) is not copied: a ``CL_MEM_USE_HOST_PTR``
buffer over its span is the kernel's argument, and the kernel's writes land in the array
itself.  On PoCL an array binds so at any element-aligned address, read or written (PoCL
3.0 and 3.1 use the pointer as it is: the kernel's writes land in the array at offsets of
4 to 132 bytes from an aligned address; Intel's runtime would copy it at every launch).
Other misaligned arrays are copied into an aligned host array (a memcpy, not an OpenCL
transfer) and, when written, back.  Creating such a buffer costs about a microsecond,
so nothing is cached between launches.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from backend_opencl.runtime.host import aligned_empty, host_span
from backend_opencl.runtime.opencl.buffers import DeviceMemory, memory_of
from backend_opencl.runtime.profile import PROFILE, enabled

if TYPE_CHECKING:
    from backend_opencl.runtime.opencl.devices import Device

Writeback = Callable[[], None]
MEMBER_ALIGN = 128
ZERO_COPY_ENV = "TLC_ZERO_COPY"
"""Set to 0 to copy numpy arrays even where they could be used in place."""

_ALIGNMENTS: dict[str, int] = {}
_PROBE = """
kernel void tlc_probe(global float* a) { a[0] = a[1] + 1.0f; }
"""


OTHER_CPU_ALIGN = 4096
"""Alignment of in-place host memory on CPU drivers other than PoCL: Intel's OpenCL CPU
runtime uses a ``USE_HOST_PTR`` buffer in place only at page-aligned addresses and copies
it otherwise, at every launch (``elementwise_chain`` with 16-byte aligned numpy inputs:
7-13 ms a call against 1.3 ms page-aligned)."""


def binds_anywhere(device: Device) -> bool:
    """Whether numpy arrays bind in place at any element-aligned address, read or written
    (PoCL uses a misaligned host pointer as it is; other drivers copy it)."""
    return bool(device.is_pocl)


def host_alignment(device: Device) -> int:
    """The byte alignment at which numpy memory binds in place on ``device``, or 0 when
    arrays are copied (not a CPU, ``TLC_ZERO_COPY=0``, or host memory proved not shared).

    PoCL's CPU devices run kernels on the host's memory; other CPU drivers are probed
    once: a kernel writes through a ``USE_HOST_PTR`` buffer and reads a host write back
    without mapping."""
    if os.environ.get(ZERO_COPY_ENV) == "0" or device.kind != "cpu":
        return 0
    align = _ALIGNMENTS.get(device.key)
    if align is None:
        bits = int(getattr(device.cl_device, "mem_base_addr_align", 1024))
        align = max(bits // 8, 16)
        if not device.is_pocl:
            align = max(align, OTHER_CPU_ALIGN)
            if not _probe(device, align):
                align = 0
        _ALIGNMENTS[device.key] = align
    return align


NO_CACHE: dict[str, Any] = {"cache_dir": False}
"""``Program.build``'s keyword for no binary cache (False: pyopencl's annotation says
``str | None``, but None would be its own folder, ~/.cache/pyopencl)."""


def _probe(device: Device, align: int) -> bool:
    """Whether host memory and a USE_HOST_PTR buffer over it are the same memory."""
    try:
        # cache_dir=False: no entry in pyopencl's own folder, outside tlc's cache
        program = cl.Program(device.context, _PROBE).build(**NO_CACHE)
        kernel = cl.Kernel(program, "tlc_probe")
        host = aligned_empty(4 * 4, align).view(np.float32)
        host[:] = (0.0, 41.0, 0.0, 0.0)
        buf = host_buffer(device.context, host, writes=True)
        kernel.set_arg(0, buf)
        seen = []
        for value in (41.0, 99.0):  # the kernel must see each host write, unmapped
            host[1] = value
            cl.enqueue_nd_range_kernel(device.queue, kernel, (1,), None)
            device.queue.finish()
            seen.append(float(host[0]))
        return seen == [42.0, 100.0]
    except cl.Error:
        return False


def host_buffer(ctx: cl.Context, host: np.ndarray, writes: bool) -> cl.Buffer:
    """A ``CL_MEM_USE_HOST_PTR`` buffer over contiguous ``host`` (which must outlive it)."""
    access = cl.mem_flags.READ_WRITE if writes else cl.mem_flags.READ_ONLY
    return cl.Buffer(ctx, access | cl.mem_flags.USE_HOST_PTR, hostbuf=host)


class _Staging:
    """Aligned host arrays for misaligned numpy arguments, reused between launches (a
    fresh large array costs a page fault per page); at most ``limit`` bytes are kept."""

    def __init__(self, limit: int = 256 << 20) -> None:
        self.free: dict[tuple[int, int], list[np.ndarray]] = {}
        self.kept = 0
        self.limit = limit
        self.lock = threading.RLock()  # a lease may return a block from a GC run inside

    def take(self, nbytes: int, align: int) -> np.ndarray:
        """An aligned byte array of ``nbytes``."""
        with self.lock:
            arrays = self.free.get((nbytes, align))
            if arrays:
                self.kept -= nbytes
                return arrays.pop()
        return aligned_empty(nbytes, align)

    def give(self, arr: np.ndarray, align: int) -> None:
        """Return an array from :meth:`take` (dropped when the cache is full)."""
        with self.lock:
            if self.kept + arr.nbytes <= self.limit:
                self.free.setdefault((arr.nbytes, align), []).append(arr)
                self.kept += arr.nbytes


class _Blocks(_Staging):
    """Pooled result blocks, each kept with its ``__array_interface__`` (numpy's property
    makes a new dict per call, ~2 us): :meth:`take_block` and :meth:`give_block` trade
    ``(block, interface)`` pairs."""

    def __init__(self, limit: int = 256 << 20) -> None:
        super().__init__(limit)
        self.blocks: dict[tuple[int, int], list[tuple[np.ndarray, dict[str, object]]]] = {}

    def take_block(self, nbytes: int, align: int) -> tuple[np.ndarray, dict[str, object]]:
        """An aligned byte array of ``nbytes`` and its array interface."""
        with self.lock:
            pairs = self.blocks.get((nbytes, align))
            if pairs:
                self.kept -= nbytes
                return pairs.pop()
        block = aligned_empty(nbytes, align)
        return block, block.__array_interface__

    def give_block(self, block: np.ndarray, interface: dict[str, object], align: int) -> None:
        """Return a pair from :meth:`take_block` (dropped when the cache is full)."""
        with self.lock:
            if self.kept + block.nbytes <= self.limit:
                self.blocks.setdefault((block.nbytes, align), []).append((block, interface))
                self.kept += block.nbytes


_STAGING = _Staging()
_RESULTS = _Blocks()


class _Lease:
    """The owner of a pooled block while arrays over it live (numpy keeps it as their
    base): when the last of them is gone, the block goes back to the pool."""

    __slots__ = ("block", "align", "__array_interface__")

    def __init__(self, block: np.ndarray, interface: dict[str, object], align: int) -> None:
        self.block = block
        self.align = align
        self.__array_interface__ = interface

    def __del__(self) -> None:
        try:
            _RESULTS.give_block(self.block, self.__array_interface__, self.align)
        except Exception:  # noqa: BLE001, S110 (interpreter shutdown: nothing to return to)
            pass


def leased_empty(nbytes: int, align: int) -> np.ndarray:
    """An uninitialized ``align``-aligned byte array for a result handed to the caller:
    its memory comes from a pool of blocks and returns to it only when this array and
    every view of it are gone, so it never aliases a live array, and a warm call reuses
    memory that is already mapped (a fresh large array costs a page fault per page)."""
    return np.asarray(_Lease(*_RESULTS.take_block(nbytes, align), align))


def bind_in_place(ctx: cl.Context, arr: np.ndarray, elements: int, writes: bool,
                  align: int, anywhere: bool = False) -> tuple[cl.Buffer, Writeback | None]:
    """A buffer over ``arr``'s span in host memory (zero-copy devices): the span itself
    when aligned (or, with ``anywhere``, element-aligned), else an aligned staging copy;
    the writeback (run after the launch) copies a written staging copy back and releases
    it."""
    if elements == 0:
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16), None
    span = host_span(arr, elements)
    if span.ctypes.data % align == 0 or anywhere and span.flags.aligned:
        return host_buffer(ctx, span, writes), None
    raw = _STAGING.take(span.nbytes, align)
    staged = raw.view(span.dtype)
    staged[...] = span
    buf = host_buffer(ctx, staged, writes)

    def back() -> None:
        if writes:
            span[...] = staged
        _STAGING.give(raw, align)

    return buf, back


def is_device_array(obj: object) -> TypeGuard[cl_array.Array]:
    """True for a ``pyopencl.array.Array``."""
    return isinstance(obj, cl_array.Array)


def upload(ctx: cl.Context, queue: cl.CommandQueue, arr: np.ndarray, elements: int,
           writes: bool, align: int = 0, anywhere: bool = False
           ) -> tuple[cl.Buffer, Writeback | None]:
    """A buffer holding ``arr``'s span, and how to copy it back (None if not written);
    with ``align`` (:func:`host_alignment`) the array's memory is bound in place (at any
    element-aligned address with ``anywhere``: :func:`binds_anywhere`)."""
    if align:
        return bind_in_place(ctx, arr, elements, writes, align, anywhere)
    if elements == 0:
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16), None
    span = host_span(arr, elements)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    buf = cl.Buffer(ctx, flags, hostbuf=np.ascontiguousarray(span))
    if enabled():
        PROFILE.moved(to_device=span.nbytes)
    if not writes:
        return buf, None

    def back() -> None:
        out = np.empty_like(span)
        cl.enqueue_copy(queue, out, buf)
        span[...] = out
        if enabled():
            PROFILE.moved(to_host=span.nbytes)

    return buf, back


def device_buffer(arr: DeviceMemory) -> cl.Buffer:
    """The buffer of a pyopencl array, a sub-buffer when it has an offset."""
    if arr.offset == 0:
        return memory_of(arr)
    size = max(arr.nbytes, arr.dtype.itemsize)
    return memory_of(arr).get_sub_region(arr.offset, size)


def index_array(ctx: cl.Context, values: Sequence[int]) -> cl.Buffer:
    """A read-only device array of int64 values (per-member sizes and strides)."""
    host = np.asarray(values, dtype=np.int64)
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(ctx, flags, hostbuf=host if host.size else np.zeros(1, np.int64))


def packed_offsets(nbytes: Sequence[int]) -> tuple[list[int], int]:
    """Byte offsets of members packed one after another, each ``MEMBER_ALIGN``-aligned,
    and the allocation's size (at least ``MEMBER_ALIGN``)."""
    offsets, total = [], 0
    for n in nbytes:
        offsets.append(total)
        total += -(-max(n, 1) // MEMBER_ALIGN) * MEMBER_ALIGN
    return offsets, max(total, MEMBER_ALIGN)


def upload_group(ctx: cl.Context, queue: cl.CommandQueue, members: Sequence[np.ndarray],
                 spans: Sequence[int], writes: bool, svm: bool,
                 align: int = 0) -> tuple[list[cl.Buffer], list[object], Writeback | None]:
    """(kernel arguments, objects to keep alive, writeback) for a group's members.

    With SVM on a device that runs kernels in the host's memory (``align`` non-zero),
    the table holds the members' own addresses (no copy; a raw pointer needs only its
    element's alignment, not a buffer's base alignment).
    Otherwise the members are packed (128-byte aligned) into one allocation: shared
    virtual memory whose member addresses form the table, or, without SVM, a plain
    buffer passed after a table of element offsets.
    """
    addresses = [m.__array_interface__["data"][0] for m in members] if svm and align else []
    itemsize = members[0].itemsize if len(members) else 1
    if addresses and all(a % itemsize == 0 for a in addresses):
        table = np.array(addresses, dtype=np.uint64)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        args = [cl.Buffer(ctx, flags, hostbuf=table)]
        return args, args + list(members), None
    pieces = [host_span(m, n).view(np.uint8) for m, n in zip(members, spans, strict=True)]
    offsets, total = packed_offsets([piece.nbytes for piece in pieces])
    if all(p.nbytes % MEMBER_ALIGN == 0 and p.nbytes for p in pieces):
        staging = np.concatenate(pieces)  # no padding needed: one copy
    else:
        staging = np.zeros(max(total, MEMBER_ALIGN), dtype=np.uint8)
        for piece, offset in zip(pieces, offsets, strict=True):
            staging[offset:offset + piece.nbytes] = piece
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    if svm:
        svm_store = cl.SVMAllocation(ctx, staging.nbytes, MEMBER_ALIGN,
                                     cl.svm_mem_flags.READ_WRITE)
        cl.enqueue_copy(queue, svm_store, staging)
        table = np.array([svm_store.svm_ptr + o for o in offsets], dtype=np.uint64)
        store: cl.SVMAllocation | cl.Buffer = svm_store
        args = [cl.Buffer(ctx, flags, hostbuf=table)]
    else:
        store = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                          hostbuf=staging)
        table = np.array([o // itemsize for o in offsets] or [0], dtype=np.uint64)
        args = [cl.Buffer(ctx, flags, hostbuf=table), store]
    keep: list[object] = [*args, store]
    if not writes:
        return args, keep, None

    def back() -> None:
        cl.enqueue_copy(queue, staging, store)
        for piece, offset in zip(pieces, offsets, strict=True):
            piece[...] = staging[offset:offset + piece.nbytes]

    return args, keep, back
