"""Verifiers of the linalg family: stablehlo.cholesky and stablehlo.triangular_solve."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.verify.common import (
    baseline_element,
    dims,
    fail,
    shapes_ok,
    tensor,
    types_ok,
    verifies,
)


@verifies("cholesky")
def verify_cholesky(op: Op) -> None:
    """(C1) result type, (C2) rank >= 2, (C3) square trailing matrices."""
    a = tensor(op, op.operands[0], "a")
    if not types_ok(a, op.result_types[0]):
        fail(op, "C1", f"result type must equal {a}")
    if a.rank < 2:
        fail(op, "C2", f"a must have rank >= 2, got {a.rank}")
    if None not in a.shape[-2:] and a.shape[-2] != a.shape[-1]:
        fail(op, "C3", f"a must be square in its last two dimensions, got {dims(a.shape)}")


@verifies("triangular_solve")
def verify_triangular_solve(op: Op) -> None:
    """(C1) element types, (C2) ranks, (C3) shapes, (C4) result type."""
    a, b = tensor(op, op.operands[0], "a"), tensor(op, op.operands[1], "b")
    if baseline_element(a) != baseline_element(b):
        fail(op, "C1", f"a and b element types differ: {a.element} vs {b.element}")
    if not 2 <= a.rank == b.rank:
        fail(op, "C2", f"a and b must have the same rank >= 2, got {a.rank} and {b.rank}")
    k = b.shape[-2] if op.attr("left_side", False) else b.shape[-1]
    if not shapes_ok(a.shape[:-2], b.shape[:-2]) or not shapes_ok(a.shape[-2:], (k, k)):
        fail(op, "C3", f"a must have shape [..., {k}, {k}] matching b, got {dims(a.shape)}")
    if not types_ok(b, op.result_types[0]):
        fail(op, "C4", f"result type must equal b's type {b}")
