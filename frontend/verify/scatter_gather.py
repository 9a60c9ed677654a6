"""gather and scatter: dimension numbers and result/update shapes (spec C1-C25)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.ir.types import TensorType, is_int
from frontend.verify.common import (
    constant_value,
    dim_ok,
    dims,
    fail,
    in_range,
    region_results,
    shapes_ok,
    tensor,
    types_ok,
    unique,
    verifies,
)


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


def _batch_dims_agree(op: Op, rule: str, operand: TensorType, obatch: list[int],
                      idx: TensorType, ibatch: list[int]) -> None:
    """dim(operand, batching dims...) = dim(indices, indices batching dims...)."""
    for a, b in zip(obatch, ibatch, strict=False):
        if not dim_ok(operand.shape[a], idx.shape[b]):
            fail(op, rule, f"batching dimension sizes differ: operand[{a}] = "
                           f"{operand.shape[a]}, indices[{b}] = {idx.shape[b]}")


def _combine(batch: list[int | None], offset: list[int | None],
             offset_dims: list[int]) -> tuple[int | None, ...]:
    rank = len(batch) + len(offset)
    out: list[int | None] = []
    b = iter(batch)
    o = iter(offset)
    for i in range(rank):
        out.append(next(o) if i in offset_dims else next(b))
    return tuple(out)


# dynamic_gather's rule numbers for gather's (it has no batching dimensions).
_DYNAMIC_RULES = {"C7": "C6", "C8": "C7", "C9": "C8", "C18": "C9", "C19": "C10",
                  "C20": "C11", "C21": "C12", "C22": "C13", "C23": "C14", "C6": "C6",
                  "C10": "", "C11": "", "C12": "", "C13": "", "C14": "", "C15": "",
                  "C16": "", "C17": ""}


@verifies("gather")
def verify_gather(op: Op) -> None:
    """(C1)-(C23) of gather."""
    _check_gather(op, op.ints_attr("slice_sizes", []), lambda rule: rule)


@verifies("dynamic_gather")
def verify_dynamic_gather(op: Op) -> None:
    """(C1)-(C14) of dynamic_gather; slice sizes known when they are a constant."""
    operand = tensor(op, op.operands[0], "operand")
    _check_gather(op, _slice_sizes(op, operand.rank),
                  lambda rule: _DYNAMIC_RULES.get(rule, rule))


def _slice_sizes(op: Op, rank: int) -> list[int | None]:
    """The ``slice_sizes`` operand's values (None where not a constant)."""
    v = op.operands[2]
    t = tensor(op, v, "slice_sizes")
    if t.rank != 1 or not is_int(t.element):
        fail(op, "", f"slice_sizes must be a 1-D integer tensor, got {t}", v)
    if t.shape[0] is not None and t.shape[0] != rank:
        fail(op, "C11", f"slice_sizes has {t.shape[0]} entries for operand rank {rank}", v)
    const = constant_value(v)
    if const is None:
        return [None] * rank
    return [int(x) for x in const.reshape(-1)]


def _check_gather(op: Op, sizes: Sequence[int | None], rn: Callable[[str], str]) -> None:
    """Gather's rules, numbered by ``rn`` (gather's number to the op's)."""
    operand = tensor(op, op.operands[0], "operand")
    idx = tensor(op, op.operands[1], "start_indices")
    result = tensor(op, op.result_types[0], "result")
    dn = _dn(op, "dimension_numbers")
    offset, collapsed = A.as_ints(dn.get("offset_dims")), A.as_ints(dn.get("collapsed_slice_dims"))
    obatch = A.as_ints(dn.get("operand_batching_dims"))
    ibatch = A.as_ints(dn.get("start_indices_batching_dims"))
    start_map = A.as_ints(dn.get("start_index_map"))
    ivd = A.as_int(dn.get("index_vector_dim", 0))
    if operand.rank != len(offset) + len(collapsed) + len(obatch):
        fail(op, rn("C1"), f"operand rank {operand.rank} must equal size(offset_dims) + "
                           f"size(collapsed_slice_dims) + size(operand_batching_dims) = "
                           f"{len(offset) + len(collapsed) + len(obatch)}")
    if not 0 <= ivd <= idx.rank:
        fail(op, rn("C2"), f"index_vector_dim {ivd} is out of range [0, {idx.rank}]")
    n_index = _index_count(idx, ivd)
    if n_index is not None and len(start_map) != n_index:
        fail(op, rn("C3"), f"start_index_map has {len(start_map)} entries but the index "
                           f"vector has {n_index}")
    _sorted_unique(op, rn("C4"), "offset_dims", offset)
    in_range(op, rn("C5"), "offset_dims", offset, result.rank)
    unique(op, rn("C6"), "collapsed_slice_dims and operand_batching_dims", collapsed + obatch)
    _sorted_unique(op, rn("C7"), "collapsed_slice_dims", collapsed)
    in_range(op, rn("C8"), "collapsed_slice_dims", collapsed, operand.rank)
    _sorted_unique(op, rn("C10"), "operand_batching_dims", obatch)
    in_range(op, rn("C11"), "operand_batching_dims", obatch, operand.rank)
    unique(op, rn("C13"), "start_indices_batching_dims", ibatch)
    in_range(op, rn("C14"), "start_indices_batching_dims", ibatch, idx.rank)
    if ivd in ibatch:
        fail(op, rn("C15"), f"index_vector_dim {ivd} must not be a batching dimension")
    if len(obatch) != len(ibatch):
        fail(op, rn("C16"), "operand_batching_dims and start_indices_batching_dims differ "
                            "in size")
    _batch_dims_agree(op, rn("C17"), operand, obatch, idx, ibatch)
    unique(op, rn("C18"), "start_index_map and operand_batching_dims", start_map + obatch)
    in_range(op, rn("C19"), "start_index_map", start_map, operand.rank)
    if len(sizes) != operand.rank:
        fail(op, rn("C20"), f"slice_sizes has {len(sizes)} entries for operand rank "
                            f"{operand.rank}")
    for d in collapsed + obatch:
        if (sizes[d] or 0) > 1:
            fail(op, rn("C9" if d in collapsed else "C12"),
                 f"{'collapsed' if d in collapsed else 'batching'} dimension {d} must have "
                 f"slice size <= 1, got {sizes[d]}")
    for size, extent in zip(sizes, operand.shape, strict=True):
        if size is not None and (size < 0 or (extent is not None and size > extent)):
            fail(op, rn("C21"), f"slice_sizes {sizes} must lie within the operand shape "
                                f"{dims(operand.shape)}")
    offset_sizes = [s for i, s in enumerate(sizes) if i not in collapsed + obatch]
    want = _combine(_batch_sizes(idx, ivd), offset_sizes, offset) \
        if len(offset_sizes) == len(offset) else None
    if want is None or not shapes_ok(want, result.shape):
        fail(op, rn("C22"), f"result shape must be {dims(want or ())}, got "
                            f"{dims(result.shape)}")
    if result.element != operand.element:
        fail(op, rn("C23"), f"result element type must be {operand.element}, got {result.element}")


@verifies("scatter")
def verify_scatter(op: Op) -> None:
    """(C1)-(C25) of scatter (shape rules; batching dims checked for range and size)."""
    inputs = [tensor(op, v, "input") for v in op.operand_group("inputs")]
    updates = [tensor(op, v, "update") for v in op.operand_group("updates")]
    idx = tensor(op, op.operand("scatter_indices"), "scatter_indices")
    dn = _dn(op, "scatter_dimension_numbers")
    if not inputs or len(inputs) != len(updates):
        fail(op, "C5", "needs N > 0 inputs and N updates")
    uwd, iwd = A.as_ints(dn.get("update_window_dims")), A.as_ints(dn.get("inserted_window_dims"))
    ibd = A.as_ints(dn.get("input_batching_dims"))
    sbd = A.as_ints(dn.get("scatter_indices_batching_dims"))
    sdo = A.as_ints(dn.get("scatter_dims_to_operand_dims"))
    ivd = A.as_int(dn.get("index_vector_dim", 0))
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
    if ibd != sorted(ibd):
        fail(op, "C12", f"input_batching_dims must be sorted, got {ibd}")
    in_range(op, "C13", "input_batching_dims", ibd, rank)
    unique(op, "C14", "scatter_indices_batching_dims", sbd)
    in_range(op, "C15", "scatter_indices_batching_dims", sbd, idx.rank)
    if ivd in sbd:
        fail(op, "C16", f"index_vector_dim {ivd} must not be a batching dimension")
    if len(ibd) != len(sbd):
        fail(op, "C17", "input_batching_dims and scatter_indices_batching_dims differ in size")
    _batch_dims_agree(op, "C18", inputs[0], ibd, idx, sbd)
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
    for r, v in zip(op.result_types, op.operand_group("inputs"), strict=False):
        if not types_ok(r, v.type):
            fail(op, "C24", f"result type {r} must equal the input type {v.type}")


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
