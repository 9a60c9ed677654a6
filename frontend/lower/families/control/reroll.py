"""Rolling an unrolled recurrence back into a ``while``, before lowering.

A recurrent cell unrolled in Python (flax's ``nn.GRUCell`` in a ``for`` loop, haiku's
``static_unroll``, equinox's cells in a loop) reaches tlc as one straight block repeating
the cell's ops once per time step: ``h_t = cell(h_{t-1}, x_t)``.  Each step's products
depend on the one before, so the block is a chain of small kernels, two to four launches
a step (a 32-step GRU: ~130 launches a call, each ~35 us of PoCL's time).  jax's own
``lax.scan`` of the same cell is one ``while`` that
:mod:`frontend.lower.families.control.device_loop` runs as one kernel.
:func:`reroll_recurrences` gives the unrolled form the same loop:

1. **Find the repetition**: the ops of the block are compared by a signature (name,
   types, attributes; a ``slice``'s bounds left out), and a window of ``T >= MIN_STEPS``
   copies of a period of ``P`` ops is looked for, ``P`` a distance between two matrix
   products (:func:`_windows`).
2. **Check the dataflow** (:func:`_classify`): every operand of the ``i``-th op of step
   ``t`` must be, for every ``t``, the same: a result of an earlier op of the same step, a
   result of an op of the step before (a carried value; in step 0 its initial value from
   before the window), or a value from before the window -- the same one every step (an
   invariant) or a value made per step by a ``slice`` at bounds affine in ``t`` (and ops
   of one kind over such values: a *stream*, :class:`_Body.stream`).  A ``slice`` in the
   window may have bounds affine in ``t`` too.  At least one product must depend on a
   carried value: the window is a recurrence, not independent work a loop would
   serialize.
3. **Roll** (:func:`_roll`): one ``while`` of ``T`` trips counting ``t`` as jax's
   ``fori_loop`` does, whose body is one step, slices at ``t``-dependent bounds becoming
   ``dynamic_slice``.  A value of step ``t`` read after the window becomes a slice of a
   stack updated in the loop (``dynamic_update_slice``), or, when it is a carried value
   read only at the last step, the loop's result.

The rewrite is an identity: the body is one step's ops, run on the same values in the
same order.  Values of a step larger than the device loop admits (:data:`MAX_ELEMENTS`)
leave the window unrolled.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from itertools import count
from weakref import WeakKeyDictionary

import numpy as np

from frontend.ir.attrs import Attr, DenseArrayAttr, DenseElementsAttr, EnumAttr
from frontend.ir.core import Block, Op, Region, Value, walk_ops
from frontend.ir.types import IntegerType, TensorType, Type
from frontend.lower.core import types
from frontend.lower.core.loop_invariants import IMPURE, hoist_loop_invariants
from frontend.lower.core.registry import rewrite
from frontend.lower.families.control.device_loop import MAX_ELEMENTS
from tensorlang.diagnostics import Loc

MIN_STEPS = 3
"""The fewest repetitions worth a loop."""
PRODUCTS = frozenset({"stablehlo.dot_general", "stablehlo.convolution"})
"""Ops whose dependence on a carried value makes a window a recurrence; the periods
tried are distances between them."""
MAX_PERIODS = 32
"""The most period lengths tried per block (the shortest distances first)."""
SLICE = "stablehlo.slice"
I32 = TensorType((), IntegerType(32))


@rewrite(order=4)  # after batch_dots: the steps' input products are slices of one
def reroll_recurrences(region: Region) -> Region:
    """Roll the unrolled recurrences of ``region``'s top-level block into ``while`` loops
    (changed in place), their invariants hoisted; return ``region``."""
    block = region.block
    rolled = False
    while _roll_first(block):
        rolled = True
    return hoist_loop_invariants(region) if rolled else region


def _roll_first(block: Block) -> bool:
    """Roll the best candidate window of ``block`` that qualifies; whether one did."""
    for candidates in _windows(block):
        found = [r for w in candidates if (r := _classify(block, w)) is not None]
        for rolled in sorted(found, key=_cost):
            try:
                _roll(block, rolled)
            except _NotRolled:
                continue
            return True
    return False


def _cost(rolled: Rolled) -> tuple[int, int]:
    """Of the alignments of one repetition, the one carrying fewest values is best (a
    step begun mid-period carries what the period's first part computes for its second),
    then the one of most steps."""
    return len(_carries(rolled)), -rolled.window.steps


# -- finding the repetition -------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    """``steps`` copies of ``period`` ops of a block from op ``start`` on."""

    start: int
    period: int
    steps: int

    def op(self, block: Block, t: int, i: int) -> Op:
        """Op ``i`` of step ``t``."""
        return block.ops[self.start + t * self.period + i]

    @property
    def stop(self) -> int:
        """The index of the first op after the window."""
        return self.start + self.period * self.steps


def _windows(block: Block) -> Iterator[list[Window]]:
    """Candidate windows of ``block``: per run of repeating signatures (the runs covering
    most ops first), every alignment of the period in it (a block's steps may begin
    anywhere in the period)."""
    ops = block.ops[:-1]
    ids: dict[Hashable, int] = {}
    sig = [ids.setdefault(_signature(op, n), len(ids)) for n, op in enumerate(ops)]
    runs = []
    for period in _periods(ops):
        a = 0
        while a + period < len(sig):
            if sig[a] != sig[a + period]:
                a += 1
                continue
            b = a
            while b + period < len(sig) and sig[b] == sig[b + period]:
                b += 1
            if (b - a + period) // period >= MIN_STEPS:
                runs.append((a, b + period, period))
            a = b
    runs.sort(key=lambda r: r[0] - r[1])
    for lo, hi, period in runs:
        yield [Window(start, period, (hi - start) // period)
               for start in range(lo, min(lo + period, hi))
               if (hi - start) // period >= MIN_STEPS]


def _periods(ops: list[Op]) -> list[int]:
    """Period lengths to try: distances between products, shortest first."""
    at = [n for n, op in enumerate(ops) if op.name in PRODUCTS]
    gaps = {at[j + k] - at[j] for j in range(len(at)) for k in range(1, 5)
            if j + k < len(at)}
    return sorted(gaps)[:MAX_PERIODS]


def _signature(op: Op, n: int) -> Hashable:
    """What two copies of one op of a step have in common: name, types and attributes
    (a ``slice``'s bounds aside); an op a window cannot hold is unlike any other."""
    if op.regions or op.name in IMPURE or not op.results:
        return ("unique", n)
    attrs = tuple(sorted((k, _attr_key(a)) for k, a in op.attrs.items()
                         if not (op.name == SLICE and k in ("start_indices",
                                                             "limit_indices"))))
    return (op.name, tuple(str(t) for t in op.result_types),
            tuple(str(v.type) for v in op.operands), attrs)


def _attr_key(a: Attr) -> Hashable:
    try:
        hash(a)
    except TypeError:
        return str(a)
    return a


# -- the dataflow of one step -----------------------------------------------------------

@dataclass(frozen=True)
class Inner:
    """Result ``result`` of op ``op`` of the same step."""

    op: int
    result: int


@dataclass(frozen=True)
class Carried:
    """Result ``result`` of op ``op`` of the step before; ``init`` in step 0."""

    op: int
    result: int
    init: Value


@dataclass(frozen=True)
class Outside:
    """A value from before the window, ``values[t]`` in step ``t``."""

    values: tuple[Value, ...]


Ref = Inner | Carried | Outside


@dataclass
class Rolled:
    """A window whose steps agree: each operand of each op of a step as a :class:`Ref`,
    and the values of each step read after the window."""

    window: Window
    refs: list[list[Ref]]
    read_after: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    """(op, result) of a step: the steps whose value of it is read after the window."""


def _classify(block: Block, w: Window) -> Rolled | None:
    """The window's dataflow when every step has the same (:mod:`reroll` docstring, 2.),
    else None."""
    where: dict[Value, tuple[int, int]] = {}
    for t in range(w.steps):
        for i in range(w.period):
            for r in w.op(block, t, i).results:
                where[r] = (t, i)
    refs = []
    for i in range(w.period):
        op = w.op(block, 0, i)
        row = []
        for k in range(len(op.operands)):
            ref = _operand(block, w, where, i, k)
            if ref is None:
                return None
            row.append(ref)
        refs.append(row)
    _invariant_carries(block, w, refs)
    rolled = Rolled(w, refs)
    if not (_recurrent(block, rolled) and _small(block, rolled) and _slices_affine(block, w)):
        return None
    rolled.read_after = _read_after(block, w, where)  # last: a scan of the rest of the block
    return rolled


def _operand(block: Block, w: Window, where: dict[Value, tuple[int, int]],
             i: int, k: int) -> Ref | None:
    """Operand ``k`` of op ``i`` as one :class:`Ref` for every step, or None."""
    seen: list[Ref | None] = []
    for t in range(w.steps):
        v = w.op(block, t, i).operands[k]
        at = where.get(v)
        if at is None:
            seen.append(Outside((v,)))
        elif at[0] == t:
            seen.append(Inner(at[1], v.index))
        elif at[0] == t - 1:
            seen.append(Carried(at[1], v.index, v))
        else:
            return None
    first, later = seen[0], seen[1:]
    if isinstance(first, Inner):
        return first if all(r == first for r in later) else None
    assert isinstance(first, Outside)
    outside = [r.values[0] for r in seen if isinstance(r, Outside)]
    if len(outside) == len(seen):
        return Outside(tuple(outside))
    head = later[0]
    if isinstance(head, Carried) and all(isinstance(r, Carried) and (r.op, r.result)
                                         == (head.op, head.result) for r in later):
        return Carried(head.op, head.result, first.values[0])
    return None


def _invariant_carries(block: Block, w: Window, refs: list[list[Ref]]) -> None:
    """Replace carried values that are the same every step by their initial value: when
    the steps begin mid-period, a step's last ops can be the next step's invariants (the
    slices of a weight a cell takes at each step), which the window sees as carried; they
    are the value computed before the window when that is the same op on the same
    operands (a loop carrying them would be larger than it needs to be)."""
    for row in refs:
        for k, r in enumerate(row):
            if isinstance(r, Carried) and _same_as(w.op(block, 0, r.op), refs[r.op], r):
                row[k] = Outside((r.init,) * w.steps)


def _same_as(op: Op, row: list[Ref], c: Carried) -> bool:
    """Whether ``op``, whose operands are ``row``, computes ``c.init`` in every step: the
    same op over the same values from before the window."""
    init = c.init.owner
    return isinstance(init, Op) and not _moving([op]) and c.init.index == c.result \
        and _signature(init, 0) == _signature(op, 0) and len(row) == len(init.operands) \
        and all(isinstance(r, Outside) and all(v is x for v in r.values)
                for r, x in zip(row, init.operands, strict=True)) \
        and (op.name != SLICE or init.attrs == op.attrs)


def _read_after(block: Block, w: Window, where: dict[Value, tuple[int, int]]
                ) -> dict[tuple[int, int], list[int]]:
    """For each (op, result) of a step, the steps whose value is read after the window
    (by ops of the block or of regions nested in them)."""
    out: dict[tuple[int, int], set[int]] = {}
    for op in walk_ops(block.ops[w.stop:]):
        for v in op.operands:
            at = where.get(v)
            if at is not None:
                out.setdefault((at[1], v.index), set()).add(at[0])
    return {key: sorted(steps) for key, steps in out.items()}


def _recurrent(block: Block, rolled: Rolled) -> bool:
    """Whether a product of a step depends on a value carried around the loop: one that
    itself depends on a carried value (the greatest such set; a slice of the next step's
    input that a step begun mid-period computes last is carried but no recurrence)."""
    w = rolled.window
    depends = [True] * w.period
    changed = True
    while changed:
        changed = False
        for i, row in enumerate(rolled.refs):
            d = any(isinstance(r, (Carried, Inner)) and depends[r.op] for r in row)
            if d != depends[i]:
                depends[i], changed = d, True
    return any(d and w.op(block, 0, i).name in PRODUCTS for i, d in enumerate(depends))


def _small(block: Block, rolled: Rolled) -> bool:
    """Whether every value a step computes anew is one the device loop admits (values
    the same in every step are left out: the loop's invariants are hoisted out of it)."""
    w = rolled.window
    varies: list[bool] = []
    for i, row in enumerate(rolled.refs):
        per_step = [w.op(block, t, i) for t in range(w.steps)]
        varies.append(_moving(per_step) or any(
            isinstance(r, Carried) or isinstance(r, Inner) and varies[r.op]
            or isinstance(r, Outside) and any(v is not r.values[0] for v in r.values)
            for r in row))
        if varies[-1] and any(types.size(v) > MAX_ELEMENTS for v in per_step[0].results):
            return False
    return True


def _slices_affine(block: Block, w: Window) -> bool:
    """Whether every ``slice`` of a step has bounds affine in the step, stride one."""
    return all(_affine_starts([w.op(block, t, i) for t in range(w.steps)]) is not None
               for i in range(w.period) if w.op(block, 0, i).name == SLICE)


def _affine_starts(slices: list[Op]) -> tuple[list[int], list[int]] | None:
    """(start in step 0, change per step) of each dimension of ``slices``, one per step,
    when their starts are affine in the step and their strides one; else None."""
    if any(any(s != 1 for s in _ints(op, "strides")) for op in slices):
        return None
    starts = np.array([_ints(op, "start_indices") for op in slices])
    delta = starts[1] - starts[0] if len(starts) > 1 else np.zeros_like(starts[0])
    expected = starts[0] + np.arange(len(slices))[:, None] * delta
    if not np.array_equal(starts, expected):
        return None
    return starts[0].tolist(), delta.tolist()


_INTS: WeakKeyDictionary[Op, dict[str, tuple[int, ...]]] = WeakKeyDictionary()


def _ints(op: Op, name: str) -> tuple[int, ...]:
    """``op.ints_attr(name)``, remembered: every alignment of a window reads the bounds
    of its slices again."""
    known = _INTS.setdefault(op, {})
    if name not in known:
        known[name] = tuple(op.ints_attr(name))
    return known[name]


# -- rolling ------------------------------------------------------------------------------

class _NotRolled(Exception):
    """A window whose streams the body cannot compute (it stays unrolled)."""


def _roll(block: Block, rolled: Rolled) -> None:
    """Replace ``rolled``'s window by a ``while`` (the module docstring's 3.); raises
    :class:`_NotRolled`, the block unchanged, when a stream cannot be computed."""
    w = rolled.window
    make = _Maker(block.ops[w.start].loc)
    carries = _carries(rolled)
    carried = {(c.op, c.result) for c in carries}
    finals = {key for key, steps in rolled.read_after.items()
              if steps == [w.steps - 1] and key in carried}
    fixed = {key for key in rolled.read_after if _fixed(block, rolled, key[0])}
    stacked = [key for key in rolled.read_after if key not in finals | fixed]
    before = [make.i32(0)]
    inits = [before[0].results[0], *(c.init for c in carries)]
    for key in stacked:
        zeros = make.zeros(_stacked(w.op(block, 0, key[0]).results[key[1]], w.steps))
        before += zeros
        inits.append(zeros[-1].results[0])
    loop_types = [v.type for v in inits]
    body = _Body(block, w, make, loop_types)
    values = _step(body, rolled, carries)
    results = [body.next_counter(), *(values[(c.op, c.result)] for c in carries)]
    stacks = body.args[1 + len(carries):]
    results += [body.update(stack, values[key]) for stack, key in zip(stacks, stacked,
                                                                       strict=True)]
    loop = make.op("stablehlo.while", inits, loop_types,
                   regions=[_cond(make, loop_types, w.steps), body.region(results)])
    after, subst = _read_back(block, rolled, (carries, finals, stacked), loop, make)
    for key in fixed:
        after += _recompute(block, rolled, key, make, subst)
    _replace(block, w, [*before, loop, *after], subst)


def _fixed(block: Block, rolled: Rolled, i: int) -> bool:
    """Whether op ``i`` of a step computes the same value in every step: the same op
    over the same values from before the window."""
    return not _moving([rolled.window.op(block, t, i) for t in range(rolled.window.steps)]) \
        and all(isinstance(r, Outside) and all(v is r.values[0] for v in r.values)
                for r in rolled.refs[i])


def _recompute(block: Block, rolled: Rolled, key: tuple[int, int], make: _Maker,
               subst: dict[Value, Value]) -> list[Op]:
    """A copy after the loop of :func:`_fixed` op ``key[0]``, standing for its value of
    every step read after the window (instead of a stack of equal values)."""
    w = rolled.window
    op = w.op(block, 0, key[0])
    copy = make.clone(op, [r.values[0] for r in rolled.refs[key[0]]
                           if isinstance(r, Outside)])
    for t in rolled.read_after[key]:
        subst[w.op(block, t, key[0]).results[key[1]]] = copy.results[key[1]]
    return [copy]


def _carries(rolled: Rolled) -> list[Carried]:
    """The distinct carried values of a step, in order of first use."""
    out: list[Carried] = []
    for row in rolled.refs:
        out += [r for r in row if isinstance(r, Carried) and r not in out]
    return out


def _step(body: _Body, rolled: Rolled, carries: list[Carried]
          ) -> dict[tuple[int, int], Value]:
    """One step's ops added to ``body``; the body value of each (op, result)."""
    w = rolled.window
    made: dict[tuple[int, int], Value] = {}
    arg_of = {c: body.args[1 + n] for n, c in enumerate(carries)}
    for i, row in enumerate(rolled.refs):
        operands = []
        for r in row:
            if isinstance(r, Inner):
                operands.append(made[(r.op, r.result)])
            elif isinstance(r, Carried):
                operands.append(arg_of[r])
            else:
                operands.append(body.stream(r.values))
        per_step = [w.op(body.block, t, i) for t in range(w.steps)]
        if _moving(per_step):
            made[(i, 0)] = body.dynamic_slice(operands[0], per_step)
        else:
            for v in body.clone(per_step[0], operands).results:
                made[(i, v.index)] = v
    return made


def _moving(ops: list[Op]) -> bool:
    """Whether ``ops`` (one per step) are slices at bounds that change with the step."""
    return ops[0].name == SLICE and len({_ints(op, "start_indices")
                                         for op in ops}) > 1


def _read_back(block: Block, rolled: Rolled,
               outputs: tuple[list[Carried], set[tuple[int, int]], list[tuple[int, int]]],
               loop: Op, make: _Maker) -> tuple[list[Op], dict[Value, Value]]:
    """The ops after the loop giving the window's values read after it, and the
    replacement of each such value: a carried value read only at the last step is the
    loop's result, every other one a slice of its stack."""
    carries, finals, stacked = outputs
    w = rolled.window
    ops: list[Op] = []
    subst: dict[Value, Value] = {}
    for n, c in enumerate(carries):
        if (c.op, c.result) in finals:
            subst[w.op(block, w.steps - 1, c.op).results[c.result]] = loop.results[1 + n]
    for n, key in enumerate(stacked):
        stack = loop.results[1 + len(carries) + n]
        for t in rolled.read_after[key]:
            v = w.op(block, t, key[0]).results[key[1]]
            piece = make.slice_step(stack, t)
            ops += [piece, make.op("stablehlo.reshape", [piece.results[0]], [v.type])]
            subst[v] = ops[-1].results[0]
    return ops, subst


def _replace(block: Block, w: Window, new: list[Op], subst: dict[Value, Value]) -> None:
    """Put ``new`` in place of the window's ops and redirect the reads after it."""
    rest = block.ops[w.stop:]
    for op in walk_ops(rest):
        if any(v in subst for v in op.operands):
            op.operands = [subst.get(v, v) for v in op.operands]
    block.ops[w.start:] = new + rest


def _cond(make: _Maker, loop_types: list[Type], steps: int) -> Region:
    """The loop's condition: ``t < steps`` over arguments of ``loop_types``."""
    block = Block()
    block.args = [make.value(t, block, n) for n, t in enumerate(loop_types)]
    limit = make.i32(steps)
    test = make.op("stablehlo.compare", [block.args[0], limit.results[0]],
                   [TensorType((), IntegerType(1))], {
                       "comparison_direction": EnumAttr("comparison_direction", "LT"),
                       "compare_type": EnumAttr("comparison_type", "SIGNED")})
    block.ops = [limit, test, make.op("stablehlo.return", test.results, [])]
    return Region([block])


def _stacked(v: Value, steps: int) -> TensorType:
    """The type of ``steps`` values like ``v`` stacked along a new first dimension."""
    assert isinstance(v.type, TensorType)
    return v.type.with_shape((steps, *types.shape(v)))


class _Maker:
    """Detached ops and values at one source location, with names of their own."""

    _names = count()

    def __init__(self, loc: Loc) -> None:
        self.loc = loc

    def value(self, t: Type, owner: Op | Block, index: int) -> Value:
        """A new value."""
        return Value(t, owner, index, f"roll{next(self._names)}", self.loc)

    def op(self, name: str, operands: list[Value], result_types: list[Type],
           attrs: dict[str, Attr] | None = None, regions: list[Region] | None = None) -> Op:
        """A new op with results of ``result_types``."""
        op = Op(name, list(operands), list(result_types), attrs or {}, regions or [],
                self.loc)
        op.results = [self.value(t, op, n) for n, t in enumerate(result_types)]
        return op

    def clone(self, op: Op, operands: list[Value]) -> Op:
        """A copy of ``op`` (no regions) over ``operands``."""
        new = self.op(op.name, operands, op.result_types, dict(op.attrs))
        new.src_loc, new.origin = op.src_loc, op.origin
        return new

    def i32(self, value: int) -> Op:
        """The constant ``value : tensor<i32>``."""
        return self.op("stablehlo.constant", [], [I32], {
            "value": DenseElementsAttr(I32, np.array(value, dtype=np.int32))})

    def zeros(self, t: TensorType) -> list[Op]:
        """Ops making zeros of type ``t``; the last one's result is the value."""
        scalar = t.with_shape(())
        zero = self.op("stablehlo.constant", [], [scalar], {
            "value": DenseElementsAttr(scalar, np.zeros((), scalar.element.dtype))})
        return [zero, self.op("stablehlo.broadcast_in_dim", zero.results, [t], {
            "broadcast_dimensions": DenseArrayAttr("i64", ())})]

    def slice_step(self, stack: Value, t: int) -> Op:
        """``stack[t:t+1]``."""
        shape = types.shape(stack)
        assert isinstance(stack.type, TensorType)
        return self.op(SLICE, [stack], [stack.type.with_shape((1, *shape[1:]))], {
            "start_indices": DenseArrayAttr("i64", (t,) + (0,) * (len(shape) - 1)),
            "limit_indices": DenseArrayAttr("i64", (t + 1, *shape[1:])),
            "strides": DenseArrayAttr("i64", (1,) * len(shape))})


class _Body:
    """The loop body being built: its block arguments and ops."""

    def __init__(self, block: Block, w: Window, make: _Maker, loop_types: list[Type]) -> None:
        self.block, self.window, self.make = block, w, make
        self._block = Block()
        self._block.args = [make.value(t, self._block, n) for n, t in enumerate(loop_types)]
        self.args = self._block.args
        self.counter = self.args[0]
        self._streams: dict[tuple[Value, ...], Value] = {}

    def add(self, op: Op) -> Value:
        """Append ``op``; its first result."""
        self._block.ops.append(op)
        return op.results[0]

    def clone(self, op: Op, operands: list[Value]) -> Op:
        """Append a copy of ``op`` over ``operands``."""
        self.add(new := self.make.clone(op, operands))
        return new

    def region(self, results: list[Value]) -> Region:
        """The finished body returning ``results``."""
        self._block.ops.append(self.make.op("stablehlo.return", results, []))
        return Region([self._block])

    def next_counter(self) -> Value:
        """``t + 1``."""
        one = self.add(self.make.i32(1))
        return self.add(self.make.op("stablehlo.add", [self.counter, one], [I32]))

    def index(self, start: int, delta: int) -> Value:
        """The scalar ``start + delta * t``."""
        if delta == 0:
            return self.add(self.make.i32(start))
        v = self.counter
        if delta != 1:
            k = self.add(self.make.i32(delta))
            v = self.add(self.make.op("stablehlo.multiply", [v, k], [I32]))
        if start:
            k = self.add(self.make.i32(start))
            v = self.add(self.make.op("stablehlo.add", [v, k], [I32]))
        return v

    def dynamic_slice(self, x: Value, slices: list[Op]) -> Value:
        """The slice of ``x`` that ``slices[t]`` takes in step ``t``."""
        affine = _affine_starts(slices)
        assert affine is not None
        starts = [self.index(s, d) for s, d in zip(*affine, strict=True)]
        like = slices[0]
        sizes = [hi - lo for lo, hi in zip(like.ints_attr("start_indices"),
                                           like.ints_attr("limit_indices"), strict=True)]
        return self.add(self.make.op("stablehlo.dynamic_slice", [x, *starts],
                                     like.result_types,
                                     {"slice_sizes": DenseArrayAttr("i64", tuple(sizes))}))

    def update(self, stack: Value, v: Value) -> Value:
        """``stack`` with ``v`` written at step ``t``."""
        one = self.add(self.make.op("stablehlo.reshape", [v], [_stacked(v, 1)]))
        zeros = [self.add(self.make.i32(0)) for _ in types.shape(v)]
        return self.add(self.make.op("stablehlo.dynamic_update_slice",
                                     [stack, one, self.counter, *zeros], [stack.type]))

    def stream(self, values: tuple[Value, ...]) -> Value:
        """A body value that is ``values[t]`` in step ``t``: the value itself when it is
        the same every step, a ``dynamic_slice`` when they are slices of one value at
        bounds affine in the step, the body's copy of their op when they are results of
        one kind of op over streams; :class:`_NotRolled` otherwise."""
        if values not in self._streams:
            self._streams[values] = self._make_stream(values)
        return self._streams[values]

    def _make_stream(self, values: tuple[Value, ...]) -> Value:
        if all(v is values[0] for v in values):
            return values[0]
        ops = [v.owner for v in values if isinstance(v.owner, Op)]
        if len(ops) != len(values) or len({v.index for v in values}) != 1 \
                or len({_signature(op, 0) for op in ops}) != 1:
            raise _NotRolled
        operands = [self.stream(tuple(op.operands[k] for op in ops))
                    for k in range(len(ops[0].operands))]
        if _moving(ops):
            if _affine_starts(ops) is None:
                raise _NotRolled
            return self.dynamic_slice(operands[0], ops)
        return self.clone(ops[0], operands).results[values[0].index]
