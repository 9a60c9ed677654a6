"""Shape ops as index maps: constant, iota, broadcast_in_dim, reshape, transpose, slice,
concatenate, reverse and pad.  All are elemental: they fuse into their consumer."""

from __future__ import annotations

import numpy as np

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.driver import FuncLowering, constant_bytes
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental, kernel


@kernel("stablehlo.constant")
def constant(lw: FuncLowering, op: Op) -> None:
    """A splat stays a literal (elemental); other constants become initialized buffers."""
    array = op.dense_attr("value")
    if _is_splat(array):
        return  # lazy: see splat()
    t = types.elem(op.result)
    lw.bind(op.result, lw.new_buffer(t, types.shape(op.result), constant_bytes(array, t)))


def _is_splat(array: np.ndarray) -> bool:
    """True when every element has the same bits (or there are none)."""
    if array.size <= 1 or not any(array.strides):  # a parsed splat is a broadcast view
        return True
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(array.size, -1)
    return bool((raw == raw[0]).all())


@elemental("stablehlo.constant", cheap=True)
def splat(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """The splat value as a literal."""
    array = op.dense_attr("value")
    value = array.reshape(-1)[0].item() if array.size else 0
    return f.k.const(value, types.elem(op.result))


@elemental("stablehlo.get_dimension_size", cheap=True)
def get_dimension_size(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """The static size of a dimension."""
    d = op.int_attr("dimension")
    return f.k.const(types.shape(op.operand("operand"))[d], types.elem(op.result))


@elemental("stablehlo.iota", "stablehlo.dynamic_iota", cheap=True)
def iota(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """The index along ``iota_dimension``, converted to the element type."""
    i = f.k.idx(idx[op.int_attr("iota_dimension")])
    t = types.elem(op.result)
    if t == "i1":
        return f.k.cmp("ne", i, f.k.idx(0), "index")
    return f.k.cast(i, "index", t)


@elemental("stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim")
def broadcast_in_dim(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """operand[idx[dims[0]], ...] (size-1 operand dimensions read index 0)."""
    src = op.operand("operand")
    dims = op.ints_attr("broadcast_dimensions")
    shape = types.shape(src)
    return f.value(src, [0 if shape[d] == 1 else idx[dims[d]] for d in range(len(dims))])


@elemental("stablehlo.reshape", "stablehlo.dynamic_reshape")
def reshape(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Same row-major linear index."""
    src = op.operand("operand")
    linear = f.k.linear(idx, types.shape(op.result))
    return f.value(src, f.k.delinearize(linear, types.shape(src)))


@elemental("stablehlo.transpose")
def transpose(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """result[idx] = operand[idx permuted back]."""
    perm = op.ints_attr("permutation")
    src_idx: list[IndexExpr] = [0] * len(perm)
    for r, p in enumerate(perm):
        src_idx[p] = idx[r]
    return f.value(op.operand("operand"), src_idx)


@elemental("stablehlo.slice")
def slice_(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """operand[start + idx * stride]."""
    start = op.ints_attr("start_indices")
    strides = op.ints_attr("strides")
    k = f.k
    return f.value(op.operand("operand"),
                   [k.iadd(s, k.imul(i, st)) for i, s, st in zip(idx, start, strides,
                                                                 strict=True)])


@elemental("stablehlo.reverse")
def reverse(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """operand[n - 1 - idx] along the reversed dimensions."""
    dims = set(op.ints_attr("dimensions"))
    shape = types.shape(op.result)
    k = f.k
    return f.value(op.operand("operand"),
                   [k.isub(shape[d] - 1, i) if d in dims else i for d, i in enumerate(idx)])


@elemental("stablehlo.concatenate")
def concatenate(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Pick the input whose range along ``dimension`` holds the index: a binary search
    over the inputs' offsets (branches nested log2(inputs) deep, not one per input: a
    stack of 400 arrays exceeded Python's recursion limit)."""
    d = op.int_attr("dimension")
    inputs = [v for v in op.operands if types.shape(v)[d] > 0]
    t = types.elem(op.result)
    k = f.k
    offsets, at = [], 0
    for v in inputs:
        offsets.append(at)
        at += types.shape(v)[d]

    def pick(lo: int, hi: int) -> str:
        """The element from the one of inputs ``lo..hi`` whose range holds it."""
        at_d = idx[d]
        if isinstance(at_d, int):  # known now: that input, no branch
            lo = hi = max(j for j in range(lo, hi + 1) if offsets[j] <= at_d)
        if lo == hi:
            sub = list(idx)
            sub[d] = k.isub(idx[d], offsets[lo])
            return f.value(inputs[lo], sub)
        mid = (lo + hi + 1) // 2
        cond = k.cmp("lt", k.idx(idx[d]), k.idx(offsets[mid]), "index")
        return k.branch(cond, t, lambda: pick(lo, mid - 1), lambda: pick(mid, hi))

    return pick(0, len(inputs) - 1)


@elemental("stablehlo.pad")
def pad(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """operand[(idx - low) / (interior + 1)] where that lands on an element, else padding.
    Bounds that hold for every index of a dimension are not tested (no low or high
    padding there: a pad that only slices, or none at all, as jax's ``irfft`` emits,
    reads its operand with no branch)."""
    src = op.operand("operand")
    low = op.ints_attr("edge_padding_low")
    interior = op.ints_attr("interior_padding")
    shape, out_shape = types.shape(src), types.shape(op.result)
    t = types.elem(op.result)
    k = f.k
    inside = None
    src_idx: list[IndexExpr] = []
    for i, lo, step, n, m in zip(idx, low, interior, shape, out_shape, strict=True):
        rel = k.idx(k.isub(i, lo))
        j = k.arith("div", rel, k.idx(step + 1), "index") if step else rel
        conds = []
        if lo > 0:  # below the first element
            conds.append(k.cmp("ge", rel, k.idx(0), "index"))
        if (m - 1 - lo) // (step + 1) >= n:  # past the last one
            conds.append(k.cmp("lt", j, k.idx(n), "index"))
        if step:
            conds.append(k.cmp("eq", k.arith("rem", rel, k.idx(step + 1), "index"),
                               k.idx(0), "index"))
        for c in conds:
            inside = c if inside is None else k.arith("and", inside, c, "i1")
        src_idx.append(k.select(conds[0], j, k.idx(0), "index") if lo > 0 else j)
    padding = f.value(op.operand("padding_value"), [])
    if inside is None:
        return f.value(src, src_idx)
    return k.branch(inside, t, lambda: f.value(src, src_idx), lambda: padding)

