"""Indexed access: gather, dynamic_slice, dynamic_update_slice (elemental) and scatter.

Index formulas follow the spec's sections on these ops; start indices are read as
scalars, converted to ``index`` and clamped (gather, dynamic_*) or bounds-checked
(scatter: out-of-range updates are skipped).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from frontend.ir.attrs import StructAttr, as_int
from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental, kernel


def _start_index(f: Fused, indices: Value, batch: list[IndexExpr], ivd: int) -> list[str]:
    """The start index vector for batch position ``batch`` (index_vector_dim ``ivd``)."""
    shape = types.shape(indices)
    t = types.elem(indices)
    if ivd >= len(shape):
        return [f.k.to_index(f.value(indices, batch), t)]
    out = []
    for j in range(shape[ivd]):
        where = list(batch[:ivd]) + [j] + list(batch[ivd:])
        out.append(f.k.to_index(f.value(indices, where), t))
    return out


def _field(op: Op, attr: str, name: str) -> list[int]:
    return op.struct_ints(attr, name)


def _ivd(op: Op, attr: str) -> int:
    return as_int(op.attr_of(attr, StructAttr).get("index_vector_dim", 0))


def _batch_pos(d_start: int, ivd: int) -> int:
    return d_start - (0 if d_start < ivd else 1)


@elemental("stablehlo.gather")
def gather(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """result[idx] = operand[clamped start + batching + offset]."""
    operand, indices = op.operand("operand"), op.operand("start_indices")
    a = "dimension_numbers"
    offset_dims, collapsed = _field(op, a, "offset_dims"), _field(op, a, "collapsed_slice_dims")
    start_map = _field(op, a, "start_index_map")
    obd, sibd = _field(op, a, "operand_batching_dims"), _field(op, a, "start_indices_batching_dims")
    ivd = _ivd(op, a)
    sizes = op.ints_attr("slice_sizes")
    oshape = types.shape(operand)
    k = f.k
    batch = [idx[d] for d in range(len(idx)) if d not in offset_dims]
    start = _start_index(f, indices, batch, ivd)
    offsets = iter(idx[d] for d in offset_dims)
    src: list[IndexExpr] = []
    for d in range(len(oshape)):
        e: IndexExpr = 0
        if d in start_map:
            e = k.iclamp(start[start_map.index(d)], 0, oshape[d] - sizes[d])
        if d in obd:
            e = k.iadd(e, batch[_batch_pos(sibd[obd.index(d)], ivd)])
        if d not in collapsed and d not in obd:
            e = k.iadd(e, next(offsets))
        src.append(e)
    return f.value(operand, src)


def _dynamic_starts(f: Fused, op: Op, sizes: list[int]) -> list[str]:
    shape = types.shape(op.operand("operand"))
    k = f.k
    return [k.iclamp(k.to_index(f.value(v, []), types.elem(v)), 0, n - s)
            for v, n, s in zip(op.operand_group("start_indices"), shape, sizes, strict=True)]


@elemental("stablehlo.dynamic_slice")
def dynamic_slice(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """operand[clamped start + idx]."""
    starts = _dynamic_starts(f, op, op.ints_attr("slice_sizes"))
    return f.value(op.operand("operand"),
                   [f.k.iadd(s, i) for s, i in zip(starts, idx, strict=True)])


@elemental("stablehlo.dynamic_update_slice")
def dynamic_update_slice(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """update[idx - start] inside the updated block, operand[idx] elsewhere."""
    update = op.operand("update")
    ushape = types.shape(update)
    starts = _dynamic_starts(f, op, list(ushape))
    k = f.k
    rel = [k.idx(k.isub(i, s)) for i, s in zip(idx, starts, strict=True)]
    inside = k.const(True, "i1")
    for r, n in zip(rel, ushape, strict=True):
        inside = k.arith("and", inside, k.cmp("ge", r, k.idx(0), "index"), "i1")
        inside = k.arith("and", inside, k.cmp("lt", r, k.idx(n), "index"), "i1")
    t = types.elem(op.result)
    return k.branch(inside, t, lambda: f.value(update, rel),
                    lambda: f.value(op.operand("operand"), idx))


OWNERS = 4
"""Work-groups that split the result of a scatter with possibly repeated indices."""
OWNED_MIN = 4096
"""Results at least this large (with as many updates) are split among ``OWNERS``."""
FUSED_COPY_MAX = 1 << 16
"""Other scatters with repeated indices and at most this many result elements write
the inputs in their own kernel (one launch less); larger ones copy them in parallel
first."""
WINDOW_MIN = 16
"""Scatters whose free window (:func:`_free_window`) has this many elements are
parallel over it."""
WINDOW_BLOCK = 32
"""Least free-window elements per work-group."""
WINDOW_GROUPS = 64
"""... else split the free window over about this many work-groups."""


@kernel("stablehlo.scatter")
def scatter(lw: FuncLowering, op: Op) -> None:
    """Copy the inputs to the results, then apply the updates.

    With ``unique_indices`` every update element has its own target: one work-item per
    update element.  Otherwise the updates must apply in order per target.  When the
    update window has enough elements whose result position does not depend on the
    scatter index (:func:`_free_window`), work-items own those positions and apply every
    update in order (:func:`_window_scatter`, with the copy fused).  Else the result is
    split among ``OWNERS`` work-groups (one work-item each) that scan all updates in
    order and apply those landing in their part (exact for any update computation), or,
    when small, one work-item applies all."""
    outs = [lw.buffer_for(r) for r in op.results]
    ushape = types.shape(op.operand_group("updates")[0])
    nu, n = prod(ushape), prod(types.shape(op.results[0]))
    free = _free_window(op)
    unique = op.attr("unique_indices", False) is True
    if nu and n and not unique and prod(ushape[u] for u, _ in free) >= WINDOW_MIN:
        _window_scatter(lw, op, outs, free)
    elif not unique and 0 < n <= FUSED_COPY_MAX:
        _owned_scatter(lw, op, outs, _owners(n, nu), copy=True)
    else:
        for v, out in zip(op.operand_group("inputs"), outs, strict=True):
            lw.compute_into(v, out)
        if nu and unique:
            with lw.kernel("scatter_unique") as (k, f):
                with k.elements(nu) as i:
                    apply_update(f, op, outs, k.delinearize(i, ushape))
            lw.launch_last(num_groups(nu))
        elif n:
            _owned_scatter(lw, op, outs, _owners(n, nu))
    for r, out in zip(op.results, outs, strict=True):
        lw.bind(r, out)


def _owners(n: int, nu: int) -> int:
    return OWNERS if n >= OWNED_MIN and nu >= OWNED_MIN else 1


def _free_window(op: Op) -> list[tuple[int, int]]:
    """(update dimension, result dimension) of the window dimensions whose result
    dimension no start index moves: the result index there is the window index, so
    updates at different positions of these dimensions never share a target."""
    a = "scatter_dimension_numbers"
    uwd, iwd = _field(op, a, "update_window_dims"), _field(op, a, "inserted_window_dims")
    ibd, sdod = _field(op, a, "input_batching_dims"), _field(op, a, "scatter_dims_to_operand_dims")
    shape, ushape = types.shape(op.results[0]), types.shape(op.operand_group("updates")[0])
    window = [d for d in range(len(shape)) if d not in iwd and d not in ibd]
    return [(u, d) for u, d in zip(uwd, window, strict=True)
            if d not in sdod and ushape[u] <= shape[d]]  # (always, when verified)


def _window_scatter(lw: FuncLowering, op: Op, outs: list[int],
                    free: list[tuple[int, int]]) -> None:
    """Work-groups split the free window; for each of its positions a work-item writes
    the inputs there, then applies, in order, every update at that position: no two
    work-items share a target, so the result is the sequential one for any update
    computation, without atomics."""
    w_total = prod(types.shape(op.results[0])[d] for _, d in free)
    block = max(WINDOW_BLOCK, -(-w_total // WINDOW_GROUPS))
    with lw.kernel("scatter_window") as (k, f):
        lo = k.imul(k.emit("group_id", "g"), block)
        hi = k.iadd(lo, block)
        if w_total % block:
            hi = k.select(k.cmp("lt", k.idx(hi), k.idx(w_total), "index"), k.idx(hi),
                          k.idx(w_total), "index")
        span = (k.idx(lo), k.idx(hi))
        _window_inputs(f, op, outs, free, span)
        _window_updates(f, op, outs, free, span)
    lw.launch_last(-(-w_total // block))


def _window_inputs(f: Fused, op: Op, outs: list[int], free: list[tuple[int, int]],
                   span: tuple[str, str]) -> None:
    """Write the inputs (producers fused) at the free-window positions ``span``."""
    k = f.k
    shape = types.shape(op.results[0])
    free_d = [d for _, d in free]
    fshape = [shape[d] for d in free_d]
    rest_d = [d for d in range(len(shape)) if d not in free_d]
    with k.loop(0, prod(shape[d] for d in rest_d), [], []) as loop:
        rest = k.delinearize(loop.var, [shape[d] for d in rest_d])
        w = k.fresh("w")
        with k.block(f"foreach {w} = {span[0]}, {span[1]} : index {{"):
            idx = _merge(len(shape), rest_d, rest, free_d, k.delinearize(w, fshape))
            at = k.linear(idx, shape)
            for v, out in zip(op.operand_group("inputs"), outs, strict=True):
                k.store(f.value(v, idx), out, types.elem(v), prod(shape), at)


def _window_updates(f: Fused, op: Op, outs: list[int], free: list[tuple[int, int]],
                    span: tuple[str, str]) -> None:
    """Every update in order (a loop over the update dimensions but the free ones) applied
    at the free-window positions ``span`` (a foreach over the result's free dimensions);
    the bounds are checked once per position of the loop (a free dimension's result
    index is its window index), and per position of the foreach only where the window
    is shorter than the result."""
    k = f.k
    ushape, shape = types.shape(op.operand_group("updates")[0]), types.shape(op.results[0])
    free_u, free_d = [u for u, _ in free], [d for _, d in free]
    fshape = [shape[d] for d in free_d]
    rest_u = [u for u in range(len(ushape)) if u not in free_u]
    with k.loop(0, prod(ushape[u] for u in rest_u), [], []) as loop:
        rest = k.delinearize(loop.var, [ushape[u] for u in rest_u])
        ridx = _result_index(f, op, _merge(len(ushape), rest_u, rest, free_u,
                                           [0] * len(free_u)))
        ok = in_bounds(k, [e for d, e in enumerate(ridx) if d not in free_d],
                        [n for d, n in enumerate(shape) if d not in free_d])
        w = k.fresh("w")
        with k.block(f"if {ok} {{"), k.block(f"foreach {w} = {span[0]}, {span[1]} : index {{"):
            widx = k.delinearize(w, fshape)
            uidx = _merge(len(ushape), rest_u, rest, free_u, widx)
            at = k.linear([widx[free_d.index(d)] if d in free_d else e
                           for d, e in enumerate(ridx)], shape)
            short = [(x, ushape[u]) for x, u, d in zip(widx, free_u, free_d, strict=True)
                     if ushape[u] < shape[d]]
            if short:
                inside = in_bounds(k, [x for x, _ in short], [n for _, n in short])
                with k.block(f"if {inside} {{"):
                    _combine(f, op, outs, at, uidx)
            else:
                _combine(f, op, outs, at, uidx)


def _merge(rank: int, dims_a: list[int], idx_a: list[IndexExpr], dims_b: list[int],
           idx_b: list[IndexExpr]) -> list[IndexExpr]:
    """The multi-index with ``idx_a`` at ``dims_a`` and ``idx_b`` at ``dims_b``."""
    out: list[IndexExpr] = [0] * rank
    for d, i in (*zip(dims_a, idx_a, strict=True), *zip(dims_b, idx_b, strict=True)):
        out[d] = i
    return out


def _owned_scatter(lw: FuncLowering, op: Op, outs: list[int], owners: int,
                   copy: bool = False) -> None:
    """Work-group g applies, in order, the updates whose target lies in its part (after
    writing the inputs there, with ``copy``)."""
    ushape, shape = types.shape(op.operand_group("updates")[0]), types.shape(op.results[0])
    n = prod(shape)
    part = -(-n // owners)
    with lw.kernel("scatter") as (k, f):
        owned = None
        lo: IndexExpr = 0
        if owners > 1:
            lo = k.imul(k.emit("group_id", "g"), part)
            owned = (k.idx(lo), k.idx(k.iadd(lo, part)))
        with k.block(f"foreach %one_item = {k.idx(0)}, {k.idx(1)} : index {{"):
            if copy:
                hi = k.iadd(lo, part) if n % part == 0 else _imin(k, k.iadd(lo, part), n)
                with k.loop(lo, hi, [], []) as each:
                    idx = k.delinearize(each.var, shape)
                    for v, out in zip(op.operand_group("inputs"), outs, strict=True):
                        k.store(f.value(v, idx), out, types.elem(v), n, each.var)
            with k.loop(0, prod(ushape), [], []) as loop:
                apply_update(f, op, outs, k.delinearize(loop.var, ushape), owned)
    lw.launch_last(owners)


def _imin(k: KernelBuilder, a: IndexExpr, b: int) -> str:
    return k.select(k.cmp("lt", k.idx(a), k.idx(b), "index"), k.idx(a), k.idx(b), "index")


def _owns(k: KernelBuilder, at: IndexExpr, owned: tuple[str, str]) -> str:
    x = k.idx(at)
    return k.arith("and", k.cmp("ge", x, owned[0], "index"), k.cmp("lt", x, owned[1], "index"),
                   "i1")


def apply_update(f: Fused, op: Op, outs: list[int], uidx: list[IndexExpr],
                 owned: tuple[str, str] | None = None) -> None:
    """Apply update element ``uidx`` of scatter ``op`` to its results' buffers ``outs``
    when its target is inside them (and, with ``owned``, in that span of linear
    indices): ``outs[at] = computation(outs[at], updates[uidx])``."""
    shape = types.shape(op.results[0])
    k = f.k
    ridx = _result_index(f, op, uidx)
    ok = in_bounds(k, ridx, shape)
    if owned is not None:
        ok = k.arith("and", ok, _owns(k, k.linear(ridx, shape), owned), "i1")
    with k.block(f"if {ok} {{"):
        _combine(f, op, outs, k.linear(ridx, shape), uidx)


def _result_index(f: Fused, op: Op, uidx: list[IndexExpr]) -> list[IndexExpr]:
    """The result index that update element ``uidx`` targets (maybe out of bounds)."""
    a = "scatter_dimension_numbers"
    uwd, iwd = _field(op, a, "update_window_dims"), _field(op, a, "inserted_window_dims")
    ibd, sibd = _field(op, a, "input_batching_dims"), _field(op, a, "scatter_indices_batching_dims")
    sdod, ivd = _field(op, a, "scatter_dims_to_operand_dims"), _ivd(op, a)
    k = f.k
    scatter_idx = [uidx[d] for d in range(len(uidx)) if d not in uwd]
    start = _start_index(f, op.operand("scatter_indices"), scatter_idx, ivd)
    window = iter(uidx[d] for d in uwd)
    ridx: list[IndexExpr] = []
    for d in range(len(types.shape(op.results[0]))):
        e: IndexExpr = k.idx(start[sdod.index(d)]) if d in sdod else 0
        if d in ibd:
            e = k.iadd(e, scatter_idx[_batch_pos(sibd[ibd.index(d)], ivd)])
        if d not in iwd and d not in ibd:
            e = k.iadd(e, next(window))
        ridx.append(e)
    return ridx


def _combine(f: Fused, op: Op, outs: list[int], at: IndexExpr,
             uidx: list[IndexExpr]) -> None:
    """results[at] = computation(results[at], updates[uidx])."""
    k = f.k
    n = prod(types.shape(op.results[0]))
    ts = [types.elem(r) for r in op.results]
    cur = [k.load(out, t, n, at) for out, t in zip(outs, ts, strict=True)]
    upd = [f.value(v, uidx) for v in op.operand_group("updates")]
    f.bound.clear()
    new = f.body(op.regions[0].block, cur + upd)
    for value, out, t in zip(new, outs, ts, strict=True):
        k.store(value, out, t, n, at)


def in_bounds(k: KernelBuilder, idx: list[IndexExpr], shape: Sequence[int]) -> str:
    """An i1: whether index ``idx`` lies inside ``shape`` (every entry in ``[0, size)``)."""
    ok = k.const(True, "i1")
    for e, n in zip(idx, shape, strict=True):
        x = k.idx(e)
        ok = k.arith("and", ok, k.cmp("ge", x, k.idx(0), "index"), "i1")
        ok = k.arith("and", ok, k.cmp("lt", x, k.idx(n), "index"), "i1")
    return ok
