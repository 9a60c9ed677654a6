"""Launching a kernel: argument setting, the NDRange of a work-group batch, completion."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pyopencl as cl

from backend_opencl.runtime import memory, profile


def get_kernel(program: Any, name: str) -> Any:
    """The kernel ``name`` of a built program."""
    return cl.Kernel(program, name)


MAX_WORK_ITEMS = 2**31 - 1
"""The largest first NDRange dimension a launch uses: kernels compute work-item ids in
``int`` on some paths, and PoCL crashes (SIGILL at 2^32 work-items, aborts from 2^40,
``std::bad_cast`` at 2^64) instead of failing cleanly beyond 32 bits."""


def max_groups(device: Any, work_group_size: tuple[int, int]) -> int:
    """The most work-groups of ``work_group_size`` one launch on ``device`` may have."""
    bits = int(getattr(getattr(device, "cl_device", None), "address_bits", 64) or 64)
    return min(MAX_WORK_ITEMS, 2**bits - 1) // max(1, work_group_size[0])


def launch(queue: Any, kernel: Any, args: Sequence[Any], num_groups: int,
           work_group_size: tuple[int, int]) -> Any:
    """Run ``num_groups`` work-groups of ``work_group_size``; return the event."""
    wgx, wgy = work_group_size
    for index, arg in enumerate(args):
        kernel.set_arg(index, arg)
    return cl.enqueue_nd_range_kernel(queue, kernel, (num_groups * wgx, wgy), (wgx, wgy))


def prepared(queue: Any, program: Any, name: str, num_groups: int,
             work_group_size: tuple[int, int],
             label: str = "") -> Callable[[Sequence[Any]], None]:
    """A launch of kernel ``name`` whose NDRange is resolved once: call it with the device
    arrays of its arguments (one buffer parameter each); it enqueues without waiting (the
    queue is in order, so later commands see its results).  Arguments are set only when
    they change; a lock keeps concurrent callers from mixing their arguments.  ``label``
    names the kernel in profiles (default ``name``)."""
    kernel = cl.Kernel(program, name)  # its own object: arguments set here stay set
    wgx, wgy = work_group_size
    global_size, local_size = (num_groups * wgx, wgy), (wgx, wgy)
    set_arg, enqueue, device_buffer = kernel.set_arg, cl.enqueue_nd_range_kernel, \
        memory.device_buffer
    current: list[Any] = []
    lock = threading.Lock()
    record = profile.PROFILE.launch if profile.enabled() else None
    label = label or name

    def run(arrays: Sequence[Any]) -> None:
        bufs = [arr.base_data if arr.offset == 0 else device_buffer(arr) for arr in arrays]
        with lock:
            if bufs != current:
                for index, buf in enumerate(bufs):
                    set_arg(index, buf)
                current[:] = bufs
            event = enqueue(queue, kernel, global_size, local_size)
        if record is not None:
            record(label, event)

    return run


def finish(queue: Any, last: Any = None) -> None:
    """Wait for everything queued: for ``last``, the event of the last command of the
    in-order ``queue``, when given (cheaper than ``clFinish`` on PoCL)."""
    if last is not None:
        last.wait()
    else:
        queue.finish()
