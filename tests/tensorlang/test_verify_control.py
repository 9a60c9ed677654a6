"""Verifier rules of region kinds (R1-R3) and control flow: if, for, foreach, yield."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS
from tensorlang.ir.types import F32, I1, I32, INDEX, MemRefType, Type
from tests.tensorlang.verify_helpers import error_of, wrap

HEAD = ("func @k(%i: i32, %x: f32, %b: i1, %n: index, %A: memref<f32x8x8>, "
        "%v: memref<f32x8>) {")
GEMM = "gemm.n.n %x, %A, %A, %x, %A : f32, memref<f32x8x8>, memref<f32x8x8>, f32, memref<f32x8x8>"


def prog(*body: str) -> str:
    """``body`` inside this file's kernel header."""
    return wrap(HEAD, *body)


BAD = [
    # R1: collective instructions only in collective regions (note at the region opener).
    (("parallel {", "  " + GEMM, "}"), (3, 5), "gemm (R1): a collective instruction must not "
     "appear in an SPMD region"),
    (("foreach %k = %n, %n {", "  %t = alloca -> memref<f32x4,local>", "}"), (3, 10),
     "alloca (R1)"),
    (("parallel {", "  if %b {", "    parallel {", "    }", "  }", "}"), (4, 7), "parallel (R1)"),
    (("foreach %k = %n, %n {", "  for %l = %n, %n {", "    foreach %m = %n, %n {", "    }",
      "  }", "}"), (4, 7), "foreach (R1)"),
    (("parallel {", "  sum.n %x, %A, %x, %v : f32, memref<f32x8x8>, f32, memref<f32x8>", "}"),
     (3, 5), "sum (R1)"),
    # R2: SPMD instructions only in SPMD regions.
    (("%s = subgroup_id",), (2, 8), "subgroup_id (R2): an SPMD instruction must appear in an "
     "SPMD region"),
    (("if %b {", "  %s = subgroup_local_id", "}"), (3, 10), "subgroup_local_id (R2)"),
    # R3: yield only ends an if or for region.
    (("yield :",), (2, 3), "yield (R3): yield may only end the region of an if or for"),
    (("parallel {", "  yield :", "}"), (3, 5), "yield (R3): yield may only end the region"),
    (("if %b {", "  yield :", "  %c = constant 1 : i32", "}"), (3, 5),
     "yield (R3): yield must be the last instruction of its region"),
    # if
    (("if %i {", "}"), (2, 3), "if (C1): the condition %i has type i32, expected i1"),
    (("%r = if %b -> (i32) {", "  yield %i : i32", "}"), (2, 8),
     "if (C3): an if that returns values needs an else region"),
    (("%r = if %b -> (i32) {", "} else {", "  yield %i : i32", "}"), (2, 8),
     "if (C4): the then region must end with a yield of (i32)"),
    (("%r = if %b -> (i32) {", "  yield %i : i32", "} else {", "}"), (2, 8),
     "if (C4): the else region must end with a yield of (i32)"),
    (("%r = if %b -> (i32) {", "  yield %x : f32", "} else {", "  yield %i : i32", "}"), (3, 5),
     "if (C4): the then region yields (f32) but must yield (i32)"),
    (("%r, %s = if %b -> (i32, f32) {", "  yield %i, %x : i32, f32", "} else {",
      "  yield %i : i32", "}"), (5, 5), "if (C4): the else region yields (i32) but must yield "
     "(i32, f32)"),
    (("if %b {", "  yield %i : i32", "}"), (3, 5),
     "if (C4): the then region yields (i32) but must yield ()"),
    # for
    (("%r = for %k = %n, %n init(%acc = %x) -> (f32) {", "}"), (2, 8),
     "for (C5): the body region must end with a yield of (f32)"),
    (("%r = for %k = %n, %n init(%acc = %x) -> (f32) {", "  yield %i : i32", "}"), (3, 5),
     "for (C5): the body region yields (i32) but must yield (f32)"),
    (("for %k = %n, %n {", "  yield %i : i32", "}"), (3, 5),
     "for (C5): the body region yields (i32) but must yield ()"),
]


@pytest.mark.parametrize(("body", "where", "message"), BAD)
def test_control_rule_violations(body: tuple[str, ...], where: tuple[int, int],
                                 message: str) -> None:
    err = error_of(prog(*body))
    assert (err.first.loc.line, err.first.loc.col) == where
    assert err.first.message.startswith(message), err.first.message


# Loop types and bounds that the parser checks while it reads them (at the operand or
# type); the verifier's own checks (C1, C2) are exercised on IR built in code below.
PARSE_TIME = [
    (("for %k = %x, %x : f32 {", "}"), (2, 21), "expected an integer type, found f32"),
    (("for %k = %i, %n {", "}"), (2, 12), "'%i' has type i32, but the loop type is index"),
    (("for %k = %n, %i {", "}"), (2, 16), "'%i' has type i32, but the loop type is index"),
    (("for %k = %n, %n, %i {", "}"), (2, 20), "'%i' has type i32, but the loop type is index"),
    (("for %k = %i, %i, %n : i32 {", "}"), (2, 25), "'%n' has type index, but i32"),
    (("foreach %k = %x, %x : f32 {", "}"), (2, 25), "expected an integer type, found f32"),
    (("foreach %k = %i, %n {", "}"), (2, 16), "'%i' has type i32, but the loop type is index"),
    (("foreach %k = %i, %n : i32 {", "}"), (2, 25), "'%n' has type index, but i32"),
]


@pytest.mark.parametrize(("body", "where", "words"), PARSE_TIME)
def test_loop_errors_found_while_parsing(body: tuple[str, ...], where: tuple[int, int],
                                         words: str) -> None:
    err = error_of(prog(*body))
    assert (err.first.loc.line, err.first.loc.col) == where
    assert words in err.first.message, err.first.message


def _loop(name: str, loop_type: Type, bounds: tuple[Value, ...],
          body_args: tuple[Type, ...] = ()) -> Instruction:
    names = ("from", "to", "step")[:len(bounds)]
    operands: dict = dict(zip(names, bounds, strict=True))
    if name == "for":
        operands = {"from": bounds[0], "to": bounds[1], "step": None, "init": [], **operands}
    args = [Value(t, f"a{i}", LOC) for i, t in enumerate(body_args or (loop_type,))]
    return Instruction(OPS[name], operands, {"loop_type": loop_type}, [],
                       [Region([], args)], LOC)


LOC = Loc("k.tl", 2, 3)
VI, VX, VN = (Value(t, n, Loc("k.tl", 1, 9)) for t, n in ((I32, "i"), (F32, "x"), (INDEX, "n")))


def test_loop_rules_on_ir_built_in_code_extra() -> None:
    """for C4: carried values are scalars and the results have their types."""
    memref = Value(MemRefType.of(F32, (4,)), "m", Loc("k.tl", 1, 30))
    inst = _loop("for", INDEX, (VN, VN), (INDEX, memref.type))
    inst.operands["init"] = [memref]
    inst.results = [Value(memref.type, "r", LOC)]
    _expect(inst, "for (C4): loop-carried value %m must be a scalar", memref)
    inst = _loop("for", INDEX, (VN, VN), (INDEX, F32))
    inst.operands["init"] = [VX]
    inst.results = [Value(I32, "r", LOC)]
    _expect(inst, "for (C4): results (i32) differ from the loop-carried types (f32)")


def _expect(inst: Instruction, message: str, *args: Value) -> None:
    func = Function("k", [VI, VX, VN, *args], Region([inst]))
    with pytest.raises(CompileError) as info:
        tensorlang.verify_program(Program([func]))
    assert (info.value.first.loc.line, info.value.first.loc.col) == (2, 3)
    assert info.value.first.message.startswith(message), info.value.first.message


def _if(result_types: tuple[Type, ...], results: tuple[Type, ...],
        *regions: Region) -> Instruction:
    cond = Value(I1, "b", Loc("k.tl", 1, 40))
    return Instruction(OPS["if"], {"cond": cond}, {"result_types": result_types},
                       [Value(t, "r", LOC) for t in results], list(regions), LOC)


def _yield(*values: Value) -> Instruction:
    return Instruction(OPS["yield"], {"values": list(values)},
                       {"types": tuple(v.type for v in values)}, [], [], Loc("k.tl", 3, 5))


@pytest.mark.parametrize(("inst", "message"), [
    (_if((I32,), (F32,), Region([_yield(VI)]), Region([_yield(VI)])),
     "if (C2): results (f32) differ from the declared types (i32)"),
    (_if((MemRefType.of(F32, (4,)),), (), Region([]), Region([])),
     "if (C2): result types must be scalar types, got memref<f32x4>"),
    (_if((), (), Region([], [VN])), "if (C4): the then region takes no arguments"),
    (Instruction(OPS["parallel"], {}, {}, [], [Region([], [VN])], LOC),
     "parallel (C1): the parallel region takes no arguments"),
])
def test_region_rules_on_ir_built_in_code(inst: Instruction, message: str) -> None:
    cond = inst.operands.get("cond")
    _expect(inst, message, *([cond] if cond is not None else []))


@pytest.mark.parametrize(("values", "types", "message"), [
    ((VI,), (I32, I32), "yield (C1): 1 values but 2 types"),
    ((VX,), (I32,), "yield (C2): value %x has type f32, expected i32"),
])
def test_yield_rules_on_ir_built_in_code(values: tuple[Value, ...], types: tuple[Type, ...],
                                         message: str) -> None:
    bad = Instruction(OPS["yield"], {"values": list(values)}, {"types": types}, [], [],
                      Loc("k.tl", 3, 5))
    cond = Value(I1, "b", Loc("k.tl", 1, 40))
    value_types = tuple(v.type for v in values)
    inst = Instruction(OPS["if"], {"cond": cond}, {"result_types": value_types},
                       [Value(t, "r", LOC) for t in value_types],
                       [Region([bad]), Region([_yield(*values)])], LOC)
    func = Function("k", [VI, VX, VN, cond], Region([inst]))
    with pytest.raises(CompileError) as info:
        tensorlang.verify_program(Program([func]))
    assert (info.value.first.loc.line, info.value.first.loc.col) == (3, 5)
    assert info.value.first.message.startswith(message), info.value.first.message


@pytest.mark.parametrize(("inst", "message"), [
    (_loop("for", F32, (VX, VX)), "for (C1): the loop type must be an integer type, got f32"),
    (_loop("for", INDEX, (VI, VN)), "for (C2): 'from' %i has type i32, expected index"),
    (_loop("for", INDEX, (VN, VI)), "for (C2): 'to' %i has type i32, expected index"),
    (_loop("for", INDEX, (VN, VN, VI)), "for (C2): 'step' %i has type i32, expected index"),
    (_loop("for", INDEX, (VN, VN), (I32,)), "for (C3): the body's arguments are (i32), "
     "expected (index)"),
    (_loop("foreach", I32, (VI, VI), (I32, I32)), "foreach (C3): the body's arguments are "
     "(i32, i32), expected (i32)"),
    (_loop("foreach", F32, (VX, VX)), "foreach (C1): the loop type must be an integer type"),
    (_loop("foreach", I32, (VI, VN)), "foreach (C2): 'to' %n has type index, expected i32"),
])
def test_loop_rules_on_ir_built_in_code(inst: Instruction, message: str) -> None:
    func = Function("k", [VI, VX, VN], Region([inst]))
    with pytest.raises(CompileError) as info:
        tensorlang.verify_program(Program([func]))
    assert (info.value.first.loc.line, info.value.first.loc.col) == (2, 3)
    assert info.value.first.message.startswith(message), info.value.first.message


def test_collective_in_spmd_notes_the_region_opener() -> None:
    err = error_of(prog("parallel {", "  " + GEMM, "}"))
    assert [(n.loc.line, n.loc.col, n.message) for n in err.first.notes] == [
        (2, 3, "SPMD region opened by parallel here")]


def test_wrong_condition_notes_its_definition() -> None:
    err = error_of(prog("if %i {", "}"))
    assert [(n.loc.line, n.message) for n in err.first.notes] == [(1, "value defined here")]


GOOD = [
    ("if %b {", "  " + GEMM, "}"),
    ("for %k = %n, %n {", "  " + GEMM, "}"),
    ("parallel {", "  %s = subgroup_id", "  %t = subgroup_local_id", "}"),
    ("foreach %k = %n, %n {", "  if %b {", "    %s = subgroup_id", "  }", "}"),
    ("parallel {", "  barrier.local", "  for %k = %i, %i : i32 {", "    barrier", "  }", "}"),
    ("barrier.global.local",),
    ("foreach %k = %i, %i : i32 {", "  %c = cast %k : i32 -> index", "}"),
    ("if %b {", "  yield :", "}"),
    ("if %b {", "} else {", "}"),
    ("%r, %s = if %b -> (i32, f32) {", "  yield %i, %x : i32, f32", "} else {",
     "  %c = constant 2.0 : f32", "  yield %i, %c : i32, f32", "}"),
    ("%r = for %k = %n, %n, %n init(%acc = %x) -> (f32) {",
     "  %y = arith.add %acc, %acc : f32", "  yield %y : f32", "}",
     "%z = arith.mul %r, %r : f32"),
    ("%r, %s = for %k = %i, %i : i32 init(%a = %x, %c = %n) -> (f32, index) {",
     "  yield %a, %c : f32, index", "}"),
    ("parallel {", "  %t = subgroup_id", "  %r = if %b -> (i32) {", "    yield %t : i32",
     "  } else {", "    yield %i : i32", "  }", "}"),
]


@pytest.mark.parametrize("body", GOOD)
def test_control_accepted(body: tuple[str, ...]) -> None:
    tensorlang.parse(prog(*body), "k.tl")
