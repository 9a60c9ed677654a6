"""stablehlo.convolution as one kernel: each work-group packs its own im2col tile into local
memory and multiplies it with the weights.

For one group and a ``[b, 0, 1, ..., f]`` result (the gemm's ``[M, O]`` as it is), work-group
``t`` takes ``R`` consecutive *rows* of output positions (a row: every position along the
last spatial dimension, ``Wo`` of them; ``R * Wo`` about :data:`TILE` positions) and

1. fills ``patches: memref<K x R*Wo, local>`` (position ``r``'s window contiguous) with a
   ``foreach_nd`` over (input feature, window taps, position in the row, row): the
   positions' coordinates are the loop indices, so nothing is divided per element;
2. runs ``gemm.n.n`` of the weights ``[K, O]`` (``rhs``'s own buffer when it is HWIO)
   and the tile into the result's rows ``[t * R * Wo, + R * Wo)``;
3. runs the result's elementwise consumers (the epilogue) on those rows, as the gemm of
   :func:`frontend.lower.families.dot.general.gemm_kernel` does.

Against an im2col buffer in global memory this saves a launch and the buffer's traffic
(``K`` floats per output position written once and read once).  Tiles that would need
more than :data:`LOCAL_BYTES` of local memory keep the separate im2col kernel.

Two variants write the gemm's tile into local memory instead: a result in another layout
(NCHW) is stored from it at the result's indices (:func:`_scattered`), and a pooling
``reduce_window`` that consumes the epilogue (:func:`pool_planner`) folds it window by
window, so only the pooled result reaches global memory (:func:`_pooled`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder
from frontend.lower.core.driver import FuncLowering, Planner, Readers
from frontend.lower.core.fused import Epilogue, Fused, plan_epilogue
from frontend.lower.core.windows import window_ints, window_padding
from frontend.lower.families.dot.general import Tail, gemm_output

TILE = 32
"""Output positions per work-group (whole rows: at least one row)."""
LOCAL_BYTES = 32 * 1024
"""The most local memory one work-group's tiles (patches, and the gemm's output where it
stays local) may take (GPUs offer 48 KiB or more)."""

Element = Callable[[KernelBuilder, Fused, list[IndexExpr]], str]


def tile_rows(k_size: int, out_spatial: Sequence[int], elem_bytes: int, multiple: int = 1,
              extra: int = 0) -> int:
    """Rows of output positions per work-group for a contraction of ``k_size`` (a multiple
    of ``multiple``; ``extra`` more elements of local memory per position): 0 when that
    many rows' local memory exceeds :data:`LOCAL_BYTES`."""
    row = out_spatial[-1] if out_spatial else 1
    fit = LOCAL_BYTES // max(1, (k_size + extra) * row * elem_bytes)
    per = min(max(multiple, TILE // row), fit)
    return per - per % multiple


def implicit_gemm(lw: FuncLowering, op: Op, sizes: tuple[int, int, int], acc: str,
                  operands: tuple[Element, int], sp: list[int], groups: int = 1) -> None:
    """``op``'s result = patches @ weights in one kernel: ``sizes`` = (output batch, ``K``,
    ``O`` per group); ``operands`` = the patch element ``element(k, f, [g, m, kk])`` (as
    for the im2col buffer) and the ``[G, K, O/G]`` weights buffer; ``sp`` the output's
    spatial sizes.  A ``[b, 0.., f]`` result of one group is the gemm's own output; other
    layouts, and groups, are stored from a local tile (:func:`_scattered`)."""
    element, weights = operands
    if groups > 1 or list(op.conv_dims.out) != [
            "b", *(str(i) for i in range(len(sp))), "f"]:
        _scattered(lw, op, (*sizes, groups), acc, operands, sp)
        return
    plan = lw.epilogue(op.result)
    if plan is not None and plan.root.op.name == "stablehlo.reduce_window":
        _pooled(lw, op, sizes, acc, operands, plan)
        return
    batch, kk, o = sizes
    row = sp[-1] if sp else 1
    rows_total = batch * prod(sp[:-1])
    per = tile_rows(kk, sp, types.elem_bytes(acc))
    tiles = -(-rows_total // per)
    c, tail = gemm_output(lw, op.result, acc)
    name = "conv"
    if tail is not None and tail.root is not op.result:
        name = f"conv_{tail.root.op.name.split('.')[-1]}"
    with lw.kernel(name) as (k, f):
        r0 = k.imul(k.irem(k.emit("group_id", "g"), tiles), per)
        nrows = _rows_left(k, r0, per, rows_total)
        patches = _pack_tile(k, f, op, (batch, sp, kk, per), element, (r0, nrows))
        n = k.imul(nrows, row)
        _gemm(k, (weights, patches), acc, (kk, o, per * row, n),
              global_columns(k, (c, acc), (o, batch * prod(sp)), (k.imul(r0, row), n)))
        if tail is not None:
            store_tail(k, f, tail, (c, acc), (batch, sp, o), (r0, nrows))
    lw.launch_last(tiles)
    if tail is not None:
        lw.bind(tail.root, tail.out)


def _scattered(lw: FuncLowering, op: Op, sizes: tuple[int, int, int, int], acc: str,
               operands: tuple[Element, int], sp: list[int]) -> None:
    """:func:`implicit_gemm` for a result in another layout than ``[b, 0.., f]`` (NCHW) or
    with ``G`` groups (``sizes`` = (batch, K, O/G, G); work-group = (group, tile)): the
    gemm writes its tile into local memory, then a ``foreach_nd`` (the last spatial index
    fastest) stores it, through the epilogue, at the result's indices."""
    batch, kk, o, groups = sizes
    element, weights = operands
    plan = lw.epilogue(op.result)
    root = plan.root if plan is not None else op.result
    out = lw.buffer_for(root)
    row = sp[-1] if sp else 1
    rows_total = batch * prod(sp[:-1])
    per = tile_rows(kk, sp, types.elem_bytes(acc), 1, o)
    tiles = -(-rows_total // per)
    name = "conv" if plan is None else f"conv_{root.op.name.split('.')[-1]}"
    with lw.kernel(name) as (k, f):
        g = k.irem(k.emit("group_id", "g"), groups * tiles)
        grp = k.idiv(g, tiles)
        r0 = k.imul(k.irem(g, tiles), per)
        nrows = _rows_left(k, r0, per, rows_total)
        patches = _pack_tile(k, f, op, (batch, sp, kk, per), element, (r0, nrows), grp)
        local = f"memref<{acc}x{o}x{per * row},local>"
        c = k.emit(f"alloca -> {local}", "l")
        n = k.imul(nrows, row)
        cview = k.emit(f"subview {c}[:,0:{n}] : {local}", "v")
        _gemm(k, (weights, patches), acc, (kk, o, per * row, n),
              (cview, f"memref<{acc}x{o}x{_size_text(n)},strided<1,{o}>,local>"),
              (grp, groups))
        _store_tile(k, f, (op, root), (c, local), (batch, sp, o), (r0, nrows, grp), out)
    lw.launch_last(groups * tiles)
    lw.bind(root, out)


def _store_tile(k: KernelBuilder, f: Fused, values: tuple[Op, Value], c: tuple[str, str],
                shape: tuple[int, list[int], int],
                rows: tuple[IndexExpr, IndexExpr, IndexExpr], out: int) -> None:
    """Store the local ``O/G x R*Wo`` tile of group ``g`` at the result's indices (the
    epilogue's root); ``rows`` = (first row, rows, g)."""
    op, root = values
    batch, sp, o = shape
    r0, nrows, grp = rows
    tile, local = c
    dn = op.conv_dims
    full = types.shape(root)
    t = types.elem(op.result)
    row = sp[-1] if sp else 1
    names, head = foreach_modes(k, [row, o, nrows], "s")
    with k.block(head):
        x, oo, ry = names
        b, *ys = _row_coords(k, k.iadd(r0, ry), batch, sp)
        oidx: list[IndexExpr] = [0] * len(full)
        oidx[dn.out.index("b")] = b
        oidx[dn.out.index("f")] = k.iadd(k.imul(grp, o), oo)
        for d, i in zip(dn.spatial(dn.out), [*ys, x] if sp else [], strict=True):
            oidx[d] = i
        col = k.iadd(k.imul(ry, row), x)
        elem = k.emit(f"load {tile}[{k.idx(oo)}, {k.idx(col)}] : {local}", "x")
        value = k.cast(elem, _acc(op), t)
        if root is not op.result:
            f.bound[op.result] = value
            value = f.value(root, oidx)
        k.store(value, out, types.elem(root), prod(full), k.linear(oidx, full))
    f.bound.pop(op.result, None)


def _rows_left(k: KernelBuilder, r0: IndexExpr, per: int, total: int) -> IndexExpr:
    """``min(per, total - r0)``: the rows of this tile."""
    if total % per == 0:
        return per
    left = k.arith("sub", k.idx(total), k.idx(r0), "index")
    return k.select(k.cmp("lt", left, k.idx(per), "index"), left, k.idx(per), "index")


def _row_coords(k: KernelBuilder, r: IndexExpr, batch: int, sp: list[int]) -> list[IndexExpr]:
    """(b, leading spatial indices...) of output row ``r``."""
    return k.delinearize(r, [batch, *sp[:-1]])


def foreach_modes(k: KernelBuilder, extents: list[IndexExpr], hint: str) -> tuple[list[str], str]:
    """The names and header of a ``foreach_nd`` over ``[0, extents)`` (first mode fastest)."""
    names = [k.fresh(hint) for _ in extents]
    zeros = ", ".join(k.idx(0) for _ in extents)
    his = ", ".join(k.idx(e) for e in extents)
    if len(extents) == 1:
        return names, f"foreach {names[0]} = {zeros}, {his} : index {{"
    return names, f"foreach ({', '.join(names)}) = ({zeros}), ({his}) : index {{"


def _pack_tile(k: KernelBuilder, f: Fused, op: Op, shape: tuple[int, list[int], int, int],
               element: Element, rows: tuple[IndexExpr, IndexExpr],
               group: IndexExpr = 0) -> str:
    """The local patches of this tile: an alloca ``K x per*Wo`` (a position's window
    contiguous) filled by one foreach with the input features innermost.  (With the
    positions innermost instead, for NCHW inputs, the clamped padding indices made the
    loads a gather: 2-3x slower on PoCL.)"""
    batch, sp, kk, per = shape
    r0, nrows = rows
    row = sp[-1] if sp else 1
    dn = op.conv_dims
    rs = types.shape(op.operand("rhs"))
    window = [rs[d] for d in dn.spatial(dn.rhs)]
    fin = rs[dn.rhs.index("i")]
    local = f"memref<{_acc(op)}x{kk}x{per * row},local>"
    tile = k.emit(f"alloca -> {local}", "l")
    names, head = foreach_modes(k, [fin, *window[::-1], row, nrows], "p")
    with k.block(head):
        fi, ws, x, ry = names[0], names[1:-2][::-1], names[-2], names[-1]
        coords = _row_coords(k, k.iadd(r0, ry), batch, sp)
        m = k.linear([*coords, x] if sp else coords, [batch, *sp])
        kidx = k.linear([*ws, fi], [*window, fin])
        value = element(k, f, [group, m, kidx])
        r = k.iadd(k.imul(ry, row), x)
        k.line(f"store {value}, {tile}[{k.idx(kidx)}, {k.idx(r)}] : {local}")
    return tile


def _size_text(n: IndexExpr) -> str:
    return str(n) if isinstance(n, int) else "?"


def global_columns(k: KernelBuilder, c: tuple[int, str], sizes: tuple[int, int],
              cols: tuple[IndexExpr, IndexExpr]) -> tuple[str, str]:
    """Columns ``[m0, m0 + n)`` of the O x M column-major view of the row-major ``[M, O]``
    buffer ``c``: the view and its type."""
    (buf, t), (o, m), (m0, n) = c, sizes, cols
    ssa, flat = k.param(buf, t, m * o)
    full = k.emit(f"expand {ssa}[0 -> {o}x{m}] : {flat}", "v")
    view = k.emit(f"subview {full}[:,{k.idx(m0)}:{n}] : memref<{t}x{o}x{m}>", "v")
    return view, f"memref<{t}x{o}x{_size_text(n)},strided<1,{o}>>"


def _gemm(k: KernelBuilder, bufs: tuple[int, str], t: str, sizes: tuple[int, int, int, IndexExpr],
          c: tuple[str, str], group: tuple[IndexExpr, int] = (0, 1)) -> None:
    """C = W (O x K) @ patches[:, 0:n] for ``sizes`` = (K, O, the tile's width, n), ``c``
    = (C's O x n view, its type) and ``group`` = (g, G): W is group g's ``[K, O]`` block
    of the ``[G, K, O]`` weights."""
    weights, patches = bufs
    kk, o, width, n = sizes
    cview, ctype = c
    grp, groups = group
    wssa, wflat = k.param(weights, t, groups * kk * o)
    wview = k.emit(f"expand {wssa}[0 -> {o}x{kk}x{groups}] : {wflat}", "v")
    wview = k.emit(f"subview {wview}[:,:,{k.idx(grp)}] : memref<{t}x{o}x{kk}x{groups}>", "v")
    pview = k.emit(f"subview {patches}[:,0:{n}] : memref<{t}x{kk}x{width},local>", "v")
    ptype = f"memref<{t}x{kk}x{_size_text(n)},strided<1,{kk}>,local>"
    one, zero = (k.const(x if t[0] in "fc" else int(x), t) for x in (1.0, 0.0))
    k.line(f"gemm.n.n {one}, {wview}, {pview}, {zero}, {cview} : {t}, memref<{t}x{o}x{kk}>, "
           f"{ptype}, {t}, {ctype}")


def store_tail(k: KernelBuilder, f: Fused, tail: Tail, c: tuple[int, str],
          shape: tuple[int, list[int], int], rows: tuple[IndexExpr, IndexExpr]) -> None:
    """The epilogue on this tile's rows of the result: a foreach over (feature, position in
    the row, row) that binds the gemm's element and stores the root's."""
    batch, sp, o = shape
    r0, nrows = rows
    buf, acc = c
    full = types.shape(tail.root)
    row = sp[-1] if sp else 1
    names, head = foreach_modes(k, [o, row, nrows], "e")
    with k.block(head):
        oo, x, ry = names
        coords = _row_coords(k, k.iadd(r0, ry), batch, sp)
        idx = [*coords, x, oo] if sp else [*coords, oo]
        at = k.linear(idx, full)
        f.bound[tail.source] = k.cast(k.load(buf, acc, prod(full), at), acc,
                                      types.elem(tail.source))
        value = f.value(tail.root, idx)
        k.store(value, tail.out, types.elem(tail.root), prod(full), at)
    del f.bound[tail.source]


def _acc(op: Op) -> str:
    t = types.elem(op.result)
    return {"f16": "f32", "bf16": "f32"}.get(t, t)


# -- pooling in the convolution's kernel ----------------------------------------------------


def pool_window(pool: Op, top: Value) -> tuple[int, int] | None:
    """``(wh, ww)`` when the reduce_window ``pool`` folds ``top`` (``[B, H, W, O]``) over
    non-overlapping ``wh x ww`` windows that tile ``H`` and ``W`` exactly (no padding or
    dilation), else None."""
    shape = types.shape(top)
    if (len(pool.results) != 1 or pool.operand_group("inputs") != [top] or len(shape) != 4
            or types.elem(pool.results[0]) != types.elem(top)):
        return None
    win = window_ints(pool, "window_dimensions", 4, 1)
    plain = (window_ints(pool, "window_strides", 4, 1) == win and win[0] == win[3] == 1
             and window_ints(pool, "base_dilations", 4, 1) == [1] * 4
             and window_ints(pool, "window_dilations", 4, 1) == [1] * 4
             and window_padding(pool, 4) == [(0, 0)] * 4)
    if not plain or shape[1] % win[1] or shape[2] % win[2]:
        return None
    return win[1], win[2]


def pool_planner(k_size: int, nbytes: int) -> Planner:
    """The epilogue planner for a convolution on the one-kernel path: its elementwise chain
    (:func:`frontend.lower.core.fused.plan_epilogue`), extended by a reduce_window that pools the
    chain's root (or the result itself) when that is its only use (:func:`pool_window`) and
    a tile of whole pooling windows fits in local memory."""

    def plan(source: Value, readers: Callable[[Value], Readers], uses: dict[Value, int],
             claimed: set[Value]) -> Epilogue | None:
        chain = plan_epilogue(source, readers, uses, claimed)
        top = chain.root if chain is not None else source
        user = next(iter(readers(top)), None)
        if (uses.get(top, 0) != 1 or user is None or user.name != "stablehlo.reduce_window"
                or user.results[0] in claimed):
            return chain
        win = pool_window(user, top)
        shape = types.shape(source)
        if win is None or not tile_rows(k_size, shape[1:-1], nbytes, win[0], shape[-1]):
            return chain
        inner = chain.values | {chain.root} if chain is not None else frozenset()
        return Epilogue(source, user.results[0], frozenset(inner))

    return plan


def _pooled(lw: FuncLowering, op: Op, sizes: tuple[int, int, int], acc: str,
            operands: tuple[Element, int], plan: Epilogue) -> None:
    """:func:`implicit_gemm` with the epilogue ending in a pooling reduce_window: the gemm
    writes its tile (whole windows) into local memory, and the kernel stores only the
    pooled elements."""
    batch, kk, o = sizes
    element, weights = operands
    pool = plan.root.owner
    assert isinstance(pool, Op)
    top = pool.operand_group("inputs")[0]
    window = pool_window(pool, top)
    assert window is not None, "the plan's pool was checked"
    wh, ww = window
    sp = [int(d) for d in types.shape(op.result)[1:-1]]
    row, rows_total = sp[-1], batch * sp[0]
    per = tile_rows(kk, sp, types.elem_bytes(acc), wh, o)
    tiles = -(-rows_total // per)
    out = lw.buffer_for(plan.root)
    with lw.kernel("conv_reduce_window") as (k, f):
        tile = k.irem(k.emit("group_id", "g"), tiles)
        r0 = k.imul(tile, per)
        nrows = _rows_left(k, r0, per, rows_total)
        patches = _pack_tile(k, f, op, (batch, sp, kk, per), element, (r0, nrows))
        local = f"memref<{acc}x{o}x{per * row},local>"
        c = k.emit(f"alloca -> {local}", "l")
        n = k.imul(nrows, row)
        cview = k.emit(f"subview {c}[:,0:{n}] : {local}", "v")
        _gemm(k, (weights, patches), acc, (kk, o, per * row, n),
              (cview, f"memref<{acc}x{o}x{_size_text(n)},strided<1,{o}>,local>"))
        windows = (k.imul(tile, per // wh), k.idiv(nrows, wh))
        _pool(k, f, (op, pool, top), (c, local), (batch, sp, o, wh, ww), windows, out)
    lw.launch_last(tiles)
    lw.bind(plan.root, out)


def _pool(k: KernelBuilder, f: Fused, ops: tuple[Op, Op, Value], c: tuple[str, str],
          shape: tuple[int, list[int], int, int, int], windows: tuple[IndexExpr, IndexExpr],
          out: int) -> None:
    """The pooled elements of this tile's window rows ``[p0, p0 + count)``: each folds the
    epilogue's value (from the gemm's element in local memory) over its window."""
    conv, pool, top = ops
    batch, sp, o, wh, ww = shape
    p0, count = windows
    tile, local = c
    t = types.elem(conv.result)
    acc = _acc(conv)
    pshape = types.shape(pool.results[0])
    block = pool.regions[0].block
    names, head = foreach_modes(k, [o, sp[1] // ww, count], "q")
    with k.block(head):
        oo, px, pr = names
        b, yp = k.delinearize(k.iadd(p0, pr), [batch, sp[0] // wh])
        value = f.value(pool.operand_group("init_values")[0], [])
        for dy in range(wh):
            for dx in range(ww):
                with k.scope():
                    x = k.iadd(k.imul(px, ww), dx)
                    col = k.iadd(k.imul(k.iadd(k.imul(pr, wh), dy), sp[1]), x)
                    elem = k.emit(f"load {tile}[{k.idx(oo)}, {k.idx(col)}] : {local}", "x")
                    f.bound[conv.result] = k.cast(elem, acc, t)
                    y = k.iadd(k.imul(yp, wh), dy)
                    value = f.body(block, [value, f.value(top, [b, y, x, oo])])[0]
        k.store(value, out, types.elem(pool.results[0]), prod(pshape),
                k.linear([b, yp, px, oo], pshape))
    for v in (conv.result, *block.args):
        f.bound.pop(v, None)
