"""Collective ops: all_gather, all_reduce, reduce_scatter, all_to_all,
collective_permute and collective_broadcast; replica_id, partition_id and after_all.

The process counts (``num_replicas``, ``num_partitions``) are not known to a module,
so the rules that need them are checked only as far as the attributes allow.
"""

from __future__ import annotations

import numpy as np

from frontend.ir.core import Op
from frontend.ir.types import IntegerType, TensorType, TokenType
from frontend.verify.common import (
    dims,
    fail,
    in_range,
    region_results,
    shapes_ok,
    tensor,
    types_ok,
    verifies,
)


def _groups(op: Op, name: str = "replica_groups") -> np.ndarray | None:
    """A 2-D integer attribute such as ``replica_groups`` (None when absent)."""
    a = op.attrs.get(name)
    arr = getattr(a, "array", None)
    if a is None:
        return None
    if arr is None or arr.ndim != 2:
        fail(op, "", f"{name} must be a 2-D integer tensor, got {a}")
    return arr


def _unique_groups(op: Op, rule: str, groups: np.ndarray | None) -> None:
    """``is_unique(replica_groups)``: no id twice (-1 pads uneven groups)."""
    if groups is None:
        return
    ids = [int(x) for x in groups.reshape(-1) if x != -1]
    if len(set(ids)) != len(ids):
        fail(op, rule, f"replica_groups must not repeat an id, got {groups.tolist()}")


def _group_size(groups: np.ndarray | None) -> int | None:
    return None if groups is None else int(groups.shape[1])


def _process_group_size(op: Op, groups: np.ndarray | None) -> int | None:
    """The size of a process group of an all_gather / reduce_scatter when the module tells
    it: cross_replica_and_partition groups (channel_id > 0 without use_global_device_ids)
    also span every partition, whose number a module does not know."""
    handle = op.attr("channel_handle") or {}
    channel = handle.get("handle", 0) if isinstance(handle, dict) else 0
    if isinstance(channel, int) and channel > 0 and not op.attr("use_global_device_ids"):
        return None
    return _group_size(groups)


def _channel(op: Op, rule: str) -> None:
    """``use_global_device_ids`` needs ``channel_id > 0``."""
    if not op.attr("use_global_device_ids", False):
        return
    handle = op.attr("channel_handle") or {}
    value = handle.get("handle", 0) if isinstance(handle, dict) else 0
    if not isinstance(value, int) or value <= 0:
        fail(op, rule, "use_global_device_ids needs a channel_handle with handle > 0")


def _scaled(shape: tuple[int | None, ...], dim: int, factor: int | None,
            divide: bool = False) -> tuple[int | None, ...]:
    d = shape[dim]
    if d is None or factor is None:
        new = None
    else:
        new = d // factor if divide else d * factor
    return shape[:dim] + (new,) + shape[dim + 1:]


def _expect_shape(op: Op, rule: str, want: tuple[int | None, ...], got: TensorType) -> None:
    if not shapes_ok(want, got.shape):
        fail(op, rule, f"result shape must be {dims(want)}, got {dims(got.shape)}")


def _computation_element(op: Op, rule: str, element: object) -> object:
    """(tensor<E>, tensor<E>) -> tensor<E>: returns E (promotable from ``element``)."""
    args = [a.type for a in op.regions[0].block.args]
    got = region_results(op, op.regions[0], "computation")
    e = args[0].element if args and isinstance(args[0], TensorType) else None
    scalar = TensorType((), e) if e is not None else None
    if scalar is None or len(args) != 2 or any(not types_ok(a, scalar) for a in args) or \
            len(got) != 1 or not types_ok(got[0], scalar):
        fail(op, rule, "computation must have type (tensor<E>, tensor<E>) -> tensor<E>")
    if type(e) is not type(element):
        fail(op, rule, f"computation element type {e} is not promotable from {element}")
    return e


@verifies("all_gather")
def verify_all_gather(op: Op) -> None:
    """(C1) all_gather_dim, (C2) unique groups, (C5) channel, (C6) result types."""
    groups = _groups(op)
    dim = op.int_attr("all_gather_dim", 0)
    _unique_groups(op, "C2", groups)
    _channel(op, "C5")
    for v, r in zip(op.operands, op.result_types, strict=False):
        t, rt = tensor(op, v, "operand"), tensor(op, r, "result")
        in_range(op, "C1", "all_gather_dim", [dim], t.rank)
        if rt.element != t.element:
            fail(op, "C6", f"result element type {rt.element} differs from {t.element}", v)
        _expect_shape(op, "C6", _scaled(t.shape, dim, _process_group_size(op, groups)), rt)


@verifies("all_reduce")
def verify_all_reduce(op: Op) -> None:
    """(C1) unique groups, (C4) channel, (C5) computation, (C6) shapes, (C7) elements."""
    _unique_groups(op, "C1", _groups(op))
    _channel(op, "C4")
    for v, r in zip(op.operands, op.result_types, strict=False):
        t, rt = tensor(op, v, "operand"), tensor(op, r, "result")
        e = _computation_element(op, "C5", t.element)
        if not shapes_ok(t.shape, rt.shape):
            fail(op, "C6", f"result shape {dims(rt.shape)} differs from operand shape "
                           f"{dims(t.shape)}", v)
        if rt.element != e:
            fail(op, "C7", f"result element type must be {e}, got {rt.element}")


@verifies("reduce_scatter")
def verify_reduce_scatter(op: Op) -> None:
    """(C1)-(C3), (C6)-(C9) of reduce_scatter."""
    groups = _groups(op)
    t, rt = tensor(op, op.operands[0], "operand"), tensor(op, op.result_types[0], "result")
    dim = op.int_attr("scatter_dimension", 0)
    in_range(op, "C2", "scatter_dimension", [dim], t.rank)
    n = _process_group_size(op, groups)
    size = t.shape[dim]
    if n and size is not None and size % n:
        fail(op, "C1", f"dimension {dim} of size {size} is not divisible by the "
                       f"group size {n}")
    _unique_groups(op, "C3", groups)
    _channel(op, "C6")
    e = _computation_element(op, "C7", t.element)
    _expect_shape(op, "C8", _scaled(t.shape, dim, n or None, divide=True), rt)
    if rt.element != e:
        fail(op, "C9", f"result element type must be {e}, got {rt.element}")


@verifies("all_to_all")
def verify_all_to_all(op: Op) -> None:
    """(C1)-(C5), (C8), (C9) of all_to_all."""
    groups = _groups(op)
    split, concat = op.int_attr("split_dimension", 0), op.int_attr("concat_dimension", 0)
    count = op.int_attr("split_count", 1)
    if count <= 0:
        fail(op, "C4", f"split_count must be positive, got {count}")
    _unique_groups(op, "C5", groups)
    if groups is not None and groups.shape[1] != count:
        fail(op, "C8", f"replica groups have {groups.shape[1]} members but split_count is "
                       f"{count}")
    for v, r in zip(op.operands, op.result_types, strict=False):
        t, rt = tensor(op, v, "operand"), tensor(op, r, "result")
        in_range(op, "C1", "split_dimension", [split], t.rank)
        in_range(op, "C3", "concat_dimension", [concat], t.rank)
        size = t.shape[split]
        if size is not None and size % count:
            fail(op, "C2", f"dimension {split} of size {size} is not divisible by "
                           f"split_count {count}", v)
        want = t.shape
        if split != concat:
            want = _scaled(_scaled(want, split, count, divide=True), concat, count)
        if rt.element != t.element:
            fail(op, "C9", f"result element type {rt.element} differs from {t.element}", v)
        _expect_shape(op, "C9", want, rt)


@verifies("collective_permute")
def verify_collective_permute(op: Op) -> None:
    """(C1)-(C5) of collective_permute."""
    pairs = _groups(op, "source_target_pairs")
    if pairs is not None:
        if pairs.shape[1] != 2:
            fail(op, "C1", f"source_target_pairs must have shape [N, 2], got "
                           f"{list(pairs.shape)}")
        for rule, col in (("C2", 0), ("C3", 1)):
            ids = [int(x) for x in pairs[:, col]]
            if len(set(ids)) != len(ids):
                fail(op, rule, f"{'sources' if col == 0 else 'targets'} must be unique, "
                               f"got {ids}")
        if (pairs < 0).any():
            fail(op, "C4", f"source_target_pairs must be non-negative, got {pairs.tolist()}")
    _same_type(op, "C5")


@verifies("collective_broadcast")
def verify_collective_broadcast(op: Op) -> None:
    """(C1) unique groups, (C3) type(result) = type(operand); with ``has_dynamic_root``
    the last operand is a 1-D integer tensor: the root's index in its group, per result."""
    _unique_groups(op, "C1", _groups(op))
    data = op.operands[:len(op.result_types)]
    if len(op.operands) != len(data) + bool(op.attr("has_dynamic_root")):
        fail(op, "", f"expects {len(data)} operands for {len(data)} results"
                     f"{' and a root index' if op.attr('has_dynamic_root') else ''}, got "
                     f"{len(op.operands)}")
    for v, r in zip(data, op.result_types, strict=True):
        if not types_ok(v.type, r):
            fail(op, "C3", f"result type {r} must equal the operand type {v.type}", v)
    if len(op.operands) > len(data):
        root = tensor(op, op.operands[-1], "root")
        if root.rank != 1 or root.shape[0] not in (None, len(data)) or \
                not isinstance(root.element, IntegerType):
            fail(op, "", f"the root index must be a tensor<{len(data)}xi32>, got {root}")


def _same_type(op: Op, rule: str) -> None:
    v, r = op.operands[0], op.result_types[0]
    if not types_ok(v.type, r):
        fail(op, rule, f"result type {r} must equal the operand type {v.type}", v)


@verifies("replica_id", "partition_id")
def verify_ids(op: Op) -> None:
    """The result is tensor<ui32>."""
    want = TensorType((), IntegerType(32, unsigned=True))
    if op.result_types[0] != want:
        fail(op, "", f"result must be {want}, got {op.result_types[0]}")


@verifies("after_all")
def verify_after_all(op: Op) -> None:
    """Operands and result are tokens."""
    for v in op.operands:
        if not isinstance(v.type, TokenType):
            fail(op, "", f"inputs must be !stablehlo.token, got {v.type}", v)
    if not isinstance(op.result_types[0], TokenType):
        fail(op, "", f"result must be !stablehlo.token, got {op.result_types[0]}")
