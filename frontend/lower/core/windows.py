"""Window attributes shared by the windowed op families (convolution, reduce_window,
select_and_scatter) and the bounds arithmetic of a window tap."""

from __future__ import annotations

from dataclasses import dataclass

from frontend.ir.core import Op
from frontend.lower.core.builder import IndexExpr, KernelBuilder


def window_ints(op: Op, name: str, n: int, default: int) -> list[int]:
    """Window attribute ``name`` of ``op`` (``n`` entries, ``default`` when absent)."""
    return op.ints_attr(name, [default] * n)


def window_padding(op: Op, n: int) -> list[tuple[int, int]]:
    """The (low, high) padding of ``op``'s ``n`` dimensions (zeros when absent)."""
    if "padding" not in op.attrs:
        return [(0, 0)] * n
    array = op.dense_attr("padding")
    return [(int(lo), int(hi)) for lo, hi in array.reshape(n, 2)]


@dataclass(frozen=True)
class Window:
    """The window attributes of a convolution, per spatial dimension."""

    strides: list[int]
    ldil: list[int]
    rdil: list[int]
    reverse: list[bool]
    pad: list[tuple[int, int]]


def window_attrs(op: Op, nsp: int) -> Window:
    """``op``'s window attributes for ``nsp`` spatial dimensions."""
    return Window(window_ints(op, "window_strides", nsp, 1),
                  window_ints(op, "lhs_dilation", nsp, 1),
                  window_ints(op, "rhs_dilation", nsp, 1),
                  op.bools_attr("window_reversal", []) or [False] * nsp,
                  window_padding(op, nsp))


def all_of(k: KernelBuilder, conds: list[str]) -> str:
    """The conjunction of ``conds`` (computed once per scope)."""
    key = ("conv_all", tuple(conds))
    known = k.lookup(key)
    if known is not None:
        return known
    ok = conds[0]
    for c in conds[1:]:
        ok = k.arith("and", ok, c, "i1")
    return k.remember(key, ok)


def tap_index(k: KernelBuilder, win: Window, s: int, w: IndexExpr, window: int,
              x: IndexExpr, sizes: tuple[int, int]) -> tuple[IndexExpr, str | bool]:
    """The input index that kernel tap ``w`` of spatial dimension ``s`` reads at output
    position ``x``, clamped into the input, and whether it is a real element: True (for
    every output position and tap), False (for none) or an i1 value.  Which conditions
    are needed follows from the static ranges of ``x`` and ``w``."""
    size, out_size = sizes
    tap = k.isub(window - 1, w) if win.reverse[s] else w
    p = k.isub(k.iadd(k.imul(x, win.strides[s]), k.imul(tap, win.rdil[s])), win.pad[s][0])
    xs = (x, x) if isinstance(x, int) else (0, out_size - 1)
    ts = (tap, tap) if isinstance(tap, int) else (0, window - 1)
    lo = xs[0] * win.strides[s] + ts[0] * win.rdil[s] - win.pad[s][0]
    hi = xs[1] * win.strides[s] + ts[1] * win.rdil[s] - win.pad[s][0]
    d = win.ldil[s]
    if size == 0 or hi < 0 or lo > (size - 1) * d or (d > 1 and lo == hi and lo % d):
        return 0, False
    conds = []
    if lo < 0:
        conds.append(k.cmp("ge", k.idx(p), k.idx(0), "index"))
        p = k.select(conds[-1], k.idx(p), k.idx(0), "index")
    q = k.idiv(p, d)
    if d > 1 and lo != hi:
        conds.append(k.cmp("eq", k.idx(k.irem(p, d)), k.idx(0), "index"))
    if hi // d >= size:
        conds.append(k.cmp("lt", k.idx(q), k.idx(size), "index"))
        q = k.select(conds[-1], k.idx(q), k.idx(size - 1), "index")
    return q, (all_of(k, conds) if conds else True)
