"""Scalar instructions: arith, cmp, cast, constant and the id queries.

Rules (docs/language-constraints.md, "Scalar instructions"); each message cites
``<instruction> (Cn)``.
"""

from __future__ import annotations

import math

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import ArithOp, CmpCond
from tensorlang.ir.types import I1, I32, INDEX, ScalarType, Type
from tensorlang.verify.errors import fail, value_name

_F32_MAX = 3.4028234663852886e38
_I64_MAX = 2**63 - 1
_FLOAT_MAX = {"f32": _F32_MAX, "c32": _F32_MAX, "f16": 65504.0, "bf16": 3.3895313892515355e38}


def expect_type(inst: Instruction, rule: str, value: Value, expected: Type, what: str) -> None:
    """Raise unless ``value`` has type ``expected`` (``what`` names its role)."""
    if value.type != expected:
        raise fail(inst, rule, f"{what} {value_name(value)} has type {value.type}, "
                   f"expected {expected}", value)


def expect_result(inst: Instruction, rule: str, expected: Type) -> None:
    """Raise unless the single result has type ``expected``."""
    result = inst.result
    if result.type != expected:
        raise fail(inst, rule, f"the result has type {result.type}, expected {expected}")


def _allowed_arith(op: ArithOp, t: ScalarType) -> bool:
    if op in (ArithOp.ADD, ArithOp.SUB, ArithOp.MUL, ArithOp.DIV, ArithOp.NEG):
        return True
    if op is ArithOp.REM:
        return not t.is_complex
    if op in (ArithOp.SHL, ArithOp.SHR):
        return t.is_int and not t.is_bool
    return t.is_int  # and, or, xor, not


def check_arith(inst: Instruction) -> None:
    """arith: C1 operand arity, C2 operand types, C3 the op's type table, C4 result type."""
    op, t = inst.attr_of("op", ArithOp), inst.attr("type")
    b = inst.operand("b")
    if op.unary and b is not None:
        raise fail(inst, "C1", f".{op.value} takes one operand", b)
    if not op.unary and b is None:
        raise fail(inst, "C1", f".{op.value} takes two operands")
    for value in (inst.single("a"), b):
        if value is not None:
            expect_type(inst, "C2", value, t, "operand")
    if not _allowed_arith(op, t):
        raise fail(inst, "C3", f".{op.value} is not defined on {t} "
                   f"(allowed: {_ARITH_ALLOWED[op]})")
    expect_result(inst, "C4", t)


_ARITH_ALLOWED = {
    **{op: "any scalar type" for op in (ArithOp.ADD, ArithOp.SUB, ArithOp.MUL, ArithOp.DIV,
                                        ArithOp.NEG)},
    ArithOp.REM: "scalar types except complex",
    ArithOp.SHL: "integer types except i1",
    ArithOp.SHR: "integer types except i1",
    **{op: "integer types" for op in (ArithOp.AND, ArithOp.OR, ArithOp.XOR, ArithOp.NOT)},
}

_ORDERED = (CmpCond.GT, CmpCond.GE, CmpCond.LT, CmpCond.LE)


def check_cmp(inst: Instruction) -> None:
    """cmp: C1 operand types, C2 ordering conditions not on complex, C3 result i1."""
    cond, t = inst.attr_of("cond", CmpCond), inst.attr("type")
    for name in ("a", "b"):
        expect_type(inst, "C1", inst.operand(name), t, "operand")
    if cond in _ORDERED and t.is_complex:
        raise fail(inst, "C2", f".{cond.value} is not defined on complex type {t} "
                   "(allowed: scalar types except complex)")
    expect_result(inst, "C3", I1)


def check_cast(inst: Instruction) -> None:
    """cast: C1 operand type, C2 (extension: every pair of scalar types), C3 result type."""
    source, target = inst.attr_of("from_type", ScalarType), inst.attr_of("to_type", ScalarType)
    expect_type(inst, "C1", inst.single("a"), source, "operand")
    expect_result(inst, "C3", target)


def check_constant(inst: Instruction) -> None:
    """constant: C1 literal kind matches the type, C2 integer range, C3 float range, C4 result."""
    value, t = inst.attr("value"), inst.attr("type")
    _check_literal_kind(inst, value, t)
    if t.is_int and not isinstance(value, bool):
        low, high = _int_range(t)
        if not low <= value <= high:
            raise fail(inst, "C2", f"{value} is out of range for {t} ({low}..{high})")
    if t.is_float or t.is_complex:
        _check_float_range(inst, value, t)
    expect_result(inst, "C4", t)


def _check_literal_kind(inst: Instruction, value: object, t: ScalarType) -> None:
    if isinstance(value, bool):
        ok = t.is_bool
    elif isinstance(value, int):
        ok = t.is_int
    elif isinstance(value, float):
        ok = t.is_float
    elif isinstance(value, complex):
        ok = t.is_complex
    else:
        ok = False
    if not ok:
        raise fail(inst, "C1", f"{_literal_text(value)} is not a constant of type {t} "
                   f"({_needed(value, t)})")


def _needed(value: object, t: ScalarType) -> str:
    if t.is_bool:
        return "i1 takes true, false, 0 or 1"
    if isinstance(value, bool):
        return "true and false are constants of type i1 only"
    return _LITERAL_NEEDED[t.kind.value]

_LITERAL_NEEDED = {"int": "an integer type takes an integer constant",
                   "float": "a floating type takes a floating constant such as 1.0",
                   "complex": "a complex type takes a complex constant [re, im]"}


def _literal_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, complex):
        return f"[{value.real}, {value.imag}]"
    return repr(value)


def _int_range(t: ScalarType) -> tuple[int, int]:
    if t.is_bool:
        return 0, 1
    if t.bits >= 64:
        return -_I64_MAX, _I64_MAX
    return -(2 ** (t.bits - 1)), 2**t.bits - 1


def _check_float_range(inst: Instruction, value: float | complex, t: ScalarType) -> None:
    limit = _FLOAT_MAX.get(t.name)
    if limit is None:
        return  # f64 and c64 take any double
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    for part in parts:
        if math.isfinite(part) and abs(part) > limit:
            raise fail(inst, "C3", f"{part!r} is out of range for {t} (magnitude above "
                       f"{limit:.7g})")


_ID_TYPES = {"group_id": INDEX, "group_size": INDEX, "num_subgroups": I32,
             "subgroup_size": I32, "subgroup_id": I32, "subgroup_local_id": I32}


def check_id(inst: Instruction) -> None:
    """group_id, group_size (index); num_subgroups, subgroup_* (i32): C1 result type."""
    expect_result(inst, "C1", _ID_TYPES[inst.name])


CHECKS = {"arith": check_arith, "cmp": check_cmp, "cast": check_cast,
          "constant": check_constant, **{name: check_id for name in _ID_TYPES}}
"""The scalar family's check per instruction name."""
