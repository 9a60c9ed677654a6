"""Moving arguments to the device: buffers for memrefs, shared virtual memory for groups.

A numpy array travels as the bytes from its first to its last element (so subviews of
larger arrays keep their strides) and is copied back after the launch when the kernel
writes it.  A group's members are packed into one SVM allocation whose member addresses
form the group's pointer table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

Writeback = Callable[[], None]
MEMBER_ALIGN = 128


def is_device_array(obj: object) -> bool:
    """True for a ``pyopencl.array.Array``."""
    return isinstance(obj, cl_array.Array)


def span_elements(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements from the first to the last element of a strided array (0 if empty)."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))


def host_span(arr: np.ndarray, elements: int) -> np.ndarray:
    """A contiguous 1-D view of ``elements`` items starting at ``arr``'s first element."""
    if elements == arr.size and (arr.flags.f_contiguous or arr.flags.c_contiguous):
        return arr.ravel(order="K")  # a view: no copy for contiguous arrays
    return np.lib.stride_tricks.as_strided(arr, shape=(max(elements, 0),),
                                           strides=(arr.itemsize,), writeable=True)


def upload(ctx: Any, queue: Any, arr: np.ndarray, elements: int,
           writes: bool) -> tuple[Any, Writeback | None]:
    """A buffer holding ``arr``'s span, and how to copy it back (None if not written)."""
    if elements == 0:
        return cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16), None
    span = host_span(arr, elements)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    buf = cl.Buffer(ctx, flags, hostbuf=np.ascontiguousarray(span))
    if not writes:
        return buf, None

    def back() -> None:
        out = np.empty_like(span)
        cl.enqueue_copy(queue, out, buf)
        span[...] = out

    return buf, back


def device_buffer(arr: Any) -> Any:
    """The buffer of a pyopencl array, a sub-buffer when it has an offset."""
    if arr.offset == 0:
        return arr.base_data
    size = max(arr.nbytes, arr.dtype.itemsize)
    return arr.base_data.get_sub_region(arr.offset, size)


def index_array(ctx: Any, values: Sequence[int]) -> Any:
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


def upload_group(ctx: Any, queue: Any, members: Sequence[np.ndarray],
                 spans: Sequence[int], writes: bool,
                 svm: bool) -> tuple[list[Any], list[Any], Writeback | None]:
    """(kernel arguments, objects to keep alive, writeback) for a group's members.

    The members are packed (128-byte aligned) into one allocation: shared virtual memory
    whose member addresses form the table, or, without SVM, a plain buffer passed after
    a table of element offsets.
    """
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
        store: Any = cl.SVMAllocation(ctx, staging.nbytes, MEMBER_ALIGN,
                                      cl.svm_mem_flags.READ_WRITE)
        cl.enqueue_copy(queue, store, staging)
        table = np.array([store.svm_ptr + o for o in offsets], dtype=np.uint64)
        args = [cl.Buffer(ctx, flags, hostbuf=table)]
    else:
        store = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                          hostbuf=staging)
        itemsize = members[0].itemsize if len(members) else 1
        table = np.array([o // itemsize for o in offsets] or [0], dtype=np.uint64)
        args = [cl.Buffer(ctx, flags, hostbuf=table), store]
    keep = args + [store]
    if not writes:
        return args, keep, None

    def back() -> None:
        cl.enqueue_copy(queue, staging, store)
        for piece, offset in zip(pieces, offsets, strict=True):
            piece[...] = staging[offset:offset + piece.nbytes]

    return args, keep, back
