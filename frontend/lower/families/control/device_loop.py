"""A small ``stablehlo.while`` as one kernel with the loop inside.

When every value the loop's condition and body compute per iteration is small (at most
:data:`MAX_ELEMENTS` elements; values passed through unchanged, such as a power
iteration's matrix, and stacks updated a slice at a time do not count), their work per
iteration is at most :data:`MAX_WORK` and every op is elemental, a ``reduce``, a
``dot_general``, a ``scatter`` or a ``while`` whose condition bounds its trips (so a host
callback, a ``custom_call``, keeps its loop on the host, as does a carried token), the
whole loop runs in one work-group of one kernel: per iteration
the condition is evaluated on the device and, while it holds, the body's reductions and
dots are computed into scratch buffers, its results into temporaries and those copied
into the carried buffers (``foreach`` phases, in order: the one work-item needs no
barriers between them, and the insert-barrier pass puts none).  A
``dynamic_update_slice`` of a carried value nothing else reads writes its slice
straight into the carried buffer.  A launch runs at most :data:`CHUNK_TRIPS`
iterations and leaves in a flag whether the loop may go on, so the host relaunches it
(``While`` with the launch as its condition) and reads back one flag per chunk instead of
one predicate per iteration.  A nested ``while`` runs as a ``for`` of its trip bound
evaluating its condition per iteration (:func:`_inner_loop`), a ``scatter`` applies its
updates in order (:func:`_scatter`).  A counted loop
whose trip count is a compile-time constant (:mod:`frontend.lower.core.loops`) is one launch
running the body that many times: no condition, no read-back.

Products of two matrices run as the language's register-blocked ``gemm``; results that
no later phase of the iteration reads the old value of are computed straight into their
carried buffers (:func:`_direct`); a scan's input projection is hoisted before the loop
when large enough (:mod:`.loop_projection`); carried buffers initialized
from constants are initialized by the loop kernel instead of launches of their own
(:func:`_fold_inits`).  A loop whose iterations never mix the rows of a batch runs on
several work-groups, each all iterations of its rows (:mod:`.row_split`,
:func:`_split_kernel`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from math import prod

from frontend.ir.core import Block, Op, Value
from frontend.ir.quant import is_quantized
from frontend.ir.types import TokenType
from frontend.lower.core import loops, types
from frontend.lower.core.builder import IndexExpr, KernelBuilder
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import CHEAP, ELEMENTAL, KERNEL
from frontend.lower.families import scatter_gather
from frontend.lower.families.control import loop_projection, row_split
from tensorlang.diagnostics import CompileError
from tensorlang.plan import Copy, Launch, Step, TripCount, While

MAX_ELEMENTS = 16384
"""The largest value (elements) a loop may compute per iteration to run as one kernel
(values the body passes through unchanged, and carried buffers it only updates a slice
of in place, do not count: they are read, or written a slice at a time).  16384: the
gates of an LSTM of 128 units at batch 16 (16x512) and of a GRU at batch 32."""
MAX_WORK = 1 << 22
"""The most work per iteration (:func:`_work`: multiply-adds, elements) of a loop run as
one kernel: the kernel runs on one core, the host loop's kernels on all, at ~15-25 us of
host time per launch (PoCL) and a few launches per iteration.  A ``gemm`` on one core
does ~100 multiply-adds per ns, so 4M of them (~40 us) still cost less than the host
loop's launches on two cores; the scanned LSTM/GRU models of benchmarks/jax_models.py
(16x128 by 128x512 and 16x32 by 32x512 products a step, ~1.3M) went from 2.4-4.8x
XLA's time as host loops to 1.0-1.2x as one kernel."""
CHUNK_TRIPS = 1024
"""Iterations per launch of a loop whose trip count is not known when compiling."""
WORK_ITEMS = 1
"""The loop kernel's work-group size (its foreach phases are dealt to these work-items).
One: on PoCL (CPU) more were slower, the phases being small, and PoCL 3.1 crashed on
barriers under the ``if`` of a loop decided on the device."""
ACCUMULATORS = 4
"""Independent partial sums of a dot's contraction (the adds' latency overlaps)."""
OUTER_MIN = 8
"""Dots with at least this many result elements run as sums of outer products
(:func:`_dot_outer`: ~20% faster on the 64x64 loops of tests/lowering/loops); smaller
ones as a sequential contraction per result element with partial sums."""
LANES = 16
"""Partial sums per result element of a dot contracting the contiguous last dimension of
both operands (:func:`_contiguous`): kept in registers, they run along one AVX-512 vector
of f32 each step, so the C compiler vectorizes them without reassociating (~4x faster
than a sum of outer products reading the matrix down its columns)."""
GEMM = True
"""Run a product of two matrices as the language's register-blocked ``gemm``."""
SPLIT = True
"""Run a loop whose iterations never mix the rows of a batch on
:data:`row_split.GROUPS` work-groups, each running its rows (:mod:`.row_split`)."""
GEMM_MIN = 2
"""... when both its free dimensions are at least this long."""
FOLD_INITS = True
"""Compute carried buffers initialized from constants in the loop kernel (its first
launch) instead of a launch of their own (:func:`_fold_inits`)."""
FOLD_MAX_OPS = 128
"""Loops of more ops (nested ones counted) compute their constant initial values in one
kernel of their own instead (:func:`_init_kernel`): folded in, a loop with no trip count
would be two kernels, and a large kernel costs seconds to build on PoCL (diffrax's
adaptive solve: ~23 s of first call with two, ~4.4 with one)."""
SCRATCH = True
"""Compute a dot operand that is not in a buffer into a scratch buffer first."""
_COMPUTED = ("stablehlo.reduce", "stablehlo.dot_general", "stablehlo.scatter",
             "stablehlo.while")


def lower(lw: FuncLowering, op: Op, carry: list[int], trips: TripCount | None) -> bool:
    """Lower while ``op`` (operands already copied into ``carry``) as one kernel when it
    qualifies; False (and nothing emitted) otherwise."""
    if any(isinstance(v.type, TokenType) for v in op.operands):
        return False  # a token orders host effects (callbacks): the loop stays on the host
    cond, body = op.regions[0].block, op.regions[1].block
    in_place = {u for i in range(len(carry)) if (u := _in_place(lw, body, i)) is not None}
    changed = [r for r, a, v in zip(op.results, body.args, body.ops[-1].operands, strict=True)
               if v is not a and v.owner not in in_place]
    count = trips.known() if trips is not None else None
    found = {h.dot: h for h in loop_projection.find(op, count)}
    if not (_fits(lw, cond, in_place) and _fits(lw, body, in_place)) \
            or any(types.size(v) > MAX_ELEMENTS for v in changed) \
            or _work(cond, in_place, {}) + _work(body, in_place, found) > MAX_WORK:
        return False
    hoisted = {dot: (h, loop_projection.compute(lw, h)) for dot, h in found.items()}
    captured = loops.captured(op)
    prologue = [(v, lw.buffer_for(v)) for v in captured if _computed_first(lw, v)]
    for v, c in prologue:
        lw.bind(v, c)
    prologued = {v for v, _ in prologue}
    for v in captured:
        _materialize_captured(lw, v)
    nested = _all_ops(op)
    for o in nested:
        if o.name == "stablehlo.constant":  # non-splat ones: initialized buffers
            KERNEL[o.name](lw, o)
    env, steps = dict(lw.env), list(lw.steps)
    inits = (_fold_inits(lw, op, carry) if FOLD_INITS else []) + prologue
    apart = inits if len(nested) > FOLD_MAX_OPS else []  # one kernel of their own
    inits = [] if apart else inits
    flag = lw.new_buffer("i1", ())
    split = row_split.find(op, list(in_place)) if SPLIT else None
    if split is not None:
        folded = dict(lw.env)
        built = _split_kernel(lw, op, carry, (count, flag), (hoisted, inits + apart), split)
        if built:
            lw.steps.extend(built)
            return True
        lw.env = folded
    try:
        first = _kernel(lw, op, carry, (count, flag), (hoisted, inits))
        if count is None and inits:  # the first launch initializes, the others do not
            lw.env = dict(env)
            again = _kernel(lw, op, carry, (count, flag), (hoisted, []))
    except CompileError:  # an op the fused code cannot express here: a host loop instead
        lw.env = {v: b for v, b in env.items() if v not in prologued}  # never computed
        lw.steps[:] = steps
        return False
    if apart:
        lw.step(_init_kernel(lw, apart))
    if count is not None:
        lw.step(first)
    elif inits:
        lw.step(first)
        lw.step(While((), flag, (again,)))
    else:
        lw.step(While((first,), flag, ()))
    return True


Hoists = dict[Op, tuple[loop_projection.Hoisted, int]]
"""Body products computed before the loop: each one's hoisted form and its buffer."""


@dataclass(frozen=True)
class _Rows:
    """The split of the loop kernel being built, its work-group's id and rows
    ``[lo, hi)`` (SSA names at the kernel's top)."""

    split: row_split.RowSplit
    group: str
    lo: str
    hi: str


_ROWS: ContextVar[_Rows | None] = ContextVar("device_loop_rows", default=None)
"""Set while a split loop kernel is built (:func:`_split_kernel`)."""


def _rows(v: Value) -> int | None:
    """The row dimension of ``v`` in the split loop kernel being built (its phases over
    ``v`` run over this work-group's rows only), or None."""
    rows = _ROWS.get()
    return None if rows is None else rows.split.dim(v)


@contextmanager
def _split_rows(k: KernelBuilder, split: row_split.RowSplit) -> Iterator[_Rows]:
    """Build a kernel split by rows: its work-group's rows computed first."""
    g = k.emit("group_id", "g")
    lo = k.idx(k.imul(g, split.rows_per_group))
    rows = _Rows(split, g, lo, k.idx(k.iadd(lo, split.rows_per_group)))
    token = _ROWS.set(rows)
    try:
        yield rows
    finally:
        _ROWS.reset(token)


def _split_kernel(lw: FuncLowering, op: Op, carry: list[int],
                  trips: tuple[int | None, int],
                  before: tuple[Hoists, list[tuple[Value, int]]],
                  split: row_split.RowSplit) -> list[Step]:
    """The steps of loop ``op`` run on ``split.groups`` work-groups, each running every
    iteration for its block of rows (:mod:`.row_split`): one kernel computing the
    constant initial values and the prologue (``before``; folded into the loop kernel,
    every work-group would write them), then the loop kernel (``trips``: as
    :func:`_kernel`'s).  The uniform carried values the body changes live in each
    work-group's local memory (:func:`_homes`).  Empty (nothing emitted) when a uniform
    value the kernel stores does not fit its local memory, or an op cannot be expressed
    here."""
    hoisted, inits = before
    count, flag = trips
    body = op.regions[1].block
    results = body.ops[-1].operands
    uniform = [i for i, (a, v) in enumerate(zip(body.args, results, strict=True))
               if v is not a and _in_place(lw, body, i) is None and split.dim(a) is None]
    homes = _homes(lw, [results[i] for i in uniform], split.groups, count is None)
    try:
        with lw.kernel("while_rows") as (k, f), _split_rows(k, split) as rows, \
                _reading_only(_read_only(lw, op, carry)):
            k.private_from = len(lw.buffers)
            state = list(carry)
            for i in uniform:
                state[i] = lw.new_buffer(types.elem(results[i]), types.shape(results[i]))
            written = _bind_blocks(lw, op, state)
            _claim_local(lw, k, split)
            k.attributes = f"work_group_size({WORK_ITEMS},1)"
            slot = rows.group if count is None else 0
            for i, home in zip(uniform, homes, strict=True):
                _copy_state(lw, k, results[i], (carry[i] if count is not None else home, slot),
                            (state[i], 0))
            go = _iterations(lw, f, op, state, written, hoisted, count)
            if go is not None:
                for i, home in zip(uniform, homes, strict=True):
                    _copy_state(lw, k, results[i], (state[i], 0), (home, rows.group))
            first = k.cmp("eq", rows.group, k.const(0, "index"), "index")
            with k.block(f"if {first} {{"):
                for i, home in zip(uniform, homes, strict=True):
                    _copy_state(lw, k, results[i], (state[i], 0),
                                (home if count is not None else carry[i], 0))
                if go is not None:
                    _each(k, (), lambda idx: k.store(go, flag, "i1", 1, 0))
            _check_private(lw, k, split)
    except CompileError:
        return []
    launch = Launch(k.name, tuple(k.params), split.groups)
    steps: list[Step] = [_init_kernel(lw, inits)] if inits else []
    if count is not None:
        for i, home in zip(uniform, homes, strict=True):
            carry[i] = home
        return [*steps, launch]
    fill = _fill_slots(lw, [(results[i], carry[i]) for i in uniform], homes, split.groups)
    return [*steps, *fill, While((launch,), flag, ())]


def _homes(lw: FuncLowering, values: list[Value], groups: int, slots: bool) -> list[int]:
    """Where the uniform carried ``values`` of a split loop live outside its kernel.  A
    loop launched once reads them from their carried buffers and work-group 0 copies
    them out into new buffers (these), which the loop's results then name: written back
    to the carried buffer, a work-group starting late would read the new value.  A
    relaunched loop keeps each work-group's copy in its slot of a buffer of ``groups``
    copies (these), filled before the first launch (:func:`_fill_slots`); work-group 0
    copies them into the carried buffers, which no launch reads, after each chunk."""
    return [lw.new_buffer(types.elem(v), ((groups,) if slots else ()) + types.shape(v))
            for v in values]


def _fill_slots(lw: FuncLowering, carried: list[tuple[Value, int]], slots: list[int],
                groups: int) -> list[Step]:
    """A launch copying each carried buffer into every slot of its slot buffer."""
    if not carried:
        return []
    with lw.kernel("while_slots") as (k, _):
        k.attributes = f"work_group_size({WORK_ITEMS},1)"
        for (v, c), slot in zip(carried, slots, strict=True):
            for g in range(groups):
                _copy_state(lw, k, v, (c, 0), (slot, g))
    return [Launch(k.name, tuple(k.params), 1)]


def _copy_state(lw: FuncLowering, k: KernelBuilder, v: Value, src: tuple[int, IndexExpr],
                dst: tuple[int, IndexExpr]) -> None:
    """Copy every element of carried value ``v`` between buffers, each given with the
    slot it holds ``v`` at (a buffer of several copies of ``v``: :func:`_homes`)."""
    t, shape, n = types.elem(v), types.shape(v), types.size(v)

    def at(place: tuple[int, IndexExpr], idx: list[IndexExpr]) -> tuple[int, IndexExpr]:
        buf, slot = place
        return prod(lw.buffers[buf].shape), k.iadd(k.imul(slot, n), k.linear(idx, shape))

    def copy(idx: list[IndexExpr]) -> None:
        (sn, si), (dn, di) = at(src, idx), at(dst, idx)
        k.store(k.load(src[0], t, sn, si), dst[0], t, dn, di)

    _each(k, shape, copy)


def _claim_local(lw: FuncLowering, k: KernelBuilder, split: row_split.RowSplit) -> None:
    """Give the uniform values bound so far to the split kernel's own buffers (its
    carried state, the results of its products, reductions and nested loops) local
    memory first: they must be each work-group's own (:func:`_check_private`), where a
    split value may share a buffer."""
    start = k.private_from
    assert start is not None
    for v, b in list(lw.env.items()):
        if b >= start and split.dim(v) is None:
            k.param(b, types.elem(v), types.size(v))


def _check_private(lw: FuncLowering, k: KernelBuilder, split: row_split.RowSplit) -> None:
    """Raise CompileError when a uniform value the split kernel stores is in a buffer
    of its work-groups' common memory (past :data:`builder.LOCAL_SCRATCH_BYTES`): one
    work-group's next iteration could overwrite it while another still reads it."""
    start = k.private_from
    assert start is not None
    for v, b in lw.env.items():
        if b >= start and b in k.params and split.dim(v) is None:
            raise CompileError.at(None, f"a uniform value of the split loop kernel "
                                  f"{k.name} does not fit its local memory")


def _kernel(lw: FuncLowering, op: Op, carry: list[int], trips: tuple[int | None, int],
            before: tuple[Hoists, list[tuple[Value, int]]]) -> Launch:
    """Build the loop kernel, run ``count`` times or, with no count, up to
    :data:`CHUNK_TRIPS` times leaving in ``flag`` whether the loop goes on (``trips``);
    its launch.  ``before``: the hoisted products, the carried buffers to initialize
    first."""
    hoisted, inits = before
    count, flag = trips
    with lw.kernel("while") as (k, f), _reading_only(_read_only(lw, op, carry)):
        k.private_from = len(lw.buffers)  # what the iterations compute: written, then read
        written = _bind_blocks(lw, op, carry)
        k.attributes = f"work_group_size({WORK_ITEMS},1)"
        for v, c in inits:
            buf = lw.env.pop(v)
            _store_all(lw, f, v, c)
            lw.env[v] = buf
        go = _iterations(lw, f, op, carry, written, hoisted, count)
        if go is not None:
            _each(k, (), lambda idx: k.store(go, flag, "i1", 1, 0))
    return Launch(k.name, tuple(k.params), 1)


Written = tuple[list[int | None], list[int]]
"""How a loop's body results are written (:func:`_body`): the temporaries of those
computed before their carried buffers are updated (None: written otherwise), and the
order of those computed straight into their carried buffers (:func:`_direct`)."""


def _bind_blocks(lw: FuncLowering, op: Op, carry: list[int], computed: bool = True
                 ) -> Written:
    """Bind the arguments of loop ``op``'s condition and body to the buffers ``carry``
    and, unless a loop around it did (``computed``), its computed ops' results to scratch
    buffers (:func:`_bind_computed`); how its body's results are written."""
    cond, body = op.regions[0].block, op.regions[1].block
    for block in (cond, body):
        for a, c in zip(block.args, carry, strict=True):
            lw.bind(a, c)
    if computed:
        _bind_computed(lw, cond.ops + body.ops)
    direct = _direct(lw, body)
    outs = [None if v is body.args[i] or _in_place(lw, body, i) or i in direct
            else lw.buffer_for(v) for i, v in enumerate(body.ops[-1].operands)]
    return outs, direct


def _iterations(lw: FuncLowering, f: Fused, op: Op, carry: list[int], written: Written,
                hoisted: Hoists, count: int | None, bound: int | None = None) -> str | None:
    """Loop ``op``'s iterations: with a ``count``, the body that many times (no
    condition, no branches), and None; else at most ``bound``, each evaluating the
    condition and, while it holds, the body (:func:`_iteration`), and whether the loop
    may go on (``bound`` :data:`CHUNK_TRIPS` unless given, read when called)."""
    k = f.k
    if count is not None:
        with k.loop(0, count, [], []):
            _body(lw, f, op, carry, written, hoisted)
        return None
    go = k.const(True, "i1")
    with k.loop(0, CHUNK_TRIPS if bound is None else bound, [go], ["i1"]) as loop:
        loop.yields = [k.branch(loop.carried[0], "i1",
                                lambda: _iteration(lw, f, op, carry, written, hoisted),
                                lambda: k.const(False, "i1"))]
    return loop.results[0]


def _fold_inits(lw: FuncLowering, op: Op, carry: list[int]) -> list[tuple[Value, int]]:
    """The carried buffers whose initial value a kernel of their own computes from
    constants alone (a launch whose only parameter is the buffer, no later step touching
    it: a scan's counter, its zeroed outputs): that launch is taken out of the steps and
    the loop kernel computes them first instead (a launch costs ~25 us on PoCL, more than
    one work-item filling a small buffer).  A loop with no trip count then launches a
    kernel doing that and its first chunk, then, while the flag says so, one without."""
    alone: dict[int, list[int]] = {}  # buffer -> the launches with it as only argument
    for j, s in enumerate(lw.steps):
        if isinstance(s, Launch) and len(s.args) == 1:
            alone.setdefault(s.args[0], []).append(j)
    out, taken = [], []
    for v, c in zip(op.operands, carry, strict=True):
        at = alone.get(c, [])
        if len(at) != 1 or lw.buffer_of(v) != c or types.size(v) > MAX_ELEMENTS * 16:
            continue
        later = lw.steps[at[0] + 1:]
        if all(isinstance(s, Launch) and c not in s.args
               or isinstance(s, Copy) and c not in (s.src, s.dst) for s in later):
            taken.append(alone.pop(c)[0])
            out.append((v, c))
    for j in sorted(taken, reverse=True):
        del lw.steps[j]
    return out


def _iteration(lw: FuncLowering, f: Fused, op: Op, carry: list[int],
               outs: Written, hoisted: Hoists) -> str:
    """One iteration: the condition; when it holds, the body.  Returns the condition."""
    cond = op.regions[0].block
    k = f.k
    _compute(lw, f, cond, {})
    pred = f.value(cond.ops[-1].operands[0], [])
    with k.block(f"if {pred} {{"):
        _body(lw, f, op, carry, outs, hoisted)
    return pred


def _body(lw: FuncLowering, f: Fused, op: Op, carry: list[int],
          written: Written, hoisted: Hoists) -> None:
    """The body: its reductions and dots; its results into temporaries ``outs`` (then
    read from there), those in ``direct`` straight into their carried buffers, in that
    order (:func:`_direct`); the in-place slice updates; the temporaries into ``carry``."""
    body = op.regions[1].block
    k = f.k
    outs, direct = written
    _compute(lw, f, body, hoisted)
    results = body.ops[-1].operands
    for v, out in zip(results, outs, strict=True):
        if out is not None:
            _store_all(lw, f, v, out)
    for i in direct:
        _store_all(lw, f, results[i], carry[i])
    for i, c in enumerate(carry):
        update = _in_place(lw, body, i)
        if update is not None:  # nothing else reads the carried operand: write the slice
            _update_slice(f, update, c)
    for v, out, c in zip(results, outs, carry, strict=True):
        if out is not None:
            t = types.elem(v)
            _copy_each(k, types.shape(v), partial(_load_element, k, out, t, types.shape(v)),
                       c, t, _rows(v))


def _store_all(lw: FuncLowering, f: Fused, v: Value, out: int) -> None:
    """Every element of ``v`` into ``out``; later reads of ``v`` load it from there."""
    _copy_each(f.k, types.shape(v), partial(f.value, v), out, types.elem(v), _rows(v))
    if not isinstance(v.owner, Block):
        lw.bind(v, out)


def _direct(lw: FuncLowering, body: Block) -> list[int]:
    """The body results that can be computed straight into their carried buffers, in the
    order to write them: result ``i`` when its value does not read carried value ``i``,
    no in-place slice update reads it, and only results written before it do."""
    results = body.ops[-1].operands
    changed = [i for i, v in enumerate(results)
               if v is not body.args[i] and _in_place(lw, body, i) is None]
    reads = {i: _reads(lw, body, results[i]) for i in changed}
    updated: set[int] = set()
    for i in range(len(results)):
        update = _in_place(lw, body, i)
        if update is not None:
            for v in update.operands[1:]:
                updated |= _reads(lw, body, v)
    left = [i for i in changed if i not in reads[i] and i not in updated]
    order: list[int] = []
    while True:
        pick = next((i for i in left if not any(i in reads[j] for j in left if j != i)), None)
        if pick is None:
            return order
        order.append(pick)
        left.remove(pick)


def _reads(lw: FuncLowering, body: Block, v: Value) -> set[int]:
    """The carried values (body argument positions) that computing ``v`` in the loop
    kernel reads, not counting those behind values already in buffers."""
    out: set[int] = set()
    seen: set[Value] = set()
    todo = [v]
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in body.args:
            out.add(body.args.index(x))
        elif lw.buffer_of(x) is None and isinstance(x.owner, Op):
            todo.extend(x.owner.operands)
            for region in x.owner.regions:
                todo.extend(w for o in region.block.ops for w in o.operands)
    return out


def _in_place(lw: FuncLowering, body: Block, i: int) -> Op | None:
    """The dynamic_update_slice that body result ``i`` is when its operand is carried
    value ``i`` and used by nothing else, else None."""
    op = body.ops[-1].operands[i].owner
    if isinstance(op, Op) and op.name == "stablehlo.dynamic_update_slice" \
            and op.operand("operand") is body.args[i] and lw.uses.get(body.args[i]) == 1:
        return op
    return None


def _update_slice(f: Fused, op: Op, buffer: int) -> None:
    """Store ``op``'s update at its clamped start indices into ``buffer``."""
    k = f.k
    update = op.operand("update")
    ushape, oshape = types.shape(update), types.shape(op.result)

    starts = scatter_gather._dynamic_starts(f, op, list(ushape))  # once, not per element

    def store(idx: list[IndexExpr]) -> None:
        at = [k.iadd(s, i) for s, i in zip(starts, idx, strict=True)]
        k.store(f.value(update, idx), buffer, types.elem(op.result), types.size(op.result),
                k.linear(at, oshape))

    _each(k, ushape, store, _rows(op.result))


def _compute(lw: FuncLowering, f: Fused, block: Block, hoisted: Hoists) -> None:
    """The block's reductions and dots, in order, into their scratch buffers (a hoisted
    dot: its time step of the product computed before the loop)."""
    for o in block.ops[:-1]:
        if o in hoisted:
            _time_step(lw, f, *hoisted[o])
        elif o.name == "stablehlo.reduce":
            _reduce(lw, f, o)
        elif o.name == "stablehlo.scatter":
            _scatter(lw, f, o)
        elif o.name == "stablehlo.while":
            _inner_loop(lw, f, o)
        elif o.name == "stablehlo.dot_general":
            for v in o.operands:
                if SCRATCH and lw.buffer_of(v) is None and isinstance(v.owner, Op) \
                        and v.owner in block.ops:
                    _scratch(lw, f, v)
            _dot(lw, f, o)


def _time_step(lw: FuncLowering, f: Fused, h: loop_projection.Hoisted, buf: int) -> None:
    """A hoisted dot: its time step of the product computed before the loop (``buf``)
    into its scratch buffer."""
    r = h.dot.result
    out, shape = _buf(lw, r), types.shape(r)
    _each(f.k, shape, lambda idx: f.k.store(loop_projection.load(f, h, buf, idx), out,
                                            types.elem(r), types.size(r),
                                            f.k.linear(idx, shape)), _rows(r))


def _scratch(lw: FuncLowering, f: Fused, v: Value) -> None:
    """Compute ``v`` into a scratch buffer that later reads of it load from (a dot reads
    each operand element once per element of the other side)."""
    buf = lw.buffer_for(v)
    _copy_each(f.k, types.shape(v), partial(f.value, v), buf, types.elem(v), _rows(v))
    lw.bind(v, buf)


def _copy_each(k: KernelBuilder, shape: tuple[int, ...],
               element: Callable[[list[IndexExpr]], str], buf: int, t: str,
               rows: int | None = None) -> None:
    """``buf[idx] = element(idx)`` at every row-major index ``idx`` of ``shape`` (of the
    work-group's rows along dimension ``rows``, when given)."""
    n = prod(shape)
    _each(k, shape, lambda idx: k.store(element(idx), buf, t, n, k.linear(idx, shape)), rows)


def _load_element(k: KernelBuilder, buf: int, t: str, shape: tuple[int, ...],
                  idx: list[IndexExpr]) -> str:
    """Element ``idx`` of the row-major buffer ``buf`` of ``shape``."""
    return k.load(buf, t, prod(shape), k.linear(idx, shape))


def _each(k: KernelBuilder, shape: Sequence[int],
          store: Callable[[list[IndexExpr]], object], rows: int | None = None) -> None:
    """A foreach over the elements of ``shape`` calling ``store(multi_index)``: one
    ``foreach`` mode per dimension longer than one (the last dimension fastest), so the
    innermost loop runs along contiguous memory without dividing indices.  Along
    dimension ``rows`` (a split kernel's rows, :func:`_rows`), only the work-group's."""
    if prod(shape) == 0:
        return
    split = _ROWS.get() if rows is not None else None
    looped = [d for d, n in enumerate(shape) if n != 1]
    if not looped:
        i = k.fresh("i")
        with k.block(f"foreach {i} = {k.idx(0)}, {k.idx(1)} : index {{"):
            store([0] * len(shape))
        return
    names = {d: k.fresh("i") for d in looped}
    inner = looped[::-1]  # the first foreach mode is the fastest: the last dimension
    los = ", ".join(split.lo if split and d == rows else k.idx(0) for d in inner)
    his = ", ".join(split.hi if split and d == rows else k.idx(shape[d]) for d in inner)
    head = f"foreach ({', '.join(names[d] for d in inner)}) = ({los}), ({his}) : index {{"
    if len(inner) == 1:
        head = f"foreach {names[inner[0]]} = {los}, {his} : index {{"
    with k.block(head):
        store([names.get(d, 0) for d in range(len(shape))])


def _reduce(lw: FuncLowering, f: Fused, op: Op) -> None:
    """A (variadic) reduce: per result element, a sequential loop over the reduced ones."""
    k = f.k
    n_in = len(op.results)
    inputs, inits = op.operands[:n_in], op.operands[n_in:]
    dims = op.ints_attr("dimensions")
    shape = types.shape(inputs[0])
    kept = [d for d in range(len(shape)) if d not in dims]
    rshape = [shape[d] for d in dims]
    dtypes = [types.elem(r) for r in op.results]

    def store(idx: list[IndexExpr]) -> None:
        starts = [f.value(v, []) for v in inits]
        with k.loop(0, prod(rshape), starts, dtypes) as loop:
            ridx = k.delinearize(loop.var, rshape)
            full: list[IndexExpr] = [0] * len(shape)
            for d, i in zip(kept, idx, strict=True):
                full[d] = i
            for d, i in zip(dims, ridx, strict=True):
                full[d] = i
            xs = [f.value(v, full) for v in inputs]
            loop.yields = f.body(op.regions[0].block, [*loop.carried, *xs])
        oshape = types.shape(op.results[0])
        for r, res, t in zip(op.results, loop.results, dtypes, strict=True):
            k.store(res, _buf(lw, r), t, types.size(r), k.linear(idx, oshape))

    _each(k, types.shape(op.results[0]), store, _rows(op.results[0]))


def _dot(lw: FuncLowering, f: Fused, op: Op) -> None:
    """dot_general: per result element, a sequential multiply-add over the contraction
    (:data:`ACCUMULATORS` partial sums, :data:`LANES` when the contraction is contiguous in
    both operands), or a sum of outer products (:func:`_dot_outer`) for results of at
    least :data:`OUTER_MIN` elements otherwise."""
    k = f.k
    lhs, rhs = op.operands
    lb, rb, lc, rc = (_dims(op, f"{side}_{kind}_dimensions")
                      for kind in ("batching", "contracting") for side in ("lhs", "rhs"))
    ls, rs = types.shape(lhs), types.shape(rhs)
    lfree = [d for d in range(len(ls)) if d not in lb + lc]
    rfree = [d for d in range(len(rs)) if d not in rb + rc]
    cshape = [ls[d] for d in lc]
    r = op.result
    t = types.elem(r)

    n = prod(cshape)
    dims = (lb, rb, lc, rc, lfree, rfree)
    if GEMM and _gemm(lw, f, op, dims):
        return
    contiguous = _contiguous(op, dims)
    if types.size(r) >= OUTER_MIN and not contiguous:
        _dot_outer(f, op, _buf(lw, r), dims)
        return
    lanes = ACCUMULATORS if n % ACCUMULATORS == 0 and n >= 2 * ACCUMULATORS else 1
    if contiguous:
        lanes = LANES

    def store(idx: list[IndexExpr]) -> None:
        batch, rest = idx[:len(lb)], idx[len(lb):]
        zero = k.const(0, t)
        with k.loop(0, n, [zero] * lanes, [t] * lanes, step=lanes) as loop:
            for lane in range(lanes):
                cidx = k.delinearize(k.iadd(loop.var, lane), cshape)
                li = _place(len(ls), [(lb, batch), (lfree, rest[:len(lfree)]), (lc, cidx)])
                ri = _place(len(rs), [(rb, batch), (rfree, rest[len(lfree):]), (rc, cidx)])
                a = k.cast(f.value(lhs, li), types.elem(lhs), t)
                b = k.cast(f.value(rhs, ri), types.elem(rhs), t)
                loop.yields.append(k.arith("add", loop.carried[lane], k.arith("mul", a, b, t),
                                           t))
        total = loop.results
        while len(total) > 1:  # pairwise: (a0 + a1) + (a2 + a3)
            total = [k.arith("add", x, y, t) for x, y in zip(total[::2], total[1::2],
                                                              strict=True)]
        k.store(total[0], _buf(lw, r), t, types.size(r), k.linear(idx, types.shape(r)))

    _each(k, types.shape(r), store, _rows(r))


def _gemm(lw: FuncLowering, f: Fused, op: Op, dims: tuple[list[int], ...]) -> bool:
    """A matrix product of two rank-2 operands held in buffers, f32 or f64, as the
    language's ``gemm`` (the register-blocked kernel of
    :mod:`frontend.lower.families.dot.general`, run by the loop's one work-item); False
    (nothing emitted) for other dots."""
    k = f.k
    lhs, rhs = op.operands
    lb, rb, lc, rc, _, _ = dims
    ls, rs = types.shape(lhs), types.shape(rhs)
    t = types.elem(op.result)
    bufs = [lw.buffer_of(lhs), lw.buffer_of(rhs), lw.buffer_of(op.result)]
    if lb or len(ls) != 2 or len(rs) != 2 or t not in ("f32", "f64") \
            or {types.elem(lhs), types.elem(rhs)} != {t} or None in bufs:
        return False
    ta, tb = lc[0] == 0, rc[0] == 1  # lhs stored [K, M], rhs stored [N, K]
    m, kk, n = ls[1 - lc[0]], ls[lc[0]], rs[1 - rc[0]]
    if min(m, n) < GEMM_MIN:
        return False
    # column-major, as the gemm reads it: out^T [N, M] = rhs^T [N, K] @ lhs^T [K, M]
    shapes = [(kk, n) if tb else (n, kk), (m, kk) if ta else (kk, m), (n, m)]
    split = _split_modes(_rows(op.result), ta, tb)
    views, vtypes = [], []
    for buf, (rows, cols), mode in zip((bufs[1], bufs[0], bufs[2]), shapes, split,
                                       strict=True):
        assert buf is not None
        ssa, flat = k.param(buf, t, rows * cols)
        views.append(k.emit(f"expand {ssa}[0 -> {rows}x{cols}] : {flat}", "v"))
        space = ",local" if buf in k.locals else ""  # the loop's own scratch
        vtypes.append(f"memref<{t}x{rows}x{cols}{space}>")
        if mode is not None:
            views[-1], vtypes[-1] = _rows_view(k, views[-1], (t, rows, cols, space), mode)
    one, zero = k.const(1.0, t), k.const(0.0, t)
    k.line(f"gemm.{'t' if tb else 'n'}.{'t' if ta else 'n'} {one}, {views[0]}, "
           f"{views[1]}, {zero}, {views[2]} : {t}, {vtypes[0]}, {vtypes[1]}, {t}, "
           f"{vtypes[2]}")
    return True


def _split_modes(rows: int | None, ta: bool, tb: bool) -> tuple[int | None, ...]:
    """The mode of the rhs, lhs and result views of a split kernel's ``gemm`` that holds
    the work-group's rows (None: the view is read whole), given the result's row
    dimension ``rows`` (0: the lhs's free dimension M, 1: the rhs's N)."""
    if rows == 0:
        return None, 0 if ta else 1, 1
    if rows == 1:
        return 1 if tb else 0, None, 0
    return None, None, None


def _rows_view(k: KernelBuilder, view: str, layout: tuple[str, int, int, str], mode: int
               ) -> tuple[str, str]:
    """The work-group's rows of column-major ``view`` (``layout``: element type, rows,
    columns, memory space) along ``mode``: the subview and its type."""
    split = _ROWS.get()
    assert split is not None
    t, rows, cols, space = layout
    n = split.split.rows_per_group
    at = f"{split.lo}:{n}, :" if mode == 0 else f":, {split.lo}:{n}"
    sub = k.emit(f"subview {view}[{at}] : memref<{t}x{rows}x{cols}{space}>", "v")
    if mode == 0:
        return sub, f"memref<{t}x{n}x{cols},strided<1,{rows}>{space}>"
    return sub, f"memref<{t}x{rows}x{n}{space}>"


def _dot_outer(f: Fused, op: Op, out: int, dims: tuple[list[int], ...]) -> None:
    """dot_general as a sum of outer products: the result zeroed, then per contraction
    index one pass over the result adding its products (the innermost pass runs along
    the result's last dimension: contiguous, vectorizable)."""
    k = f.k
    lhs, rhs = op.operands
    lb, rb, lc, rc, lfree, rfree = dims
    ls, rs = types.shape(lhs), types.shape(rhs)
    r = op.result
    t, shape, size = types.elem(r), types.shape(r), types.size(r)
    cshape = [ls[d] for d in lc]
    _each(k, shape, lambda idx: k.store(k.const(0, t), out, t, size, k.linear(idx, shape)),
          _rows(r))
    with k.loop(0, prod(cshape), [], []) as loop:
        cidx = k.delinearize(loop.var, cshape)

        def add(idx: list[IndexExpr]) -> None:
            batch, rest = idx[:len(lb)], idx[len(lb):]
            li = _place(len(ls), [(lb, batch), (lfree, rest[:len(lfree)]), (lc, cidx)])
            ri = _place(len(rs), [(rb, batch), (rfree, rest[len(lfree):]), (rc, cidx)])
            a = k.cast(f.value(lhs, li), types.elem(lhs), t)
            b = k.cast(f.value(rhs, ri), types.elem(rhs), t)
            at = k.linear(idx, shape)
            k.store(k.arith("add", k.load(out, t, size, at), k.arith("mul", a, b, t), t),
                    out, t, size, at)

        _each(k, shape, add, _rows(r))


def _contiguous(op: Op, dims: tuple[list[int], ...]) -> bool:
    """True for a dot with one contraction dimension, the last (contiguous) of both
    operands and a multiple of :data:`LANES` long (a matrix-vector product, ``x @ W.T``)."""
    lb, rb, lc, rc, lfree, rfree = dims
    ls, rs = types.shape(op.operands[0]), types.shape(op.operands[1])
    return len(lc) == 1 and lc[0] == len(ls) - 1 and rc[0] == len(rs) - 1 \
        and ls[lc[0]] % LANES == 0


def _place(rank: int, parts: list[tuple[list[int], Sequence[IndexExpr]]]) -> list[IndexExpr]:
    out: list[IndexExpr] = [0] * rank
    for dims, idx in parts:
        for d, i in zip(dims, idx, strict=True):
            out[d] = i
    return out


def _dims(op: Op, name: str) -> list[int]:
    return op.struct_ints("dot_dimension_numbers", name)


def _buf(lw: FuncLowering, v: Value) -> int:
    buf = lw.buffer_of(v)
    assert buf is not None
    return buf


def _work(block: Block, in_place: set[Op], hoisted: Mapping[Op, object]) -> int:
    """An estimate of one run of ``block`` in the loop kernel: multiply-adds of its dots,
    elements reduced by its reduces, elements of its other values (of an in-place
    ``dynamic_update_slice``, its update; of a hoisted dot, its result)."""
    total = 0
    for o in block.ops[:-1]:
        if o in in_place:
            total += types.size(o.operand("update"))
        elif o in hoisted:
            total += types.size(o.result)
        elif o.name == "stablehlo.dot_general":
            lc = _dims(o, "lhs_contracting_dimensions")
            shape = types.shape(o.operands[0])
            total += types.size(o.result) * prod(shape[d] for d in lc)
        elif o.name == "stablehlo.reduce":
            total += sum(types.size(v) for v in o.operands[:len(o.results)])
        elif o.name == "stablehlo.while":
            cond, body = o.regions[0].block, o.regions[1].block
            total += (_trip_bound(o) or 1) * (_work(cond, set(), {}) + _work(body, set(), {}))
        else:
            total += sum(types.size(r) for r in o.results)
    return total


def _fits(lw: FuncLowering, block: Block, in_place: set[Op]) -> bool:
    """Every op of ``block`` can run inside the loop kernel, every value is small (a
    ``dynamic_update_slice`` of ``in_place`` only writes its update)."""
    for o in block.ops[:-1]:
        if o in in_place:
            continue
        if any(is_quantized(v.type) for v in (*o.operands, *o.results)):
            return False
        if o.name == "stablehlo.while":
            if not _inner_fits(lw, o):
                return False
            continue
        if o.name in _COMPUTED:
            if o.name == "stablehlo.reduce" and not _scalar_region(o.regions[0].block):
                return False
            if o.name == "stablehlo.dot_general" and not _real(o):
                return False
            if o.name == "stablehlo.scatter" and not _scalar_region(o.regions[0].block):
                return False
        elif o.name not in ELEMENTAL or o.regions and not all(
                _scalar_region(r.block) for r in o.regions):
            return False
        if any(types.size(r) > MAX_ELEMENTS for r in o.results):
            return False
    return True


def _inner_fits(lw: FuncLowering, op: Op) -> bool:
    """A ``while`` inside the loop runs in the kernel as a ``for`` of its trip bound
    (:func:`_trip_bound`) when its condition and body fit and the values it changes are
    small."""
    if _trip_bound(op) is None or any(isinstance(v.type, TokenType) for v in op.operands):
        return False
    cond, body = op.regions[0].block, op.regions[1].block
    in_place = {u for i in range(len(op.operands)) if (u := _in_place(lw, body, i)) is not None}
    changed = [r for r, a, v in zip(op.results, body.args, body.ops[-1].operands, strict=True)
               if v is not a and v.owner not in in_place]
    return _fits(lw, cond, in_place) and _fits(lw, body, in_place) \
        and all(types.size(v) <= MAX_ELEMENTS for v in changed)


def _scalar_region(block: Block) -> bool:
    return all(o.name in ELEMENTAL and not o.regions for o in block.ops[:-1])


def _real(op: Op) -> bool:
    return all(types.elem(v)[0] in "fiub" and types.elem(v) != "i1"
               for v in (*op.operands, op.result))


MAX_INNER_TRIPS = 4096
"""The largest trip bound of a ``while`` nested in a loop kernel."""


def _init_kernel(lw: FuncLowering, inits: list[tuple[Value, int]]) -> Launch:
    """One kernel computing the carried buffers a large loop does not initialize itself
    (:data:`FOLD_MAX_OPS`): one launch instead of one per buffer (diffrax's adaptive
    solve: ~17 broadcasts of constants)."""
    with lw.kernel("while_init") as (k, f):  # foreach copies: any work-group size, so
        for v, c in inits:                       # it merges with the launches before it
            buf = lw.env.pop(v)  # computed from its constants, not read from ``c``
            _store_all(lw, f, v, c)
            lw.env[v] = buf
    return Launch(k.name, tuple(k.params), 1)


def _all_ops(op: Op) -> list[Op]:
    """The ops of ``op``'s regions, nested ones included."""
    return [x for r in op.regions for o in r.block.ops for x in (o, *_all_ops(o))]


def _bind_computed(lw: FuncLowering, ops: Sequence[Op]) -> None:
    """Scratch buffers for the results of the reductions, dots, scatters and nested
    loops of ``ops`` (and of the blocks of those loops)."""
    for o in ops:
        if o.name in _COMPUTED:
            for r in o.results:
                lw.bind(r, lw.buffer_for(r))
        if o.name == "stablehlo.while":
            _bind_computed(lw, o.regions[0].block.ops + o.regions[1].block.ops)


def _inner_loop(lw: FuncLowering, f: Fused, op: Op) -> None:
    """A ``while`` in the loop's body: its carried buffers (the buffers of its results)
    set from its operands, then at most :func:`_trip_bound` iterations, each evaluating
    the condition and, while it holds, the body (:func:`_iteration`)."""
    k = f.k
    body = op.regions[1].block
    carry = []
    kept = _READ_ONLY.get()
    for v, r, a, new in zip(op.operands, op.results, body.args, body.ops[-1].operands,
                            strict=True):
        held = lw.buffer_of(v)
        if new is a and held is not None and held in kept:  # read only: no copy
            lw.bind(r, held)
            carry.append(held)
            continue
        carry.append(_buf(lw, r))
        _copy_each(k, types.shape(v), partial(f.value, v), carry[-1], types.elem(v), _rows(r))
    written = _bind_blocks(lw, op, carry, computed=False)
    bound = _trip_bound(op)
    assert bound is not None
    _iterations(lw, f, op, carry, written, {}, None, bound)


def _read_only(lw: FuncLowering, op: Op, carry: list[int]) -> frozenset[int]:
    """The buffers loop kernel ``op`` never writes once its loop runs: those of the
    carried values its body passes through unchanged and of the values it captures.  A
    nested loop passes them through by reference (:func:`_inner_loop`): equinox's loops
    carry a model's weights through every nested loop, a copy per entry (and a uniform
    copy would keep a split loop on one work-group)."""
    body = op.regions[1].block
    passed = {c for c, a, v in zip(carry, body.args, body.ops[-1].operands, strict=True)
              if v is a}
    return frozenset(passed | {b for v in loops.captured(op) if (b := lw.buffer_of(v)) is not None})


@contextmanager
def _reading_only(buffers: frozenset[int]) -> Iterator[None]:
    """Build a loop kernel whose loop never writes ``buffers`` (:func:`_read_only`)."""
    token = _READ_ONLY.set(buffers)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


_READ_ONLY: ContextVar[frozenset[int]] = ContextVar("device_loop_read_only",
                                                     default=frozenset())
"""The buffers the loop kernel being built never writes once its loop runs."""


def _trip_bound(op: Op) -> int | None:
    """The most iterations ``while`` op can run, from its condition alone: the least trip
    count of the counted compares the condition is a conjunction of (a counter starting
    at a constant, stepped by a constant, against a constant: jax's ``fori_loop`` and
    equinox's bounded loops), at most :data:`MAX_INNER_TRIPS`; None when there is none."""
    cond = op.regions[0].block
    counts = [n for c in _conjuncts(cond.ops[-1].operands[0])
              if (n := loops.constant_count(op, c)) is not None]
    return min(counts) if counts and min(counts) <= MAX_INNER_TRIPS else None


def _conjuncts(v: Value) -> list[Op]:
    """The compares whose conjunction predicate ``v`` is, looking through ``and``, i1
    converts, reductions of a scalar over no dimension and ``x != false``."""
    o = v.owner
    if not isinstance(o, Op):
        return []
    if o.name == "stablehlo.and" and types.elem(v) == "i1":
        return _conjuncts(o.operands[0]) + _conjuncts(o.operands[1])
    if o.name == "stablehlo.convert" and types.elem(o.operands[0]) == "i1":
        return _conjuncts(o.operands[0])
    if o.name == "stablehlo.reduce" and len(o.operands) == 2 \
            and not o.ints_attr("dimensions", []) and types.shape(o.operands[0]) == ():
        return _conjuncts(o.operands[0]) if _is_bool(o.operands[1], False) and \
            o.regions[0].block.ops[0].name == "stablehlo.or" else []
    if o.name == "stablehlo.compare":
        a, b = o.operands
        if str(o.attr("comparison_direction")) == "NE" and types.elem(a) == "i1" \
                and _is_bool(b, False):
            return _conjuncts(a)
        return [o]
    return []


def _is_bool(v: Value, value: bool) -> bool:
    """Whether ``v`` is the i1 constant ``value`` (or a broadcast of it to a scalar)."""
    o = v.owner
    while isinstance(o, Op) and o.name == "stablehlo.broadcast_in_dim" \
            and types.shape(o.result) == ():
        v, o = o.operands[0], o.operands[0].owner
    if not isinstance(o, Op) or o.name != "stablehlo.constant" or types.elem(v) != "i1":
        return False
    return bool(o.dense_attr("value").reshape(-1)[0]) is value


def _scatter(lw: FuncLowering, f: Fused, op: Op) -> None:
    """A scatter in the loop kernel: the inputs into the results' buffers, then every
    update element in order (one work-item: the sequential result for any update
    computation and repeated indices; an element outside the result is dropped)."""
    k = f.k
    outs = [_buf(lw, r) for r in op.results]
    rows = _rows(op.results[0])
    for v, out in zip(op.operand_group("inputs"), outs, strict=True):
        _copy_each(k, types.shape(v), partial(f.value, v), out, types.elem(v), rows)
    _each(k, types.shape(op.operand_group("updates")[0]),
          lambda uidx: scatter_gather.apply_update(f, op, outs, uidx),
          None if rows is None else row_split.scatter_update_dim(op, rows))


_READ_THROUGH = ("stablehlo.broadcast_in_dim", "stablehlo.reshape")
"""Captured values the loop reads through to their operand (an index map, no work)."""


def _materialize_captured(lw: FuncLowering, v: Value) -> None:
    """Compute a value the loop uses but does not define into a buffer before it, unless
    it is free to recompute where it is read (a constant, an iota, a broadcast or reshape
    of one): an invariant chain of elemental ops fused into the loop would be recomputed
    every iteration (a concatenation of a cell's weights feeding its ``dot`` made the
    product a sum of outer products choosing between the weights per element, ~30x
    slower than the ``gemm`` over a buffer)."""
    while isinstance(v.owner, Op) and v.owner.name in _READ_THROUGH:
        v = v.owner.operands[0]
    if isinstance(v.owner, Op) and v.owner.name not in CHEAP:
        lw.materialize(v)


PROLOGUE_MAX = 16384
"""Captured transposes of at most this many elements are computed by the loop's first
launch (or its init kernel), not by a launch of their own (:func:`_computed_first`)."""


def _computed_first(lw: FuncLowering, v: Value) -> bool:
    """Whether captured value ``v`` is a small transpose of a buffer (a weight
    :mod:`frontend.lower.families.dot.pretranspose_weights` transposed for the loop's
    gemm): the loop computes it before its first trip, with the carried values it
    initializes (a launch costs ~25 us on PoCL, more than one work-item's copy), and
    is bound to its buffer before the loop kernels are built reading it there."""
    op = v.owner
    return isinstance(op, Op) and op.name == "stablehlo.transpose" \
        and lw.buffer_of(v) is None and types.size(v) <= PROLOGUE_MAX \
        and lw.buffer_of(op.operands[0]) is not None
