"""A slow and late device for tests (``TLC_STRESS``): every enqueue waits behind a gate.

Races between the host and the device hide on a quiet machine, where PoCL runs each
command soon after it is enqueued: a host read that forgot to wait for the command
writing its buffer usually still sees the finished value.  Under load (another process
computing on PoCL) the device lags far behind the host and such a read sees stale memory.
This module makes that lag the rule: with ``TLC_STRESS`` set, every command tlc (or
pyopencl on its behalf) enqueues is preceded by a marker waiting for a user event that a
helper thread completes after a random delay, so the device runs every command late.

On a SYCL queue (:mod:`.sycl`), which has no user events, a kernel that computes for a
random time is submitted before every command instead.

``TLC_STRESS=1`` draws delays of up to :data:`DEFAULT_MAX_DELAY_S`; ``TLC_STRESS=<ms>``
sets the largest delay in milliseconds.  ``TLC_STRESS_SEED`` fixes the random stream.
The hook wraps ``pyopencl.enqueue_nd_range_kernel`` and ``pyopencl.enqueue_copy``
(which pyopencl's arrays call too) when the platforms are first opened
(:func:`backend_opencl.runtime.opencl.devices.get_device`), before any queue exists.  A program
that waits correctly gives the same results under stress, only later.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import os
import random
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Protocol

ENV = "TLC_STRESS"
SEED_ENV = "TLC_STRESS_SEED"
DEFAULT_MAX_DELAY_S = 2e-3
"""The largest delay of ``TLC_STRESS=1``: longer than most test kernels take, so a host
read that does not wait sees memory no command has written yet."""


def max_delay_s() -> float:
    """The largest delay ``$TLC_STRESS`` asks for, in seconds (0: stress is off)."""
    text = os.environ.get(ENV, "").strip()
    if text in ("", "0"):
        return 0.0
    if text == "1":
        return DEFAULT_MAX_DELAY_S
    try:
        return max(float(text), 0.0) / 1000
    except ValueError:
        return DEFAULT_MAX_DELAY_S


ACTIVE = max_delay_s() > 0
"""Whether this process runs under stress (``$TLC_STRESS`` at import)."""

ITERATIONS_PER_S = 3e8
"""About how many steps of the SYCL route's stall kernel (a chain of dependent 64-bit
multiply-adds on a volatile) a CPU core runs per second (measured: 2-5 ns a step)."""


def stall_iterations() -> int:
    """A random length, in steps, of the SYCL route's stall kernel: up to the largest
    delay."""
    return int(random.uniform(0.0, max_delay_s()) * ITERATIONS_PER_S)


class _Queue(Protocol):
    """A pyopencl command queue, as the hook uses it (pyopencl is imported only under
    ``runtime/opencl/``, which passes its module in)."""

    @property
    def context(self) -> object:
        """The queue's context."""


class _Gate(Protocol):
    """A pyopencl user event."""

    def set_status(self, status: int) -> None:
        """Complete (or fail) the event."""


class _Event(Protocol):
    """A pyopencl event."""

    def wait(self) -> None:
        """Wait until the command is done."""


class _Releaser:
    """The helper thread: completes user events when their time has come."""

    def __init__(self, cl: ModuleType, max_delay: float, seed: int | None) -> None:
        self._cl = cl
        self._max = max_delay
        self._random = random.Random(seed)
        self._heap: list[tuple[float, int, _Gate]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        threading.Thread(target=self._run, name="tlc-stress", daemon=True).start()

    def hold(self, queue: _Queue) -> None:
        """Enqueue on ``queue`` a marker that a random delay from now lets pass."""
        gate = self._cl.UserEvent(queue.context)
        self._cl.enqueue_marker(queue, wait_for=[gate])
        with self._wake:
            due = time.monotonic() + self._random.uniform(0.0, self._max)
            heapq.heappush(self._heap, (due, next(self._order), gate))
            self._wake.notify()

    def _run(self) -> None:
        complete = self._cl.command_execution_status.COMPLETE
        while True:
            with self._wake:
                while not self._heap:
                    self._wake.wait()
                due, _, gate = self._heap[0]
                late = due - time.monotonic()
                if late > 0:
                    self._wake.wait(late)
                    continue
                heapq.heappop(self._heap)
            gate.set_status(complete)


_INSTALLED: list[_Releaser] = []
_LOCK = threading.Lock()


def install(cl: ModuleType) -> bool:
    """Hold every enqueue of pyopencl module ``cl`` behind a random delay when
    ``$TLC_STRESS`` asks for it (once per process); return whether stress is on."""
    delay = max_delay_s()
    if not delay:
        return False
    with _LOCK:
        if _INSTALLED:
            return True
        seed_text = os.environ.get(SEED_ENV)
        releaser = _Releaser(cl, delay, int(seed_text) if seed_text else None)
        _INSTALLED.append(releaser)
        # setattr: a ModuleType's functions are not attributes mypy lets one assign
        setattr(cl, "enqueue_nd_range_kernel",  # noqa: B010
                _held(cl.enqueue_nd_range_kernel, releaser))
        setattr(cl, "enqueue_copy", _held(  # noqa: B010
            cl.enqueue_copy, releaser, blocks=lambda args: len(args) < 2 or not all(
                isinstance(a, cl.Buffer) for a in args[:2])))
    return True


def _held(enqueue: Callable[..., _Event], releaser: _Releaser,
          blocks: Callable[[tuple[object, ...]], bool] | None = None) -> Callable[..., _Event]:
    """``enqueue`` (whose first argument is the queue) behind a gate.  A blocking copy
    (``enqueue_copy``'s default where the host or SVM takes part: ``blocks(args)``) is
    enqueued without blocking and then waited for: pyopencl keeps the GIL in some
    blocking copies (SVM), and the helper thread that opens the gate needs it."""
    @functools.wraps(enqueue)
    def held(queue: _Queue, *args: object, **kwargs: object) -> _Event:
        releaser.hold(queue)
        if blocks is None or not kwargs.get("is_blocking", True) or not blocks(args):
            return enqueue(queue, *args, **kwargs)
        event = enqueue(queue, *args, **{**kwargs, "is_blocking": False})
        event.wait()
        return event
    return held


