"""stablehlo.reduce_window: prefix scans, unrolled pooling windows, and a looped fallback.

* A window that spans one whole dimension from its start (or to its end) and is a single
  element along every other dimension is a prefix scan (``jnp.cumsum`` and friends):
  :mod:`.prefix_scan` walks the dimension once per row, O(n) instead of O(n * length).
* Windows of at most ``UNROLL`` taps (``UNROLL_SELECTS`` for float maximum/minimum),
  pooling: the kernel walks the result's own row-major index space
  (:meth:`KernelBuilder.elements_nd`, no division per element, the innermost dimension,
  channels in NHWC, contiguous), and folds the body over the fully unrolled window.  A
  tap is clamped into the input and guarded only where it may fall into the padding or
  between base-dilated elements (conditions known from static ranges,
  :func:`conv_direct.tap_index`; VALID windows have none): there it reads the init
  value, as the spec's padded input does.  Elementwise consumers (avg_pool's divide) run
  in the same kernel on the element (:meth:`FuncLowering.epilogue`).
* Larger windows: the same walk with a loop over the taps of every windowed dimension
  but the last, whose taps are unrolled inside it (when short enough).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, groups_nd
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import kernel
from frontend.lower.core.windows import Window, all_of, tap_index, window_ints, window_padding
from frontend.lower.families.window import prefix_scan

UNROLL = 64
"""Windows of at most this many taps are unrolled..."""
UNROLL_SELECTS = 12
"""...or of this many when the body selects (float maximum/minimum propagate NaN through
selects): PoCL's LLVM takes time superlinear in such a chain's length (a 20-tap float max
window: ~13 s to build, 35 taps: minutes)."""


@dataclass(frozen=True)
class Attrs:
    """A reduce_window's window attributes, one entry per dimension."""

    window: list[int]
    strides: list[int]
    base: list[int]
    wdil: list[int]
    pad: list[tuple[int, int]]

    def conv_window(self) -> Window:
        """The same window as :class:`~frontend.lower.core.windows.Window` (base dilation =
        lhs dilation)."""
        return Window(self.strides, self.base, self.wdil, [False] * len(self.window),
                      self.pad)


def window_attrs(op: Op) -> Attrs:
    """``op``'s window attributes (defaults filled in)."""
    rank = len(types.shape(op.operand_group("inputs")[0]))
    return Attrs(window_ints(op, "window_dimensions", rank, 1),
                 window_ints(op, "window_strides", rank, 1),
                 window_ints(op, "base_dilations", rank, 1),
                 window_ints(op, "window_dilations", rank, 1),
                 window_padding(op, rank))


@kernel("stablehlo.reduce_window")
def reduce_window(lw: FuncLowering, op: Op) -> None:
    """Per output element, fold the body over its window; padding and holes of the base
    dilation read the init values (the spec's padded, dilated inputs)."""
    attrs = window_attrs(op)
    if prod(types.shape(op.results[0])) == 0 or prod(attrs.window) == 0:
        _trivial(lw, op)
        return
    scan = prefix_scan.plan(op, attrs.window, attrs.strides, attrs.base, attrs.wdil, attrs.pad)
    if scan is not None:
        prefix_scan.lower(lw, op, scan)
        return
    if lw.defer_to_epilogue(op):
        return
    epilogue = lw.epilogue(op.results[0]) if len(op.results) == 1 else None
    roots = [epilogue.root] if epilogue is not None else list(op.results)
    outs = [lw.buffer_for(r) for r in roots]
    out_shape = types.shape(op.results[0])
    name = "reduce_window" + ("" if epilogue is None
                              else "_" + roots[0].op.name.split(".")[-1])
    with lw.kernel(name) as (k, f):
        with k.elements_nd(out_shape) as oidx:
            if prod(attrs.window) <= _unroll_limit(op):
                values = _unrolled(k, f, op, attrs, oidx)
            else:
                values = _looped(k, f, op, attrs, oidx)
            if epilogue is not None:
                f.bound[op.results[0]] = values[0]
                values = [f.value(epilogue.root, oidx)]
                del f.bound[op.results[0]]
            at = k.linear(oidx, out_shape)
            for v, r, out in zip(values, roots, outs, strict=True):
                k.store(v, out, types.elem(r), prod(out_shape), at)
    lw.launch_last(groups_nd(out_shape))
    for r, out in zip(roots, outs, strict=True):
        lw.bind(r, out)


def _unroll_limit(op: Op) -> int:
    """The most taps to unroll for ``op``'s body."""
    body = op.regions[0].block.ops
    selects = any(o.name in ("stablehlo.select", "stablehlo.compare")
                  or o.name in ("stablehlo.maximum", "stablehlo.minimum")
                  and types.elem(o.results[0])[0] in "fbc" for o in body)
    return UNROLL_SELECTS if selects else UNROLL


def _trivial(lw: FuncLowering, op: Op) -> None:
    """An empty result, or an empty window: every element is the init value."""
    shape = types.shape(op.results[0])
    for r, init in zip(op.results, op.operand_group("init_values"), strict=True):
        out = lw.buffer_for(r)
        if prod(shape):
            with lw.kernel("reduce_window_init") as (k, f):
                with k.elements_nd(shape) as idx:
                    k.store(f.value(init, []), out, types.elem(r), prod(shape),
                            k.linear(idx, shape))
            lw.launch_last(groups_nd(shape))
        lw.bind(r, out)


def _unrolled(k: KernelBuilder, f: Fused, op: Op, attrs: Attrs,
              oidx: list[IndexExpr]) -> list[str]:
    """The body folded over every tap of the window of ``oidx``, in row-major tap order."""
    init = [f.value(v, []) for v in op.operand_group("init_values")]
    return _fold_taps(k, f, op, attrs, oidx, ({}, True), init)


def _fold_taps(k: KernelBuilder, f: Fused, op: Op, attrs: Attrs, oidx: list[IndexExpr],
               fixed: tuple[dict[int, IndexExpr], str | bool], accs: list[str]) -> list[str]:
    """``accs`` folded with the taps of every dimension not in ``fixed`` (unrolled,
    row-major); ``fixed`` gives the input index of the other dimensions and whether it is
    a real element (True: always, False: never)."""
    inputs, inits = op.operand_group("inputs"), op.operand_group("init_values")
    in_shape, out_shape = types.shape(inputs[0]), types.shape(op.results[0])
    at, guard = fixed
    win = attrs.conv_window()
    taps = [[(at[d], True)] if d in at else
            [tap_index(k, win, d, w, attrs.window[d], oidx[d], (in_shape[d], out_shape[d]))
             for w in range(attrs.window[d])] for d in range(len(in_shape))]
    init = [f.value(v, []) for v in inits]
    for tap in itertools.product(*(range(len(t)) for t in taps)):
        src = [taps[d][w][0] for d, w in enumerate(tap)]
        conds = [taps[d][w][1] for d, w in enumerate(tap)] + [guard]
        if False in conds:
            xs = init
        else:
            xs = [f.value(v, src) for v in inputs]
            real = [c for c in conds if isinstance(c, str)]
            if real:
                ok = all_of(k, real)
                xs = [k.select(ok, x, i, types.elem(v))
                      for x, i, v in zip(xs, init, inputs, strict=True)]
        with k.scope():  # the body once per tap, not memoized across taps
            accs = f.body(op.regions[0].block, accs + xs)
    return accs


def _looped(k: KernelBuilder, f: Fused, op: Op, attrs: Attrs,
            oidx: list[IndexExpr]) -> list[str]:
    """The body folded over the window of ``oidx``: a loop over the taps of every
    dimension but the last with a window (unrolled inside, when short enough)."""
    window = attrs.window
    in_shape = types.shape(op.operand_group("inputs")[0])
    last = max(d for d in range(len(window)) if window[d] > 1)
    looped = [d for d in range(len(window)) if window[d] > 1
              and (d != last or window[d] > _unroll_limit(op))]
    ts = [types.elem(r) for r in op.results]
    init = [f.value(v, []) for v in op.operand_group("init_values")]
    with k.loop(0, prod(window[d] for d in looped), init, ts) as loop:
        widx = k.delinearize(loop.var, [window[d] for d in looped])
        at: dict[int, IndexExpr] = {}
        ok: str | bool = True
        for d, w in zip(looped, widx, strict=True):
            at[d], real = _loop_tap(k, attrs, d, (oidx[d], w), in_shape[d])
            if real is not True and ok is not False:
                ok = real if ok is True or real is False else k.arith("and", ok, real, "i1")
        f.bound.clear()
        loop.yields = _fold_taps(k, f, op, attrs, oidx, (at, ok), loop.carried)
    return loop.results


def _loop_tap(k: KernelBuilder, attrs: Attrs, d: int, at: tuple[IndexExpr, IndexExpr],
              size: int) -> tuple[IndexExpr, str | bool]:
    """The input index (clamped into the input) that tap ``w`` of dimension ``d`` reads
    at output index ``o`` (``at``), and whether it is a real element (not padding or a
    hole; False for an empty input)."""
    if size == 0:
        return 0, False
    o, w = at
    p = k.idx(k.isub(k.iadd(k.imul(o, attrs.strides[d]), k.imul(w, attrs.wdil[d])),
                     attrs.pad[d][0]))
    b = attrs.base[d]
    q = k.arith("div", p, k.idx(b), "index") if b > 1 else p
    ok = k.arith("and", k.cmp("ge", p, k.idx(0), "index"),
                 k.cmp("lt", q, k.idx(size), "index"), "i1")
    if b > 1:
        ok = k.arith("and", ok, k.cmp("eq", k.arith("rem", p, k.idx(b), "index"), k.idx(0),
                                      "index"), "i1")
    return k.iclamp(q, 0, size - 1), ok
