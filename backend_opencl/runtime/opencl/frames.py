"""Prepared calls of a plan: buffers assigned once, kernel arguments set once.

A plan whose launches are all of flat-buffer kernels (every program whose kernels have
no bounds guards) is resolved once into a :class:`Layout`: each buffer gets a *slot* of
bytes (buffers whose lifetimes do not overlap share one, whatever their dtypes and
sizes: a slot is as large as its largest buffer, and each buffer is the start of it),
and each step becomes an enqueue whose kernel arguments are known. A :class:`Frame` is
one set of slot arrays with kernel objects of its own whose arguments were set when the
frame was made: a warm call takes a frame, binds its parameters, enqueues the prepared
launches (``clEnqueueNDRangeKernel`` with prebuilt tuples, nothing allocated per launch)
and gives the frame back after one wait. A branch reads its predicate back when the
queue reaches it (waiting as :class:`launch.Spin` does) and enqueues the prepared steps
of the branch taken; a host loop (``While``) does the same with its condition's flag,
and a host callback (``Callback``) reads its arguments once the commands before it have
run and writes its results before the commands after it
(:mod:`backend_opencl.exec.steps` says how both run; a frame is the run they are given).
Buffers used inside a loop, like those of branches, keep their slots until the plan
frees them after it.

A call bets on the decisions :mod:`backend_opencl.exec.speculation` names (error checks
passing, loop kernels done in one launch): it enqueues the branch bet on without reading
the predicate, whose buffer keeps its slot to the end of the call, and
:meth:`Frame.settled` checks the predicates after the call's wait; the executor runs a
call whose bet lost again without bets, and the frames no longer bet on that decision
(``TLC_SPECULATE=0``: no bets).

On CPU devices a call's enqueues are held behind a gate (a marker waiting for a user
event) that opens once they are all queued, or before a predicate is read: otherwise
PoCL's workers start on the first kernel while the caller is still enqueueing the rest,
three threads share the two cores of the test VM and the caller waits for a core between
enqueues (under load, medians of the ``ex_*`` programs 46-125 us ungated against 38-61
gated, and means 2-4 times lower; on a quiet machine the gate costs 1-3 us).

Only parameters and results bound in place (:mod:`backend_opencl.exec.executable`: the caller's
memory, or a fresh result array) change between calls: the arguments of the kernels
that take them are set again on each call.  Concurrent calls take different frames (a
new one is made when all are in use), so a frame's kernel arguments are never shared
between threads.
"""

from __future__ import annotations

import bisect
import collections
import functools
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, SupportsInt

import numpy as np
import pyopencl as cl

from backend_opencl.exec import speculation
from backend_opencl.exec import steps as plan_steps
from backend_opencl.exec.arguments import NUMPY_DTYPES
from backend_opencl.exec.runtime import InFlight
from backend_opencl.runtime import profile
from backend_opencl.runtime.opencl import buffers, launch
from backend_opencl.runtime.opencl.device_array import FrameLease
from tensorlang.plan import (
    Callback,
    Case,
    Copy,
    Free,
    If,
    Launch,
    Plan,
    Step,
    While,
    decider,
    nested,
    taken,
)

if TYPE_CHECKING:
    from backend_opencl.exec.module import Kernel
    from backend_opencl.runtime.opencl.devices import Device

Op = Callable[[], cl.Event | None]

GATE_ENV = "TLC_GATE"
"""Set to 0 to enqueue a call's commands without holding them behind a gate."""


class _Built(Protocol):
    @property
    def program(self) -> cl.Program:
        """The built program (an :class:`~backend_opencl.runtime.opencl.kernels.OpenCLBuilt`)."""


class _Module(Protocol):
    @property
    def kernels(self) -> Mapping[str, Kernel]:
        """The module's kernels by name."""

    @property
    def built(self) -> _Built:
        """Its program built by the OpenCL kernel runtime."""


class _Runtime(Protocol):
    @property
    def pred_spin(self) -> launch.Spin:
        """How a read of a branch's predicate waits."""

    def new_memory(self, exe: FramedExecutable, nbytes: int) -> buffers.PlanMemory:
        """New memory of ``nbytes`` bytes for a slot."""


class FramedExecutable(Protocol):
    """What frames use of an executable on OpenCL: an
    :class:`~backend_opencl.exec.executable.Executable` whose plan runtime is
    :class:`~backend_opencl.runtime.opencl.plans.OpenCLPlans` and whose module (read only
    when the plan launches kernels) was built by the OpenCL kernel runtime."""

    @property
    def plan(self) -> Plan:
        """The plan."""

    @property
    def device(self) -> Device:
        """The OpenCL device."""

    @property
    def runtime(self) -> _Runtime:
        """The plan runtime."""

    @property
    def module(self) -> _Module:
        """The plan's kernels."""

    def constant(self, bid: int) -> buffers.PlanMemory:
        """The memory of constant buffer ``bid``."""

    @property
    def name(self) -> str:
        """The executable's function name (for messages)."""

    @property
    def storage(self) -> list[np.dtype]:
        """Each buffer's numpy dtype."""

    @property
    def poison(self) -> bool:
        """Whether new memory is filled with 0xFF bytes (tests)."""

    @property
    def host_callbacks(self) -> tuple[Callable[..., object], ...]:
        """The functions the plan's ``Callback`` steps call, by index."""


class Layout:
    """The slots of a framed plan's buffers (see :func:`framed`)."""

    def __init__(self, plan: Plan, dynamic: frozenset[int], constants: frozenset[int],
                 bets: Mapping[Step, speculation.Bet] | None = None) -> None:
        """``dynamic``: buffers bound per call (parameters, results bound in place);
        ``constants``: buffers holding a constant (shared by all frames, never a slot);
        ``bets``: the decisions a call bets on (:func:`speculation.bets`), whose
        predicates keep their slots to the end of the call."""
        self.plan = plan
        self.dynamic = dynamic
        self.constants = constants
        self.bets: Mapping[Step, speculation.Bet] = bets or {}
        """The decisions a call bets on, by step."""
        self._kept = {bet.pred for bet in self.bets.values()}
        self.slot_of: dict[int, int] = {}
        self.slot_bytes: list[int] = []
        """Each slot's size in bytes: that of the largest buffer it holds."""
        self.ok = True
        """False when the plan uses a buffer after freeing it (then no frames)."""
        self._assign(set(plan.params), plan.steps, plan.results)
        self.eager = tuple(sorted({s for b, s in self.slot_of.items() if b not in dynamic}))
        """Slots some non-parameter buffer uses: allocated when a frame is made."""

    def _assign(self, params: set[int], steps: tuple[Step, ...], results: tuple[int, ...]
                ) -> None:
        """Give every buffer a slot, replaying the plan's lifetimes (``Free`` returns a
        slot for reuse by a later buffer of any dtype and size: the smallest free slot
        that holds it, else the largest, grown).  The branches of a step are replayed one
        after the other (their buffers never share a slot), and a ``Free`` inside a
        branch frees nothing (the branch may not run), nor does one in a loop (the next
        iteration may use the buffer again)."""
        live: set[int] = set()
        free: list[tuple[int, int]] = []  # (bytes, slot), sorted

        def take(bid: int) -> None:
            if bid in live or bid in self.constants:
                return
            if bid in self.dynamic and bid not in params:  # a result bound in place
                return
            if bid in self.slot_of:  # used after its Free
                self.ok = False
                return
            size = self.nbytes(bid)
            if free:
                _, slot = free.pop(min(bisect.bisect_left(free, (size, -1)), len(free) - 1))
                self.slot_bytes[slot] = max(self.slot_bytes[slot], size)
            else:
                slot = len(self.slot_bytes)
                self.slot_bytes.append(size)
            self.slot_of[bid] = slot
            live.add(bid)

        def replay(steps: tuple[Step, ...], inside: bool) -> None:
            for step in steps:
                if isinstance(step, Launch):
                    for bid in step.args:
                        take(bid)
                elif isinstance(step, Copy):
                    take(step.src)
                    take(step.dst)
                elif isinstance(step, (If, Case)):
                    take(decider(step))
                    for branch in nested(step):
                        replay(branch, True)
                elif isinstance(step, While):
                    trips = step.trips
                    for bound in (trips.start, trips.limit) if trips else ():
                        if bound.buffer is not None:
                            take(bound.buffer)
                    replay(step.cond, True)
                    take(step.pred)
                    replay(step.body, True)
                elif isinstance(step, Callback):
                    for value in (*step.args, *step.results):
                        if value is not None:
                            take(value.buffer)
                elif not inside:
                    assert isinstance(step, Free), step
                    for bid in step.buffers:
                        if bid in live and bid not in self._kept:
                            live.discard(bid)
                            slot = self.slot_of[bid]
                            bisect.insort(free, (self.slot_bytes[slot], slot))

        for bid in self.plan.params:
            take(bid)
        replay(steps, False)
        for bid in results:
            take(bid)

    def nbytes(self, bid: int) -> int:
        """The bytes of buffer ``bid`` in a slot (an empty buffer takes one element)."""
        b = self.plan.buffers[bid]
        return max(b.size, 1) * np.dtype(NUMPY_DTYPES[b.dtype]).itemsize


def framed(steps: tuple[Step, ...], direct: Callable[[Launch], bool]) -> bool:
    """True when ``steps`` run as prepared frames: launches (each ``direct``: flat buffer
    arguments only), copies, frees, host callbacks, and branches and loops of such
    steps."""
    return all(isinstance(s, (Copy, Free, Callback)) or isinstance(s, Launch) and direct(s)
               or isinstance(s, (If, Case, While))
               and all(framed(inner, direct) for inner in nested(s))
               for s in steps)


class Frame(InFlight[cl.Event]):
    """One call's buffers and prepared enqueues (see the module docstring); it stands
    where the executor's per-call state does (``get``, ``borrow``, ``transfer``)."""

    def __init__(self, exe: FramedExecutable, layout: Layout,
                 lost: set[int] | None = None, queue: cl.CommandQueue | None = None) -> None:
        """``lost``: the bets (their numbers) no longer placed (shared by an
        executable's frames); ``queue``: the in-order queue its commands go to (default:
        the device's)."""
        super().__init__()
        self.exe = exe
        self.layout = layout
        self.lost = set() if lost is None else lost
        self.betting = False
        """Whether this call bets."""
        self.placed: list[speculation.Bet] = []
        """This call's bets."""
        self.queue = exe.device.queue if queue is None else queue
        self.slots: list[buffers.PlanMemory | None] = [None] * len(layout.slot_bytes)
        """Each slot's memory (bytes)."""
        for slot in layout.eager:
            self.slots[slot] = exe.runtime.new_memory(exe, layout.slot_bytes[slot])
        self.cur: list[buffers.PlanMemory | None] = [None] * len(exe.plan.buffers)
        for bid in layout.constants:
            self.cur[bid] = exe.constant(bid)
        self.own: list[buffers.PlanMemory | None] = [None] * len(exe.plan.buffers)
        """Each buffer's part of its slot, of its dtype and size (a parameter's is made
        on first need: a parameter bound in place never needs it)."""
        for bid, slot in layout.slot_of.items():
            memory = self.slots[slot]
            if memory is not None:
                self.own[bid] = self.cur[bid] = self._part(bid, memory)
        self.profiling = False
        self.gated = bool(exe.runtime.pred_spin.enabled) and os.environ.get(GATE_ENV) != "0"
        """Whether enqueues wait behind a gate (CPU devices; see the module docstring)."""
        self.gate: cl.UserEvent | None = None
        self.gating = self.gated
        """Whether this call's enqueues wait behind the gate."""
        self.uses: dict[int, list[tuple[cl.Kernel, int]]] = {b: [] for b in layout.dynamic}
        self.bound: dict[int, cl.Buffer | None] = dict.fromkeys(layout.dynamic)
        """The buffer each dynamic buffer's kernel arguments were last set to (a slot's;
        None after a borrowed one)."""
        self.ops, self.labels = self._prepare(exe.plan.steps)
        self.pending: cl.Event | None = None
        """The event of the last command of a call that returned without waiting (an
        asynchronous one, :meth:`Frames.release`): the next call waits for it first."""
        self.pending_keep: list[object] = []
        """What that call's commands use (events, borrowed arrays), kept until then."""

    def _prepare(self, steps: tuple[Step, ...]) -> tuple[list[Op], list[str]]:
        """The enqueues of ``steps`` and their profile labels ("": not a launch)."""
        ops: list[Op] = []
        labels: list[str] = []
        for step in steps:
            if isinstance(step, Launch):
                ops.append(self._launch(step))
                labels.append(step.kernel)
            elif isinstance(step, Copy):
                ops.append(functools.partial(self._copy, step.dst, step.src))
                labels.append("")
            elif isinstance(step, (If, Case)):
                ops.append(self._branch(step))
                labels.append("")
            elif isinstance(step, While):
                ops.append(self._loop(step))
                labels.append("")
            elif isinstance(step, Callback):
                exe = self.exe
                call = plan_steps.callback(step, exe.plan, exe.storage, exe.host_callbacks,
                                           exe.name)
                ops.append(functools.partial(call, self))
                labels.append("")
        return ops, labels

    def _loop(self, step: While) -> Op:
        """The op of a host loop (run as :mod:`backend_opencl.exec.steps` runs one, on
        this frame): its condition's and body's prepared steps."""
        cond, body = self._prepare(step.cond), self._prepare(step.body)

        def run_cond(frame: Frame) -> None:
            frame._steps(*cond)

        def run_body(frame: Frame) -> None:
            frame._steps(*body)

        loop = plan_steps.while_loop((run_cond,), step.pred, (run_body,))
        if step.trips is not None:
            loop = plan_steps.counted(step.trips, (run_body,), loop)
        bet = self.layout.bets.get(step)
        if bet is None:
            return functools.partial(loop, self)

        def run_bet() -> None:
            if self._bets(bet):
                run_cond(self)  # once: the bet is that the loop is done
            else:
                loop(self)
        return run_bet

    def _branch(self, step: If | Case) -> Op:
        """The op of a branch: read the predicate, enqueue the steps of the branch taken
        (or, betting, those of the branch bet on)."""
        branches = [self._prepare(b) for b in nested(step)]
        pred = decider(step)

        def decide() -> None:
            self._steps(*branches[taken(step, self.scalar(pred))])
        bet = self.layout.bets.get(step)
        if bet is None:
            return decide
        expected = branches[bet.expected]

        def run_bet() -> None:
            if self._bets(bet):
                self._steps(*expected)
            else:
                decide()
        return run_bet

    def _bets(self, bet: speculation.Bet) -> bool:
        """Whether this call bets on ``bet`` (noted if so)."""
        if not self.betting or bet.number in self.lost:
            return False
        self.placed.append(bet)
        return True

    def settled(self) -> bool:
        """After the call's wait: whether every bet it placed won (a lost one is not
        placed again)."""
        placed, self.placed = self.placed, []
        won = True
        for bet in placed:
            value = launch.read_back(self.queue, self.get(bet.pred), 1, self.last,
                                     self.exe.runtime.pred_spin)[0]
            if not bet.won(value):
                self.lost.add(bet.number)
                won = False
        return won

    def _launch(self, step: Launch) -> Op:
        """A kernel object of this frame for ``step``, its static arguments set."""
        info = self.exe.module.kernels[step.kernel].info
        kernel = cl.Kernel(self.exe.module.built.program, info.c_name)
        for index, bid in enumerate(step.args):
            if bid in self.layout.dynamic:
                self.uses[bid].append((kernel, index))
            else:
                kernel.set_arg(index, buffers.memory_of(self.get(bid)))
        wgx, wgy = info.plan.work_group_size
        return functools.partial(cl.enqueue_nd_range_kernel, self.queue, kernel,
                                 (step.num_groups * wgx, wgy), (wgx, wgy))

    def _copy(self, dst: int, src: int) -> cl.Event | None:
        return buffers.copy_on(self.queue, self.get(dst), self.get(src))

    def get(self, bid: int) -> buffers.PlanMemory:
        """The array of buffer ``bid`` in this call (a parameter's slot is made on first
        need: a parameter bound in place never needs it)."""
        arr = self.cur[bid]
        if arr is None:
            slot = self.layout.slot_of[bid]
            memory = self.slots[slot]
            if memory is None:
                memory = self.slots[slot] = self.exe.runtime.new_memory(
                    self.exe, self.layout.slot_bytes[slot])
            arr = self.own[bid] = self.cur[bid] = self._part(bid, memory)
        return arr

    def _part(self, bid: int, memory: buffers.PlanMemory) -> buffers.PlanMemory:
        """Buffer ``bid``'s array at the start of slot ``memory``."""
        return buffers.part(memory, self.exe.storage[bid], self.layout.nbytes(bid))

    def scalar(self, bid: int) -> SupportsInt:
        """The element of one-element buffer ``bid`` once the commands before are done."""
        return self.read(bid, 1)[0]

    def read(self, bid: int, n: int | None = None) -> np.ndarray:
        """A copy of buffer ``bid``'s first ``n`` elements (default: all), flat, once the
        commands before are done."""
        self._open()
        size = self.exe.plan.buffers[bid].size if n is None else n
        return launch.read_back(self.queue, self.get(bid), size, self.last,
                                self.exe.runtime.pred_spin)

    def write(self, bid: int, flat: np.ndarray) -> None:
        """Make buffer ``bid`` hold ``flat`` for the commands enqueued after."""
        self._open()
        self.transfer(launch.write_back(self.queue, self.get(bid), flat, self.last,
                                        self.exe.runtime.pred_spin))

    def steps(self, fns: tuple[Callable[[Frame], None], ...]) -> None:
        """Run step functions on this frame in order (:mod:`backend_opencl.exec.steps`)."""
        for fn in fns:
            fn(self)

    def free(self, bids: tuple[int, ...]) -> None:
        """Nothing: a frame's buffers keep their slots (:class:`Layout`)."""

    def borrow(self, bid: int, arr: buffers.PlanMemory) -> None:
        """Make ``arr`` (the caller's memory or a fresh result array) buffer ``bid``."""
        self.cur[bid] = arr


    def run(self, profiling: bool, gated: bool = True, bets: bool = True) -> None:
        """Set the per-call kernel arguments (those that changed) and enqueue every step
        (no waiting); ``gated``: behind the gate when the device wants one (a call that
        waits; one that does not lets the device start at once); ``bets``: bet on the
        layout's decisions (a call that waits and checks them, :meth:`settled`)."""
        for bid, uses in self.uses.items():
            if uses:
                self.point(bid, buffers.memory_of(self.get(bid)))
        self.enqueue(profiling, gated and self.gated, bets and bool(self.layout.bets))

    def point(self, bid: int, memory: cl.Buffer) -> None:
        """Make the kernel arguments that take dynamic buffer ``bid`` ``memory``."""
        if memory is not self.bound[bid]:
            for kernel, index in self.uses[bid]:
                kernel.set_arg(index, memory)
            self.bound[bid] = memory

    def enqueue_plain(self) -> None:
        """:meth:`enqueue` with nothing profiled, gated or bet (the quick way of a call
        that does not wait, :mod:`.quick`: no gate to open, no bets to forget)."""
        self.profiling = self.gating = self.betting = False
        self._steps(self.ops, self.labels)

    def enqueue(self, profiling: bool = False, gating: bool = False, betting: bool = False
                ) -> None:
        """Enqueue every step, the kernel arguments as they are set (``gating``: behind
        the gate; ``betting``: placing the layout's bets)."""
        self.profiling, self.gating, self.betting = profiling, gating, betting
        self.placed.clear()
        try:
            self._steps(self.ops, self.labels)
        finally:
            self._open()

    def _close(self) -> None:
        """Hold the queue (a marker waiting for a user event) until :meth:`_open`."""
        if self.gating and self.gate is None:
            self.gate = cl.UserEvent(self.queue.context)
            cl.enqueue_marker(self.queue, wait_for=[self.gate])

    def _open(self) -> None:
        """Let the commands held by :meth:`_close` run."""
        gate = self.gate
        if gate is not None:
            self.gate = None
            gate.set_status(cl.command_execution_status.COMPLETE)

    def _steps(self, ops: list[Op], labels: list[str]) -> None:
        """Enqueue prepared ops behind a closed gate, noting the last command's event."""
        if ops:
            self._close()
        if self.profiling:
            for op, label in zip(ops, labels, strict=True):
                event = op()
                if event is not None:
                    self.last = event
                    if label:
                        profile.PROFILE.launch(label, event)
            return
        for op in ops:
            event = op()
            if event is not None:
                self.last = event

    def reset(self) -> None:
        """Forget this call's borrowed arrays (nothing of the caller's stays alive)."""
        own, cur, bound = self.own, self.cur, self.bound
        for bid in self.layout.dynamic:
            arr = own[bid]
            if cur[bid] is not arr:  # borrowed: its buffer is not kept
                bound[bid] = None
            cur[bid] = arr
        self.keep.clear()
        self.placed.clear()
        self.last = None


class Retired:
    """Frames no call takes again (under ``POISON`` each call gets a fresh one) whose
    commands may still be queued, kept until those are done: dropping such a frame would
    free host memory its kernels still write (pyopencl holds a ``USE_HOST_PTR`` buffer's
    numpy array only while the buffer object lives).  :meth:`add` is safe from
    finalisers (no lock); :meth:`purge` drops the frames whose commands are done."""

    def __init__(self) -> None:
        self._frames: collections.deque[Frame] = collections.deque()
        self._lock = threading.Lock()

    def add(self, frame: Frame) -> None:
        """Keep ``frame`` while its pending commands run (nothing when none are)."""
        if frame.pending is not None and not launch.complete(frame.pending):
            self._frames.append(frame)

    def purge(self) -> None:
        """Drop the frames whose commands are done, oldest first (the queue is in order)."""
        frames = self._frames
        if frames:
            with self._lock:  # one purger: the frame it checks is the one it drops
                while frames and (frames[0].pending is None
                                  or launch.complete(frames[0].pending)):
                    frames.popleft()


def idle(frame: Frame) -> Frame:
    """``frame`` once its pending commands are done: their keepsakes dropped."""
    frame.pending = None
    frame.pending_keep.clear()
    return frame


class Frames:
    """The frames of one executable, handed to one call at a time.

    A frame given back by a call that waited is idle; one released by a call that did
    not (:meth:`release`) may still have commands queued, and :meth:`take` prefers an
    idle frame, makes a new one while fewer than ``MAX_PENDING`` are pending (so calls
    in a row do not wait for each other), and else waits for the oldest."""

    MAX_PENDING = 4

    def __init__(self, exe: FramedExecutable, layout: Layout,
                 fresh: Callable[[], bool] = lambda: False) -> None:
        """``fresh()``: whether each call gets a new frame (poisoned buffers, see
        ``Executable.poison``)."""
        self.exe = exe
        self.layout = layout
        self.fresh = fresh
        self._returned: collections.deque[Frame] = collections.deque()
        """Frames given back: appended without a lock (also from finalisers)."""
        self._free: list[Frame] = []  # oldest first; only under _lock
        self._lock = threading.Lock()
        self._retired = Retired()
        self.lost: set[int] = set()
        """The bets (their numbers) that lost once: no frame places them again."""

    def take(self) -> Frame:
        """A frame no other call is using, its earlier commands done."""
        if self.fresh():
            self._retired.purge()
            return Frame(self.exe, self.layout, self.lost)
        with self._lock:
            free, returned = self._free, self._returned
            while returned:
                free.append(returned.popleft())
            for i, frame in enumerate(free):
                if frame.pending is None or launch.complete(frame.pending):
                    del free[i]
                    return idle(frame)
            if len(free) < self.MAX_PENDING:
                return Frame(self.exe, self.layout, self.lost)
            frame = free.pop(0)
        launch.finish(frame.queue, frame.pending, frame.exe.runtime.pred_spin)
        return idle(frame)

    def unused(self) -> int:
        """How many frames no call is using now."""
        return len(self._free) + len(self._returned)

    def give(self, frame: Frame) -> None:
        """Return a frame after its call has waited for its commands (or released it)."""
        frame.reset()
        if not self.fresh():
            self._returned.append(frame)
        else:
            self._retired.add(frame)

    def release(self, frame: Frame) -> None:
        """Return a frame whose call did not wait: its commands may still run, so the
        frame keeps their last event and everything they use (the arrays bound to it,
        the events of its host transfers) for :meth:`take` to wait for.  Safe from any
        thread and from a finaliser (no lock)."""
        frame.pending = frame.last
        frame.pending_keep = [*frame.keep, *(frame.cur[bid] for bid in frame.layout.dynamic)]
        self.give(frame)

    def lease(self, frame: Frame) -> FrameLease:
        """A lease that releases ``frame`` (:meth:`release`) when its last holder drops
        it: the results of an asynchronous call over the frame's memory hold it."""
        return FrameLease(self.release, frame)
