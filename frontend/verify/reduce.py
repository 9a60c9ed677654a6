"""Verifier of the reduce family: stablehlo.reduce."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import TensorType, Type, format_results
from frontend.verify.common import (
    dims,
    fail,
    in_range,
    region_results,
    same_types,
    shapes_ok,
    tensor,
    unique,
    verifies,
)


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
    d = op.ints_attr("dimensions", [])
    in_range(op, "C4", "dimensions", d, inputs[0].rank)
    unique(op, "C5", "dimensions", d)
    args = [a.type for a in op.regions[0].block.args]
    want: list[Type] = [TensorType((), t.element) for t in inits * 2]
    if not same_types(args, want) or not same_types(region_results(op, op.regions[0],
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
