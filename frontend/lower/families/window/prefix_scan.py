"""reduce_window prefix scans (``jnp.cumsum``, ``cumprod``, ``cummax``, ``cummin``) in O(n).

JAX lowers ``jnp.cumsum(x, axis)`` to a reduce_window whose window spans the whole
dimension ``axis`` (size ``w >= n``) with ``w - 1`` elements of low padding (high padding
for ``reverse=True``), stride and dilations 1, and a window of one element along every
other dimension: output ``o`` folds elements ``0..o`` (``o..n-1``) and some padding.  When
the body is one associative, commutative op of its two arguments (add, multiply, maximum,
minimum, and, or) and the padding cannot change the result (the init value is the
identity of add or multiply; maximum, minimum, and, or are idempotent, so any init value
folded again changes nothing), the result is the running fold ``acc = body(acc, x)``
from ``acc = init``, walked once along the dimension:

* the scanned dimension innermost (rows): each work-item walks whole rows, about
  ``CHUNK`` elements per work-group, the accumulator in a register; few long rows are
  cut into segments: one kernel folds each segment, a second walks each segment from
  the fold of the segments before it (adds then associate by segment);
* otherwise: a work-group takes one index of the dimensions before ``axis`` and a block
  of the dimensions after it (contiguous in memory); a sequential loop along ``axis``
  runs a ``foreach`` over the block, each element folded with the previous step's
  result read back from the output (vectorisable, contiguous rows).

Floating-point adds are otherwise summed in sequence order, as a sequential reference
would.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import CHUNK, IndexExpr, KernelBuilder
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.families.reduce.coop import clamp, group

IDEMPOTENT = frozenset(f"stablehlo.{n}" for n in ("maximum", "minimum", "and", "or"))
IDENTITY = {"stablehlo.add": 0, "stablehlo.multiply": 1}
"""Bodies whose padding taps change nothing only when the init value is their identity."""
BLOCK = 256
"""Most elements of the dimensions after the scanned one per work-group."""
MIN_GROUPS = 8
"""Fewest work-groups a column scan is cut into (while blocks of 32 or more remain)."""
FEW_ROWS = 16
SEGMENT = 4096
SEGMENTS = 64
"""Fewer than ``FEW_ROWS`` rows of at least ``2 * SEGMENT`` elements are cut into about
``SEGMENTS`` segments (of at least ``SEGMENT``) in all."""


@dataclass(frozen=True)
class Scan:
    """A prefix scan along ``axis`` of the input viewed as ``[pre, length, post]``."""

    axis: int
    reverse: bool
    pre: int
    length: int
    post: int


def plan(op: Op, window: list[int], strides: list[int], base: list[int], wdil: list[int],
         pad: list[tuple[int, int]]) -> Scan | None:
    """The prefix scan ``op`` computes, or None when it is not one (module docstring)."""
    inputs = op.operand_group("inputs")
    if len(inputs) != 1 or not _scannable(op):
        return None
    shape = types.shape(inputs[0])
    if any(s != 1 for s in [*strides, *base, *wdil]):
        return None
    axes = [d for d in range(len(shape)) if window[d] != 1 or pad[d] != (0, 0)]
    if len(axes) != 1:
        return None
    d = axes[0]
    w, (lo, hi) = window[d], pad[d]
    if w < shape[d] or (lo, hi) not in ((w - 1, 0), (0, w - 1)):
        return None
    return Scan(d, lo == 0, prod(shape[:d]), shape[d], prod(shape[d + 1:]))


def _scannable(op: Op) -> bool:
    """The body is one add/multiply (init: its identity) or maximum/minimum/and/or of its
    two arguments."""
    block = op.regions[0].block
    if len(block.ops) != 2 or len(block.args) != 2:
        return False
    body, ret = block.ops
    if (set(body.operands) != set(block.args) or len(body.operands) != 2
            or list(ret.operands) != list(body.results)):
        return False
    if body.name in IDEMPOTENT:
        return True
    if body.name not in IDENTITY:
        return False
    init = _constant(op.operand_group("init_values")[0])
    return init is not None and init.size > 0 and bool(np.all(init == IDENTITY[body.name]))


def _constant(v: Value) -> np.ndarray | None:
    """The array of a constant, through broadcasts and reshapes; else None."""
    owner = v.owner
    while isinstance(owner, Op) and owner.name in ("stablehlo.broadcast_in_dim",
                                                   "stablehlo.reshape"):
        owner = owner.operands[0].owner
    if isinstance(owner, Op) and owner.name == "stablehlo.constant":
        return getattr(owner.attrs.get("value"), "array", None)
    return None


def lower(lw: FuncLowering, op: Op, scan: Scan) -> None:
    """The scan's kernel (rows when the scanned dimension is innermost, else columns)."""
    out = lw.buffer_for(op.results[0])
    if scan.post == 1:
        _rows(lw, op, scan, out)
    else:
        _columns(lw, op, scan, out)
    lw.bind(op.results[0], out)


def _at(k: KernelBuilder, op: Op, scan: Scan, p: IndexExpr, j: IndexExpr,
        c: IndexExpr) -> list[IndexExpr]:
    """The multi-index of element ``[p, j, c]`` of the ``[pre, length, post]`` view."""
    shape = types.shape(op.operand_group("inputs")[0])
    before = k.delinearize(p, shape[:scan.axis]) if scan.axis else []
    after = k.delinearize(c, shape[scan.axis + 1:]) if scan.axis + 1 < len(shape) else []
    return [*before, j, *after]


def _step(k: KernelBuilder, scan: Scan, j: IndexExpr) -> IndexExpr:
    """The position along the axis of step ``j`` of the walk."""
    return k.isub(scan.length - 1, j) if scan.reverse else j


def _fold(f: Fused, op: Op, acc: str, x: str) -> str:
    """body(acc, x) (not memoized across calls)."""
    with f.k.scope():
        return f.body(op.regions[0].block, [acc, x])[0]


def _rows(lw: FuncLowering, op: Op, scan: Scan, out: int) -> None:
    """Each work-item walks whole rows, the accumulator in a register; few long rows are
    cut into segments (:func:`_segments`)."""
    if scan.pre < FEW_ROWS and scan.length >= 2 * SEGMENT:
        _segments(lw, op, scan, out)
        return
    per = max(1, CHUNK // scan.length)
    groups = -(-scan.pre // per)
    with lw.kernel("scan") as (k, f):
        lo = k.imul(group(k, groups), per)
        r = k.fresh("i")
        with k.block(f"foreach {r} = {k.idx(lo)}, "
                     f"{k.idx(clamp(k, k.iadd(lo, per), scan.pre))} : index {{"):
            init = f.value(op.operand_group("init_values")[0], [])
            _walk(k, f, op, scan, out, (r, 0, scan.length), init)
    lw.launch_last(groups)


def _walk(k: KernelBuilder, f: Fused, op: Op, scan: Scan, out: int | None,
          span: tuple[IndexExpr, IndexExpr, IndexExpr], acc: str) -> str:
    """Fold steps ``[lo, hi)`` of row ``r`` (``span``) into ``acc``, storing each running
    value into ``out`` (when given); the last value."""
    x = op.operand_group("inputs")[0]
    t, n = types.elem(op.results[0]), types.size(op.results[0])
    r, lo, hi = span
    row = k.imul(r, scan.length)
    with k.loop(lo, hi, [acc], [t]) as loop:
        j = _step(k, scan, loop.var)
        value = _fold(f, op, loop.carried[0], f.value(x, _at(k, op, scan, r, j, 0)))
        if out is not None:
            k.store(value, out, t, n, k.iadd(row, j))
        loop.yields = [value]
    return loop.results[0]


def _segments(lw: FuncLowering, op: Op, scan: Scan, out: int) -> None:
    """Rows cut into about ``SEGMENTS`` segments in all: one kernel folds each segment,
    a second walks each segment again from the fold of the segments before it (so the
    float sums associate by segment)."""
    t = types.elem(op.results[0])
    seg = max(SEGMENT, -(-scan.pre * scan.length // SEGMENTS))
    count = -(-scan.length // seg)
    total = scan.pre * count
    partial = lw.new_buffer(t, (total,))
    for name in ("scan_partial", "scan"):
        with lw.kernel(name) as (k, f):
            g0 = group(k, total)
            g = k.fresh("i")  # one work-item per segment
            with k.block(f"foreach {g} = {k.idx(g0)}, {k.idx(k.iadd(g0, 1))} : index {{"):
                r, s = k.delinearize(g, [scan.pre, count])
                lo = k.imul(s, seg)
                span = (r, lo, clamp(k, k.iadd(lo, seg), scan.length))
                acc = f.value(op.operand_group("init_values")[0], [])
                if name == "scan_partial":
                    k.store(_walk(k, f, op, scan, None, span, acc), partial, t, total, g)
                else:
                    with k.loop(k.imul(r, count), g, [acc], [t]) as loop:
                        loop.yields = [_fold(f, op, loop.carried[0],
                                             k.load(partial, t, total, loop.var))]
                    _walk(k, f, op, scan, out, span, loop.results[0])
        lw.launch_last(total)


def _columns(lw: FuncLowering, op: Op, scan: Scan, out: int) -> None:
    """A work-group per (index before the axis, block after it): a loop along the axis
    over a ``foreach`` on the block, folding each element with the previous step's."""
    x = op.operand_group("inputs")[0]
    t, n = types.elem(op.results[0]), types.size(op.results[0])
    block = min(scan.post, BLOCK)
    while scan.pre * -(-scan.post // block) < MIN_GROUPS and block >= 32:
        block //= 2
    blocks = -(-scan.post // block)
    with lw.kernel("scan") as (k, f):
        p, b = k.delinearize(group(k, scan.pre * blocks), [scan.pre, blocks])
        lo = k.imul(b, block)
        hi = clamp(k, k.iadd(lo, block), scan.post)

        def step(j: IndexExpr, first: bool) -> None:
            c = k.fresh("i")
            pos = _step(k, scan, j)
            with k.block(f"foreach {c} = {k.idx(lo)}, {k.idx(hi)} : index {{"):
                base = k.imul(k.iadd(k.imul(p, scan.length), pos), scan.post)
                if first:
                    acc = f.value(op.operand_group("init_values")[0], [])
                else:
                    prev = k.iadd(base, scan.post if scan.reverse else -scan.post)
                    acc = k.load(out, t, n, k.iadd(prev, c))
                value = _fold(f, op, acc, f.value(x, _at(k, op, scan, p, pos, c)))
                k.store(value, out, t, n, k.iadd(base, c))

        step(0, True)
        with k.loop(1, scan.length, [], []) as loop:
            step(loop.var, False)
    lw.launch_last(scan.pre * blocks)
