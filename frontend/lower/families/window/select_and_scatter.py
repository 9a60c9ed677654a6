"""stablehlo.select_and_scatter: fill the result with init_value, then for every source
element pick the window element ``select`` prefers and combine the source into it (a
gather over each result element's windows when few windows overlap it)."""

from __future__ import annotations

from math import prod

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import kernel
from frontend.lower.core.windows import window_ints, window_padding
from frontend.lower.families.scatter_gather import in_bounds


@kernel("stablehlo.select_and_scatter")
def select_and_scatter(lw: FuncLowering, op: Op) -> None:
    """Fill the result with init_value; then, for every source element in order (one
    work-item), pick the window element ``select`` prefers and combine into it."""
    operand, source = op.operand("operand"), op.operand("source")
    shape, sshape = types.shape(operand), types.shape(source)
    rank, n, t = len(shape), prod(shape), types.elem(op.result)
    window = window_ints(op, "window_dimensions", rank, 1)
    strides = window_ints(op, "window_strides", rank, 1)
    pad = window_padding(op, rank)
    out = lw.buffer_for(op.result)
    if prod(-(-w // st) for w, st in zip(window, strides, strict=True)) <= GATHER_MAX:
        _gathered_select_and_scatter(lw, op, out, (window, strides, [p[0] for p in pad]))
        lw.bind(op.result, out)
        return
    with lw.kernel("fill") as (k, f):
        with k.elements(n) as i:
            k.store(f.value(op.operand("init_value"), []), out, t, n, i)
    lw.launch_last(_groups(n))
    with lw.kernel("select_and_scatter") as (k, f):
        with k.block(f"foreach %one_item = {k.idx(0)}, {k.idx(1)} : index {{"):
            with k.loop(0, prod(sshape), [], []) as src_loop:
                sidx = k.delinearize(src_loop.var, sshape)
                start = [k.isub(k.imul(s, st), p[0]) for s, st, p in zip(sidx, strides, pad,
                                                                          strict=True)]
                have, at, _ = _select_in_window(f, op, operand, start, window, t)
                with k.block(f"if {have} {{"):
                    cur = k.load(out, t, n, at)
                    f.bound.clear()
                    (new,) = f.body(op.regions[1].block, [cur, f.value(source, sidx)])
                    k.store(new, out, t, n, at)
    lw.launch_last(1)
    lw.bind(op.result, out)


GATHER_MAX = 4
"""select_and_scatter runs per result element when an element lies in at most this many
windows."""


def _gathered_select_and_scatter(lw: FuncLowering, op: Op, out: int,
                                 geometry: tuple[list[int], list[int], list[int]]) -> None:
    """One work-item per result element: fold init with the source elements (in source
    order) whose window contains the element and selects it.  Same order per element as
    the sequential definition, so exact for any scatter computation."""
    window, strides, pad_lo = geometry
    operand, source = op.operand("operand"), op.operand("source")
    shape, sshape = types.shape(operand), types.shape(source)
    n, t = prod(shape), types.elem(op.result)
    cands = [-(-w // st) for w, st in zip(window, strides, strict=True)]
    with lw.kernel("select_and_scatter") as (k, f):
        with k.elements(n) as i:
            xidx = k.delinearize(i, shape)
            lows = [_first_window(k, x, w, st, p)
                    for x, w, st, p in zip(xidx, window, strides, pad_lo, strict=True)]
            init = f.value(op.operand("init_value"), [])
            with k.loop(0, prod(cands), [init], [t]) as loop:
                sidx = [k.iadd(lo, c) for lo, c in zip(lows, k.delinearize(loop.var, cands),
                                                       strict=True)]
                acc = loop.carried[0]
                ok = k.const(True, "i1")
                for x, s_, st, p, w, ns in zip(xidx, sidx, strides, pad_lo, window, sshape,
                                               strict=True):
                    start = k.isub(k.imul(s_, st), p)
                    ok = k.arith("and", ok, k.cmp("lt", k.idx(s_), k.idx(ns), "index"), "i1")
                    ok = k.arith("and", ok, k.cmp("le", k.idx(start), k.idx(x), "index"), "i1")
                    ok = k.arith("and", ok, k.cmp("lt", k.idx(x), k.idx(k.iadd(start, w)),
                                                  "index"), "i1")

                def combine(sidx: list[IndexExpr] = sidx, acc: str = acc) -> str:
                    start = [k.isub(k.imul(s_, st), p)
                             for s_, st, p in zip(sidx, strides, pad_lo, strict=True)]
                    have, at, _ = _select_in_window(f, op, operand, start, window, t)
                    hit = k.arith("and", have, k.cmp("eq", at, k.idx(i), "index"), "i1")

                    def apply() -> str:
                        f.bound.clear()
                        return f.body(op.regions[1].block, [acc, f.value(source, sidx)])[0]

                    return k.branch(hit, t, apply, lambda: acc)

                def keep(acc: str = acc) -> str:
                    return acc

                loop.yields = [k.branch(ok, t, combine, keep)]
            k.store(loop.results[0], out, t, n, i)
    lw.launch_last(_groups(n))


def _first_window(k: KernelBuilder, x: IndexExpr, w: int, st: int, p: int) -> IndexExpr:
    """The first source position whose window (start s * st - p, size w) can hold x:
    max(0, ceil((x + p - w + 1) / st))."""
    num = k.idx(k.iadd(x, p - w + 1))
    positive = k.cmp("gt", num, k.idx(0), "index")
    safe = k.select(positive, num, k.idx(0), "index")
    return k.idx(k.idiv(k.iadd(safe, st - 1), st))


def _groups(n: int) -> int:
    return num_groups(n)


def _select_in_window(f: Fused, op: Op, operand: Value, start: list[IndexExpr],
                      window: list[int], t: str) -> list[str]:
    """Loop over the window: (found any, linear index of the selected element, its value)."""
    k = f.k
    shape = types.shape(operand)
    inits = [k.const(False, "i1"), k.idx(0), _zero(k, t)]
    with k.loop(0, prod(window), inits, ["i1", "index", t]) as loop:
        have, at, val = loop.carried
        pos = [k.iadd(s, w) for s, w in zip(start, k.delinearize(loop.var, window),
                                            strict=True)]
        inside = in_bounds(k, pos, shape)

        def consider() -> str:
            x = f.value(operand, [k.select(k.cmp("ge", k.idx(p), k.idx(0), "index"), k.idx(p),
                                           k.idx(0), "index") for p in pos])
            f.bound.clear()
            (keep,) = f.body(op.regions[0].block, [val, x])
            take = k.arith("or", k.arith("xor", have, k.const(True, "i1"), "i1"),
                           k.arith("xor", keep, k.const(True, "i1"), "i1"), "i1")
            return take

        take = k.branch(inside, "i1", consider, lambda: k.const(False, "i1"))
        here = k.idx(k.linear(pos, shape))
        x_new = k.branch(take, t, lambda: f.value(operand, pos), lambda: val)
        loop.yields = [k.arith("or", have, take, "i1"), k.select(take, here, at, "index"),
                       x_new]
    return loop.results


def _zero(k: KernelBuilder, t: str) -> str:
    if t.startswith("c"):
        return k.const(0j, t)
    return k.const(0.0 if t[0] in "fb" else 0, t)
