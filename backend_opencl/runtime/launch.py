"""Launching a kernel: argument setting, the NDRange of a work-group batch, completion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyopencl as cl


def get_kernel(program: Any, name: str) -> Any:
    """The kernel ``name`` of a built program."""
    return cl.Kernel(program, name)


def launch(queue: Any, kernel: Any, args: Sequence[Any], num_groups: int,
           work_group_size: tuple[int, int]) -> Any:
    """Run ``num_groups`` work-groups of ``work_group_size``; return the event."""
    wgx, wgy = work_group_size
    for index, arg in enumerate(args):
        kernel.set_arg(index, arg)
    return cl.enqueue_nd_range_kernel(queue, kernel, (num_groups * wgx, wgy), (wgx, wgy))


def finish(queue: Any) -> None:
    """Wait for everything queued."""
    queue.finish()
