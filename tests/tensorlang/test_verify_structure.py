"""Verifier rules that matter for IR built or rewritten in code: SSA scoping (S1, S2),
the op-table structure (I1-I5), types (T1-T6) and function attributes (F1-F5)."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS, ArithOp
from tensorlang.ir.types import F32, I1, INDEX, VOID, AddressSpace, GroupType, MemRefType, Type
from tensorlang.verify import check_type, verify_program


def loc(line: int, col: int = 3) -> Loc:
    return Loc("k.tl", line, col)


def make(name: str, line: int, operands: dict | None = None, attrs: dict | None = None,
         results: tuple[Type, ...] = (), regions: tuple[Region, ...] = ()) -> Instruction:
    """An instruction at ``k.tl:line:3`` whose results are named r<line>."""
    values = [Value(t, f"r{line}", loc(line)) for t in results]
    return Instruction(OPS[name], dict(operands or {}), dict(attrs or {}), values,
                       list(regions), loc(line))


def const(line: int, value: object = 1.0, t: Type = F32) -> Instruction:
    return make("constant", line, attrs={"value": value, "type": t}, results=(t,))


def program(*insts: Instruction, args: tuple[Value, ...] = ()) -> Program:
    return Program([Function("k", list(args), Region(list(insts)), loc=loc(1, 1))])


def rejects(prog: Program) -> CompileError:
    with pytest.raises(CompileError) as info:
        verify_program(prog)
    return info.value


def _add(line: int, a: Value, b: Value) -> Instruction:
    return make("arith", line, {"a": a, "b": b}, {"op": ArithOp.ADD, "type": F32}, (F32,))


def test_valid_program_passes() -> None:
    one = const(2)
    verify_program(program(one, _add(3, one.result, one.result)))


def test_use_before_definition() -> None:
    one = const(3)
    use = _add(2, one.result, one.result)
    err = rejects(program(use, one))
    assert (err.first.loc.line, err.first.loc.col) == (2, 3)
    assert err.first.message.startswith("arith (S1): use of %r3 is not dominated")
    assert err.first.notes[0].loc.line == 3
    assert err.first.notes[0].message == "value defined here"


def test_use_of_value_from_non_enclosing_region() -> None:
    inner = const(3)
    par = make("parallel", 2, regions=(Region([inner]),))
    use = _add(5, inner.result, inner.result)
    err = rejects(program(par, use))
    assert err.first.loc.line == 5 and "(S1)" in err.first.message


def test_value_visible_in_nested_region() -> None:
    one = const(2)
    par = make("parallel", 3, regions=(Region([_add(4, one.result, one.result)]),))
    verify_program(program(one, par))


def test_value_defined_twice() -> None:
    one = const(2)
    again = const(3)
    again.results = [one.result]
    err = rejects(program(one, again))
    assert err.first.loc.line == 3 and "SSA (S2)" in err.first.message


def test_missing_operand_slot() -> None:
    err = rejects(program(make("arith", 2, {"a": None, "b": None},
                               {"op": None, "type": F32}, (F32,))))
    assert err.first.message.startswith("arith (I1): operand 'a'")


def test_unknown_operand_slot() -> None:
    one = const(2)
    bad = make("group_id", 3, {"x": one.result}, results=(INDEX,))
    err = rejects(program(one, bad))
    assert err.first.message == "group_id (I1): unknown operand slot 'x'"


def test_missing_attribute() -> None:
    err = rejects(program(make("constant", 2, attrs={"value": 1.0}, results=(F32,))))
    assert err.first.message == "constant (I2): missing attribute 'type'"


def test_missing_region() -> None:
    err = rejects(program(make("parallel", 2)))
    assert err.first.message.startswith("parallel (I3)")


def test_wrong_result_count() -> None:
    err = rejects(program(make("group_id", 2)))
    assert err.first.message == "group_id (I4): has 0 results, expected 1"


def test_void_result() -> None:
    err = rejects(program(make("group_id", 2, results=(VOID,))))
    assert err.first.message.startswith("group_id (I5)")


def test_barrier_anywhere() -> None:
    barrier = {"fence_global": True, "fence_local": False}
    par = make("parallel", 3, regions=(Region([make("barrier", 4, attrs=barrier)]),))
    verify_program(program(make("barrier", 2, attrs=barrier), par))


def test_lifetime_stop_of_argument_rejected() -> None:
    arg = Value(MemRefType.of(F32, (4,)), "m", loc(1, 10))
    err = rejects(program(make("lifetime_stop", 2, {"operand": arg}), args=(arg,)))
    assert err.first.message == "lifetime_stop (C1): %m must be the result of an alloca"
    assert err.first.notes[0].loc == loc(1, 10)


M = MemRefType.of


@pytest.mark.parametrize(("t", "rule", "text"), [
    (MemRefType(F32, (4, 8), (1,)), "T1", "1 strides but the memref has order 2"),
    (M(F32, (-1,)), "T2", "mode 0 has negative size -1"),
    (M(F32, (4,), (0,)), "T3", "stride S1 = 0 must be at least 1"),
    (M(F32, (4, 8), (None, -2)), "T3", "stride S2 = -2 must be at least 0"),
    (M(F32, (4, 8), (1, 3)), "T4", "S2 = 3 is smaller than S1 * s1 = 1 * 4 = 4"),
    (M(F32, (4, 8, 2), (2, 8, 15)), "T4", "S3 = 15 is smaller than S2 * s2 = 8 * 8 = 64"),
    (GroupType(M(F32, (4,)), -2), "T5", "the offset -2 must be non-negative"),
    (GroupType(M(F32, (4,), None, AddressSpace.LOCAL)), "T6", "global address space"),
    (GroupType(M(F32, (4, 8), (1, 2))), "T4", "S2 = 2 is smaller"),
])
def test_bad_types(t: Type, rule: str, text: str) -> None:
    with pytest.raises(CompileError) as info:
        check_type(t, loc(4, 7))
    assert (info.value.first.loc.line, info.value.first.loc.col) == (4, 7)
    assert f"({rule}):" in info.value.first.message and text in info.value.first.message


@pytest.mark.parametrize("t", [
    M(F32, ()), M(F32, (4, 8), (1, 4)), M(F32, (4, 8), (2, 100)), M(F32, (None, 8), (1, None)),
    M(F32, (4, None, 3), (1, 4, None)), M(F32, (4, 8), (None, 2)), M(F32, (0, 8)),
    GroupType(M(F32, (4,)), None), GroupType(M(F32, (4,)), 7), INDEX, I1,
])
def test_good_types(t: Type) -> None:
    check_type(t, loc(1))


def _func(size: tuple[int, ...] | None, sub: int | None, name: str = "k") -> Function:
    return Function(name, [], Region([]), work_group_size=size,  # type: ignore[arg-type]
                    subgroup_size=sub, loc=loc(1, 1))


@pytest.mark.parametrize(("size", "sub", "rule"), [
    ((0, 4), None, "F1"), ((16,), None, "F1"), ((16, 1, 1), 16, "F1"), ((16, -1), None, "F1"),
    ((16, 1), 12, "F2"), ((16, 1), 4, "F2"), ((24, 1), 16, "F3"), ((8, 4), 16, "F3"),
])
def test_bad_function_attributes(size: tuple[int, ...], sub: int | None, rule: str) -> None:
    err = rejects(Program([_func(size, sub)]))
    assert err.first.message.startswith(f"function ({rule}): @k:")
    assert (err.first.loc.line, err.first.loc.col) == (1, 1)


@pytest.mark.parametrize(("size", "sub"), [((16, 1), 16), ((64, 4), 32), ((3, 5), None),
                                           (None, 8), ((128, 1), 64)])
def test_good_function_attributes(size: tuple[int, int] | None, sub: int | None) -> None:
    verify_program(Program([_func(size, sub)]))


def test_duplicate_function() -> None:
    err = rejects(Program([_func(None, None), _func(None, None)]))
    assert err.first.message == "function (F5): @k is defined more than once"


def test_void_argument() -> None:
    arg = Value(VOID, "v", loc(1, 9))
    err = rejects(program(args=(arg,)))
    assert err.first.message.startswith("function (F4)") and err.first.loc == loc(1, 9)


def test_bad_argument_type() -> None:
    arg = Value(M(F32, (4, 8), (1, 2)), "m", loc(1, 9))
    err = rejects(program(args=(arg,)))
    assert "(T4)" in err.first.message and err.first.loc == loc(1, 9)


@pytest.mark.parametrize(("attrs", "message"), [
    ("work_group_size(24,1) subgroup_size(16)", "function (F3): @k: the first work_group_size "
     "mode 24 must be a multiple of the subgroup size 16"),
    ("work_group_size(0,1)", "function (F1): @k: work_group_size must have two positive "
     "modes, got (0, 1)"),
    ("subgroup_size(12)", "function (F2): @k: subgroup_size must be one of 8, 16, 32, 64, "
     "got 12"),
])
def test_function_attributes_in_text(attrs: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        tensorlang.parse(f"func @k() {attrs} {{\n}}\n", "k.tl")
    assert (info.value.first.loc.line, info.value.first.loc.col) == (1, 6)
    assert info.value.first.message == message


def test_yield_built_without_values_is_reported_not_crashed() -> None:
    cond = Value(I1, "b", loc(1, 9))
    bad_yield = make("yield", 3, {}, {"types": ()})
    inst = make("if", 2, {"cond": cond}, {"result_types": ()}, regions=(Region([bad_yield]),))
    err = rejects(program(inst, args=(cond,)))
    assert err.first.message.startswith("yield (I1): operand 'values'")


def test_local_memref_argument() -> None:
    with pytest.raises(CompileError) as info:
        tensorlang.parse("func @k(%m: memref<f32x4,local>) {\n}\n", "k.tl")
    assert (info.value.first.loc.line, info.value.first.loc.col) == (1, 9)
    assert info.value.first.message == ("function (F6): argument %m cannot be a local memref "
                                        "(local memory is allocated with alloca)")
