"""Groups of ``pyopencl.array.Array`` members: bound on the device, never via the host.

With shared virtual memory (the kernel's table holds device addresses), a member that
lives in SVM (allocated with ``pyopencl.tools.SVMAllocator`` or an ``SVMPool``) is used
in place: its table entry is its SVM address.  Other members (ordinary buffers) are
copied device-to-device into one SVM allocation, packed like numpy members, and copied
back device-to-device after the kernel when it writes the group.

Without SVM (the table holds element offsets into one base buffer), members that are
all views of one buffer are used in place (that buffer is the base); otherwise they are
packed into a new buffer device-to-device, and copied back when written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from backend_opencl.runtime.opencl import buffers
from backend_opencl.runtime.opencl.memory import (
    MEMBER_ALIGN,
    Writeback,
    is_device_array,
    packed_offsets,
)


@dataclass(frozen=True)
class _Piece:
    """One member's span: where it is and where it goes in the packed allocation."""

    source: cl.Buffer  #: the buffer holding the member
    offset: int  #: byte offset of the member's first element in ``source``
    nbytes: int  #: bytes from the first to the last element
    packed: int  #: byte offset in the packed allocation


def is_svm_array(arr: cl_array.Array) -> bool:
    """True for a pyopencl array whose memory is shared virtual memory."""
    return isinstance(arr.base_data, getattr(cl, "SVMPointer", ()))  # absent before CL 2.0


def _svm(arr: cl_array.Array) -> cl.SVMPointer:
    """The SVM memory of an array for which :func:`is_svm_array` holds."""
    return cast("cl.SVMPointer", arr.base_data)


def foreign_members(members: Sequence[object], ctx: cl.Context) -> list[int]:
    """Indices of the pyopencl arrays that belong to another context than ``ctx``."""
    return [k for k, m in enumerate(members) if is_device_array(m) and m.context != ctx]


def bind_device_group(ctx: cl.Context, queue: cl.CommandQueue, members: Sequence[cl_array.Array],
                      spans: Sequence[int], writes: bool, svm: bool
                      ) -> tuple[list[cl.Buffer], list[object], Writeback | None]:
    """(kernel arguments, objects to keep alive, writeback) for a group of pyopencl arrays.

    ``spans`` are the members' spans in elements; ``svm`` says whether the kernel takes a
    table of SVM addresses (else element offsets followed by the base buffer).
    """
    _wait_for_other_queues(members, queue)
    nbytes = [n * m.dtype.itemsize for m, n in zip(members, spans, strict=True)]
    if svm:
        return _bind_svm(ctx, queue, members, nbytes, writes)
    base = _shared_buffer(members)
    if base is not None:
        table = [m.offset // m.dtype.itemsize for m in members]
        args = [_table(ctx, table), base]
        return args, list(args), None
    return _bind_packed_buffer(ctx, queue, members, nbytes, writes)


def _wait_for_other_queues(members: Sequence[cl_array.Array], queue: cl.CommandQueue) -> None:
    """Finish the members' own queues so their pending work precedes the launch."""
    others = {id(m.queue): m.queue for m in members if m.queue is not None and m.queue != queue}
    for other in others.values():
        other.finish()


def _table(ctx: cl.Context, values: Sequence[int]) -> cl.Buffer:
    """A read-only buffer of 64-bit table entries (addresses or element offsets)."""
    host = np.array(list(values) or [0], dtype=np.uint64)
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(ctx, flags, hostbuf=host)


def _in_place_svm(arr: cl_array.Array) -> bool:
    """True when ``arr``'s SVM address can go into the table as it is."""
    return is_svm_array(arr) and arr.offset % arr.dtype.itemsize == 0


def _bind_svm(ctx: cl.Context, queue: cl.CommandQueue, members: Sequence[cl_array.Array],
              nbytes: Sequence[int], writes: bool
              ) -> tuple[list[cl.Buffer], list[object], Writeback | None]:
    """SVM members in place; the others copied into one SVM allocation."""
    copied = [k for k, m in enumerate(members) if not _in_place_svm(m)]
    keep: list[object] = []
    addresses = [_svm(m).svm_ptr + m.offset if _in_place_svm(m) else 0 for m in members]
    back: Writeback | None = None
    if copied:
        offsets, total = packed_offsets([nbytes[k] for k in copied])
        store = cl.SVMAllocation(ctx, total, MEMBER_ALIGN, cl.svm_mem_flags.READ_WRITE)
        target = store.as_buffer(ctx)
        pieces = [_piece(ctx, members[k], nbytes[k], o, keep)
                  for k, o in zip(copied, offsets, strict=True)]
        for k, offset in zip(copied, offsets, strict=True):
            addresses[k] = store.svm_ptr + offset
        _copy_in(queue, target, pieces)
        keep += [store, target]
        back = _copy_back(queue, target, pieces) if writes else None
    args = [_table(ctx, addresses)]
    return args, keep + args, back


def _shared_buffer(members: Sequence[cl_array.Array]) -> cl.Buffer | None:
    """The one ordinary buffer all members view (at element offsets), if there is one."""
    if not members or any(is_svm_array(m) or m.offset % m.dtype.itemsize for m in members):
        return None
    base = buffers.memory_of(members[0])
    return base if all(m.base_data == base for m in members) else None


def _bind_packed_buffer(ctx: cl.Context, queue: cl.CommandQueue, members: Sequence[cl_array.Array],
                        nbytes: Sequence[int],
                        writes: bool) -> tuple[list[cl.Buffer], list[object], Writeback | None]:
    """The members copied into one new buffer; the table holds their element offsets."""
    offsets, total = packed_offsets(nbytes)
    store = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, total)
    keep: list[object] = []
    pieces = [_piece(ctx, m, n, o, keep)
              for m, n, o in zip(members, nbytes, offsets, strict=True)]
    _copy_in(queue, store, pieces)
    itemsize = members[0].dtype.itemsize if members else 1
    args = [_table(ctx, [o // itemsize for o in offsets]), store]
    back = _copy_back(queue, store, pieces) if writes else None
    return args, keep + args, back


def _piece(ctx: cl.Context, arr: cl_array.Array, nbytes: int, packed: int, keep: list[object]
           ) -> _Piece:
    """The copy of one member; SVM memory is viewed as a buffer (kept in ``keep``)."""
    source = buffers.memory_of(arr)
    if is_svm_array(arr):
        source = _svm(arr).as_buffer(ctx)
        keep.append(source)
    return _Piece(source, arr.offset, nbytes, packed)


def _copy_in(queue: cl.CommandQueue, target: cl.Buffer, pieces: Sequence[_Piece]) -> None:
    """Enqueue device-to-device copies of the members into the packed allocation."""
    for p in pieces:
        if p.nbytes:
            cl.enqueue_copy(queue, target, p.source, src_offset=p.offset,
                            dst_offset=p.packed, byte_count=p.nbytes)


def _copy_back(queue: cl.CommandQueue, target: cl.Buffer, pieces: Sequence[_Piece]
               ) -> Callable[[], None]:
    """How to copy the members back from the packed allocation after the kernel."""
    def back() -> None:
        for p in pieces:
            if p.nbytes:
                cl.enqueue_copy(queue, p.source, target, src_offset=p.packed,
                                dst_offset=p.offset, byte_count=p.nbytes)
        queue.finish()

    return back
