"""The host plan: what runs on the host around the kernels of a lowered StableHLO function.

A :class:`Plan` names device buffers (flat, row-major, of one tensor-language scalar type),
the entry function's parameters and results (buffer ids), and an ordered list of steps:
kernel launches, copies, host-side control flow (``While``, ``If``, ``Case``) whose
predicates are read back from one-element buffers (a counted ``While`` reads its bounds
once instead), calls of the program's host callbacks (``Callback``: Python functions the
executable is given, such as jax's ``debug.print``), and ``Free`` steps that end buffer
lifetimes so the executor can reuse their memory.  The plan is plain frozen data; the
front end builds it and the back end (``backend_opencl.exec.executable``) executes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from math import prod
from typing import SupportsInt


@dataclass(frozen=True)
class Buffer:
    """A device buffer: ``dtype`` is a tensor-language scalar name, ``shape`` row-major.

    ``init`` holds the raw little-endian bytes of a constant's value (None otherwise).
    """

    id: int
    dtype: str
    shape: tuple[int, ...]
    init: bytes | None = field(default=None, repr=False)

    @property
    def size(self) -> int:
        """The number of elements."""
        return prod(self.shape)


@dataclass(frozen=True)
class Launch:
    """Run ``kernel`` on ``num_groups`` work-groups; ``args`` are buffer ids, in order."""

    kernel: str
    args: tuple[int, ...]
    num_groups: int


@dataclass(frozen=True)
class Copy:
    """Copy buffer ``src`` into buffer ``dst`` (same dtype and size)."""

    src: int
    dst: int


@dataclass(frozen=True)
class Bound:
    """An integer decided before a loop: ``value``, or the element of ``buffer`` when set
    (read once, before the loop's first iteration)."""

    value: int = 0
    buffer: int | None = None


@dataclass(frozen=True)
class TripCount:
    """A counted loop: its counter starts at ``start``, adds ``step`` per iteration (in
    ``bits``-bit arithmetic) and the loop goes on while ``counter <direction> limit``
    (``direction`` one of LT, LE, GT, GE, NE; ``signed`` the comparison's)."""

    start: Bound
    limit: Bound
    step: int
    direction: str
    bits: int
    signed: bool

    def known(self) -> int | None:
        """The number of iterations when both bounds are constants (and the counter does
        not wrap around), else None."""
        if self.start.buffer is not None or self.limit.buffer is not None:
            return None
        return self.count(self.start.value, self.limit.value)

    def count(self, start: int, limit: int) -> int | None:
        """The number of iterations, or None when the counter would wrap around (the
        loop then runs as a plain ``While``)."""
        lo, hi = (-(1 << self.bits - 1), (1 << self.bits - 1) - 1) if self.signed \
            else (0, (1 << self.bits) - 1)
        start, limit = self.wrap(start), self.wrap(limit)
        step, d = self.step, self.direction
        if d in ("GT", "GE"):  # count down: mirror into an upward loop
            start, limit, step, lo, hi, d = -start, -limit, -step, -hi, -lo, \
                {"GT": "LT", "GE": "LE"}[d]
        if d == "NE":
            if start == limit:
                return 0
            n, r = divmod(limit - start, step) if step else (-1, 1)
            return n if r == 0 and n > 0 else None
        if (start >= limit) if d == "LT" else (start > limit):
            return 0
        if step <= 0:
            return None
        n = -((start - limit) // step) if d == "LT" else (limit - start) // step + 1
        return n if lo <= start + n * step <= hi else None

    def wrap(self, x: int) -> int:
        """``x`` as a ``bits``-bit integer of the comparison's signedness."""
        x &= (1 << self.bits) - 1
        return x - (1 << self.bits) if self.signed and x >> (self.bits - 1) else x


@dataclass(frozen=True)
class While:
    """Run ``cond``; while the i1 buffer ``pred`` holds true, run ``body`` and ``cond``.

    With ``trips`` the number of iterations is decided before the loop: the executor runs
    ``body`` that many times without ``cond`` (or as above when the count is None).
    """

    cond: tuple[Step, ...]
    pred: int
    body: tuple[Step, ...]
    trips: TripCount | None = None


@dataclass(frozen=True)
class If:
    """Run ``then`` when the i1 buffer ``pred`` holds true, else ``otherwise``."""

    pred: int
    then: tuple[Step, ...]
    otherwise: tuple[Step, ...]


@dataclass(frozen=True)
class Case:
    """Run ``branches[index]`` (the last branch when the i32 ``index`` is out of range)."""

    index: int
    branches: tuple[tuple[Step, ...], ...]


@dataclass(frozen=True)
class HostValue:
    """A value a host callback takes or gives: the elements of buffer ``buffer`` (its
    shape) as numpy dtype ``dtype``, named as ``numpy.dtype`` reads it: the StableHLO
    element type, which the buffer may store in another type (a 4-bit integer in a byte)."""

    buffer: int
    dtype: str


@dataclass(frozen=True)
class Callback:
    """Call host function ``index`` (of the Python functions the executable is compiled
    with) once the commands before have run: ``args`` are read back and passed as numpy
    arrays, and the arrays it returns, one per result, are written into ``results`` before
    the commands after run.  A token operand or result is None: no data (passed as None,
    its returned entry ignored)."""

    index: int
    args: tuple[HostValue | None, ...]
    results: tuple[HostValue | None, ...]

    @property
    def buffers(self) -> set[int]:
        """The buffers the call reads and writes."""
        return {v.buffer for v in (*self.args, *self.results) if v is not None}


@dataclass(frozen=True)
class Free:
    """The buffers' lifetimes end here: their memory may be reused."""

    buffers: tuple[int, ...]


Step = Launch | Copy | While | If | Case | Callback | Free


@dataclass(frozen=True)
class Plan:
    """A lowered function: buffers, parameter and result buffer ids, and steps."""

    buffers: tuple[Buffer, ...]
    params: tuple[int, ...]
    results: tuple[int, ...]
    steps: tuple[Step, ...]

    def buffer(self, id: int) -> Buffer:
        """The buffer with id ``id``."""
        return self.buffers[id]


def step_buffers(step: Step) -> set[int]:
    """Every buffer a step (with its nested steps) reads or writes."""
    if isinstance(step, Launch):
        return set(step.args)
    if isinstance(step, Copy):
        return {step.src, step.dst}
    if isinstance(step, Free):
        return set()
    if isinstance(step, Callback):
        return step.buffers
    if isinstance(step, While):
        own = {step.pred}
        if step.trips is not None:
            own |= {b.buffer for b in (step.trips.start, step.trips.limit)
                    if b.buffer is not None}
    else:
        own = {decider(step)}
    for steps in nested(step):
        for s in steps:
            own |= step_buffers(s)
    return own


def launches(steps: tuple[Step, ...] | list[Step]) -> Iterator[Launch]:
    """Every launch of ``steps``, nested ones included."""
    for step in steps:
        if isinstance(step, Launch):
            yield step
        elif isinstance(step, While):
            yield from launches(step.cond)
            yield from launches(step.body)
        elif isinstance(step, If):
            yield from launches(step.then)
            yield from launches(step.otherwise)
        elif isinstance(step, Case):
            for branch in step.branches:
                yield from launches(branch)


def distinct_argument_kernels(plan: Plan, kernels: Iterable[str]) -> frozenset[str]:
    """The ``kernels`` whose buffer arguments never share memory that one of them writes
    (their pointers can be ``restrict``): those no launch of ``plan`` passes one buffer
    twice.  The plan's buffers are distinct memory while live: the caller's arrays back
    the parameters it only reads (one array perhaps several of them), and every plan
    runtime binds a parameter the plan writes to a copy of its own."""
    unsafe = {launch.kernel for launch in launches(plan.steps)
              if len(set(launch.args)) != len(launch.args)}
    return frozenset(kernels) - unsafe


def with_frees(steps: list[Step], keep: set[int]) -> list[Step]:
    """``steps`` with a ``Free`` after the last use of every buffer not in ``keep``."""
    last: dict[int, int] = {}
    for i, step in enumerate(steps):
        for b in step_buffers(step):
            last[b] = i
    ends: dict[int, list[int]] = {}
    for b, i in last.items():
        if b not in keep:
            ends.setdefault(i, []).append(b)
    out: list[Step] = []
    for i, step in enumerate(steps):
        out.append(step)
        if i in ends:
            out.append(Free(tuple(sorted(ends[i]))))
    return out


def renamed(steps: tuple[Step, ...] | list[Step], names: dict[int, int]) -> tuple[Step, ...]:
    """``steps`` (nested ones included) with every buffer id ``b`` in ``names`` replaced
    by ``names[b]``."""
    def b(bid: int) -> int:
        return names.get(bid, bid)

    def one(step: Step) -> Step:
        if isinstance(step, Launch):
            return replace(step, args=tuple(b(a) for a in step.args))
        if isinstance(step, Copy):
            return Copy(b(step.src), b(step.dst))
        if isinstance(step, Free):
            return Free(tuple(b(a) for a in step.buffers))
        if isinstance(step, Callback):
            return replace(step, args=tuple(_value(v, names) for v in step.args),
                           results=tuple(_value(v, names) for v in step.results))
        if isinstance(step, If):
            return If(b(step.pred), renamed(step.then, names), renamed(step.otherwise, names))
        if isinstance(step, Case):
            return Case(b(step.index), tuple(renamed(br, names) for br in step.branches))
        trips = step.trips
        if trips is not None:
            trips = replace(trips, start=_bound(trips.start, names),
                            limit=_bound(trips.limit, names))
        return While(renamed(step.cond, names), b(step.pred), renamed(step.body, names), trips)

    return tuple(one(s) for s in steps)


def _bound(bound: Bound, names: dict[int, int]) -> Bound:
    return bound if bound.buffer is None else Bound(bound.value,
                                                    names.get(bound.buffer, bound.buffer))


def _value(value: HostValue | None, names: dict[int, int]) -> HostValue | None:
    return value if value is None else replace(value, buffer=names.get(value.buffer,
                                                                       value.buffer))


def kernels_renamed(steps: tuple[Step, ...] | list[Step],
                    names: dict[str, str]) -> tuple[Step, ...]:
    """``steps`` (nested ones included) with every launch of a kernel named in ``names``
    launching ``names[kernel]`` instead (kernels merged as equal, frontend/lower/core/dedup)."""
    def one(step: Step) -> Step:
        if isinstance(step, Launch):
            return replace(step, kernel=names.get(step.kernel, step.kernel))
        return with_nested(step, lambda inner: kernels_renamed(inner, names))

    return tuple(one(s) for s in steps) if names else tuple(steps)


def nested(step: Step) -> tuple[tuple[Step, ...], ...]:
    """The sequences of steps nested in ``step``, in program order: a ``While``'s
    condition and body, an ``If``'s branches, a ``Case``'s; none for other steps."""
    if isinstance(step, While):
        return (step.cond, step.body)
    if isinstance(step, If):
        return (step.then, step.otherwise)
    if isinstance(step, Case):
        return step.branches
    return ()


def decider(step: If | Case) -> int:
    """The buffer whose one element decides a branch: an ``If``'s predicate, a
    ``Case``'s index."""
    return step.pred if isinstance(step, If) else step.index


def taken(step: If | Case, value: SupportsInt) -> int:
    """The branch (its place in :func:`nested`) that ``value``, the element of
    :func:`decider`, takes: an ``If``'s ``then`` (0) when non-zero, else ``otherwise``
    (1); a ``Case``'s branch ``value``, the last one when out of range (as StableHLO's
    ``case`` says)."""
    i = int(value)
    if isinstance(step, If):
        return 0 if i else 1
    return i if 0 <= i < len(step.branches) else len(step.branches) - 1


def with_nested(step: Step, rewrite: Callable[[tuple[Step, ...]], tuple[Step, ...]]) -> Step:
    """``step`` with ``rewrite`` applied to each sequence of steps nested in it (a
    ``While``'s condition and body, an ``If``'s branches, a ``Case``'s); other steps as
    they are."""
    if isinstance(step, While):
        return replace(step, cond=rewrite(step.cond), body=rewrite(step.body))
    if isinstance(step, If):
        return replace(step, then=rewrite(step.then), otherwise=rewrite(step.otherwise))
    if isinstance(step, Case):
        return replace(step, branches=tuple(rewrite(b) for b in step.branches))
    return step
