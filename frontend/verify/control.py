"""Ops with regions: reduce, while, if, case, sort, map, plus terminator checks."""

from __future__ import annotations

from frontend.ir.core import Op, Region
from frontend.ir.types import IntegerType, TensorType, Type, format_results
from frontend.verify.common import (
    dims,
    fail,
    in_range,
    shapes_ok,
    tensor,
    types_ok,
    unique,
    verifies,
)


def region_results(op: Op, region: Region, what: str) -> list[Type]:
    """Types returned by ``region``'s ``stablehlo.return`` (a missing one is an error)."""
    block = region.block
    if not block.ops or block.ops[-1].name != "stablehlo.return":
        fail(op, "", f"{what} must end with stablehlo.return")
    return [v.type for v in block.ops[-1].operands]


def _same_types(a: list[Type], b: list[Type]) -> bool:
    return len(a) == len(b) and all(types_ok(x, y) for x, y in zip(a, b, strict=False))


@verifies("reduce")
def verify_reduce(op: Op) -> None:
    """(C1)-(C8) of reduce."""
    inputs = [tensor(op, v, "input") for v in op.operand_group("inputs")]
    inits = [tensor(op, v, "init value") for v in op.operand_group("init_values")]
    if not inputs or len(op.results) != len(inputs):
        fail(op, "C3", f"needs N > 0 inputs, N init values and N results, got {len(inputs)}, "
                       f"{len(inits)}, {len(op.results)}")
    for t in inputs:
        if not shapes_ok(t.shape, inputs[0].shape):
            fail(op, "C1", f"input shapes differ: {dims(inputs[0].shape)} vs {dims(t.shape)}")
    for t, i in zip(inputs, inits, strict=False):
        if t.element != i.element:
            fail(op, "C2", f"input element type {t.element} differs from init value's "
                           f"{i.element}")
    d = list(op.attr("dimensions", []))
    in_range(op, "C4", "dimensions", d, inputs[0].rank)
    unique(op, "C5", "dimensions", d)
    args = [a.type for a in op.regions[0].block.args]
    want = [TensorType((), t.element) for t in inits] * 2
    if not _same_types(args, want) or not _same_types(region_results(op, op.regions[0],
                                                                     "body"), want[:len(inits)]):
        fail(op, "C6", f"body must have type ({', '.join(map(str, want))}) -> "
                       f"{format_results(want[:len(inits)])}")
    shape = tuple(x for i, x in enumerate(inputs[0].shape) if i not in d)
    for r, init in zip(op.result_types, inits, strict=False):
        rt = tensor(op, r, "result")
        if not shapes_ok(shape, rt.shape):
            fail(op, "C7", f"result shape must be {dims(shape)}, got {dims(rt.shape)}")
        if rt.element != init.element:
            fail(op, "C8", f"result element type must be {init.element}, got {rt.element}")


@verifies("while")
def verify_while(op: Op) -> None:
    """(C1) cond returns tensor<i1>, (C2) body keeps the types, (C3) results."""
    types = [v.type for v in op.operands]
    cond, body = op.regions
    if [a.type for a in cond.block.args] != types:
        fail(op, "C1", "cond arguments must have the operand types")
    got = region_results(op, cond, "cond")
    if len(got) != 1 or got[0] != TensorType((), IntegerType(1)):
        fail(op, "C1", f"cond must return tensor<i1>, got {format_results(got)}")
    if [a.type for a in body.block.args] != types or \
            not _same_types(region_results(op, body, "body"), types):
        fail(op, "C2", f"body must have type ({', '.join(map(str, types))}) -> "
                       f"{format_results(types)}")
    if not _same_types(op.result_types, types):
        fail(op, "C3", f"result types must equal operand types {format_results(types)}")


@verifies("if")
def verify_if(op: Op) -> None:
    """(C1) branches take no arguments, (C2) return the same types, (C3) = results."""
    pred = tensor(op, op.operands[0], "pred")
    if pred.rank != 0 or pred.element != IntegerType(1):
        fail(op, "", f"pred must be tensor<i1>, got {pred}")
    for i, region in enumerate(op.regions):
        if region.block.args:
            fail(op, "C1", f"branch {i} must take no arguments")
    got = [region_results(op, r, f"branch {i}") for i, r in enumerate(op.regions)]
    if not _same_types(got[0], got[1]):
        fail(op, "C2", f"branch 1 returns {format_results(got[1])} but branch 0 returns "
                       f"{format_results(got[0])}")
    if not _same_types(got[0], op.result_types):
        fail(op, "C3", f"branches return {format_results(got[0])} but the op's results are "
                       f"{format_results(op.result_types)}")


@verifies("sort")
def verify_sort(op: Op) -> None:
    """(C1) inputs, (C2) results = inputs, (C4) dimension, (C5) comparator type."""
    ts = [tensor(op, v, "input") for v in op.operands]
    if not ts:
        fail(op, "C1", "needs at least one input")
    for t in ts:
        if not shapes_ok(t.shape, ts[0].shape):
            fail(op, "C1", f"input shapes differ: {dims(ts[0].shape)} vs {dims(t.shape)}")
    if not _same_types(op.result_types, [v.type for v in op.operands]):
        fail(op, "C2", "result types must equal input types")
    d = op.attr("dimension", -1)
    if not -ts[0].rank <= d < max(ts[0].rank, 1):
        fail(op, "C4", f"dimension {d} is out of range for rank {ts[0].rank}")
    args = [a.type for a in op.regions[0].block.args]
    want = [TensorType((), t.element) for t in ts for _ in range(2)]
    if not _same_types(args, want):
        fail(op, "C5", f"comparator must take ({', '.join(map(str, want))})")
    got = region_results(op, op.regions[0], "comparator")
    if len(got) != 1 or got[0] != TensorType((), IntegerType(1)):
        fail(op, "C5", f"comparator must return tensor<i1>, got {format_results(got)}")
