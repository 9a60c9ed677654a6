"""chlo.top_k with a small k: every row streamed once through a sorted k-element buffer.

One work-item per row (rows dealt to work-groups as in :mod:`.sorting`) reads the row in
order, keeping the k greatest elements seen so far (their order keys and indices,
descending) in loop-carried scalars.  An element enters only when it is
strictly greater than the buffer's last (or the buffer is not full yet), so among equal
keys the lower index stays first, as in the stable descending sort the op is defined
by; the entry is an insertion network of selects.  With random data an insertion is
rare (about ``k ln(n / k)`` per row), and chunks of :data:`CHUNK` elements none of which
would enter are skipped by one branch-free (vectorisable) test, so a long row costs about
one load and one compare per element.  The values are read again at the k winning
indices at the end (producers fuse), so the buffer holds only integer keys.

The order is :func:`order_key`'s, the one :func:`top_k`'s sort of long rows uses
(IEEE total order for floats: NaNs above infinity, -0.0 below 0.0).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import kernel
from frontend.lower.families.elementwise.arith import INT_OF, total_order_key
from frontend.lower.families.sort.sorting import (
    Rows,
    operand_source,
    row_groups,
    row_items,
    sort_rows,
)

MAX_K = 32
"""Largest k streamed; larger ones sort the rows (:func:`top_k`)."""

CHUNK = 16
"""Elements tested together before any enters the buffer."""

Source = Callable[[Fused, list[IndexExpr]], str]


def key_type(t: str) -> str:
    """The type of :func:`order_key`'s keys for elements of type ``t``."""
    return INT_OF.get(t, "i8" if t == "i1" else t)


def order_key(f: Fused, x: str, t: str) -> str:
    """``x`` as a key ordered by ``cmp.gt`` on :func:`key_type`: floats by their IEEE
    total order, i1 as i8, other integers as they are."""
    if t in INT_OF:
        return total_order_key(f, x, t)
    return f.k.cast(x, t, key_type(t))


def streamed_top_k(lw: FuncLowering, op: Op, source: Source) -> None:
    """Lower ``op`` (k <= :data:`MAX_K`) by streaming every row once."""
    operand = op.operand("operand")
    shape = types.shape(operand)
    rows = Rows(shape, len(shape) - 1)
    kk = op.int_attr("k")
    outs = [lw.buffer_for(r) for r in op.results]
    if rows.count and kk:
        with lw.kernel("top_k") as (k, f):
            with row_items(k, rows.count) as row:
                first = rows.start(k, row)
                winners = _stream(f, rows, kk, first, source, types.elem(operand))
                _store(f, op, outs, rows, (row, first), winners, source)
        lw.launch_last(row_groups(rows.count))
    for res, out in zip(op.results, outs, strict=True):
        lw.bind(res, out)


def _stream(f: Fused, rows: Rows, kk: int, first: list[IndexExpr], source: Source,
            t: str) -> list[str]:
    """The indices (in the row, descending by key, ties by index) of the row's ``kk``
    greatest elements: chunks of :data:`CHUNK` are skipped at once when none of their
    elements would enter (a branch-free test the compiler vectorises), the rest of the
    row element by element."""
    k = f.k
    kt = key_type(t)
    state = [k.const(0, kt)] * kk + [k.idx(0)] * kk
    whole = rows.n - rows.n % CHUNK
    if whole:
        with k.loop(0, whole, state, _types(kt, kk), step=CHUNK) as chunks:
            c = chunks.var
            last = chunks.carried[kk - 1]
            keys = [order_key(f, source(f, _at(rows, first, k.iadd(c, j))), t)
                    for j in range(CHUNK)]
            enters = k.cmp("lt", c, k.idx(kk), "index")
            for key in keys:
                enters = k.arith("or", enters, k.cmp("gt", key, last, kt), "i1")
            chunks.yields = _if(k, enters, _types(kt, kk),
                                lambda: _elements(f, rows, (first, c, k.iadd(c, CHUNK)),
                                                  source, t, chunks.carried),
                                chunks.carried)
        state = chunks.results
    if whole < rows.n:
        state = _elements(f, rows, (first, whole, rows.n), source, t, state)
    return state[kk:]


def _types(kt: str, kk: int) -> list[str]:
    return [kt] * kk + ["index"] * kk


def _elements(f: Fused, rows: Rows, span: tuple[list[IndexExpr], IndexExpr, IndexExpr],
              source: Source, t: str, state: list[str]) -> list[str]:
    """The buffer ``state`` (keys, then indices) after the elements [lo, hi) of the row
    at ``first``, one at a time."""
    k = f.k
    first, lo, hi = span
    kk, kt = len(state) // 2, key_type(t)
    with k.loop(lo, hi, state, _types(kt, kk)) as loop:
        keys, idxs = loop.carried[:kk], loop.carried[kk:]
        key = order_key(f, source(f, _at(rows, first, loop.var)), t)
        filling = k.cmp("lt", loop.var, k.idx(kk), "index")
        enters = k.arith("or", filling, k.cmp("gt", key, keys[-1], kt), "i1")
        loop.yields = _if(k, enters, _types(kt, kk),
                          lambda: _insert(k, (key, loop.var), keys, idxs, kt),
                          loop.carried)
    return loop.results


def _insert(k: KernelBuilder, new: tuple[str, str], keys: list[str], idxs: list[str],
            kt: str) -> list[str]:
    """The buffer with ``new = (key, index)`` inserted before the first entry it is
    greater than (or the first empty slot, p >= index), the last entry dropped."""
    key, at = new
    above = []  # above[p]: the new entry goes at p or before
    for p, old in enumerate(keys):
        empty = k.cmp("le", at, k.idx(p), "index")
        above.append(k.arith("or", empty, k.cmp("gt", key, old, kt), "i1"))
    out_keys, out_idxs = [], []
    for p in range(len(keys)):
        if p == 0:
            out_keys.append(k.select(above[0], key, keys[0], kt))
            out_idxs.append(k.select(above[0], at, idxs[0], "index"))
            continue
        shifted_key = k.select(above[p - 1], keys[p - 1], key, kt)
        shifted_idx = k.select(above[p - 1], idxs[p - 1], at, "index")
        out_keys.append(k.select(above[p], shifted_key, keys[p], kt))
        out_idxs.append(k.select(above[p], shifted_idx, idxs[p], "index"))
    return out_keys + out_idxs


def _if(k: KernelBuilder, cond: str, ts: list[str], then: Callable[[], list[str]],
        otherwise: list[str]) -> list[str]:
    """``cond ? then() : otherwise`` on several values, only the taken side evaluated."""
    names = [k.fresh("s") for _ in ts]
    sig = ", ".join(ts)
    with k.block(f"{', '.join(names)} = if {cond} -> ({sig}) {{", ""):
        k.line(f"yield {', '.join(then())} : {sig}")
    with k.block("} else {"):
        k.line(f"yield {', '.join(otherwise)} : {sig}")
    return names


def _store(f: Fused, op: Op, outs: list[int], rows: Rows,
           row: tuple[str, list[IndexExpr]], winners: list[str], source: Source) -> None:
    """Write the values at the winning indices and the indices of row ``row``."""
    k = f.k
    r, first = row
    kk = len(winners)
    vt, it = types.elem(op.results[0]), types.elem(op.results[1])
    size = types.size(op.results[0])
    for p, j in enumerate(winners):
        at = k.iadd(k.imul(r, kk), p)
        k.store(source(f, _at(rows, first, j)), outs[0], vt, size, at)
        k.store(k.cast(j, "index", it), outs[1], it, size, at)


def _at(rows: Rows, first: list[IndexExpr], j: IndexExpr) -> list[IndexExpr]:
    idx = list(first)
    idx[rows.dim] = j
    return idx


@kernel("chlo.top_k")
def top_k(lw: FuncLowering, op: Op) -> None:
    """Small k: stream every row once (:func:`streamed_top_k`); else sort
    (descending, total order, stable) the rows with their indices, then keep the first k
    of each row."""
    operand = op.operand("operand")
    if op.int_attr("k") <= MAX_K:
        streamed_top_k(lw, op, operand_source(operand))
        return
    shape = types.shape(operand)
    t, it = types.elem(operand), types.elem(op.results[1])
    rows = Rows(shape, len(shape) - 1)

    def index(f: Fused, idx: list[IndexExpr]) -> str:
        return f.k.cast(f.k.idx(idx[-1]), "index", it)

    sorted_bufs = sort_rows(lw, rows, [t, it], [operand_source(operand), index],
                            lambda f, a, b: _greater(f, a[0], b[0], t))
    for res, buf in zip(op.results, sorted_bufs, strict=True):
        out = lw.buffer_for(res)
        _take_front(lw, buf, out, shape, types.shape(res), types.elem(res))
        lw.bind(res, out)


def _greater(f: Fused, a: str, b: str, t: str) -> str:
    return f.k.cmp("gt", order_key(f, a, t), order_key(f, b, t), key_type(t))


def _take_front(lw: FuncLowering, src: int, out: int, shape: tuple[int, ...],
                out_shape: tuple[int, ...], t: str) -> None:
    n = prod(out_shape)
    with lw.kernel("take") as (k, _):
        with k.elements(n) as i:
            idx = k.delinearize(i, out_shape)
            k.store(k.load(src, t, prod(shape), k.linear(idx, shape)), out, t, n, i)
    lw.launch_last(num_groups(n))
