"""Cooperative stablehlo.reduce: a work-group of ``WG`` work-items folds each output.

Work-group ``g`` takes output ``g / slices`` and slice ``g % slices`` of the reduced range
(``slices > 1`` only when there are few outputs, so both cores get work).  Work-item ``l``
folds the slice's elements ``l, l + WG, ...`` (consecutive work-items read consecutive
elements) into local memory; a tree of ``foreach`` levels combines them (``insert-barrier``
puts the barriers between the levels); one work-item folds the init value with the
result.  With several slices the partial results are folded by a second kernel.  The
body runs as scalar code, so any (associative) body works: integer, min/max and logical
folds are exact, float sums differ from a sequential fold only by rounding.
"""

from __future__ import annotations

from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused

WG = 64
"""Work-items per work-group (a power of two)."""
BLOCKED = True
"""Work-items fold contiguous blocks (CPU caches and PoCL's work-item loops like them)
rather than the strided elements l, l + WG, ... (coalesced on GPUs)."""
UNROLL = 4
"""Independent accumulators per work-item when every block is full."""
COLUMN_GROUPS = 16
"""Work-groups (at most) sharing the work-items of a column reduction."""
TARGET_GROUPS = 64
"""Split the reduced range into slices until there are about this many work-groups."""
UNROLL_STACKED = 64
"""A column reduction of at most this many positions over a concatenation along a
reduced dimension (the mean of a recurrent net's stacked outputs) unrolls its loop, so
each position reads its input directly: in a loop, every element picked its input by a
tree of branches."""


def element_index(k: KernelBuilder, op: Op, dims: list[int], oidx: list[IndexExpr],
                  r: IndexExpr) -> list[IndexExpr]:
    """The input index of reduced position ``r`` (row-major over ``dims``) of output
    ``oidx``."""
    in_shape = types.shape(op.operand_group("inputs")[0])
    kept = [d for d in range(len(in_shape)) if d not in dims]
    full: list[IndexExpr] = [0] * len(in_shape)
    for d, e in zip(kept, oidx, strict=True):
        full[d] = e
    for d, e in zip(dims, k.delinearize(r, [in_shape[d] for d in dims]), strict=True):
        full[d] = e
    return full


def cooperative(lw: FuncLowering, op: Op, dims: list[int], outs: list[int]) -> None:
    """Fold every output with a work-group (see the module docstring).  The caller first
    offers a reduce over the trailing dimensions to the row kernels (``rows.fold_rows_into``,
    ``fold_slices_into``: many rows, or few long ones in slices)."""
    in_shape = types.shape(op.operand_group("inputs")[0])
    length = prod(in_shape[d] for d in dims)
    n = prod(types.shape(op.results[0]))
    slices = min(-(-TARGET_GROUPS // n), max(1, length // (8 * WG)))
    chunk = -(-length // slices)
    slices = -(-length // chunk)
    if slices == 1:
        _kernel(lw, op, dims, outs, (length, chunk, 1))
        return
    partials = [lw.new_buffer(types.elem(r), (n, slices)) for r in op.results]
    _kernel(lw, op, dims, partials, (length, chunk, slices))
    fold_partials(lw, op, partials, outs, slices)


def _kernel(lw: FuncLowering, op: Op, dims: list[int], outs: list[int],
            sizes: tuple[int, int, int]) -> None:
    """One work-group per (output, slice); writes outs[output * slices + slice]."""
    length, chunk, slices = sizes
    n = prod(types.shape(op.results[0]))
    with lw.kernel("reduce_wg") as (k, f):
        k.attributes = f"work_group_size({WG},1)"
        g = k.emit("group_id", "g")
        o, s = k.delinearize(g, (n, slices))
        oidx = k.delinearize(o, types.shape(op.results[0]))
        scratch = _fold_slice(k, f, op, dims, oidx, (k.imul(s, chunk), chunk, length))
        _finish(k, f, op, scratch, outs, (g, n * slices, slices == 1))
    lw.launch_last(n * slices)


def fold_into_local(k: KernelBuilder, f: Fused, op: Op, dims: list[int],
                    oidx: list[IndexExpr], length: int) -> list[str]:
    """In a kernel of ``WG`` work-items: fold the ``length`` reduced elements of output
    ``oidx`` of reduce ``op`` (without its init values) into element 0 of the returned
    local arrays, one per result."""
    return _fold_slice(k, f, op, dims, oidx, (0, length, length))


def _fold_slice(k: KernelBuilder, f: Fused, op: Op, dims: list[int], oidx: list[IndexExpr],
                span: tuple[IndexExpr, int, int]) -> list[str]:
    """Fold the reduced positions [lo, min(lo + chunk, length)) into scratch[0]."""
    lo, chunk, length = span
    ts = [types.elem(r) for r in op.results]
    hi = clamp(k, k.iadd(lo, chunk), length)
    sub = -(-chunk // WG) if BLOCKED else 1
    count = clamp(k, k.idiv(k.iadd(k.isub(hi, lo), sub - 1), sub), WG)
    scratch = [k.emit(f"alloca -> memref<{t}x{WG},local>", "a") for t in ts]
    if BLOCKED and chunk % WG == 0 and length % chunk == 0 and sub % UNROLL == 0 \
            and sub >= 2 * UNROLL:
        _fold_unrolled(k, f, op, dims, oidx, (lo, sub), scratch)
    else:
        _fold_parts(k, f, op, dims, oidx, (lo, hi, sub), scratch)
    _tree(k, f, op, scratch, count)
    return scratch


def group(k: KernelBuilder, groups: int) -> IndexExpr:
    """The work-group's id modulo the launch's ``groups``: bounded, so the back end can
    use 32-bit index arithmetic (a group launched beyond them repeats one's work)."""
    return k.irem(k.emit("group_id", "g"), groups)


def clamp(k: KernelBuilder, a: IndexExpr, b: int) -> IndexExpr:
    """min(a, b) on indices, folded."""
    if isinstance(a, int):
        return min(a, b)
    return k.select(k.cmp("lt", a, k.idx(b), "index"), a, k.idx(b), "index")


def load_local(k: KernelBuilder, a: str, t: str, i: IndexExpr) -> str:
    """Element ``i`` of a ``WG``-element local array of ``t``."""
    return k.emit(f"load {a}[{k.idx(i)}] : memref<{t}x{WG},local>", "x")


def _store_local(k: KernelBuilder, v: str, a: str, t: str, i: IndexExpr) -> None:
    k.line(f"store {v}, {a}[{k.idx(i)}] : memref<{t}x{WG},local>")


def _fold_parts(k: KernelBuilder, f: Fused, op: Op, dims: list[int],
                oidx: list[IndexExpr], span: tuple[IndexExpr, IndexExpr, int],
                scratch: list[str]) -> None:
    """scratch[l] = fold of the slice's elements l, l + WG, ... (``sub == 1``) or of its
    block [l * sub, (l + 1) * sub) (for l < count)."""
    lo, hi, sub = span
    inputs = op.operand_group("inputs")
    ts = [types.elem(r) for r in op.results]
    lid = k.fresh("l")
    with k.block(f"foreach {lid} = {k.idx(0)}, {k.idx(WG)} : index {{"):
        first = k.iadd(lo, k.imul(lid, sub))
        end = hi if sub == 1 else k.select(
            k.cmp("lt", k.idx(k.iadd(first, sub)), k.idx(hi), "index"),
            k.idx(k.iadd(first, sub)), k.idx(hi), "index")
        with k.block(f"if {k.cmp('lt', k.idx(first), k.idx(hi), 'index')} {{"):
            xs = [f.value(v, element_index(k, op, dims, oidx, first)) for v in inputs]
            with k.loop(k.iadd(first, 1 if sub > 1 else WG), end, xs, ts,
                        step=None if sub > 1 else WG) as loop:
                ys = [f.value(v, element_index(k, op, dims, oidx, loop.var)) for v in inputs]
                _unbind(f, op)
                loop.yields = f.body(op.regions[0].block, loop.carried + ys)
            for r, a, t in zip(loop.results, scratch, ts, strict=True):
                _store_local(k, r, a, t, lid)


def _fold_unrolled(k: KernelBuilder, f: Fused, op: Op, dims: list[int],
                   oidx: list[IndexExpr], span: tuple[IndexExpr, int],
                   scratch: list[str]) -> None:
    """Every work-item's block is full (``sub`` elements, a multiple of ``UNROLL``): fold
    it with ``UNROLL`` independent accumulators (elements j, j + UNROLL, ...), then combine
    them in order; scratch[l] = the result."""
    lo, sub = span
    inputs = op.operand_group("inputs")
    ts = [types.elem(r) for r in op.results]
    nres = len(ts)
    lid = k.fresh("l")
    with k.block(f"foreach {lid} = {k.idx(0)}, {k.idx(WG)} : index {{"):
        first = k.iadd(lo, k.imul(lid, sub))

        def at(base: IndexExpr, j: int) -> list[str]:
            return [f.value(v, element_index(k, op, dims, oidx, k.iadd(base, j)))
                    for v in inputs]

        inits = [x for j in range(UNROLL) for x in at(first, j)]
        with k.loop(k.iadd(first, UNROLL), k.iadd(first, sub), inits, ts * UNROLL,
                    step=UNROLL) as loop:
            yields: list[str] = []
            for j in range(UNROLL):
                ys = at(loop.var, j)
                _unbind(f, op)
                with k.scope():  # the body once per accumulator, not memoized across
                    yields += f.body(op.regions[0].block,
                                     loop.carried[j * nres:(j + 1) * nres] + ys)
            loop.yields = yields
        acc = loop.results[:nres]
        for j in range(1, UNROLL):
            _unbind(f, op)
            with k.scope():
                acc = f.body(op.regions[0].block, acc + loop.results[j * nres:(j + 1) * nres])
        for r, a, t in zip(acc, scratch, ts, strict=True):
            _store_local(k, r, a, t, lid)


def _unbind(f: Fused, op: Op) -> None:
    """Forget the body's arguments (other bound values, e.g. row fusion's, stay)."""
    for a in op.regions[0].block.args:
        f.bound.pop(a, None)


def _tree(k: KernelBuilder, f: Fused, op: Op, scratch: list[str], count: IndexExpr) -> None:
    """Combine scratch[0..count) into scratch[0], halving the live range per level."""
    ts = [types.elem(r) for r in op.results]
    half = WG // 2
    while half >= 1:
        lid = k.fresh("l")
        with k.block(f"foreach {lid} = {k.idx(0)}, {k.idx(half)} : index {{"):
            other = k.iadd(lid, half)
            with k.block(f"if {k.cmp('lt', k.idx(other), k.idx(count), 'index')} {{"):
                xs = [load_local(k, a, t, lid) for a, t in zip(scratch, ts, strict=True)]
                ys = [load_local(k, a, t, other) for a, t in zip(scratch, ts, strict=True)]
                _unbind(f, op)
                for r, a, t in zip(f.body(op.regions[0].block, xs + ys), scratch, ts,
                                   strict=True):
                    _store_local(k, r, a, t, lid)
        half //= 2


def _finish(k: KernelBuilder, f: Fused, op: Op, scratch: list[str], outs: list[int],
            where: tuple[str, int, bool]) -> None:
    """One work-item stores scratch[0] (folded into the init values when ``final``)."""
    at, size, final = where
    ts = [types.elem(r) for r in op.results]
    lid = k.fresh("l")
    with k.block(f"foreach {lid} = {k.idx(0)}, {k.idx(1)} : index {{"):
        xs = [load_local(k, a, t, 0) for a, t in zip(scratch, ts, strict=True)]
        if final:
            inits = [f.value(v, []) for v in op.operand_group("init_values")]
            _unbind(f, op)
            xs = f.body(op.regions[0].block, inits + xs)
        for x, out, t in zip(xs, outs, ts, strict=True):
            k.store(x, out, t, size, at)


def columns(lw: FuncLowering, op: Op, dims: list[int], outs: list[int], width: int) -> None:
    """Reductions that keep the innermost dimension: work-item w folds the ``width``
    consecutive outputs [w * width, (w + 1) * width) together (``width`` accumulators per
    result), so each step of the reduction reads consecutive elements."""
    inputs, inits = op.operand_group("inputs"), op.operand_group("init_values")
    in_shape = types.shape(inputs[0])
    out_shape = types.shape(op.results[0])
    ts = [types.elem(r) for r in op.results]
    n, nres = prod(out_shape), len(ts)
    items = n // width
    per_group = -(-items // COLUMN_GROUPS)
    with lw.kernel("reduce_cols") as (k, f):
        lo = k.imul(k.emit("group_id", "g"), per_group)
        hi = clamp(k, k.iadd(lo, per_group), items)
        w = k.fresh("w")
        with k.block(f"foreach {w} = {k.idx(lo)}, {k.idx(hi)} : index {{"):
            base = k.imul(w, width)
            oidxs = [k.delinearize(k.iadd(base, j), out_shape) for j in range(width)]
            accs = [f.value(v, []) for v in inits] * width
            length = prod(in_shape[d] for d in dims)
            if _stacked(op, dims) and length <= UNROLL_STACKED:
                for position in range(length):
                    accs = _fold_columns(k, f, op, (dims, oidxs), position, accs)
            else:
                with k.loop(0, length, accs, ts * width) as loop:
                    loop.yields = _fold_columns(k, f, op, (dims, oidxs), loop.var,
                                                loop.carried)
                accs = loop.results
            for j in range(width):
                at = k.iadd(base, j)
                for value, out, t in zip(accs[j * nres:(j + 1) * nres], outs, ts,
                                         strict=True):
                    k.store(value, out, t, n, at)
    lw.launch_last(-(-items // per_group))


def _stacked(op: Op, dims: list[int]) -> bool:
    """Whether an input of reduce ``op`` is a concatenation along a reduced dimension."""
    return any(isinstance(v.owner, Op) and v.owner.name == "stablehlo.concatenate"
               and v.owner.int_attr("dimension") in dims
               for v in op.operand_group("inputs"))


SLICED_ITEMS = 64
"""Work-items (slices times column blocks) of a sliced column reduction."""
MIN_SLICE = 64
"""Reduced positions per slice at least."""


def column_slices(lw: FuncLowering, op: Op, dims: list[int], outs: list[int],
                  width: int) -> None:
    """Few outputs along a kept innermost dimension, folded over many positions (a batch
    norm's statistics: [16, 32, 32, 32] -> [32]): the reduced positions are cut into
    slices, and work-item (slice, w) folds outputs [w * width, (w + 1) * width) over its
    slice, ``width`` accumulators per result, so it reads whole rows of consecutive
    elements; a second kernel folds the slices' partial results per output.  (A
    work-group per output would read it a column apart, each row's cache line once per
    output.)"""
    inputs = op.operand_group("inputs")
    in_shape, out_shape = types.shape(inputs[0]), types.shape(op.results[0])
    ts = [types.elem(r) for r in op.results]
    n, nres = prod(out_shape), len(ts)
    length = prod(in_shape[d] for d in dims)
    items = n // width
    slices = max(1, min(-(-SLICED_ITEMS // items), length // MIN_SLICE))
    chunk = -(-length // slices)
    slices = -(-length // chunk)  # every slice non-empty
    partials = [lw.new_buffer(t, (n, slices)) for t in ts]
    with lw.kernel("reduce_cols_sliced") as (k, f):
        i = k.fresh("i")
        lo_i = group(k, items * slices)
        with k.block(f"foreach {i} = {k.idx(lo_i)}, {k.idx(k.iadd(lo_i, 1))} : index {{"):
            s, w = k.delinearize(i, (slices, items))
            base = k.imul(w, width)
            oidxs = [k.delinearize(k.iadd(base, j), out_shape) for j in range(width)]
            lo = k.imul(s, chunk)
            firsts = [f.value(v, element_index(k, op, dims, oidx, lo))
                      for oidx in oidxs for v in inputs]
            with k.loop(k.iadd(lo, 1), clamp(k, k.iadd(lo, chunk), length), firsts,
                        ts * width) as loop:
                loop.yields = _fold_columns(k, f, op, (dims, oidxs), loop.var, loop.carried)
            for j in range(width):
                at = k.iadd(k.imul(k.iadd(base, j), slices), s)
                for r, buf, t in zip(loop.results[j * nres:(j + 1) * nres], partials, ts,
                                     strict=True):
                    k.store(r, buf, t, n * slices, at)
    lw.launch_last(items * slices)
    fold_partials(lw, op, partials, outs, slices)


def _fold_columns(k: KernelBuilder, f: Fused, op: Op,
                  where: tuple[list[int], list[list[IndexExpr]]], r: IndexExpr,
                  carried: list[str]) -> list[str]:
    """The body folded into each output's accumulators (``carried``, ``len(results)``
    per output of ``oidxs``) with its elements at reduced position ``r``."""
    dims, oidxs = where
    inputs = op.operand_group("inputs")
    nres = len(op.results)
    yields: list[str] = []
    for j, oidx in enumerate(oidxs):
        xs = [f.value(v, element_index(k, op, dims, oidx, r)) for v in inputs]
        _unbind(f, op)
        with k.scope():
            yields += f.body(op.regions[0].block, carried[j * nres:(j + 1) * nres] + xs)
    return yields


def fold_partials(lw: FuncLowering, op: Op, partials: list[int], outs: list[int],
                  slices: int) -> None:
    """outs[o] = init folded with partials[o, 0..slices)."""
    ts = [types.elem(r) for r in op.results]
    n = prod(types.shape(op.results[0]))
    with lw.kernel("reduce_final") as (k, f):
        with k.elements(n) as i:
            accs = [f.value(v, []) for v in op.operand_group("init_values")]
            with k.loop(0, slices, accs, ts) as loop:
                at = k.iadd(k.imul(i, slices), loop.var)
                xs = [k.load(b, t, n * slices, at) for b, t in zip(partials, ts, strict=True)]
                f.bound.clear()
                loop.yields = f.body(op.regions[0].block, loop.carried + xs)
            for r, out, t in zip(loop.results, outs, ts, strict=True):
                k.store(r, out, t, n, i)
    lw.launch_last(num_groups(n))
