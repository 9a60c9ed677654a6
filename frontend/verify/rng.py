"""Verifiers of the rng family: stablehlo.rng_bit_generator and stablehlo.rng."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import FloatType, is_int
from frontend.verify.common import (
    fail,
    size,
    tensor,
    verifies,
)


@verifies("rng_bit_generator")
def verify_rng_bit_generator(op: Op) -> None:
    """(C1) type(initial_state) = type(output_state), (C2) the state's size."""
    if op.result_types[0] != op.operands[0].type:
        fail(op, "C1", f"output_state type {op.result_types[0]} must equal initial_state "
                       f"type {op.operands[0].type}")
    n = size(tensor(op, op.operands[0], "initial_state").shape)
    allowed = {"THREE_FRY": (2,), "PHILOX": (2, 3)}.get(str(op.attr("rng_algorithm")))
    if n is not None and allowed is not None and n not in allowed:
        fail(op, "C2", f"{op.attr('rng_algorithm')} needs an initial_state of "
                       f"{' or '.join(map(str, allowed))} elements, got {n}")


@verifies("rng")
def verify_rng(op: Op) -> None:
    """(C1) element types agree, (C2) NORMAL needs floats, (C3) shape operand size."""
    a, b = tensor(op, op.operands[0], "a"), tensor(op, op.operands[1], "b")
    shape = tensor(op, op.operands[2], "shape")
    r = tensor(op, op.result_types[0], "result")
    if not a.element == b.element == r.element:
        fail(op, "C1", f"a, b and result element types differ: {a.element}, {b.element}, "
                       f"{r.element}")
    if op.attr("rng_distribution") == "NORMAL" and not isinstance(a.element, FloatType):
        fail(op, "C2", f"NORMAL distribution needs a float element type, got {a.element}")
    if shape.rank != 1 or not is_int(shape.element):
        fail(op, "C3", f"shape must be a 1-D integer tensor, got {shape}")
    if shape.shape[0] is not None and shape.shape[0] != r.rank:
        fail(op, "C3", f"shape has {shape.shape[0]} entries for a result of rank {r.rank}")
