"""Structural checks from the op table: operand slots, attributes, regions, result count.

These catch IR built or rewritten in code that does not match the declarative
table in ``tensorlang/ir/ops.py`` (the parser always builds well-formed instructions).
Rules (docs/language-constraints.md, "Structure"): (I1) operand slots, (I2) attributes,
(I3) regions, (I4) result count, (I5) result types are well formed.
"""

from __future__ import annotations

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import Arity
from tensorlang.ir.types import VoidType
from tensorlang.verify.errors import fail
from tensorlang.verify.types import check_type


def check_structure(inst: Instruction) -> None:
    """Raise if ``inst`` does not have the operands, attributes and regions its op declares."""
    _check_operands(inst)
    _check_attrs(inst)
    _check_regions(inst)
    _check_result_count(inst)
    for result in inst.results:
        if isinstance(result.type, VoidType):
            raise fail(inst, "I5", "a result cannot have type void")
        check_type(result.type, inst.loc)


def _check_operands(inst: Instruction) -> None:
    declared = {o.name for o in inst.op.operands}
    for extra in sorted(set(inst.operands) - declared):
        raise fail(inst, "I1", f"unknown operand slot {extra!r}")
    for slot in inst.op.operands:
        value = inst.operands.get(slot.name)
        if slot.arity is Arity.VARIADIC:
            ok = isinstance(value, list) and all(isinstance(v, Value) for v in value)
        elif slot.arity is Arity.OPTIONAL:
            ok = value is None or isinstance(value, Value)
        else:
            ok = isinstance(value, Value)
        if not ok:
            raise fail(inst, "I1", f"operand {slot.name!r} must be {_arity_text(slot.arity)}")


def _arity_text(arity: Arity) -> str:
    return {Arity.ONE: "a value", Arity.OPTIONAL: "a value or None",
            Arity.VARIADIC: "a list of values"}[arity]


def _check_attrs(inst: Instruction) -> None:
    for name, _meaning in inst.op.attrs:
        if name not in inst.attrs:
            raise fail(inst, "I2", f"missing attribute {name!r}")


def _check_regions(inst: Instruction) -> None:
    required = sum(1 for r in inst.op.regions if not r.optional)
    if not required <= len(inst.regions) <= len(inst.op.regions):
        raise fail(inst, "I3", f"has {len(inst.regions)} regions, expected "
                   f"{required}..{len(inst.op.regions)}")


def _check_result_count(inst: Instruction) -> None:
    expected = inst.op.results
    if expected < 0:
        return  # if/for: checked against their result types by the control checks
    if len(inst.results) != expected:
        raise fail(inst, "I4", f"has {len(inst.results)} results, expected {expected}")
