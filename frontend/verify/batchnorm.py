"""Verifiers of the batchnorm family: stablehlo.batch_norm_inference, _training, _grad."""

from __future__ import annotations

from frontend.ir.core import Op, Value
from frontend.ir.types import TensorType, Type
from frontend.verify.common import (
    baseline_element,
    dims,
    fail,
    in_range,
    shapes_ok,
    tensor,
    types_ok,
    verifies,
)

# Per op: (name, rule) of each per-feature operand, then of each per-feature result.
_FEATURE_RULES = {
    "stablehlo.batch_norm_inference": ((("scale", "C3"), ("offset", "C4"), ("mean", "C5"),
                                        ("variance", "C6")), ()),
    "stablehlo.batch_norm_training": ((("scale", "C3"), ("offset", "C4")),
                                      (("batch_mean", "C5"), ("batch_var", "C6"))),
    "stablehlo.batch_norm_grad": ((("scale", "C5"), ("mean", "C4"), ("variance", "C4")),
                                  (("grad_scale", "C4"), ("grad_offset", "C4"))),
}


def _feature_checks(op: Op) -> TensorType:
    """(C1) feature_index in range; per-feature operands and results have its size."""
    t = tensor(op, op.operands[0], "operand")
    fi = op.int_attr("feature_index", 0)
    in_range(op, "C1", "feature_index", [fi], t.rank)
    ins, outs = _FEATURE_RULES[op.name]
    pairs: list[tuple[Type, Value | None, str, str]]
    pairs = [(v.type, v, n, rule) for v, (n, rule) in zip(op.operands[1:], ins, strict=False)]
    pairs += [(ty, None, n, rule) for ty, (n, rule) in zip(op.result_types[1:], outs,
                                                           strict=False)]
    for ty, v, name, rule in pairs:
        s = tensor(op, ty, name)
        if s.rank != 1 or not shapes_ok(s.shape, (t.shape[fi],)):
            fail(op, rule, f"{name} must be a 1-D tensor of size {dims([t.shape[fi]])}, "
                           f"got {s}", v)
    return t


@verifies("batch_norm_inference", "batch_norm_training", "batch_norm_grad")
def verify_batch_norm(op: Op) -> None:
    """(C1) feature_index, (C2) one baseline element type, per-feature sizes, and the
    output (and grad_output) types equal to the operand's."""
    t = _feature_checks(op)
    for ty in [v.type for v in op.operands] + list(op.result_types):
        e = baseline_element(tensor(op, ty, "operand or result"))
        if e != baseline_element(t):
            fail(op, "C2", f"operands and results must share the element type {t.element}, "
                           f"got {ty}")
    grad = op.name.endswith("grad")
    same = [op.result_types[0]] + ([op.operands[4].type] if grad else [])
    for ty in same:
        if not types_ok(ty, t):
            fail(op, "C3" if grad else "C7", f"{ty} must have the operand type {t}")
