"""Extension instructions: math, select, bitcast, complex and the multi-dimensional foreach.

Rules (docs/language-constraints.md, "Extensions"); each message cites
``<instruction> (Cn)``.
"""

from __future__ import annotations

from tensorlang.ir.core import Instruction
from tensorlang.ir.infer import math_result_type
from tensorlang.ir.ops import MATH_FNS
from tensorlang.ir.types import I1, ScalarType, complex_part
from tensorlang.verify.errors import fail
from tensorlang.verify.scalar import expect_result, expect_type


def _kind(t: ScalarType) -> str:
    if t.is_bool:
        return "i1"
    return t.kind.value


def check_math(inst: Instruction) -> None:
    """math: C1 known function and arity, C2 operand types, C3 type allowed, C4 result."""
    fn = MATH_FNS.get(inst.attr_of("fn", str))
    if fn is None:
        raise fail(inst, "C1", f"unknown function {inst.attr('fn')!r}")
    t: ScalarType = inst.attr("type")
    operands = [v for v in (inst.single("a"), inst.operand("b")) if v is not None]
    if len(operands) != fn.arity or inst.single("a") is None:
        raise fail(inst, "C1", f"math.{fn.name} takes {fn.arity} operand"
                   f"{'s' * (fn.arity > 1)}, got {len(operands)}")
    for value in operands:
        expect_type(inst, "C2", value, t, "operand")
    if _kind(t) not in fn.kinds:
        raise fail(inst, "C3", f"math.{fn.name} is not defined on {t} (allowed: "
                   f"{_kinds_text(fn.kinds)})")
    expect_result(inst, "C4", math_result_type(fn.name, t))


def _kinds_text(kinds: frozenset[str]) -> str:
    names = {"i1": "i1", "int": "integer types except i1", "float": "floating types",
             "complex": "complex types"}
    return ", ".join(names[k] for k in ("i1", "int", "float", "complex") if k in kinds)



def check_select(inst: Instruction) -> None:
    """select: C1 condition i1, C2 both operands of the type, C3 result of the type."""
    t = inst.attr("type")
    expect_type(inst, "C1", inst.single("cond"), I1, "the condition")
    for name in ("a", "b"):
        expect_type(inst, "C2", inst.operand(name), t, "operand")
    expect_result(inst, "C3", t)


def check_bitcast(inst: Instruction) -> None:
    """bitcast: C1 operand type, C2 same bit width and no i1, C3 result type."""
    source: ScalarType = inst.attr_of("from_type", ScalarType)
    target: ScalarType = inst.attr_of("to_type", ScalarType)
    expect_type(inst, "C1", inst.single("a"), source, "operand")
    if source.is_bool or target.is_bool:
        raise fail(inst, "C2", "i1 has no bit pattern to reinterpret")
    if source.bits != target.bits:
        raise fail(inst, "C2", f"{source} has {source.bits} bits but {target} has "
                   f"{target.bits} (bitcast keeps the width)", inst.single("a"))
    expect_result(inst, "C3", target)


def check_complex(inst: Instruction) -> None:
    """complex: C1 complex result type, C2 parts of its part type, C3 result type."""
    t: ScalarType = inst.attr("type")
    if not t.is_complex:
        raise fail(inst, "C1", f"the type must be complex (c32 or c64), got {t}")
    for name in ("re", "im"):
        expect_type(inst, "C2", inst.operand(name), complex_part(t), "part")
    expect_result(inst, "C3", t)


def check_foreach_nd(inst: Instruction) -> None:
    """foreach (nd): C1 integer loop type, C2 one from and one to per mode, of the loop
    type, C3 one body argument per mode, of the loop type."""
    t = inst.attr_of("loop_type", ScalarType)
    if not isinstance(t, ScalarType) or not t.is_int or t.is_bool:
        raise fail(inst, "C1", f"the loop type must be an integer type, got {t}")
    lows, highs = inst.operand("from"), inst.operand("to")
    if not lows or len(lows) != len(highs):
        raise fail(inst, "C2", f"{len(lows)} lower and {len(highs)} upper bounds (one pair "
                   "per mode, at least one mode)")
    for value in (*lows, *highs):
        expect_type(inst, "C2", value, t, "bound")
    args = inst.regions[0].args
    if len(args) != len(lows) or any(a.type != t for a in args):
        raise fail(inst, "C3", f"the body takes one loop variable of type {t} per mode "
                   f"({len(lows)}), got ({', '.join(str(a.type) for a in args)})", *args)


CHECKS = {"math": check_math, "select": check_select, "bitcast": check_bitcast,
          "complex": check_complex, "foreach_nd": check_foreach_nd}
"""The extension family's check per instruction name."""
