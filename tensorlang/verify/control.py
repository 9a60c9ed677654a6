"""Control flow: if, for, foreach, parallel and yield.

Rules (docs/language-constraints.md, "Control flow"); each message cites
``<instruction> (Cn)``.  Where yield may appear at all is rule R3 (regions.py).
"""

from __future__ import annotations

from tensorlang.ir.core import Instruction, Region, Value
from tensorlang.ir.types import I1, ScalarType, Type
from tensorlang.verify.errors import fail, value_name
from tensorlang.verify.scalar import expect_type


def _types_text(types: list[Type] | tuple[Type, ...]) -> str:
    return "(" + ", ".join(map(str, types)) + ")"


def _check_yield_ends(inst: Instruction, rule: str, region: Region, types: tuple[Type, ...],
                      where: str) -> None:
    """The region ends with a yield of ``types``; with no types, a yield is optional."""
    last = region.instructions[-1] if region.instructions else None
    if last is None or last.name != "yield":
        if types:
            raise fail(inst, rule, f"the {where} region must end with a yield of "
                       f"{_types_text(types)}")
        return
    values = last.operands.get("values")
    if not isinstance(values, list):
        return  # malformed: the yield's own structure check (I1) reports it
    got = tuple(v.type for v in values)
    if got != tuple(types):
        raise fail(last.loc, f"{inst.name} ({rule})", f"the {where} region yields "
                   f"{_types_text(got)} but must yield {_types_text(types)}", *values)


def check_yield(inst: Instruction) -> None:
    """yield: C1 as many values as types, C2 each value of its type."""
    values, types = inst.variadic("values"), tuple(inst.attr("types"))
    if len(values) != len(types):
        raise fail(inst, "C1", f"{len(values)} values but {len(types)} types")
    for value, t in zip(values, types, strict=True):
        expect_type(inst, "C2", value, t, "value")


def check_if(inst: Instruction) -> None:
    """if: C1 condition i1, C2 scalar results as declared, C3 else with results, C4 yields."""
    expect_type(inst, "C1", inst.single("cond"), I1, "the condition")
    types = tuple(inst.attr("result_types"))
    _check_results(inst, "C2", types, "declared")
    if types and len(inst.regions) < 2:
        raise fail(inst, "C3", "an if that returns values needs an else region")
    for region, where in zip(inst.regions, ("then", "else"), strict=False):
        if region.args:
            raise fail(inst, "C4", f"the {where} region takes no arguments")
        _check_yield_ends(inst, "C4", region, types, where)


def _check_results(inst: Instruction, rule: str, types: tuple[Type, ...], what: str) -> None:
    for t in types:
        if not isinstance(t, ScalarType):
            raise fail(inst, rule, f"result types must be scalar types, got {t}")
    got = tuple(r.type for r in inst.results)
    if got != types:
        raise fail(inst, rule, f"results {_types_text(got)} differ from the {what} types "
                   f"{_types_text(types)}")


def _check_bounds(inst: Instruction, names: tuple[str, ...]) -> ScalarType:
    loop_type = inst.attr_of("loop_type", ScalarType)
    if not isinstance(loop_type, ScalarType) or not loop_type.is_int:
        raise fail(inst, "C1", f"the loop type must be an integer type, got {loop_type}")
    for name in names:
        value = inst.operand(name)
        if value is not None:
            expect_type(inst, "C2", value, loop_type, f"'{name}'")
    return loop_type


def _check_body_args(inst: Instruction, expected: tuple[Type, ...]) -> None:
    args = inst.regions[0].args
    got = tuple(a.type for a in args)
    if got != expected:
        raise fail(inst, "C3", f"the body's arguments are {_types_text(got)}, expected "
                   f"{_types_text(expected)} (loop variable first)", *args)


def check_for(inst: Instruction) -> None:
    """for: C1 integer loop type, C2 bounds and step, C3 body args, C4 carried values, C5 yield."""
    loop_type = _check_bounds(inst, ("from", "to", "step"))
    init: list[Value] = inst.variadic("init")
    types = tuple(v.type for v in init)
    for value in init:
        if not isinstance(value.type, ScalarType):
            raise fail(inst, "C4", f"loop-carried value {value_name(value)} must be a scalar",
                       value)
    _check_results(inst, "C4", types, "loop-carried")
    _check_body_args(inst, (loop_type, *types))
    _check_yield_ends(inst, "C5", inst.regions[0], types, "body")


def check_foreach(inst: Instruction) -> None:
    """foreach: C1 integer loop type, C2 bounds, C3 one body argument of the loop type."""
    loop_type = _check_bounds(inst, ("from", "to"))
    _check_body_args(inst, (loop_type,))


def check_parallel(inst: Instruction) -> None:
    """parallel: C1 the body takes no arguments."""
    if inst.regions[0].args:
        raise fail(inst, "C1", "the parallel region takes no arguments")


CHECKS = {"if": check_if, "for": check_for, "foreach": check_foreach,
          "parallel": check_parallel, "yield": check_yield}
"""The control family's check per instruction name."""
