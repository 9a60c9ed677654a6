"""Row fusion: reductions over the trailing dimensions and their broadcast consumers in one
kernel (softmax, log-softmax, layernorm, RMS norm, logsumexp).

A reduce over the trailing dimensions of ``x: [R..., L...]`` gives one scalar per row.  When
its result reaches its consumers only through *row-preserving* ops (elementwise ops on the
row shape ``R`` or on ``x``'s shape, broadcasts and reshapes between ``R`` (padded with
ones) and ``x``'s shape that keep the row dimensions in place, and further reduces of
full-shaped values over the same dimensions), every read of the reduce result inside the
group is at the row being computed.  The group then runs as one kernel per block of rows:
each reduce folds its row in order (its input computed from the earlier reduces' row
values, bound as scalars), then the group's *root* (the one value used outside, shaped like
``x`` or like a row) is computed and stored.  The planner works like epilogue fusion
(``fused.plan_epilogue``): the reduce is lowered again where the root is defined.

Many rows or short rows: one work-item per row (rows spread over the work-items and
work-groups).  Few long rows (``COOP_MIN`` elements or more, fewer than ``COOP_ROWS``
rows): a work-group per row, its work-items fold blocks of the row into local memory and
a tree combines them (``reduce_coop``); the elementwise part is split among the
work-items.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod

from frontend.ir.core import Op, Value
from frontend.ir.quant import is_quantized
from frontend.lower.core import types
from frontend.lower.core.builder import CHUNK, IndexExpr, KernelBuilder
from frontend.lower.core.driver import FuncLowering, Readers
from frontend.lower.core.fused import ELEMENTWISE, Epilogue, Fused
from frontend.lower.families.reduce import coop as reduce_coop

ENABLED = True
"""Row fusion on (benchmarks switch it off to compare)."""
COOP_MIN = 512
"""Rows at least this long run cooperatively (a work-group per row)..."""
COOP_ROWS = 64
"""...when there are fewer rows than this.  With more rows, one work-item per row keeps
every work-item busy without barriers (on PoCL: softmax over 256 x 1024 takes 476 us
that way against 1308 us cooperatively, layernorm 230 against 324)."""
UNROLL = 16
"""Most independent accumulators per row in the one-work-item-per-row kernel (the largest
power of two up to it dividing the row): LLVM's SLP vectoriser turns them into one
vector register (softmax 256 x 1024 on PoCL, AVX-512: its row kernel 0.163 ms with 8,
0.134 ms with 16)."""

_FULL, _ROW = "full", "row"


@dataclass(frozen=True)
class RowGroup(Epilogue):
    """A row-fusion group: ``source`` is the first reduce's result, ``root`` the value the
    kernel stores, ``values`` everything in between; ``reduces`` in program order, ``rank``
    the number of row dimensions."""

    reduces: tuple[Op, ...] = ()
    rank: int = 0
    stash: Value | None = None
    """A reduce input computed in the group and read again by the root (``_stash``)."""


def plan_rows(source: Value, readers: Callable[[Value], Readers], uses: dict[Value, int],
              claimed: set[Value]) -> RowGroup | None:
    """The longest row-fusion group that starts with the reduce defining ``source`` among
    the ops after it (those reading the group: ``readers``; same rules as
    ``fused.plan_epilogue``: a prefix whose values but the last are used only inside it),
    or None."""
    op = source.owner
    assert isinstance(op, Op)
    if not ENABLED or not _trailing(op) or op.results[0] in claimed:
        return None
    shape = types.shape(op.operand_group("inputs")[0])
    rank = len(shape) - len(op.ints_attr("dimensions"))
    kinds = {op.results[0]: _ROW}
    outstanding = {op.results[0]: uses.get(op.results[0], 0)}
    live = 1 if outstanding[op.results[0]] else 0
    chain: list[Op] = []
    best = 0
    later = readers(op.results[0])
    for o in later:
        mine = [v for v in o.operands if v in kinds]
        kind = _joins(o, mine, kinds, (shape, rank), claimed)
        if kind is None:
            break
        for v in mine:
            outstanding[v] -= 1
            live -= outstanding[v] == 0
        result = o.results[0]
        later.watch(result)
        kinds[result] = kind
        outstanding[result] = uses.get(result, 0)
        live += outstanding[result] > 0
        chain.append(o)
        if live == 1 and outstanding[result] > 0:
            best = len(chain)
    if best == 0:
        return None
    ops = [op, *chain[:best]]
    root, values = ops[-1].results[0], frozenset(o.results[0] for o in ops[:-1])
    reduces = tuple(o for o in ops if o.name == "stablehlo.reduce")
    inputs = [r.operand_group("inputs")[0] for r in reduces]
    stash = next((x for x in inputs if x in values and uses.get(x, 0) > 1
                  and types.elem(x) == types.elem(root) and types.shape(root) == shape), None)
    return RowGroup(op.results[0], root, values, reduces, rank, stash)


def _trailing(op: Op, variadic: bool = False) -> bool:
    """A reduce over the trailing dimensions of rows longer than one element (one result
    unless ``variadic``)."""
    if (len(op.results) != 1 and not variadic) or any(
            is_quantized(r.type) for r in op.results):
        return False
    shape = types.shape(op.operand_group("inputs")[0])
    dims = sorted(op.ints_attr("dimensions"))
    rank = len(shape) - len(dims)
    return (bool(dims) and dims == list(range(rank, len(shape)))
            and prod(shape[rank:]) > 1 and prod(shape) > 0)


def _joins(o: Op, mine: list[Value], kinds: dict[Value, str],
           full: tuple[tuple[int, ...], int], claimed: set[Value]) -> str | None:
    """The kind of ``o``'s result when it joins the group (reads group values ``mine``)."""
    shape, rank = full
    if len(o.results) != 1 or o.results[0] in claimed or any(
            is_quantized(v.type) for v in (*o.operands, *o.results)):
        return None
    out = types.shape(o.results[0])
    kind = _FULL if out == shape else _ROW if _row_shape(out, shape, rank) else None
    if kind is None:
        return None
    if o.name in ELEMENTWISE:
        return kind if all(types.shape(v) == out for v in mine) else None
    if o.name == "stablehlo.reduce":
        ok = (_trailing(o) and types.shape(mine[0]) == shape
              and mine == [o.operand_group("inputs")[0]])
        return _ROW if ok else None
    src = mine[0]
    if o.name == "stablehlo.broadcast_in_dim":
        dims = o.ints_attr("broadcast_dimensions")
        if kinds[src] == _FULL:
            return kind if dims == list(range(len(out))) and out == shape else None
        return kind if dims[:rank] == list(range(rank)) else None
    if o.name == "stablehlo.reshape":
        return kind if kinds[src] == kind and (kind == _ROW or out == types.shape(src)) \
            else None
    return None


def _row_shape(out: tuple[int, ...], shape: tuple[int, ...], rank: int) -> bool:
    """``out`` is the row shape padded with ones (no longer than ``shape``)."""
    return (rank <= len(out) <= len(shape) and out[:rank] == shape[:rank]
            and all(d == 1 for d in out[rank:]))


def lower_rows(lw: FuncLowering, group: RowGroup) -> None:
    """The group's kernel; binds its root."""
    first = group.reduces[0]
    shape = types.shape(first.operand_group("inputs")[0])
    rows, length = prod(shape[:group.rank]), prod(shape[group.rank:])
    out = lw.buffer_for(group.root)
    name = f"rows_{group.root.op.name.split('.')[-1]}"
    with lw.kernel(name) as (k, f):
        if length >= COOP_MIN and rows < COOP_ROWS:
            _cooperative(k, f, group, shape, out)
            groups = rows
        else:
            per = max(1, CHUNK // length)
            _per_row(k, f, group, (shape, per), out)
            groups = -(-rows // per)
    lw.launch_last(groups)
    lw.bind(group.root, out)


def fold_rows_into(lw: FuncLowering, op: Op, outs: list[int]) -> bool:
    """Lower a reduce over the trailing dimensions of many rows (``COOP_ROWS`` or more)
    as a row kernel of its own storing result i into ``outs[i]``: one work-item per row
    with up to ``UNROLL`` accumulators per result, which vectorise, instead of a
    work-group per row, whose work-items PoCL runs one after the other (512 x 512 f32:
    ``x.max(1)`` ~130 -> ~40 us, a variadic argmax ~185 -> ~60 us).  False (nothing
    lowered) for other reduces."""
    if not ENABLED or not _trailing(op, variadic=True):
        return False
    shape = types.shape(op.operand_group("inputs")[0])
    rank = len(shape) - len(op.ints_attr("dimensions"))
    rows, length = prod(shape[:rank]), prod(shape[rank:])
    if rows < COOP_ROWS:
        return False
    per = max(1, CHUNK // length)
    with lw.kernel("rows_reduce") as (k, f):
        lo = k.imul(reduce_coop.group(k, -(-rows // per)), per)
        hi = reduce_coop.clamp(k, k.iadd(lo, per), rows)
        r = k.fresh("r")
        with k.block(f"foreach {r} = {k.idx(lo)}, {k.idx(hi)} : index {{"):
            values = _fold_row(k, f, op, k.delinearize(r, shape[:rank]), length)
            for result, value, out in zip(op.results, values, outs, strict=True):
                k.store(value, out, types.elem(result), rows, r)
    lw.launch_last(-(-rows // per))
    return True


SLICE_MIN = 16384
"""Rows at least this long, fewer than ``COOP_ROWS`` of them, are folded in slices."""
SLICES = 64
"""Slices (work-items) a row-slice fold aims at across all rows."""


def fold_slices_into(lw: FuncLowering, op: Op, outs: list[int]) -> bool:
    """Lower a reduce over the trailing dimensions of few long rows (``x.min()`` included)
    as slices of each row folded by one work-item each (up to ``UNROLL`` accumulators,
    vectorised), then their partial results folded per row (``coop.fold_partials``):
    PoCL runs a cooperative work-group's work-items one after the other (``x.min()`` of
    512 x 512 f32: ~70 -> ~20 us).  False (nothing lowered) for other reduces."""
    if not ENABLED or not _trailing(op, variadic=True):
        return False
    shape = types.shape(op.operand_group("inputs")[0])
    rank = len(shape) - len(op.ints_attr("dimensions"))
    rows, length = prod(shape[:rank]), prod(shape[rank:])
    slices = 1
    while rows * slices * 2 <= SLICES and length % (slices * 2 * UNROLL) == 0:
        slices *= 2
    if rows >= COOP_ROWS or length < SLICE_MIN or slices == 1:
        return False
    chunk = length // slices
    partials = [lw.new_buffer(types.elem(r), (rows, slices)) for r in op.results]
    with lw.kernel("rows_partials") as (k, f):
        v = k.fresh("v")
        g = reduce_coop.group(k, rows * slices)
        with k.block(f"foreach {v} = {k.idx(g)}, {k.idx(k.iadd(g, 1))} : index {{"):
            ridx = k.delinearize(k.idiv(v, slices), shape[:rank])
            part = (k.imul(k.irem(v, slices), chunk), False)
            values = _fold_row(k, f, op, ridx, chunk, part)
            for result, value, out in zip(op.results, values, partials, strict=True):
                k.store(value, out, types.elem(result), rows * slices, v)
    lw.launch_last(rows * slices)
    reduce_coop.fold_partials(lw, op, partials, outs, slices)
    return True


def _per_row(k: KernelBuilder, f: Fused, group: RowGroup, sizes: tuple[tuple[int, ...], int],
             out: int) -> None:
    """Work-group g takes rows [g * per, + per); one work-item per row."""
    shape, per = sizes
    rank = group.rank
    rows, length = prod(shape[:rank]), prod(shape[rank:])
    lo = k.imul(reduce_coop.group(k, -(-rows // per)), per)
    hi = reduce_coop.clamp(k, k.iadd(lo, per), rows)
    r = k.fresh("r")
    with k.block(f"foreach {r} = {k.idx(lo)}, {k.idx(hi)} : index {{"):
        row = (shape, k.delinearize(r, shape[:rank]), r)
        for red in group.reduces:
            _write_stash(k, f, group, row, out, red)
            f.bound[red.results[0]] = _fold_row(k, f, red, row[1], length)[0]
        _write_root(k, f, group, row, out)
    _forget(f, group)


def _fold_row(k: KernelBuilder, f: Fused, red: Op, ridx: list[IndexExpr],
              length: int, part: tuple[IndexExpr, bool] = (0, True)) -> list[str]:
    """The reduce's values for row ``ridx``: up to ``UNROLL`` accumulators (of every
    result) over the row (as many as split it evenly), combined in order, then folded
    into the init values.  ``part``: (offset, fold_init): fold only the ``length``
    elements of the row from ``offset`` on, without the init values when not
    ``fold_init`` (a slice's partial result)."""
    xs = red.operand_group("inputs")
    ts = [types.elem(r) for r in red.results]
    tail = types.shape(xs[0])[len(ridx):]
    offset, fold_init = part

    def at(i: IndexExpr) -> list[str]:
        idx = [*ridx, *k.delinearize(k.iadd(offset, i), tail)]
        return [f.value(x, idx) for x in xs]

    n = len(xs)
    unroll = next((u for u in (UNROLL, 8, 4, 2) if u <= UNROLL and length % u == 0
                   and length >= 2 * u), 1)
    inits = [v for j in range(unroll) for v in at(j)]
    with k.loop(unroll, length, inits, ts * unroll, step=unroll) as loop:
        ys = []
        for j in range(unroll):
            with k.scope():
                ys += _combine(f, red, [*loop.carried[j * n:(j + 1) * n],
                                        *at(k.iadd(loop.var, j))])
        loop.yields = ys
    acc = loop.results[:n]
    for j in range(1, unroll):
        with k.scope():
            acc = _combine(f, red, [*acc, *loop.results[j * n:(j + 1) * n]])
    if not fold_init:
        return acc
    inits = [f.value(v, []) for v in red.operand_group("init_values")]
    with k.scope():
        return _combine(f, red, [*inits, *acc])


def _combine(f: Fused, red: Op, args: list[str]) -> list[str]:
    """The reduce body on two scalars."""
    block = red.regions[0].block
    results = f.body(block, args)
    for a in block.args:
        f.bound.pop(a, None)
    return results


def _write_stash(k: KernelBuilder, f: Fused, group: RowGroup,
                 row: tuple[tuple[int, ...], list[IndexExpr], IndexExpr], out: int,
                 red: Op, var: str | None = None) -> None:
    """Before ``red`` folds the group's stash (a reduce input computed in the group that
    the root reads again: softmax's ``exp(x - max)``), compute the stash's row into the
    output (a loop without carried values, so it vectorizes) and read it from there from
    now on."""
    x = group.stash
    if x is None or red.operand_group("inputs")[0] is not x:
        return
    shape, _, r = row
    t, n, length = types.elem(x), prod(shape), prod(shape[group.rank:])
    _row_pass(k, f, group, row, (x, out), var)

    def load(idx: Sequence[IndexExpr]) -> str:
        at = k.linear(list(idx)[group.rank:], shape[group.rank:])
        return k.load(out, t, n, k.iadd(k.imul(r, length), at))

    f.redirect[x] = load


def _write_root(k: KernelBuilder, f: Fused, group: RowGroup,
                row: tuple[tuple[int, ...], list[IndexExpr], IndexExpr], out: int,
                var: str | None = None) -> None:
    """Store the row's root: every element of a full-shaped root, the one element of a
    row-shaped root."""
    shape, ridx, r = row
    root_shape = types.shape(group.root)
    if root_shape == shape:
        _row_pass(k, f, group, row, (group.root, out), var)
        return
    value = f.value(group.root, [*ridx, *[0] * (len(root_shape) - group.rank)])
    k.store(value, out, types.elem(group.root), prod(root_shape), r)


def _row_pass(k: KernelBuilder, f: Fused, group: RowGroup,
              row: tuple[tuple[int, ...], list[IndexExpr], IndexExpr], what: tuple[Value, int],
              var: str | None) -> None:
    """out[row, i] = v[row, i] for every position i of the row: a ``foreach`` over the
    work-group's work-items when ``var`` names its variable, else a loop."""
    shape, ridx, r = row
    v, out = what
    rank = group.rank
    length = prod(shape[rank:])
    head = f"foreach {var} = {k.idx(0)}, {k.idx(length)} : index {{"

    def store(i: str) -> None:
        idx = [*ridx, *k.delinearize(i, shape[rank:])]
        k.store(f.value(v, idx), out, types.elem(v), prod(shape), k.iadd(k.imul(r, length), i))

    if var is None:
        with k.loop(0, length, [], []) as loop:
            store(loop.var)
    else:
        with k.block(head):
            store(var)


def _forget(f: Fused, group: RowGroup) -> None:
    """Drop the group's bindings from ``f``."""
    for red in group.reduces:
        del f.bound[red.results[0]]
    f.redirect.clear()


def _cooperative(k: KernelBuilder, f: Fused, group: RowGroup, shape: tuple[int, ...],
                 out: int) -> None:
    """Work-group g takes row g: each reduce folds the row cooperatively
    (``reduce_coop.fold_into_local``); every work-item reads the row's value back."""
    rank = group.rank
    length = prod(shape[rank:])
    k.attributes = f"work_group_size({reduce_coop.WG},1)"
    r = reduce_coop.group(k, prod(shape[:rank]))
    row = (shape, k.delinearize(r, shape[:rank]), r)
    dims = list(range(rank, len(shape)))
    for red in group.reduces:
        _write_stash(k, f, group, row, out, red, k.fresh("l"))
        scratch = reduce_coop.fold_into_local(k, f, red, dims, row[1], length)
        total = reduce_coop.load_local(k, scratch[0], types.elem(red.results[0]), 0)
        init = f.value(red.operand_group("init_values")[0], [])
        f.bound[red.results[0]] = _combine(f, red, [init, total])[0]
    if types.shape(group.root) == shape:
        _write_root(k, f, group, row, out, k.fresh("l"))
    else:
        one = k.fresh("l")
        with k.block(f"foreach {one} = {k.idx(0)}, {k.idx(1)} : index {{"):
            _write_root(k, f, group, row, out)
    _forget(f, group)
