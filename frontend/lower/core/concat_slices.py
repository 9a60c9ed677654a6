"""A concatenation computed slice by slice: a kernel per input writes its part of the result.

A fused kernel over a concatenation picks, per element, the input whose range holds the
index (``shape.concatenate``): a select inside the innermost loop, which LLVM if-converts
into masked gathers of every input (on PoCL, ``transpose_concat``: contiguous loads of the
second input became gathers too).  When a large result is a concatenation, or element-wise
ops of one, :func:`compute_by_slices` instead launches one kernel per input over that
input's slice of the result: each reads only its own input, with no select, and stores
straight into the slice (no intermediate buffer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from frontend.ir.core import Op, Value
from frontend.ir.quant import is_quantized
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, groups_nd
from frontend.lower.core.fused import same_index_operands

if TYPE_CHECKING:
    from frontend.lower.core.driver import FuncLowering

MIN_ELEMENTS = 1 << 16
"""Smaller results keep one kernel: a launch more costs more than the selects save."""
MAX_INPUTS = 4
"""More inputs keep one kernel (a launch each)."""


def find_concatenation(lw: FuncLowering, v: Value) -> Op | None:
    """The lazy concatenation that ``v`` is, or that ``v``'s element-wise ops (each reading
    its operands at the result's own index) reach first, depth first; None without one.
    Each value is visited once (a DAG sharing its values is not walked path by path)."""
    stack, seen = [v], set()
    while stack:
        w = stack.pop()
        if w in seen or lw.buffer_of(w) is not None or is_quantized(w.type):
            continue
        seen.add(w)
        if isinstance(w.owner, Op) and w.owner.name == "stablehlo.concatenate":
            return w.owner
        stack.extend(reversed(same_index_operands(w)))
    return None


def compute_by_slices(lw: FuncLowering, v: Value, out: int) -> bool:
    """Write ``v`` into buffer ``out`` with a kernel per input of the concatenation it
    is made of (:func:`find_concatenation`); False (nothing emitted) when ``v`` is small,
    or not such a value, or the concatenation has one input or more than
    :data:`MAX_INPUTS`."""
    if types.size(v) < MIN_ELEMENTS:
        return False
    concat = find_concatenation(lw, v)
    if concat is None:
        return False
    d = concat.int_attr("dimension")
    inputs = [o for o in concat.operands if types.shape(o)[d] > 0]
    if not 2 <= len(inputs) <= MAX_INPUTS:
        return False
    at = 0
    for x in inputs:
        _slice_kernel(lw, v, out, concat.result, x, at)
        at += types.shape(x)[d]
    return True


def _slice_kernel(lw: FuncLowering, v: Value, out: int, concat: Value, x: Value,
                  at: int) -> None:
    """A kernel writing ``v`` over the slice of the result that input ``x`` of the
    concatenation fills, from ``at`` along its dimension."""
    d = concat.op.int_attr("dimension")
    shape = types.shape(v)
    part = list(shape)
    part[d] = types.shape(x)[d]
    hint = f"{concat.op.name.rsplit('.', 1)[-1][:6]}{at}"
    with lw.kernel(hint) as (k, f):

        def element_of_x(idx: Sequence[IndexExpr]) -> str:
            sub = list(idx)
            sub[d] = k.isub(sub[d], at)
            return f.value(x, sub)

        f.redirect[concat] = element_of_x
        with k.elements_nd(part) as idx:
            full = list(idx)
            full[d] = k.iadd(idx[d], at)
            k.store(f.value(v, full), out, types.elem(v), types.size(v),
                    k.linear(full, shape))
    lw.launch_last(groups_nd(part))
