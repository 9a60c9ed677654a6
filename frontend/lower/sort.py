"""stablehlo.sort: a stable insertion sort per row, one work-item per row, in place in the
result buffers (copies of the inputs), with the comparator region as scalar code."""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from frontend.ir.core import Op
from frontend.lower import types
from frontend.lower.builder import IndexExpr, num_groups
from frontend.lower.driver import FuncLowering
from frontend.lower.fused import Fused
from frontend.lower.registry import kernel


@kernel("stablehlo.sort")
def sort(lw: FuncLowering, op: Op) -> None:
    """Copy the inputs to the results, then sort every row along ``dimension``."""
    outs = [lw.buffer_for(r) for r in op.results]
    for v, out in zip(op.operands, outs, strict=True):
        lw.compute_into(v, out)
    shape = types.shape(op.results[0])
    dim = int(op.attr("dimension"))  # type: ignore[arg-type]
    if dim < 0:
        dim += len(shape)
    row_shape = [1 if d == dim else n for d, n in enumerate(shape)]
    rows = prod(row_shape)
    ts = [types.elem(r) for r in op.results]
    with lw.kernel("sort") as (k, f):
        with k.elements(rows) as r:
            base = k.delinearize(r, row_shape)
            _insertion_sort(f, outs, ts, shape, base, dim, _comparator(f, op))
    lw.launch_last(num_groups(rows))
    for res, out in zip(op.results, outs, strict=True):
        lw.bind(res, out)


Less = Callable[[list[str], list[str]], str]


def _comparator(f: Fused, op: Op) -> Less:
    """The comparator region as ``less(lhs values, rhs values)``."""
    def less(lhs: list[str], rhs: list[str]) -> str:
        f.bound.clear()
        args = [x for pair in zip(lhs, rhs, strict=True) for x in pair]
        return f.body(op.regions[0].block, args)[0]
    return less


def _insertion_sort(f: Fused, outs: list[int], ts: list[str], shape: tuple[int, ...],
                    base: list[IndexExpr], dim: int, less: Less) -> None:
    """Sort the row at ``base`` along ``dim`` of every buffer in place, by the first
    buffers' order ``less`` (stable: equal elements keep their order)."""
    k = f.k
    size = prod(shape)

    def at(j: IndexExpr) -> IndexExpr:
        idx = list(base)
        idx[dim] = j
        return k.linear(idx, shape)

    def step(i: str, jj: str) -> str:
        j = k.idx(k.isub(i, jj))
        here, prev = at(j), at(k.isub(j, 1))
        cur = [k.load(out, t, size, here) for out, t in zip(outs, ts, strict=True)]
        before = [k.load(out, t, size, prev) for out, t in zip(outs, ts, strict=True)]
        smaller = less(cur, before)
        with k.block(f"if {smaller} {{"):
            for out, t, x, y in zip(outs, ts, cur, before, strict=True):
                k.store(x, out, t, size, prev)
                k.store(y, out, t, size, here)
        return k.arith("xor", smaller, k.const(True, "i1"), "i1")

    with k.loop(1, shape[dim], [], []) as outer:
        done0 = k.const(False, "i1")
        with k.loop(0, outer.var, [done0], ["i1"]) as inner:
            done = inner.carried[0]
            inner.yields = [k.branch(done, "i1", lambda: done,
                                     lambda: step(outer.var, inner.var))]


@kernel("chlo.top_k")
def top_k(lw: FuncLowering, op: Op) -> None:
    """Sort (descending, total order, stable) copies of the rows and their indices, then
    keep the first k of each row."""
    operand = op.operand("operand")
    shape = types.shape(operand)
    t, it = types.elem(operand), types.elem(op.results[1])
    vals, idxs = lw.buffer_for(operand), lw.new_buffer(it, shape)
    lw.compute_into(operand, vals)
    dim = len(shape) - 1
    row_shape = list(shape[:-1]) + [1]
    rows = prod(row_shape)
    with lw.kernel("top_k") as (k, f):
        with k.elements(rows) as r:
            base = k.delinearize(r, row_shape)
            with k.loop(0, shape[dim], [], []) as fill:
                idx = list(base)
                idx[dim] = fill.var
                k.store(k.cast(fill.var, "index", it), idxs, it, prod(shape),
                        k.linear(idx, shape))
            _insertion_sort(f, [vals, idxs], [t, it], shape, base, dim,
                            lambda a, b: _greater(f, a[0], b[0], t))
    lw.launch_last(num_groups(rows))
    for res, buf in zip(op.results, (vals, idxs), strict=True):
        out = lw.buffer_for(res)
        _take_front(lw, buf, out, shape, types.shape(res), types.elem(res))
        lw.bind(res, out)


def _greater(f: Fused, a: str, b: str, t: str) -> str:
    from frontend.lower.elementwise import _INT_OF, total_order_key

    if t in _INT_OF:
        a, b, t = total_order_key(f, a, t), total_order_key(f, b, t), _INT_OF[t]
    if t == "i1":
        a, b, t = f.k.cast(a, "i1", "i8"), f.k.cast(b, "i1", "i8"), "i8"
    return f.k.cmp("gt", a, b, t)


def _take_front(lw: FuncLowering, src: int, out: int, shape: tuple[int, ...],
                out_shape: tuple[int, ...], t: str) -> None:
    n = prod(out_shape)
    with lw.kernel("take") as (k, _):
        with k.elements(n) as i:
            idx = k.delinearize(i, out_shape)
            k.store(k.load(src, t, prod(shape), k.linear(idx, shape)), out, t, n, i)
    lw.launch_last(num_groups(n))
