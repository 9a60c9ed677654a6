"""A queue whose commands are submitted in batches: :class:`HeldQueue`.

On PoCL each command that reaches an idle device wakes its worker threads, and on the
2-core test VM that wake-up is paid inside the enqueue: a kernel enqueued every 10 us
costs ~10 us to enqueue, one enqueued right after another ~2.5
(``benchmarks/dispatch.py`` and the measurements in docs/performance.md).  A run of
calls that do not wait (:mod:`.quick`) therefore queues its commands behind a gate, a
marker waiting for a user event, which the next call opens once ``batch`` calls wait
behind it: the device then wakes once for the batch.  Nothing may wait for a held
command without opening the gate first, or it would wait forever, so the queue is tlc's
alone (never the device's queue that users' own pyopencl work goes to), and each wait
for its commands (reading a result, a frame waiting for its previous call, a call on
another queue binding a result of this one, the interpreter's exit, which also waits for
them) calls :meth:`HeldQueue.open` first.
"""

from __future__ import annotations

import atexit
import threading
from typing import TYPE_CHECKING

import pyopencl as cl

if TYPE_CHECKING:
    from backend_opencl.runtime.opencl.devices import Device

BATCH = 16
"""Calls whose commands a held queue submits at once."""

_BY_DEVICE: dict[str, HeldQueue] = {}
_LOCK = threading.Lock()


def held_queue(device: Device) -> HeldQueue:
    """The held queue of ``device`` (one per process)."""
    with _LOCK:
        held = _BY_DEVICE.get(device.key)
        if held is None:
            assert device.cl_device is not None  # a device with a context has its handle
            held = _BY_DEVICE[device.key] = HeldQueue(device.context, device.cl_device, BATCH)
        return held


class HeldQueue:
    """An in-order queue of its own on a device whose commands wait behind a gate until
    ``batch`` calls are queued or something is about to wait (see the module
    docstring).  Safe to share between threads: a gate opened while another thread is
    enqueueing only submits that thread's commands sooner."""

    def __init__(self, context: cl.Context, device: cl.Device, batch: int) -> None:
        self.queue = cl.CommandQueue(context, device)
        self.batch = batch
        self._gate: cl.UserEvent | None = None
        self._calls = 0
        self._lock = threading.Lock()

    def hold(self) -> None:
        """Make the commands of the call enqueued next wait behind the gate: the gate
        opens first when ``batch`` calls are behind it, then closes again."""
        if self._calls >= self.batch:
            self.open()
        if self._gate is None:
            with self._lock:
                if self._gate is None:
                    gate = cl.UserEvent(self.queue.context)
                    cl.enqueue_marker(self.queue, wait_for=[gate])
                    self._gate, self._calls = gate, 0
        self._calls += 1

    def open(self) -> None:
        """Submit every held command (nothing when none is held); call it before any wait
        for a command of this queue."""
        if self._gate is not None:
            with self._lock:
                gate, self._gate = self._gate, None
            if gate is not None:
                gate.set_status(cl.command_execution_status.COMPLETE)


@atexit.register
def _finish_all() -> None:
    """At exit, submit every held command and wait for them all: the interpreter's
    teardown frees the host memory they use (PyPI's PoCL crashed in one exit of three
    with calls still running)."""
    with _LOCK:
        queues = list(_BY_DEVICE.values())
    for held in queues:
        held.open()
        held.queue.finish()
