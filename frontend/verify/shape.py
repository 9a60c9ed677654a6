"""Shape ops: constant, broadcast_in_dim, reshape, transpose, concatenate, slice, iota,
pad, ..."""

from __future__ import annotations

import math

from frontend.ir.core import Op
from frontend.verify.common import (
    dim_ok,
    dims,
    fail,
    in_range,
    shapes_ok,
    size,
    tensor,
    unique,
    verifies,
)
from frontend.verify.quant import (
    BROADCAST_FIELDS,
    check_broadcast_axis,
    check_element_kept,
    check_reshape_axis,
    check_transpose_axis,
)


def _same_element(op: Op, rule: str) -> None:
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    if t.element != r.element:
        fail(op, rule, f"result element type {r.element} differs from operand's {t.element}")


@verifies("broadcast_in_dim")
def verify_broadcast_in_dim(op: Op) -> None:
    """(C1)-(C5) of broadcast_in_dim."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    bd = op.ints_attr("broadcast_dimensions", [])
    check_element_kept(op, t, r, BROADCAST_FIELDS)
    if len(bd) != t.rank:
        fail(op, "C2", f"broadcast_dimensions has {len(bd)} entries but the operand has rank "
                       f"{t.rank}")
    in_range(op, "C3", "broadcast_dimensions", bd, r.rank)
    unique(op, "C4", "broadcast_dimensions", bd)
    for i, d in enumerate(bd):
        if t.shape[i] not in (1, None) and not dim_ok(t.shape[i], r.shape[d]):
            fail(op, "C5", f"operand dimension {i} of size {t.shape[i]} cannot broadcast to "
                           f"result dimension {d} of size {r.shape[d]}")
    check_broadcast_axis(op, t, r, bd)


@verifies("reshape")
def verify_reshape(op: Op) -> None:
    """(C1) element types, (C2) element counts, (C3) the quantized dimension."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    check_element_kept(op, t, r, ("axis",))
    a, b = size(t.shape), size(r.shape)
    if a is not None and b is not None and a != b:
        fail(op, "C2", f"cannot reshape {dims(t.shape)} ({a} elements) to {dims(r.shape)} "
                       f"({b} elements)")
    check_reshape_axis(op, t, r, "C3")


@verifies("transpose")
def verify_transpose(op: Op) -> None:
    """(C1) element type, (C2) permutation, (C3) result shape, (C4) quantized dimension."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    perm = op.ints_attr("permutation", [])
    check_element_kept(op, t, r, ("axis",))
    if sorted(perm) != list(range(t.rank)):
        fail(op, "C2", f"{perm} is not a permutation of range({t.rank})")
    want = tuple(t.shape[p] for p in perm)
    if not shapes_ok(want, r.shape):
        fail(op, "C3", f"result shape must be {dims(want)}, got {dims(r.shape)}")
    check_transpose_axis(op, t, r, perm)


@verifies("concatenate")
def verify_concatenate(op: Op) -> None:
    """(C1)-(C6) of concatenate."""
    if not op.operands:
        fail(op, "C3", "needs at least one input")
    ts = [tensor(op, v, "input") for v in op.operands]
    r = tensor(op, op.result_types[0], "result")
    d = op.int_attr("dimension", 0)
    for v, t in zip(op.operands, ts, strict=False):
        if t.element != ts[0].element:
            fail(op, "C1", f"input element types differ: {ts[0].element} vs {t.element}", v)
    in_range(op, "C4", "dimension", [d], ts[0].rank)
    for v, t in zip(op.operands, ts, strict=False):
        pairs = enumerate(zip(t.shape, ts[0].shape, strict=False))
        if t.rank != ts[0].rank or not all(dim_ok(a, b) for i, (a, b) in pairs if i != d):
            fail(op, "C2", f"input shapes {dims(ts[0].shape)} and {dims(t.shape)} differ "
                           f"outside dimension {d}", v)
    if r.element != ts[0].element:
        fail(op, "C5", f"result element type must be {ts[0].element}, got {r.element}")
    parts = [t.shape[d] for t in ts]
    total = sum(p for p in parts if p is not None) if None not in parts else None
    want = tuple(total if i == d else x for i, x in enumerate(ts[0].shape))
    if not shapes_ok(want, r.shape):
        fail(op, "C6", f"result shape must be {dims(want)}, got {dims(r.shape)}")


@verifies("slice")
def verify_slice(op: Op) -> None:
    """(C1)-(C5) of slice."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    start, limit, strides = (op.ints_attr(k, []) for k in
                             ("start_indices", "limit_indices", "strides"))
    _same_element(op, "C1")
    if not len(start) == len(limit) == len(strides) == t.rank:
        fail(op, "C2", f"start/limit/strides sizes {len(start)}/{len(limit)}/{len(strides)} "
                       f"must equal the operand rank {t.rank}")
    for i, (a, b, dim) in enumerate(zip(start, limit, t.shape, strict=False)):
        if not (0 <= a <= b and (dim is None or b <= dim)):
            fail(op, "C3", f"slice {a}:{b} is out of bounds for dimension {i} of size "
                           f"{dims([dim])}")
    for s in strides:
        if s <= 0:
            fail(op, "C4", f"strides must be positive, got {s}")
    want = tuple(math.ceil((b - a) / s) for a, b, s in zip(start, limit, strides, strict=False))
    if not shapes_ok(want, r.shape):
        fail(op, "C5", f"result shape must be {dims(want)}, got {dims(r.shape)}")


@verifies("iota")
def verify_iota(op: Op) -> None:
    """(C1) 0 <= iota_dimension < rank(output)."""
    r = tensor(op, op.result_types[0], "result")
    in_range(op, "C1", "iota_dimension", [op.int_attr("iota_dimension", 0)], r.rank)


@verifies("reverse")
def verify_reverse(op: Op) -> None:
    """(C1) same type, (C2) unique dimensions, (C3) in range."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    if t.element != r.element or not shapes_ok(t.shape, r.shape):
        fail(op, "C1", f"result type {r} must equal the operand type {t}")
    d = op.ints_attr("dimensions", [])
    unique(op, "C2", "dimensions", d)
    in_range(op, "C3", "dimensions", d, t.rank)


@verifies("pad")
def verify_pad(op: Op) -> None:
    """(C1) element types, (C2) attribute sizes, (C3) interior >= 0, (C4) result shape."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    pv = tensor(op, op.operands[1], "padding_value")
    if pv.element != t.element or pv.rank != 0:
        fail(op, "C1", f"padding_value must be a scalar of {t.element}, got {pv}")
    lo, hi, inner = (op.ints_attr(k, []) for k in
                     ("edge_padding_low", "edge_padding_high", "interior_padding"))
    if not len(lo) == len(hi) == len(inner) == t.rank:
        fail(op, "C2", f"padding sizes must equal the operand rank {t.rank}")
    if any(i < 0 for i in inner):
        fail(op, "C3", f"interior_padding must be non-negative, got {inner}")
    want = tuple(None if d is None else a + d + b + max(d - 1, 0) * i
                 for d, a, b, i in zip(t.shape, lo, hi, inner, strict=False))
    if not shapes_ok(want, r.shape):
        fail(op, "C4", f"result shape must be {dims(want)}, got {dims(r.shape)}")


@verifies("constant")
def verify_constant(op: Op) -> None:
    """(C1) type(value) = type(output)."""
    value = op.attrs["value"]
    t = getattr(value, "type", None)
    if t != op.result_types[0]:
        fail(op, "C1", f"value has type {t} but the result is {op.result_types[0]}")
