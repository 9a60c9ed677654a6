"""Verifiers of the sort family: stablehlo.sort and chlo.top_k."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import (
    IntegerType,
    TensorType,
    format_results,
)
from frontend.verify.common import (
    dims,
    fail,
    region_results,
    same_types,
    shapes_ok,
    tensor,
    verifies,
)


@verifies("chlo.top_k")
def verify_top_k(op: Op) -> None:
    """k <= last dimension; values and indices have shape [..., k]."""
    t = tensor(op, op.operands[0], "operand")
    k = op.int_attr("k", 0)
    if t.rank == 0 or (t.shape[-1] is not None and not 0 <= k <= t.shape[-1]):
        fail(op, "", f"k = {k} must be between 0 and the last dimension of {t}")
    want = t.shape[:-1] + (k,)
    for r in op.result_types:
        if not shapes_ok(want, tensor(op, r, "result").shape):
            fail(op, "", f"results must have shape {dims(want)}, got {r}")


@verifies("sort")
def verify_sort(op: Op) -> None:
    """(C1) inputs, (C2) results = inputs, (C4) dimension, (C5) comparator type."""
    ts = [tensor(op, v, "input") for v in op.operands]
    if not ts:
        fail(op, "C1", "needs at least one input")
    for t in ts:
        if not shapes_ok(t.shape, ts[0].shape):
            fail(op, "C1", f"input shapes differ: {dims(ts[0].shape)} vs {dims(t.shape)}")
    if not same_types(op.result_types, [v.type for v in op.operands]):
        fail(op, "C2", "result types must equal input types")
    d = op.int_attr("dimension", -1)
    if not -ts[0].rank <= d < max(ts[0].rank, 1):
        fail(op, "C4", f"dimension {d} is out of range for rank {ts[0].rank}")
    args = [a.type for a in op.regions[0].block.args]
    want = [TensorType((), t.element) for t in ts for _ in range(2)]
    if not same_types(args, want):
        fail(op, "C5", f"comparator must take ({', '.join(map(str, want))})")
    got = region_results(op, op.regions[0], "comparator")
    if len(got) != 1 or got[0] != TensorType((), IntegerType(1)):
        fail(op, "C5", f"comparator must return tensor<i1>, got {format_results(got)}")
