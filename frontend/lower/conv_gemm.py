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
   :func:`frontend.lower.dot.gemm_kernel` does.

Against an im2col buffer in global memory this saves a launch and the buffer's traffic
(``K`` floats per output position written once and read once).  Tiles that would need
more than :data:`LOCAL_BYTES` of local memory keep the separate im2col kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from frontend.ir.core import Op
from frontend.lower import types
from frontend.lower.builder import IndexExpr, KernelBuilder
from frontend.lower.dot import Tail, gemm_output
from frontend.lower.driver import FuncLowering
from frontend.lower.fused import Fused

TILE = 32
"""Output positions per work-group (whole rows: at least one row)."""
LOCAL_BYTES = 32 * 1024
"""The most local memory one tile of patches may take (GPUs offer 48 KiB or more)."""

Element = Callable[[KernelBuilder, Fused, list[IndexExpr]], str]


def tile_rows(k_size: int, out_spatial: list[int], elem_bytes: int) -> int:
    """Rows of output positions per work-group for a contraction of ``k_size``: 0 when
    one row's patches exceed :data:`LOCAL_BYTES`."""
    row = out_spatial[-1] if out_spatial else 1
    fit = LOCAL_BYTES // max(1, k_size * row * elem_bytes)
    return min(max(1, TILE // row), fit)


def elem_bytes(t: str) -> int:
    """Bytes of one element of scalar type ``t`` (i1 and sub-byte types: 1)."""
    bits = int("".join(ch for ch in t if ch.isdigit()) or 8)
    return max(1, bits // 8)


def implicit_gemm(lw: FuncLowering, op: Op, sizes: tuple[int, int, int], acc: str,
                  element: Element, weights: int) -> None:
    """``op``'s result = patches @ weights in one kernel: ``sizes`` = (output batch, ``K``,
    ``O``); ``element(k, f, [0, m, kk])`` is the patch element (as for the im2col buffer);
    ``weights`` is the ``[K, O]`` buffer."""
    batch, kk, o = sizes
    sp = [int(d) for d in types.shape(op.result)[1:-1]]
    row = sp[-1] if sp else 1
    rows_total = batch * prod(sp[:-1])
    per = tile_rows(kk, sp, elem_bytes(acc))
    tiles = -(-rows_total // per)
    c, tail = gemm_output(lw, op.result, acc)
    name = "conv"
    if tail is not None and tail.root is not op.result:
        name = f"conv_{tail.root.owner.name.split('.')[-1]}"  # type: ignore[union-attr]
    with lw.kernel(name) as (k, f):
        r0 = k.imul(k.irem(k.emit("group_id", "g"), tiles), per)
        nrows = _rows_left(k, r0, per, rows_total)
        patches = _pack_tile(k, f, op, (batch, sp, kk, per), element, (r0, nrows))
        _gemm(k, (weights, patches, c), acc, (kk, o, batch * prod(sp), per * row),
              (k.imul(r0, row), k.imul(nrows, row)))
        if tail is not None:
            _tail(k, f, tail, (c, acc), (batch, sp, o), (r0, nrows))
    lw.launch_last(tiles)
    if tail is not None:
        lw.bind(tail.root, tail.out)


def _rows_left(k: KernelBuilder, r0: IndexExpr, per: int, total: int) -> IndexExpr:
    """``min(per, total - r0)``: the rows of this tile."""
    if total % per == 0:
        return per
    left = k.arith("sub", k.idx(total), k.idx(r0), "index")
    return k.select(k.cmp("lt", left, k.idx(per), "index"), left, k.idx(per), "index")


def _row_coords(k: KernelBuilder, r: IndexExpr, batch: int, sp: list[int]) -> list[IndexExpr]:
    """(b, leading spatial indices...) of output row ``r``."""
    return k.delinearize(r, [batch, *sp[:-1]])


def _foreach(k: KernelBuilder, extents: list[IndexExpr], hint: str) -> tuple[list[str], str]:
    """The names and header of a ``foreach_nd`` over ``[0, extents)`` (first mode fastest)."""
    names = [k.fresh(hint) for _ in extents]
    zeros = ", ".join(k.idx(0) for _ in extents)
    his = ", ".join(k.idx(e) for e in extents)
    if len(extents) == 1:
        return names, f"foreach {names[0]} = {zeros}, {his} : index {{"
    return names, f"foreach ({', '.join(names)}) = ({zeros}), ({his}) : index {{"


def _pack_tile(k: KernelBuilder, f: Fused, op: Op, shape: tuple[int, list[int], int, int],
               element: Element, rows: tuple[IndexExpr, IndexExpr]) -> str:
    """The local patches of this tile: an alloca ``K x per*Wo`` filled by one foreach."""
    batch, sp, kk, per = shape
    r0, nrows = rows
    row = sp[-1] if sp else 1
    dn = op.attrs["dimension_numbers"]
    rs = types.shape(op.operand("rhs"))
    window = [rs[d] for d in dn.spatial(dn.rhs)]  # type: ignore[attr-defined]
    fin = rs[dn.rhs.index("i")]  # type: ignore[attr-defined]
    acc = _acc(op)
    local = f"memref<{acc}x{kk}x{per * row},local>"
    tile = k.emit(f"alloca -> {local}", "l")
    extents: list[IndexExpr] = [fin, *window[::-1], row, nrows]
    names, head = _foreach(k, extents, "p")
    with k.block(head):
        fi, ws, x, ry = names[0], names[1:-2][::-1], names[-2], names[-1]
        coords = _row_coords(k, k.iadd(r0, ry), batch, sp)
        m = k.linear([*coords, x] if sp else coords, [batch, *sp])
        kidx = k.linear([*ws, fi], [*window, fin])
        value = element(k, f, [0, m, kidx])
        r = k.iadd(k.imul(ry, row), x)
        k.line(f"store {value}, {tile}[{k.idx(kidx)}, {k.idx(r)}] : {local}")
    return tile


def _gemm(k: KernelBuilder, bufs: tuple[int, str, int], t: str, sizes: tuple[int, int, int, int],
          cols: tuple[IndexExpr, IndexExpr]) -> None:
    """C[:, m0:m0+n] (an O x M column-major view of the row-major [M, O] result) =
    W (O x K) @ patches[:, 0:n]."""
    weights, patches, c = bufs
    kk, o, m, width = sizes
    m0, n = cols
    size_text = str(n) if isinstance(n, int) else "?"
    wssa, wflat = k.param(weights, t, kk * o)
    wview = k.emit(f"expand {wssa}[0 -> {o}x{kk}] : {wflat}", "v")
    local = f"memref<{t}x{kk}x{width},local>"
    size = str(n) if isinstance(n, int) else n
    pview = k.emit(f"subview {patches}[:,0:{size}] : {local}", "v")
    ptype = f"memref<{t}x{kk}x{size_text},strided<1,{kk}>,local>"
    cssa, cflat = k.param(c, t, m * o)
    cfull = k.emit(f"expand {cssa}[0 -> {o}x{m}] : {cflat}", "v")
    cview = k.emit(f"subview {cfull}[:,{k.idx(m0)}:{size}] : memref<{t}x{o}x{m}>", "v")
    ctype = f"memref<{t}x{o}x{size_text},strided<1,{o}>>"
    one, zero = (k.const(x if t[0] in "fc" else int(x), t) for x in (1.0, 0.0))
    k.line(f"gemm.n.n {one}, {wview}, {pview}, {zero}, {cview} : {t}, memref<{t}x{o}x{kk}>, "
           f"{ptype}, {t}, {ctype}")


def _tail(k: KernelBuilder, f: Fused, tail: Tail, c: tuple[int, str],
          shape: tuple[int, list[int], int], rows: tuple[IndexExpr, IndexExpr]) -> None:
    """The epilogue on this tile's rows of the result: a foreach over (feature, position in
    the row, row) that binds the gemm's element and stores the root's."""
    batch, sp, o = shape
    r0, nrows = rows
    buf, acc = c
    full = types.shape(tail.root)
    row = sp[-1] if sp else 1
    names, head = _foreach(k, [o, row, nrows], "e")
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
