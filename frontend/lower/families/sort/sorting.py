"""stablehlo.sort and chlo.top_k (k > ``top_k.MAX_K``): a stable merge sort of every row

Every row is sorted bottom-up, merging runs of width 1, 2, 4, ... while ping-ponging
between two sets of buffers (the operands move together; the comparator region is scalar
code).  Two kernels do all of it:

* ``sort_tiles``: one work-item per tile of up to ``TILE`` elements of a row (a whole row
  when it is that short, so many short rows sort one per work-item) reads the tile from
  the operands (producers fuse), sorts chunks of ``CHUNK`` in registers, then merges it
  sequentially at every width up to the tile.
* ``sort_merge`` (rows longer than ``TILE``): one launch per further width ``TILE,
  2 TILE, ... < n``.  Every work-item writes ``SPAN`` consecutive outputs of one pair of
  runs: a binary search along the merge path finds how many of the first ``d`` outputs
  come from the left run, then it merges sequentially from there.  The width is read from
  a one-element buffer, so the same kernel serves every pass and rows of any length use
  all work-groups.

A merge takes the left run's element first unless the right one is strictly less, so the
sort is stable (and so also a valid unstable sort); ``is_stable`` needs no other code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from math import prod

import numpy as np

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import kernel
from tensorlang.plan import Launch

TILE = 1024
"""Elements one work-item sorts alone (a power of two)."""
CHUNK = 8
"""Elements sorted in registers before the first merge (a power of two dividing
``TILE``)."""
SPAN = 256
"""Outputs per work-item in a ``sort_merge`` pass (a power of two dividing ``TILE``)."""
TARGET_GROUPS = 64
"""Split a kernel's work-items over about this many work-groups."""
MAX_PER_GROUP = 1024
"""... but give no work-group more work-items than this."""

Less = Callable[[Fused, list[str], list[str]], str]
"""``less(f, lhs values, rhs values)``: an i1, the comparator applied in ``f``'s kernel."""
Source = Callable[[Fused, list[IndexExpr]], str]
"""``source(f, idx)``: element ``idx`` (row-major) of one sorted operand."""


@kernel("stablehlo.sort")
def sort(lw: FuncLowering, op: Op) -> None:
    """Sort every row along ``dimension`` by the comparator region."""
    shape = types.shape(op.results[0])
    dim = op.int_attr("dimension")
    rows = Rows(shape, dim + len(shape) if dim < 0 else dim)
    sources = [operand_source(v) for v in op.operands]
    outs = sort_rows(lw, rows, [types.elem(r) for r in op.results], sources, _comparator(op))
    for res, out in zip(op.results, outs, strict=True):
        lw.bind(res, out)


def operand_source(v: Value) -> Source:
    """The elements of ``v`` as a sort :data:`Source` (its producers fuse)."""
    return lambda f, idx: f.value(v, idx)


def _comparator(op: Op) -> Less:
    """The comparator region as ``less(f, lhs values, rhs values)``."""
    def less(f: Fused, lhs: list[str], rhs: list[str]) -> str:
        f.bound.clear()
        args = [x for pair in zip(lhs, rhs, strict=True) for x in pair]
        with f.k.scope():  # a fresh memo: the same region on other arguments
            return f.body(op.regions[0].block, args)[0]
    return less


@dataclass(frozen=True)
class Rows:
    """The rows of a row-major ``shape`` along ``dim``."""

    shape: tuple[int, ...]
    dim: int

    @property
    def n(self) -> int:
        """Elements per row."""
        return self.shape[self.dim]

    @property
    def size(self) -> int:
        """Elements in all."""
        return prod(self.shape)

    @property
    def count(self) -> int:
        """The number of rows."""
        return prod(self.shape) // self.n if self.n else 0

    def start(self, k: KernelBuilder, r: IndexExpr) -> list[IndexExpr]:
        """The multi-index of row ``r``'s first element."""
        return k.delinearize(r, [1 if d == self.dim else n for d, n in enumerate(self.shape)])

    def at(self, k: KernelBuilder, first: list[IndexExpr], j: IndexExpr) -> IndexExpr:
        """The linear index of element ``j`` of the row starting at ``first``."""
        idx = list(first)
        idx[self.dim] = j
        return k.linear(idx, self.shape)


def sort_rows(lw: FuncLowering, rows: Rows, ts: list[str], sources: list[Source],
              less: Less) -> list[int]:
    """Buffers (of ``rows.shape``, types ``ts``) holding ``sources`` with every row sorted
    stably by ``less`` on all sources together."""
    bufs = [lw.new_buffer(t, rows.shape) for t in ts]
    if rows.size == 0:
        return bufs
    spare = [lw.new_buffer(t, rows.shape) for t in ts]
    tile = min(rows.n, TILE)
    _sort_tiles(lw, rows, ts, sources, less, (bufs, spare), tile)
    if _levels(tile) % 2:
        bufs, spare = spare, bufs
    widths = []
    while tile < rows.n:
        widths.append(tile)
        tile *= 2
    if widths:
        bufs = _merge_passes(lw, rows, ts, less, (bufs, spare), widths)
    return bufs


def _levels(tile: int) -> int:
    """Merge levels in a tile: one per width ``CHUNK``, 2 ``CHUNK``, ... < ``tile``."""
    return (-(-tile // CHUNK) - 1).bit_length()


def _sort_tiles(lw: FuncLowering, rows: Rows, ts: list[str], sources: list[Source],
                less: Less, pair: tuple[list[int], list[int]], tile: int) -> None:
    """Sort every chunk of every tile of ``tile`` elements from the operands into
    ``pair[0]``, then merge the tile sequentially, ping-ponging between the buffer sets."""
    n = rows.n
    tiles = -(-n // tile)
    items = rows.count * tiles
    with lw.kernel("sort_tiles") as (k, f):
        with row_items(k, items) as item:
            first = rows.start(k, k.idiv(item, tiles))
            lo = k.imul(k.irem(item, tiles), tile)
            length = tile if n % tile == 0 else _imin(k, tile, k.isub(n, lo))
            chunk = min(CHUNK, tile)
            with k.loop(0, length, [], [], step=chunk) as chunks:
                size = chunk if n % chunk == 0 else \
                    _imin(k, chunk, k.isub(length, chunks.var))
                _sort_chunk(f, rows, ts, sources, less, pair[0],
                            (first, k.iadd(lo, chunks.var), size), chunk)
            _merge_levels(f, rows, ts, less, pair, (first, lo, length), _levels(tile))
    lw.launch_last(row_groups(items))


def _sort_chunk(f: Fused, rows: Rows, ts: list[str], sources: list[Source], less: Less,
                out: list[int], span: tuple[list[IndexExpr], IndexExpr, IndexExpr],
                chunk: int) -> None:
    """Sort the ``size <= chunk`` elements from position ``at`` of the row at ``first`` in
    registers (odd-even transposition: swapping only strictly smaller neighbours keeps it
    stable) and store them to ``out``."""
    k = f.k
    first, at, size = span
    full = size == chunk
    xs = []
    for p in range(chunk):
        idx = list(first)
        idx[rows.dim] = k.iadd(at, p if full else _imin(k, p, k.isub(size, 1)))
        xs.append([source(f, idx) for source in sources])
    for step in range(chunk):
        for p in range(step % 2, chunk - 1, 2):
            swap = less(f, xs[p + 1], xs[p])
            if not full:
                swap = k.arith("and", swap, k.cmp("lt", k.idx(p + 1), k.idx(size), "index"),
                               "i1")
            xs[p], xs[p + 1] = _swap(k, ts, swap, xs[p], xs[p + 1])
    for p, x in enumerate(xs):
        at_p = rows.at(k, first, k.iadd(at, p))
        if full:
            _store_row(k, rows, ts, x, out, at_p)
            continue
        with k.block(f"if {k.cmp('lt', k.idx(p), k.idx(size), 'index')} {{"):
            _store_row(k, rows, ts, x, out, at_p)


def _swap(k: KernelBuilder, ts: list[str], cond: str, a: list[str],
          b: list[str]) -> tuple[list[str], list[str]]:
    """``(b, a)`` where ``cond`` holds, else ``(a, b)``."""
    return ([k.select(cond, y, x, t) for x, y, t in zip(a, b, ts, strict=True)],
            [k.select(cond, x, y, t) for x, y, t in zip(a, b, ts, strict=True)])


def _store_row(k: KernelBuilder, rows: Rows, ts: list[str], xs: list[str],
               bufs: list[int], at: IndexExpr) -> None:
    for x, buf, t in zip(xs, bufs, ts, strict=True):
        k.store(x, buf, t, rows.size, at)


def _merge_levels(f: Fused, rows: Rows, ts: list[str], less: Less,
                  pair: tuple[list[int], list[int]],
                  tile: tuple[list[IndexExpr], IndexExpr, IndexExpr], levels: int) -> None:
    """Merge a tile whose runs of ``CHUNK`` are sorted at ``levels`` widths ``CHUNK``,
    2 ``CHUNK``, ..., starting from ``pair[0]``: a loop over two levels at a time (to keep
    the kernel short), then one more level when their number is odd."""
    k = f.k
    src, dst = pair
    if levels >= 2:
        with k.loop(0, levels // 2, [k.idx(CHUNK)], ["index"]) as twice:
            width = twice.carried[0]
            double = k.iadd(width, width)
            with k.scope():
                _merge_level(f, rows, ts, less, (src, dst), tile, width)
            with k.scope():
                _merge_level(f, rows, ts, less, (dst, src), tile, double)
            twice.yields = [k.idx(k.iadd(double, double))]
    if levels % 2:
        _merge_level(f, rows, ts, less, (src, dst), tile, CHUNK * 2 ** (levels - 1))


def _merge_level(f: Fused, rows: Rows, ts: list[str], less: Less,
                 bufs: tuple[list[int], list[int]],
                 tile: tuple[list[IndexExpr], IndexExpr, IndexExpr],
                 width: IndexExpr) -> None:
    """Merge the pairs of runs of ``width`` in the tile [lo, lo + length) of the row at
    ``first`` from ``bufs[0]`` into ``bufs[1]``."""
    k = f.k
    first, lo, length = tile
    with k.loop(0, length, [], [], step=k.iadd(width, width)) as pairs:
        rest = k.isub(length, pairs.var)
        a = _imin(k, rest, width)
        b = _imin(k, k.isub(rest, a), width)
        left = k.iadd(lo, pairs.var)
        _merge(f, rows, ts, less, bufs, (first, left, a, b), (left, k.iadd(a, b)), (0, 0))


def _merge(f: Fused, rows: Rows, ts: list[str], less: Less,
           bufs: tuple[list[int], list[int]],
           runs: tuple[list[IndexExpr], IndexExpr, IndexExpr, IndexExpr],
           out: tuple[IndexExpr, IndexExpr], split: tuple[IndexExpr, IndexExpr]) -> None:
    """Write ``count`` outputs of the stable merge of the left run [left, left + a) and the
    right run [left + a, left + a + b) (a >= 1) of the row at ``first`` to positions
    ``at, at + 1, ...``, starting after ``split = (i, j)`` elements of each run."""
    k = f.k
    src, dst = bufs
    first, left, a, b = runs
    at, count = out
    right, last_left, last_right = k.iadd(left, a), k.isub(a, 1), k.isub(b, 1)
    with k.loop(0, count, [k.idx(split[0]), k.idx(split[1])], ["index", "index"]) as loop:
        i, j = loop.carried
        xl = _load_row(k, rows, ts, src, first, k.iadd(left, _imin(k, i, last_left)))
        xr = _load_row(k, rows, ts, src, first, k.iadd(right, _imin(k, j, last_right)))
        left_done = k.cmp("ge", i, k.idx(a), "index")
        has_right = k.cmp("lt", j, k.idx(b), "index")
        take_right = k.arith("and", has_right,
                             k.arith("or", left_done, less(f, xr, xl), "i1"), "i1")
        pos = rows.at(k, first, k.iadd(at, loop.var))
        for buf, t, x, y in zip(dst, ts, xr, xl, strict=True):
            k.store(k.select(take_right, x, y, t), buf, t, rows.size, pos)
        step = k.cast(take_right, "i1", "index")
        loop.yields = [k.idx(k.isub(k.iadd(i, 1), step)), k.idx(k.iadd(j, step))]


def _load_row(k: KernelBuilder, rows: Rows, ts: list[str], bufs: list[int],
              first: list[IndexExpr], j: IndexExpr) -> list[str]:
    at = rows.at(k, first, j)
    return [k.load(buf, t, rows.size, at) for buf, t in zip(bufs, ts, strict=True)]


def _merge_passes(lw: FuncLowering, rows: Rows, ts: list[str], less: Less,
                  pair: tuple[list[int], list[int]], widths: list[int]) -> list[int]:
    """Merge runs of every width in ``widths`` (one launch each, ping-ponging between the
    buffer sets of ``pair``); return the set holding the result."""
    n = rows.n
    spans = -(-n // SPAN)
    items = rows.count * spans
    width_bufs = [lw.new_buffer("i64", (1,), np.int64(w).tobytes()) for w in widths]
    src, dst = pair
    with lw.kernel("sort_merge") as (k, f):
        with row_items(k, items) as item:
            first = rows.start(k, k.idiv(item, spans))
            at = k.imul(k.irem(item, spans), SPAN)
            width = k.cast(k.load(width_bufs[0], "i64", 1, 0), "i64", "index")
            double = k.arith("add", width, width, "index")
            left = k.arith("mul", k.arith("div", k.idx(at), double, "index"), double, "index")
            d = k.isub(at, left)
            a = _imin(k, width, k.isub(n, left))
            b = _imin(k, width, k.isub(k.isub(n, left), a))
            count = _imin(k, SPAN, k.isub(k.iadd(a, b), d))
            i = _merge_path(f, rows, ts, less, src, (first, left, a, b), d)
            _merge(f, rows, ts, less, (src, dst), (first, left, a, b), (at, count),
                   (i, k.isub(d, i)))
    for p, wbuf in enumerate(width_bufs):  # odd passes swap the roles of src and dst
        rename = dict(zip(src + dst, dst + src, strict=True)) if p % 2 else {}
        rename[width_bufs[0]] = wbuf
        lw.step(Launch(k.name, tuple(rename.get(b, b) for b in k.params), row_groups(items)))
    return dst if len(widths) % 2 else src


def _merge_path(f: Fused, rows: Rows, ts: list[str], less: Less, src: list[int],
                runs: tuple[list[IndexExpr], IndexExpr, IndexExpr, IndexExpr],
                d: IndexExpr) -> str:
    """How many of the first ``d`` outputs of the stable merge of ``runs`` (as in
    :func:`_merge`) come from the left run: the least ``i`` in [max(0, d - b), min(d, a)]
    whose left element does not precede right element ``d - 1 - i``."""
    k = f.k
    first, left, a, b = runs
    right = k.iadd(left, a)
    lo = _imax(k, k.isub(d, b), 0)
    hi = _imin(k, d, a)
    with k.loop(0, rows.n.bit_length(), [k.idx(lo), k.idx(hi)], ["index", "index"]) as loop:
        lo_, hi_ = loop.carried
        mid = k.idiv(k.arith("add", lo_, hi_, "index"), 2)
        # clamped into the runs: the values only matter while lo < hi
        xl = _load_row(k, rows, ts, src, first, k.iadd(left, _imin(k, mid, k.isub(a, 1))))
        xr = _load_row(k, rows, ts, src, first,
                       k.iadd(right, _imin(k, k.isub(k.isub(d, 1), mid), k.isub(b, 1))))
        active = k.cmp("lt", lo_, hi_, "index")
        later = k.arith("and", active, less(f, xr, xl), "i1")
        earlier = k.arith("xor", later, active, "i1")  # active and not later
        loop.yields = [k.select(earlier, k.idx(k.iadd(mid, 1)), lo_, "index"),
                       k.select(later, k.idx(mid), hi_, "index")]
    return loop.results[0]


@contextmanager
def row_items(k: KernelBuilder, count: int) -> Iterator[str]:
    """A foreach over this work-group's share of ``count`` work-items (see
    :func:`row_groups`); yields the work-item's index."""
    per = _per_group(count)
    lo = k.imul(k.emit("group_id", "g"), per)
    hi = _imin(k, k.iadd(lo, per), count)
    i = k.fresh("i")
    with k.block(f"foreach {i} = {k.idx(lo)}, {k.idx(hi)} : index {{"):
        yield i


def _per_group(count: int) -> int:
    return max(1, min(count // TARGET_GROUPS, MAX_PER_GROUP))


def row_groups(count: int) -> int:
    """Work-groups that :func:`row_items` deals ``count`` work-items to."""
    return -(-count // _per_group(count))


def _imin(k: KernelBuilder, a: IndexExpr, b: IndexExpr) -> IndexExpr:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return k.select(k.cmp("lt", k.idx(a), k.idx(b), "index"), k.idx(a), k.idx(b), "index")


def _imax(k: KernelBuilder, a: IndexExpr, b: IndexExpr) -> IndexExpr:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return k.select(k.cmp("gt", k.idx(a), k.idx(b), "index"), k.idx(a), k.idx(b), "index")
