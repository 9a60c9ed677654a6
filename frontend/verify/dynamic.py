"""Ops whose shapes or indices come from operands: dynamic_* and get_dimension_size."""

from __future__ import annotations

from frontend.ir.core import Op, Value
from frontend.ir.types import TensorType, is_int
from frontend.verify.common import (
    constant_value,
    dims,
    fail,
    in_range,
    shapes_ok,
    size,
    tensor,
    unique,
    verifies,
)
from frontend.verify.quant import check_element_kept, check_reshape_axis
from frontend.verify.shape import verify_broadcast_in_dim


def _index_scalars(op: Op, values: list[Value], rank: int, rules: tuple[str, str]) -> None:
    if len(values) != rank:
        fail(op, rules[0], f"expects {rank} start indices (the operand rank), got "
                           f"{len(values)}")
    types = {v.type for v in values}
    if len(types) > 1:
        fail(op, rules[1], f"start indices must all have the same type, got "
                           f"{', '.join(sorted(map(str, types)))}")
    for v in values:
        t = tensor(op, v, "start index")
        if t.rank != 0 or not is_int(t.element):
            fail(op, rules[1], f"start indices must be integer scalars, got {t}", v)


def _shape_operand(op: Op, v: Value, what: str) -> TensorType:
    t = tensor(op, v, what)
    if t.rank != 1 or not is_int(t.element):
        fail(op, "", f"{what} must be a 1-D integer tensor, got {t}", v)
    return t


@verifies("dynamic_slice")
def verify_dynamic_slice(op: Op) -> None:
    """(C1)-(C5) of dynamic_slice."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    sizes = op.ints_attr("slice_sizes", [])
    if t.element != r.element:
        fail(op, "C1", f"result element type {r.element} differs from operand's {t.element}")
    if len(sizes) != t.rank:
        fail(op, "C2", f"slice_sizes has {len(sizes)} entries for operand rank {t.rank}")
    _index_scalars(op, op.operand_group("start_indices"), t.rank, ("C2", "C3"))
    for s, d in zip(sizes, t.shape, strict=True):
        if s < 0 or (d is not None and s > d):
            fail(op, "C4", f"slice_sizes {sizes} must lie within the operand shape "
                           f"{dims(t.shape)}")
    if not shapes_ok(tuple(sizes), r.shape):
        fail(op, "C5", f"result shape must be {dims(sizes)}, got {dims(r.shape)}")


@verifies("dynamic_update_slice")
def verify_dynamic_update_slice(op: Op) -> None:
    """(C1)-(C6) of dynamic_update_slice."""
    t = tensor(op, op.operands[0], "operand")
    u = tensor(op, op.operands[1], "update")
    r = tensor(op, op.result_types[0], "result")
    if t.element != r.element or not shapes_ok(t.shape, r.shape):
        fail(op, "C1", f"result type {r} must equal the operand type {t}")
    if u.element != t.element:
        fail(op, "C2", f"update element type {u.element} differs from operand's {t.element}")
    if u.rank != t.rank:
        fail(op, "C3", f"update rank {u.rank} differs from operand rank {t.rank}")
    _index_scalars(op, op.operand_group("start_indices"), t.rank, ("C4", "C5"))
    for a, b in zip(u.shape, t.shape, strict=True):
        if a is not None and b is not None and a > b:
            fail(op, "C6", f"update shape {dims(u.shape)} exceeds operand shape "
                           f"{dims(t.shape)}")


@verifies("get_dimension_size")
def verify_get_dimension_size(op: Op) -> None:
    """(C1) 0 <= dimension < rank(operand)."""
    t = tensor(op, op.operands[0], "operand")
    in_range(op, "C1", "dimension", [op.int_attr("dimension", 0)], t.rank)


@verifies("dynamic_iota")
def verify_dynamic_iota(op: Op) -> None:
    """(C1) dimension in range, (C2) rank(result) = size(output_shape)."""
    s = _shape_operand(op, op.operands[0], "output_shape")
    r = tensor(op, op.result_types[0], "result")
    if s.shape[0] is not None and r.rank != s.shape[0]:
        fail(op, "C2", f"result rank {r.rank} must equal size(output_shape) = {s.shape[0]}")
    in_range(op, "C1", "iota_dimension", [op.int_attr("iota_dimension", 0)], r.rank)


@verifies("dynamic_reshape")
def verify_dynamic_reshape(op: Op) -> None:
    """(C1) element type, (C2) element count, (C3) quantized dimension, (C4) sizes."""
    t = tensor(op, op.operands[0], "operand")
    s = _shape_operand(op, op.operands[1], "output_shape")
    r = tensor(op, op.result_types[0], "result")
    check_element_kept(op, t, r, ("axis",))
    a, b = size(t.shape), size(r.shape)
    if a is not None and b is not None and a != b:
        fail(op, "C2", f"cannot reshape {dims(t.shape)} to {dims(r.shape)}")
    check_reshape_axis(op, t, r, "C3")
    if s.shape[0] is not None and s.shape[0] != r.rank:
        fail(op, "C4", f"size(output_shape) = {s.shape[0]} must equal the result rank {r.rank}")


@verifies("dynamic_broadcast_in_dim")
def verify_dynamic_broadcast_in_dim(op: Op) -> None:
    """(C1)-(C5) as broadcast_in_dim, plus (C7)-(C10)."""
    verify_broadcast_in_dim(op)
    t = tensor(op, op.operands[0], "operand")
    s = _shape_operand(op, op.operands[1], "output_dimensions")
    r = tensor(op, op.result_types[0], "result")
    if s.shape[0] is not None and s.shape[0] != r.rank:
        fail(op, "C7", f"size(output_dimensions) = {s.shape[0]} must equal the result rank "
                       f"{r.rank}")
    exp = op.ints_attr("known_expanding_dimensions", [])
    nonexp = op.ints_attr("known_nonexpanding_dimensions", [])
    unique(op, "C8", "known expanding and non-expanding dimensions", exp + nonexp)
    in_range(op, "C9", "known_expanding_dimensions", exp, t.rank)
    in_range(op, "C10", "known_nonexpanding_dimensions", nonexp, t.rank)


@verifies("dynamic_pad")
def verify_dynamic_pad(op: Op) -> None:
    """(C1) element types, (C2) padding operand sizes; (C3)-(C4) for constant padding."""
    t = tensor(op, op.operands[0], "operand")
    pv = tensor(op, op.operands[1], "padding_value")
    r = tensor(op, op.result_types[0], "result")
    if not t.element == pv.element == r.element:
        fail(op, "C1", f"operand, padding_value and result element types differ: "
                       f"{t.element}, {pv.element}, {r.element}")
    for v in op.operands[2:]:
        s = _shape_operand(op, v, "padding")
        if s.shape[0] is not None and s.shape[0] != t.rank:
            fail(op, "C2", f"padding operands must have {t.rank} entries, got {s.shape[0]}", v)
    lo, hi, inner = (constant_value(v) for v in op.operands[2:5])
    if inner is not None and (inner < 0).any():
        fail(op, "C3", f"interior_padding must be non-negative, got {inner.tolist()}",
             op.operands[4])
    if lo is None or hi is None or inner is None or lo.shape != (t.rank,) or \
            hi.shape != (t.rank,) or inner.shape != (t.rank,):
        return
    want = tuple(None if d is None else int(a + d + b + max(d - 1, 0) * i)
                 for d, a, b, i in zip(t.shape, lo, hi, inner, strict=True))
    if not shapes_ok(want, r.shape):
        fail(op, "C4", f"result shape must be {dims(want)}, got {dims(r.shape)}")


@verifies("real_dynamic_slice")
def verify_real_dynamic_slice(op: Op) -> None:
    """Element type kept; start/limit/strides are 1-D of the operand's rank."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    if t.element != r.element or t.rank != r.rank:
        fail(op, "C1", f"result {r} must have the operand's element type and rank")
    for v in op.operands[1:]:
        s = _shape_operand(op, v, "index operand")
        if s.shape[0] is not None and s.shape[0] != t.rank:
            fail(op, "C2", f"index operands must have {t.rank} entries, got {s.shape[0]}", v)
