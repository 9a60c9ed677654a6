"""The short way through a call that does not wait: :class:`QuickDispatch`.

An asynchronous call (:meth:`~backend_opencl.exec.executable.Executable.dispatch`,
``tlc.jax.jit(f, device_results=True)``) of a tiny function costs what its Python and
the driver's submission do: the general way (checking each argument, binding it through
the plan runtime, running the frame, wrapping the results) took ~15 us a call on the
2-core test VM, of which the enqueue was 6-10 (PoCL waking its workers for each
command, see :mod:`.held`), where jax's whole asynchronous call takes ~5.

Most calls are the common case: every argument a numpy array of its parameter's dtype
and shape, or a tlc result on this device that the plan only reads, every result in
frame memory of its own, and a plan of launches and copies only (no host control flow
or callbacks, which wait for the device).  A :class:`QuickDispatch`, made once per
executable on a CPU device (where a frame's buffers are host memory), does such a call
in one function on frames of its own whose commands go to the device's
:class:`~.held.HeldQueue`: take a frame, copy the numpy arguments into its memory and
point the kernel arguments at borrowed results, enqueue the prepared steps behind the
queue's gate, and wrap the results (their lease gives the frame back, see
:mod:`.device_array`; reading one submits the held commands first).  A plan whose frame
memory is small is submitted in batches of calls; a larger one (whose kernels take long
enough that a wake-up does not matter) at once.  For any other call it answers None
with nothing enqueued, and the caller takes the general way, which this one agrees
with in every result.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from backend_opencl.runtime.opencl import held, launch
from backend_opencl.runtime.opencl.device_array import DeviceArray, FrameLease
from backend_opencl.runtime.opencl.frames import Frame, Frames, Layout, Retired, idle
from tensorlang.plan import Copy, Free, Launch

if TYPE_CHECKING:
    from backend_opencl.runtime.opencl.frames import FramedExecutable
    from backend_opencl.runtime.opencl.plans import Executable, OpenCLPlans

BATCHED_BYTES = 1 << 16
"""Largest frame memory of a plan whose calls are submitted in batches."""

_NDARRAY = np.ndarray


class QuickDispatch:
    """The common case of :meth:`OpenCLPlans.dispatch` for one executable (see the
    module docstring); made by :meth:`of`.

    Its frames are its own (their commands go to the held queue): a call takes the
    oldest one given back when its commands are done, else makes a new one while fewer
    than ``spare`` exist (twice the batch for a batched plan, so one batch runs while
    the next is queued), else waits for it.  A frame goes back when the last result of
    its call is read or dropped (its lease, from any thread or a finaliser: lock-free),
    keeping the results the call borrowed until its commands are done."""

    def __init__(self, exe: Executable, layout: Layout, runtime: OpenCLPlans,
                 fresh: Callable[[], bool]) -> None:
        plan = exe.plan
        self.exe = cast("FramedExecutable", exe)
        self.layout = layout
        self.fresh = fresh
        self.held = held.held_queue(runtime.device)
        self.queue, self.spin = self.held.queue, runtime.spin
        self.batched = sum(layout.slot_bytes) <= BATCHED_BYTES
        """Whether calls are submitted in batches (else each at once)."""
        self.spare = 2 * self.held.batch if self.batched else Frames.MAX_PENDING
        self.params = tuple((bid, dtype, shape, bid in exe.written)
                            for bid, dtype, shape in exe.params)
        """(buffer, dtype, shape, whether the plan writes it) of each parameter."""
        self.results = tuple((bid, plan.buffer(bid).shape, np.dtype(dtype), exe.storage[bid])
                             for bid, dtype in zip(plan.results, exe.result_dtypes,
                                                   strict=True))
        """(buffer, shape, dtype, storage dtype) of each result."""
        self._free: collections.deque[Frame] = collections.deque()
        self._retired = Retired()
        self._made = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, exe: Executable, frames: Frames, runtime: OpenCLPlans) -> QuickDispatch | None:
        """The quick way of ``exe``'s calls (frames laid out as ``frames`` are), or None
        where it never applies: a device whose buffers are not host memory, a plan with
        host control flow or callbacks, a token, a parameter stored in another dtype
        (booleans), or a result that is not frame memory of its own (a parameter, a
        constant, a result bound in place)."""
        plan, slot_of = exe.plan, frames.layout.slot_of
        if not runtime.align or any(exe.in_place_results) \
                or not all(isinstance(s, (Launch, Copy, Free)) for s in plan.steps):
            return None
        if any(dtype is None or exe.storage[bid] != dtype for bid, dtype, _ in exe.params):
            return None
        if any(dtype is None or bid in plan.params or bid not in slot_of
               for bid, dtype in zip(plan.results, exe.result_dtypes, strict=True)):
            return None
        return cls(exe, frames.layout, runtime, frames.fresh)

    def __call__(self, args: Sequence[Any]) -> tuple[DeviceArray, ...] | None:
        """Enqueue a call on ``args`` and return its results, or None (nothing enqueued)
        when the call is not the common case."""
        params, queue, gate = self.params, self.queue, self.held
        if len(args) != len(params):
            return None
        frame = self._take()
        try:
            for a, (bid, dtype, shape, written) in zip(args, params, strict=True):
                if type(a) is _NDARRAY:
                    if a.shape != shape or a.dtype is not dtype and a.dtype != dtype:
                        self._untake(frame)
                        return None
                    slot: Any = frame.get(bid)  # a HostArray: a CPU device's frame memory
                    slot.fill(a)
                elif type(a) is DeviceArray and not written and a.shape == shape \
                        and a.dtype == dtype and (held := a.borrow(queue)) is not None:
                    slot, lease = held
                    frame.borrow(bid, slot)
                    frame.keep += (a, lease)  # until the commands reading it ran
                else:
                    self._untake(frame)
                    return None
                frame.point(bid, slot.base_data)
            gate.hold()
            frame.enqueue_plain()
            if not self.batched:
                gate.open()
            cur, last, spin, submit = frame.cur, frame.last, self.spin, gate.open
            lease = FrameLease(self._give, frame)
            return tuple([DeviceArray(cur[bid], shape, dtype, storage, last, queue, spin, lease,
                                      submit) for bid, shape, dtype, storage in self.results])
        except BaseException:
            gate.open()
            queue.finish()
            with self._lock:
                self._made -= 1  # the frame is dropped
            raise

    def _take(self) -> Frame:
        """A frame whose earlier commands are done (see the class docstring)."""
        if self.fresh():
            self._retired.purge()
            return self._new()
        free = self._free
        try:
            frame = free.popleft()
        except IndexError:  # every frame holds live results
            return self._new()
        pending = frame.pending
        if pending is not None and not launch.complete(pending):
            if self._made < self.spare:
                free.appendleft(frame)
                return self._new()
            self.held.open()
            launch.finish(self.queue, pending, self.spin)
        return idle(frame)

    def _untake(self, frame: Frame) -> None:
        """Give back a frame taken for a call that is not the common case (nothing of it
        was enqueued)."""
        frame.reset()
        if not self.fresh():
            self._free.appendleft(frame)

    def _new(self) -> Frame:
        with self._lock:
            self._made += 1
        return Frame(self.exe, self.layout, queue=self.queue)

    def _give(self, frame: Frame) -> None:
        """Take ``frame`` back once its results are gone (its commands may still be
        queued: the next :meth:`_take` of it waits for them)."""
        frame.pending = frame.last
        if frame.keep:  # borrowed arrays: kept until the commands ran, then unbound
            frame.pending_keep += frame.keep
            frame.reset()
        if not self.fresh():
            self._free.append(frame)
        else:
            self._retired.add(frame)
