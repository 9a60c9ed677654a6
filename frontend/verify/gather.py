"""gather and scatter: dimension numbers and result/update shapes (spec C1-C25)."""

from __future__ import annotations

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.ir.types import TensorType
from frontend.verify.common import (
    dim_ok,
    dims,
    fail,
    in_range,
    shapes_ok,
    tensor,
    types_ok,
    unique,
    verifies,
)
from frontend.verify.control import region_results


def _dn(op: Op, name: str) -> A.StructAttr:
    dn = op.attrs.get(name)
    if not isinstance(dn, A.StructAttr):
        fail(op, "", f"needs a {name} attribute")
    return dn


def _sorted_unique(op: Op, rule: str, name: str, values: list[int]) -> None:
    unique(op, rule, name, values)
    if values != sorted(values):
        fail(op, rule, f"{name} must be sorted, got {values}")


def _index_count(idx: TensorType, ivd: int) -> int | None:
    return idx.shape[ivd] if ivd < idx.rank else 1


def _batch_sizes(idx: TensorType, ivd: int) -> list[int | None]:
    return [d for i, d in enumerate(idx.shape) if i != ivd]


def _combine(batch: list[int | None], offset: list[int | None],
             offset_dims: list[int]) -> tuple[int | None, ...]:
    rank = len(batch) + len(offset)
    out: list[int | None] = []
    b = iter(batch)
    o = iter(offset)
    for i in range(rank):
        out.append(next(o) if i in offset_dims else next(b))
    return tuple(out)


@verifies("gather")
def verify_gather(op: Op) -> None:
    """(C1)-(C23) of gather."""
    operand = tensor(op, op.operands[0], "operand")
    idx = tensor(op, op.operands[1], "start_indices")
    result = tensor(op, op.result_types[0], "result")
    dn = _dn(op, "dimension_numbers")
    offset, collapsed = list(dn.get("offset_dims")), list(dn.get("collapsed_slice_dims"))
    obatch = list(dn.get("operand_batching_dims"))
    ibatch = list(dn.get("start_indices_batching_dims"))
    start_map = list(dn.get("start_index_map"))
    ivd = dn.get("index_vector_dim", 0)
    sizes = list(op.attr("slice_sizes", []))
    if operand.rank != len(offset) + len(collapsed) + len(obatch):
        fail(op, "C1", f"operand rank {operand.rank} must equal size(offset_dims) + "
                       f"size(collapsed_slice_dims) + size(operand_batching_dims) = "
                       f"{len(offset) + len(collapsed) + len(obatch)}")
    if not 0 <= ivd <= idx.rank:
        fail(op, "C2", f"index_vector_dim {ivd} is out of range [0, {idx.rank}]")
    n_index = _index_count(idx, ivd)
    if n_index is not None and len(start_map) != n_index:
        fail(op, "C3", f"start_index_map has {len(start_map)} entries but the index vector "
                       f"has {n_index}")
    _sorted_unique(op, "C4", "offset_dims", offset)
    in_range(op, "C5", "offset_dims", offset, result.rank)
    unique(op, "C6", "collapsed_slice_dims and operand_batching_dims", collapsed + obatch)
    _sorted_unique(op, "C7", "collapsed_slice_dims", collapsed)
    in_range(op, "C8", "collapsed_slice_dims", collapsed, operand.rank)
    in_range(op, "C11", "operand_batching_dims", obatch, operand.rank)
    unique(op, "C13", "start_indices_batching_dims", ibatch)
    in_range(op, "C14", "start_indices_batching_dims", ibatch, idx.rank)
    if len(obatch) != len(ibatch):
        fail(op, "C16", "operand_batching_dims and start_indices_batching_dims differ in size")
    unique(op, "C18", "start_index_map and operand_batching_dims", start_map + obatch)
    in_range(op, "C19", "start_index_map", start_map, operand.rank)
    if len(sizes) != operand.rank:
        fail(op, "C20", f"slice_sizes has {len(sizes)} entries for operand rank {operand.rank}")
    for d in collapsed + obatch:
        if sizes[d] > 1:
            fail(op, "C9", f"collapsed dimension {d} must have slice size <= 1, got {sizes[d]}")
    for s, d in zip(sizes, operand.shape, strict=True):
        if s < 0 or (d is not None and s > d):
            fail(op, "C21", f"slice_sizes {sizes} must lie within the operand shape "
                            f"{dims(operand.shape)}")
    offset_sizes = [s for i, s in enumerate(sizes) if i not in collapsed + obatch]
    want = _combine(_batch_sizes(idx, ivd), offset_sizes, offset) \
        if len(offset_sizes) == len(offset) else None
    if want is None or not shapes_ok(want, result.shape):
        fail(op, "C22", f"result shape must be {dims(want or ())}, got {dims(result.shape)}")
    if result.element != operand.element:
        fail(op, "C23", f"result element type must be {operand.element}, got {result.element}")


@verifies("scatter")
def verify_scatter(op: Op) -> None:
    """(C1)-(C25) of scatter (shape rules; batching dims checked for range and size)."""
    inputs = [tensor(op, v, "input") for v in op.operand_group("inputs")]
    updates = [tensor(op, v, "update") for v in op.operand_group("updates")]
    idx = tensor(op, op.operand("scatter_indices"), "scatter_indices")
    dn = _dn(op, "scatter_dimension_numbers")
    if not inputs or len(inputs) != len(updates):
        fail(op, "C5", "needs N > 0 inputs and N updates")
    uwd, iwd = list(dn.get("update_window_dims")), list(dn.get("inserted_window_dims"))
    ibd = list(dn.get("input_batching_dims"))
    sbd = list(dn.get("scatter_indices_batching_dims"))
    sdo = list(dn.get("scatter_dims_to_operand_dims"))
    ivd = dn.get("index_vector_dim", 0)
    rank = inputs[0].rank
    for t in inputs:
        if not shapes_ok(t.shape, inputs[0].shape):
            fail(op, "C1", f"input shapes differ: {dims(inputs[0].shape)} vs {dims(t.shape)}")
    if rank != len(uwd) + len(iwd) + len(ibd):
        fail(op, "C2", f"input rank {rank} must equal size(update_window_dims) + "
                       f"size(inserted_window_dims) + size(input_batching_dims)")
    for u in updates:
        if not shapes_ok(u.shape, updates[0].shape):
            fail(op, "C3", f"update shapes differ: {dims(updates[0].shape)} vs {dims(u.shape)}")
    for t, u in zip(inputs, updates, strict=True):
        if t.element != u.element:
            fail(op, "C6", f"update element type {u.element} differs from input's {t.element}")
    _sorted_unique(op, "C7", "update_window_dims", uwd)
    in_range(op, "C8", "update_window_dims", uwd, updates[0].rank)
    unique(op, "C9", "inserted_window_dims and input_batching_dims", iwd + ibd)
    _sorted_unique(op, "C10", "inserted_window_dims", iwd)
    in_range(op, "C11", "inserted_window_dims", iwd, rank)
    in_range(op, "C13", "input_batching_dims", ibd, rank)
    unique(op, "C14", "scatter_indices_batching_dims", sbd)
    in_range(op, "C15", "scatter_indices_batching_dims", sbd, idx.rank)
    if len(ibd) != len(sbd):
        fail(op, "C17", "input_batching_dims and scatter_indices_batching_dims differ in size")
    if not 0 <= ivd <= idx.rank:
        fail(op, "C22", f"index_vector_dim {ivd} is out of range [0, {idx.rank}]")
    n_index = _index_count(idx, ivd)
    if n_index is not None and len(sdo) != n_index:
        fail(op, "C19", f"scatter_dims_to_operand_dims has {len(sdo)} entries but the index "
                        f"vector has {n_index}")
    unique(op, "C20", "scatter_dims_to_operand_dims and input_batching_dims", sdo + ibd)
    in_range(op, "C21", "scatter_dims_to_operand_dims", sdo, rank)
    _check_update_shape(op, inputs[0], updates[0], idx, uwd, iwd + ibd, ivd)
    scalars = [TensorType((), t.element) for t in inputs]
    args = [a.type for a in op.regions[0].block.args]
    got = region_results(op, op.regions[0], "update_computation")
    if not (len(args) == 2 * len(scalars) and all(
            types_ok(a, b) for a, b in zip(args, scalars * 2, strict=True))
            and len(got) == len(scalars)
            and all(types_ok(a, b) for a, b in zip(got, scalars, strict=True))):
        fail(op, "C23", f"update_computation must take ({', '.join(map(str, scalars * 2))}) "
                        f"and return ({', '.join(map(str, scalars))})")
    for r, t in zip(op.result_types, op.operand_group("inputs"), strict=False):
        if not types_ok(r, t.type):
            fail(op, "C24", f"result type {r} must equal the input type {t.type}")


def _check_update_shape(op: Op, inp: TensorType, upd: TensorType, idx: TensorType,
                        uwd: list[int], removed: list[int], ivd: int) -> None:
    scatter_sizes = _batch_sizes(idx, ivd)
    window_bounds = [d for i, d in enumerate(inp.shape) if i not in removed]
    if upd.rank != len(scatter_sizes) + len(uwd) or len(window_bounds) != len(uwd):
        fail(op, "C4", f"updates rank {upd.rank} must be {len(scatter_sizes) + len(uwd)} "
                       f"(scatter dims plus update_window_dims)")
    others = [d for i, d in enumerate(upd.shape) if i not in uwd]
    for got, want in zip(others, scatter_sizes, strict=True):
        if not dim_ok(got, want):
            fail(op, "C4", f"update scatter dimensions {dims(others)} must equal "
                           f"{dims(scatter_sizes)}")
    for i, bound in zip(uwd, window_bounds, strict=True):
        d = upd.shape[i]
        if d is not None and bound is not None and d > bound:
            fail(op, "C4", f"update window dimension {i} of size {d} exceeds the input's "
                           f"{bound}")
