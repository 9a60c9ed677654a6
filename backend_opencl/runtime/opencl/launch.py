"""Launching a kernel: argument setting, the NDRange of a work-group batch, completion.

Waiting for a short call on a CPU device (:class:`Spin`): PoCL's blocking wait sleeps on a
condition variable, and waking the caller after the last command costs 15-25 us on the
2-core test VM, as much as the kernels of a small program.  A :class:`Spin` polls the
event's status instead (yielding the core between polls, so PoCL's workers are not
starved) when the recent waits of the same call site were short, for at most
``SPIN_S``, and blocks otherwise.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
import pyopencl as cl
from pyopencl.typing import KernelArg

from backend_opencl.memo import Memo
from backend_opencl.runtime import profile
from backend_opencl.runtime.opencl import buffers, memory
from backend_opencl.runtime.opencl.buffers import BufferMemory


def get_kernel(program: cl.Program, name: str) -> cl.Kernel:
    """A new kernel object for kernel ``name`` of a built program."""
    return cl.Kernel(program, name)


INVOKERS_KEPT = 4096
"""The most pyopencl kernel invokers a process keeps in memory."""


Invokers = tuple[Callable[..., object], Callable[..., object]]
"""pyopencl's ``(enqueue, set_args)`` of a kernel object."""


class _LazyInvokers:
    """pyopencl's two invokers of one key, generated at the first call of either."""

    __slots__ = ("_make", "_made", "_stand_ins")

    def __init__(self, make: Callable[[], Invokers]) -> None:
        self._make = make
        self._made: Invokers | None = None
        self._stand_ins: Invokers = (self._enqueue, self._set_args)

    def made(self) -> Invokers:
        """The generated ``(enqueue, set_args)`` (racing threads may both generate them:
        the same functions)."""
        if self._made is None:
            self._made = self._make()
        return self._made

    def current(self) -> Invokers:
        """The generated pair once made, until then stand-ins that make it when called."""
        return self._made or self._stand_ins

    def _enqueue(self, *args: object, **kwargs: object) -> object:
        return self.made()[0](*args, **kwargs)

    def _set_args(self, *args: object, **kwargs: object) -> object:
        return self.made()[1](*args, **kwargs)


def _remember_invokers() -> None:
    """Keep pyopencl's kernel invokers in memory, and generate them only when called.

    Each new ``pyopencl.Kernel`` gets the Python functions behind ``Kernel.__call__``
    and ``set_args`` from ``pyopencl.invoker.generate_enqueue_and_set_args``. That reads
    them from pyopencl's on-disk cache every time (its in-memory cache is off): an
    sqlite query and an unpickled module, ~0.1-0.25 ms a kernel object. tlc never calls
    them (it sets arguments one by one and enqueues with ``enqueue_nd_range_kernel``),
    but it makes a kernel object for each launch of each frame: MobileNetV2's first call
    made 57 of 35 kernels.  So each key gets stand-ins that generate the pair at their
    first call (later kernel objects of the key get the pair itself), and every kernel
    object of the key shares them: the functions take the kernel as an argument and
    depend only on pyopencl's own key.  The key's devices only decide pyopencl's warning
    about arguments too large for NVIDIA GPUs, checked at the key's first kernel object
    as before."""
    import pyopencl.invoker as invoker

    generate = invoker.generate_enqueue_and_set_args
    if getattr(generate, "tlc_remembered", False):
        return
    check_size = getattr(invoker, "_check_arg_size", None)
    kept: Memo[tuple[object, ...], _LazyInvokers] = Memo(INVOKERS_KEPT)

    def remembered(function_name: str, num_passed_args: int, num_cl_args: int,
                   arg_types: object, work_around_arg_count_bug: bool,
                   warn_about_arg_count_bug: bool, devs: object) -> Invokers:
        def make() -> Invokers:
            return cast("Invokers", generate(
                function_name, num_passed_args, num_cl_args, arg_types,
                work_around_arg_count_bug=work_around_arg_count_bug,
                warn_about_arg_count_bug=warn_about_arg_count_bug, devs=devs))

        key = (function_name, num_passed_args, num_cl_args, arg_types,
               work_around_arg_count_bug, warn_about_arg_count_bug)
        try:
            found = kept.get(key)
        except TypeError:  # unhashable argument types: pyopencl's own way, not kept
            return make()
        if found is None:
            if check_size is not None:
                check_size(function_name, num_cl_args, arg_types, devs)
            found = kept[key] = _LazyInvokers(make)
        return found.current()

    functools.update_wrapper(remembered, generate)  # __wrapped__: pyopencl's own
    setattr(remembered, "tlc_remembered", True)  # noqa: B010 -- a mark on a function
    invoker.generate_enqueue_and_set_args = remembered


_remember_invokers()


def launch(queue: cl.CommandQueue, kernel: cl.Kernel, args: Sequence[KernelArg], num_groups: int,
           work_group_size: tuple[int, int]) -> cl.Event:
    """Run ``num_groups`` work-groups of ``work_group_size``; return the event."""
    wgx, wgy = work_group_size
    for index, arg in enumerate(args):
        kernel.set_arg(index, arg)
    return cl.enqueue_nd_range_kernel(queue, kernel, (num_groups * wgx, wgy), (wgx, wgy))


def prepared(queue: cl.CommandQueue, program: cl.Program, name: str, num_groups: int,
             work_group_size: tuple[int, int],
             label: str = "") -> Callable[[Sequence[BufferMemory]], cl.Event]:
    """A launch of kernel ``name`` whose NDRange is resolved once: call it with the device
    arrays of its arguments (one buffer parameter each); it enqueues without waiting (the
    queue is in order, so later commands see its results).  Arguments are set only when
    they change; a lock keeps concurrent callers from mixing their arguments.  ``label``
    names the kernel in profiles (default ``name``).  The call returns the launch's
    event."""
    kernel = cl.Kernel(program, name)  # its own object: arguments set here stay set
    wgx, wgy = work_group_size
    global_size, local_size = (num_groups * wgx, wgy), (wgx, wgy)
    set_arg, enqueue, device_buffer = kernel.set_arg, cl.enqueue_nd_range_kernel, \
        memory.device_buffer
    current: list[KernelArg] = []
    lock = threading.Lock()
    record = profile.PROFILE.launch if profile.enabled() else None
    label = label or name

    def run(arrays: Sequence[BufferMemory]) -> cl.Event:
        """``arrays``: pyopencl arrays or :class:`~backend_opencl.runtime.opencl.buffers.
        HostArray` s."""
        bufs = [arr.base_data if arr.offset == 0 else device_buffer(arr) for arr in arrays]
        with lock:
            if bufs != current:
                for index, buf in enumerate(bufs):
                    set_arg(index, buf)
                current[:] = bufs
            event = enqueue(queue, kernel, global_size, local_size)
        if record is not None:
            record(label, event)
        return event

    return run


SPIN_S = 400e-6
"""The longest a :class:`Spin` polls before it blocks, and the longest recent wait after
which it still polls."""

SPIN_ENV = "TLC_SPIN"
"""Set to 0 to always block in waits (no polling)."""


_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))


class Spin:
    """How one call site waits (see the module docstring): polls while its recent waits
    were short.  Shared by threads: its one float is only a hint."""

    __slots__ = ("enabled", "recent")

    def __init__(self, enabled: bool) -> None:
        """``enabled``: poll at all (CPU devices; ``TLC_SPIN=0`` turns it off)."""
        self.enabled = enabled and os.environ.get(SPIN_ENV) != "0"
        self.recent = 0.0
        """Seconds the last wait took."""

    def wait(self, event: cl.Event) -> None:
        """Wait for ``event``: poll its status (yielding between polls) up to ``SPIN_S``
        when the last wait was shorter than that, then block."""
        start = time.perf_counter()
        if self.enabled and self.recent < SPIN_S:
            deadline, complete = start + SPIN_S, cl.command_execution_status.COMPLETE
            status = event.command_execution_status
            while status > complete and time.perf_counter() < deadline:
                _yield()  # releases the GIL; lets a worker on this core run
                status = event.command_execution_status
            if status != complete:
                event.wait()  # still running, or failed: wait() raises its error
        else:
            event.wait()
        self.recent = time.perf_counter() - start


def complete(event: cl.Event) -> bool:
    """Whether the command of ``event`` has ended (completed or failed); never waits."""
    return event.command_execution_status <= cl.command_execution_status.COMPLETE


def finish(queue: cl.CommandQueue, last: cl.Event | None = None, spin: Spin | None = None
           ) -> None:
    """Wait for everything queued: for ``last``, the event of the last command of the
    in-order ``queue``, when given (cheaper than ``clFinish`` on PoCL), polled as
    ``spin`` says when given."""
    if last is None:
        queue.finish()
    elif spin is not None:
        spin.wait(last)
    else:
        last.wait()


def read_back(queue: cl.CommandQueue, arr: buffers.PlanMemory, n: int,
              last: cl.Event | None, spin: Spin) -> np.ndarray:
    """A copy of plan memory ``arr``'s first ``n`` elements once the commands before
    have run: host memory after waiting for ``last`` (polled as ``spin`` says), device
    memory by a blocking read on the in-order ``queue``."""
    if isinstance(arr, buffers.HostArray):
        finish(queue, last, spin)
        return arr.host[:n].copy()
    return buffers.download(arr, n)


def write_back(queue: cl.CommandQueue, arr: buffers.PlanMemory, flat: np.ndarray,
               last: cl.Event | None, spin: Spin) -> cl.Event | None:
    """Make plan memory ``arr`` hold ``flat`` for the commands enqueued after: host
    memory is filled once the commands before (which may use it) have run; device memory
    gets a copy without waiting, whose event is returned (``flat`` must live until it
    has run)."""
    if isinstance(arr, buffers.HostArray):
        finish(queue, last, spin)
        arr.fill(flat)
        return None
    return buffers.write(arr, flat)
