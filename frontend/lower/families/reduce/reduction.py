"""stablehlo.reduce with any body: one work-item per result element, the body as scalar code.

The inputs' producer chains fuse into the reduction loop (their elements are computed
where they are read), and every result of a variadic reduce is stored by the same kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import CHUNK, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.registry import kernel
from frontend.lower.families.reduce.coop import (
    clamp,
    column_slices,
    columns,
    cooperative,
    element_index,
    fold_partials,
    group,
)
from frontend.lower.families.reduce.rows import (
    RowGroup,
    fold_rows_into,
    fold_slices_into,
    lower_rows,
    plan_rows,
)

SPLIT_MIN = 4096
"""Reductions at least this long (with few outputs) are split over many work-items."""
SLICES = 256


@kernel("stablehlo.reduce")
def reduce(lw: FuncLowering, op: Op) -> None:
    """One work-item per output element folds the body over its elements; long reductions
    with few outputs first fold ``SLICES`` slices in parallel (the body's association
    order is implementation-defined in the spec), then fold the partial results.  A
    reduce over the trailing dimensions whose result is broadcast back into elementwise
    consumers fuses with them into one row kernel (``reduce_rows``)."""
    group = lw.epilogue(op.results[0])
    if isinstance(group, RowGroup):
        lower_rows(lw, group)
        return
    if group is None and len(op.results) == 1 and lw.defer_to_epilogue(op, plan_rows):
        return
    inputs = op.operand_group("inputs")
    dims = op.ints_attr("dimensions")
    in_shape = types.shape(inputs[0])
    length = prod(in_shape[d] for d in dims)
    outs = [lw.buffer_for(r) for r in op.results]
    n = prod(types.shape(op.results[0]))
    width = _column_block(n)
    if len(in_shape) - 1 not in dims and n <= SLICED_MAX and length >= SLICED_MIN and width:
        column_slices(lw, op, dims, outs, width)
    elif _cooperates(in_shape, dims, n, length):
        if not (fold_rows_into(lw, op, outs) or fold_slices_into(lw, op, outs)):
            cooperative(lw, op, dims, outs)
    elif length >= SPLIT_MIN and n * SLICES <= 65536:
        chunk = -(-length // SLICES)
        slices = -(-length // chunk)  # every slice non-empty
        partials = _partials(lw, op, dims, (length, chunk, slices))
        fold_partials(lw, op, partials, outs, slices)
    elif len(in_shape) - 1 not in dims and _columns(n) > 1:
        columns(lw, op, dims, outs, _columns(n))
    else:
        _sequential(lw, op, dims, outs)
    for r, out in zip(op.results, outs, strict=True):
        lw.bind(r, out)


def _cooperates(in_shape: Sequence[int], dims: list[int], n: int, length: int) -> bool:
    """Whether a work-group should fold each output: long enough reductions that read
    contiguously (the innermost dimension is reduced) or have few outputs."""
    if length < COOP_MIN:
        return False
    return len(in_shape) - 1 in dims or n <= 64


def _columns(n: int) -> int:
    """Consecutive outputs per work-item when the innermost dimension is kept."""
    return next((v for v in (16, 8, 4) if n % v == 0 and n >= 4 * v), 1)


def _column_block(n: int) -> int:
    """Consecutive outputs per work-item of a sliced column reduction (0: none fits)."""
    return next((v for v in (32, 16, 8, 4) if n % v == 0), 0)


SLICED_MAX = 64
"""Outputs along a kept innermost dimension that a sliced column reduction takes at most
(more give ``columns`` work-items enough)."""
SLICED_MIN = 1024
"""Reduced positions a sliced column reduction needs at least."""
COOP_MIN = 128
"""Reductions at least this long may run cooperatively (see ``reduce_coop``)."""


def _sequential(lw: FuncLowering, op: Op, dims: list[int], outs: list[int]) -> None:
    inputs, inits = op.operand_group("inputs"), op.operand_group("init_values")
    in_shape = types.shape(inputs[0])
    out_shape = types.shape(op.results[0])
    ts = [types.elem(r) for r in op.results]
    n = prod(out_shape)
    length = prod(in_shape[d] for d in dims)
    per = max(1, CHUNK // max(length, 1))  # about CHUNK elements read per work-group
    with lw.kernel("reduce") as (k, f):
        lo = k.imul(group(k, -(-n // per)), per)
        i = k.fresh("i")
        with k.block(f"foreach {i} = {k.idx(lo)}, {k.idx(clamp(k, k.iadd(lo, per), n))} "
                     ": index {"):
            oidx = k.delinearize(i, out_shape)
            accs = [f.value(v, []) for v in inits]
            with k.loop(0, length, accs, ts) as loop:
                full = element_index(k, op, dims, oidx, loop.var)
                xs = [f.value(v, full) for v in inputs]
                loop.yields = f.body(op.regions[0].block, loop.carried + xs)
            for r, out, t in zip(loop.results, outs, ts, strict=True):
                k.store(r, out, t, n, i)
    lw.launch_last(-(-n // per))


def _partials(lw: FuncLowering, op: Op, dims: list[int],
              sizes: tuple[int, int, int]) -> list[int]:
    """Buffers [n, slices]: each slice's elements folded, starting from its first element."""
    length, chunk, slices = sizes
    inputs = op.operand_group("inputs")
    out_shape = types.shape(op.results[0])
    ts = [types.elem(r) for r in op.results]
    n = prod(out_shape)
    bufs = [lw.new_buffer(t, (n, slices)) for t in ts]
    with lw.kernel("reduce_partial") as (k, f):
        with k.elements(n * slices) as i:
            o, s = k.delinearize(i, (n, slices))
            oidx = k.delinearize(o, out_shape)
            lo = k.imul(s, chunk)
            end = k.iadd(lo, chunk)
            hi = k.select(k.cmp("lt", k.idx(end), k.idx(length), "index"), k.idx(end),
                          k.idx(length), "index")
            firsts = [f.value(v, element_index(k, op, dims, oidx, lo)) for v in inputs]
            with k.loop(k.iadd(lo, 1), hi, firsts, ts) as loop:
                xs = [f.value(v, element_index(k, op, dims, oidx, loop.var)) for v in inputs]
                f.bound.clear()
                loop.yields = f.body(op.regions[0].block, loop.carried + xs)
            for r, buf, t in zip(loop.results, bufs, ts, strict=True):
                k.store(r, buf, t, n * slices, i)
    lw.launch_last(num_groups(n * slices))
    return bufs
