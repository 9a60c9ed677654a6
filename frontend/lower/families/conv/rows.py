"""A channels-last convolution as a sum of shifted gemms over padded input rows.

For a convolution on the one-kernel path (:func:`frontend.lower.families.conv.gemm.implicit_gemm`)
whose input is ``[b, 0, 1, ..., f]`` with at least :data:`MIN_FEATURES` features and
whose last spatial dimension has stride 1 and no lhs dilation, work-group ``t`` takes
output row ``t`` (the ``Wo`` positions along the last spatial dimension) and

1. copies, for every tap ``j`` of the leading window dimensions, the input row it reads
   into ``rows: memref<C x L x J, local>`` (``L = (KW - 1) * dil + Wo`` positions of
   ``C`` features, zeros for the padding and for rows outside the input);
2. runs one ``gemm.n.n`` per window tap ``(j, dw)``: the weights' ``C`` rows of that tap
   (``[C, O]``) times ``rows[:, dw*dil : Wo, j]`` (``C x Wo``, stride ``C``: position
   ``x``'s features sit at ``x + dw*dil`` of the padded row), accumulating into the
   result's row (beta 1 after the first tap);
3. runs the epilogue on the row, as :func:`frontend.lower.families.conv.gemm.implicit_gemm` does.

Against the im2col tile this copies each input element about ``KH`` times instead of
``KH * KW`` times, along contiguous runs, and the gemms read their columns at stride
``C`` from a compact tile: 3x3 8x32x32x16 -> 32 NHWC, 0.30 -> 0.27 ms a call (PoCL,
AVX-512, interleaved A/B).  One gemm per leading tap with ``K = KW * C`` would read
overlapping columns (stride ``C`` < ``K``), which a memref cannot express.
"""

from __future__ import annotations

from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.windows import Window, all_of, tap_index, window_attrs
from frontend.lower.families.conv.gemm import foreach_modes, global_columns, store_tail
from frontend.lower.families.dot.general import gemm_output

MIN_FEATURES = 16
"""Input features at least: each tap's gemm contracts over them."""
MIN_ROW = 16
"""Output positions per row at least (a work-group's gemm columns)."""
LOCAL_BYTES = 32 * 1024
"""The most local memory the padded rows may take."""


def row_length(op: Op) -> int:
    """``L``: the positions of one padded input row (0 when the last spatial dimension has
    no window)."""
    dn = op.conv_dims
    rs, os_ = types.shape(op.operand("rhs")), types.shape(op.result)
    nsp = len(dn.spatial(dn.out))
    if nsp == 0:
        return 0
    win = window_attrs(op, nsp)
    kw = rs[dn.spatial(dn.rhs)[-1]]
    return (kw - 1) * win.rdil[-1] + os_[dn.spatial(dn.out)[-1]]


def eligible(op: Op, acc_bytes: int) -> bool:
    """Whether ``op`` (one group, a ``[b, 0.., f]`` result) can take this lowering."""
    dn = op.conv_dims
    lhs_labels = list(dn.lhs)
    nsp = len(lhs_labels) - 2
    if nsp == 0 or lhs_labels != ["b", *(str(i) for i in range(nsp)), "f"]:
        return False
    win = window_attrs(op, nsp)
    rs, os_ = types.shape(op.operand("rhs")), types.shape(op.result)
    fin = rs[dn.rhs.index("i")]
    wo = os_[dn.spatial(dn.out)[-1]]
    taps = prod(rs[d] for d in dn.spatial(dn.rhs)[:-1])
    local = fin * row_length(op) * taps * acc_bytes
    return (win.strides[-1] == 1 and win.ldil[-1] == 1 and fin >= MIN_FEATURES
            and wo >= MIN_ROW and local <= LOCAL_BYTES)


def shifted_gemms(lw: FuncLowering, op: Op, sizes: tuple[int, int, int], acc: str,
                  weights: int, sp: list[int]) -> None:
    """``op``'s result (``sizes`` = (output batch, ``K``, ``O``)) as one gemm per window
    tap over the padded input rows of each output row; ``weights`` is the ``[K, O]``
    buffer (taps row-major, then the input features)."""
    batch, kk, o = sizes
    dn = op.conv_dims
    rs = types.shape(op.operand("rhs"))
    window = [rs[d] for d in dn.spatial(dn.rhs)]
    fin = rs[dn.rhs.index("i")]
    rows_total = batch * prod(sp[:-1])
    wo, length = sp[-1], row_length(op)
    c, tail = gemm_output(lw, op.result, acc)
    name = "conv"
    if tail is not None and tail.root is not op.result:
        name = f"conv_{tail.root.op.name.split('.')[-1]}"
    with lw.kernel(name) as (k, f):
        r0 = k.irem(k.emit("group_id", "g"), rows_total)
        tile = _fill(k, f, op, (batch, sp, window, fin, length), acc, r0)
        view = global_columns(k, (c, acc), (o, batch * prod(sp)), (k.imul(r0, wo), wo))
        _tap_gemms(k, (weights, tile), acc, (window, fin, o, length, wo),
                   window_attrs(op, len(sp)), view)
        if tail is not None:
            store_tail(k, f, tail, (c, acc), (batch, sp, o), (r0, 1))
    lw.launch_last(rows_total)
    if tail is not None:
        lw.bind(tail.root, tail.out)


def _fill(k: KernelBuilder, f: Fused, op: Op, shape: tuple[int, list[int], list[int], int, int],
          acc: str, r: IndexExpr) -> str:
    """The local ``C x L x J`` padded input rows of output row ``r``: row ``j`` (the leading
    window taps, row-major) holds the input row that tap reads, zeros outside the input."""
    batch, sp, window, fin, length = shape
    lhs = op.operand("lhs")
    ls = types.shape(lhs)
    nsp = len(sp)
    win = window_attrs(op, nsp)
    taps = prod(window[:-1])
    local = f"memref<{acc}x{fin}x{length}x{taps},local>"
    tile = k.emit(f"alloca -> {local}", "l")
    b, *ys = k.delinearize(r, [batch, *sp[:-1]])
    names, head = foreach_modes(k, [fin, length, *window[:-1][::-1]], "p")
    with k.block(head):
        fi, p, ws = names[0], names[1], names[2:][::-1]
        idx: list[IndexExpr] = [b]
        conds: list[str] = []
        for s in range(nsp - 1):
            q, ok = tap_index(k, win, s, ws[s], window[s], ys[s], (ls[s + 1], sp[s]))
            if ok is False:
                q, ok = 0, k.cmp("lt", k.idx(0), k.idx(0), "index")
            if ok is not True:
                conds.append(ok)
            idx.append(q)
        x, inside = _padded(k, p, win.pad[-1][0], ls[-2], length)
        if inside is not None:
            conds.append(inside)
        idx += [x, fi]
        value = k.cast(f.value(lhs, idx), types.elem(lhs), acc)
        if conds:
            zero = k.const(0.0 if acc[0] in "fb" else 0, acc)
            value = k.select(all_of(k, conds), value, zero, acc)
        j = k.linear(ws, window[:-1]) if ws else 0
        k.line(f"store {value}, {tile}[{k.idx(fi)}, {k.idx(p)}, {k.idx(j)}] : {local}")
    return tile


def _padded(k: KernelBuilder, p: IndexExpr, lo: int, size: int,
            length: int) -> tuple[IndexExpr, str | None]:
    """The input index of padded position ``p`` (in ``[0, length)``), clamped into
    ``[0, size)``, and the condition that it is a real element (None: always)."""
    x = k.isub(p, lo)
    conds = []
    if lo > 0:
        conds.append(k.cmp("ge", k.idx(x), k.idx(0), "index"))
        x = k.select(conds[-1], k.idx(x), k.idx(0), "index")
    if length - 1 - lo >= size:
        conds.append(k.cmp("lt", k.idx(x), k.idx(size), "index"))
        x = k.select(conds[-1], k.idx(x), k.idx(size - 1), "index")
    return x, (all_of(k, conds) if conds else None)


def _tap_gemms(k: KernelBuilder, bufs: tuple[int, str], t: str,
               sizes: tuple[list[int], int, int, int, int], win: Window,
               c: tuple[str, str]) -> None:
    """C (``O x Wo``) = sum over taps ``(j, dw)`` of W[tap] (``O x C``) @ rows[:, off:Wo, j]
    with ``off = dw * dil`` (``(KW - 1 - dw) * dil`` for a reversed window)."""
    weights, tile = bufs
    window, fin, o, length, wo = sizes
    cview, ctype = c
    kk = prod(window) * fin
    taps, kw = prod(window[:-1]), window[-1]
    dil, rev = win.rdil[-1], win.reverse[-1]
    wssa, wflat = k.param(weights, t, kk * o)
    wfull = k.emit(f"expand {wssa}[0 -> {o}x{kk}] : {wflat}", "v")
    local = f"memref<{t}x{fin}x{length}x{taps},local>"
    one, zero = (k.const(x if t[0] in "fc" else int(x), t) for x in (1.0, 0.0))
    atype = f"memref<{t}x{o}x{fin},strided<1,{o}>>"
    btype = f"memref<{t}x{fin}x{wo},strided<1,{fin}>,local>"
    for j in range(taps):
        for dw in range(kw):
            tap = j * kw + dw
            off = (kw - 1 - dw if rev else dw) * dil
            a = k.emit(f"subview {wfull}[:,{k.idx(tap * fin)}:{fin}] : memref<{t}x{o}x{kk}>",
                       "v")
            b = k.emit(f"subview {tile}[:,{k.idx(off)}:{wo},{k.idx(j)}] : {local}", "v")
            beta = zero if tap == 0 else one
            k.line(f"gemm.n.n {one}, {a}, {b}, {beta}, {cview} : {t}, {atype}, {btype}, "
                   f"{t}, {ctype}")
