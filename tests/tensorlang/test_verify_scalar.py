"""Verifier rules of arith, cmp, cast and constant (docs/language-constraints.md)."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS, ArithOp, CmpCond
from tensorlang.ir.types import C32, F32, I1, I32, Type
from tests.tensorlang.verify_helpers import error_of, opcode_col, wrap

HEAD = "func @k(%i: i32, %j: i64, %x: f32, %z: c32, %b: i1, %n: index) {"


def prog(*body: str) -> str:
    """``body`` inside this file's kernel header."""
    return wrap(HEAD, *body)


BAD = [
    ("%r = arith.rem %z, %z : c32",
     "arith (C3): .rem is not defined on c32 (allowed: scalar types except complex)"),
    ("%r = arith.shl %b, %b : i1", "arith (C3): .shl is not defined on i1 (allowed: integer "
     "types except i1)"),
    ("%r = arith.shr %b, %b : i1", "arith (C3): .shr is not defined on i1"),
    ("%r = arith.shl %x, %x : f32", "arith (C3): .shl is not defined on f32"),
    ("%r = arith.and %x, %x : f32", "arith (C3): .and is not defined on f32 (allowed: integer "
     "types)"),
    ("%r = arith.or %z, %z : c32", "arith (C3): .or is not defined on c32"),
    ("%r = arith.xor %x, %x : f32", "arith (C3): .xor is not defined on f32"),
    ("%r = arith.not %x : f32", "arith (C3): .not is not defined on f32"),
    ("%r = cmp.gt %z, %z : c32", "cmp (C2): .gt is not defined on complex type c32"),
    ("%r = cmp.ge %z, %z : c32", "cmp (C2): .ge is not defined on complex type c32"),
    ("%r = cmp.lt %z, %z : c32", "cmp (C2): .lt is not defined on complex type c32"),
    ("%r = cmp.le %z, %z : c32", "cmp (C2): .le is not defined on complex type c32"),
    ("%r = constant 1.0 : i32", "constant (C1): 1.0 is not a constant of type i32 (an integer "
     "type takes an integer constant)"),
    ("%r = constant 1 : f32", "constant (C1): 1 is not a constant of type f32 (a floating "
     "type takes a floating constant such as 1.0)"),
    ("%r = constant 1.0 : c32", "constant (C1): 1.0 is not a constant of type c32 (a complex "
     "type takes a complex constant [re, im])"),
    ("%r = constant [1.0, 2.0] : f64", "constant (C1): [1.0, 2.0] is not a constant of type f64"),
    ("%r = constant true : i32", "constant (C1): true is not a constant of type i32 (true and "
     "false are constants of type i1 only)"),
    ("%r = constant 1.5 : i1", "constant (C1): 1.5 is not a constant of type i1 (i1 takes "
     "true, false, 0 or 1)"),
    ("%r = constant 2 : i1", "constant (C2): 2 is out of range for i1 (0..1)"),
    ("%r = constant 256 : i8", "constant (C2): 256 is out of range for i8 (-128..255)"),
    ("%r = constant -129 : i8", "constant (C2): -129 is out of range for i8"),
    ("%r = constant 65536 : i16", "constant (C2): 65536 is out of range for i16"),
    ("%r = constant 4294967296 : i32", "constant (C2): 4294967296 is out of range for i32"),
    ("%r = constant 1.0e39 : f32", "constant (C3): 1e+39 is out of range for f32"),
    ("%r = constant -1.0e39 : f32", "constant (C3): -1e+39 is out of range for f32"),
    ("%r = constant [0.0, 1.0e39] : c32", "constant (C3): 1e+39 is out of range for c32"),
]


@pytest.mark.parametrize(("line", "message"), BAD)
def test_scalar_rule_violations(line: str, message: str) -> None:
    err = error_of(prog(line))
    assert (err.first.loc.line, err.first.loc.col) == (2, opcode_col(line))
    assert err.first.message.startswith(message), err.first.message


GOOD = [
    "%r = arith.add %z, %z : c32", "%r = arith.div %x, %x : f32", "%r = arith.rem %x, %x : f32",
    "%r = arith.rem %i, %i : i32", "%r = arith.shl %i, %i : i32", "%r = arith.shr %n, %n : index",
    "%r = arith.and %b, %b : i1", "%r = arith.xor %j, %j : i64", "%r = arith.not %b : i1",
    "%r = arith.neg %z : c32", "%r = cmp.eq %z, %z : c32", "%r = cmp.ne %z, %z : c32",
    "%r = cmp.lt %x, %x : f32", "%r = cmp.ge %b, %b : i1", "%r = cast %i : i32 -> f32",
    "%r = cast %x : f32 -> c32", "%r = cast %z : c32 -> c64", "%r = cast %b : i1 -> index",
    "%r = cast %x : f32 -> i1", "%r = constant true : i1", "%r = constant 0 : i1",
    "%r = constant 255 : i8", "%r = constant -128 : i8", "%r = constant 1.0e39 : f64",
    "%r = constant 9223372036854775807 : i64", "%r = constant -9223372036854775807 : index",
    "%r = constant [1.0, -2.0] : c64", "%r = constant 3.4028234e38 : f32",
    "%r = constant 0x1.8p1 : f32",
]


@pytest.mark.parametrize("line", GOOD)
def test_scalar_accepted(line: str) -> None:
    tensorlang.parse(prog(line), "k.tl")


def _code(name: str, operands: dict, attrs: dict, result: Type) -> CompileError:
    """Verify a one-instruction function built in code; return its error."""
    loc = Loc("k.tl", 2, 3)
    inst = Instruction(OPS[name], operands, attrs, [Value(result, "r", loc)], [], loc)
    func = Function("k", list(_ARGS.values()), Region([inst]))
    with pytest.raises(CompileError) as info:
        tensorlang.verify_program(Program([func]))
    return info.value


_ARGS = {"i": Value(I32, "i", Loc("k.tl", 1, 9)), "x": Value(F32, "x", Loc("k.tl", 1, 18)),
         "z": Value(C32, "z", Loc("k.tl", 1, 27))}
VI, VX, VZ = _ARGS["i"], _ARGS["x"], _ARGS["z"]


@pytest.mark.parametrize(("name", "operands", "attrs", "result", "message"), [
    ("arith", {"a": VI, "b": VI}, {"op": ArithOp.NEG, "type": I32}, I32,
     "arith (C1): .neg takes one operand"),
    ("arith", {"a": VI, "b": None}, {"op": ArithOp.ADD, "type": I32}, I32,
     "arith (C1): .add takes two operands"),
    ("arith", {"a": VI, "b": VX}, {"op": ArithOp.ADD, "type": I32}, I32,
     "arith (C2): operand %x has type f32, expected i32"),
    ("arith", {"a": VI, "b": VI}, {"op": ArithOp.ADD, "type": I32}, F32,
     "arith (C4): the result has type f32, expected i32"),
    ("cmp", {"a": VX, "b": VZ}, {"cond": CmpCond.EQ,
                               "type": F32}, I1, "cmp (C1): operand %z has type c32"),
    ("cmp", {"a": VX, "b": VX}, {"cond": CmpCond.EQ, "type": F32}, F32,
     "cmp (C3): the result has type f32, expected i1"),
    ("cast", {"a": VX}, {"from_type": I32, "to_type": F32}, F32,
     "cast (C1): operand %x has type f32, expected i32"),
    ("cast", {"a": VX}, {"from_type": F32, "to_type": I32}, F32,
     "cast (C3): the result has type f32, expected i32"),
    ("constant", {}, {"value": 1.0, "type": F32}, I32,
     "constant (C4): the result has type i32, expected f32"),
    ("constant", {}, {"value": "1", "type": F32}, F32, "constant (C1): '1' is not a constant"),
    ("group_id", {}, {}, I32, "group_id (C1): the result has type i32, expected index"),
    ("subgroup_size", {}, {}, F32, "subgroup_size (C1): the result has type f32, expected i32"),
])
def test_scalar_rules_on_ir_built_in_code(name: str, operands: dict, attrs: dict,
                                          result: Type, message: str) -> None:
    err = _code(name, operands, attrs, result)
    assert (err.first.loc.line, err.first.loc.col) == (2, 3)
    assert err.first.message.startswith(message), err.first.message


def test_constant_infinity_built_in_code_is_accepted() -> None:
    loc = Loc("k.tl", 2, 3)
    inst = Instruction(OPS["constant"], {}, {"value": float("-inf"), "type": F32},
                       [Value(F32, "r", loc)], [], loc)
    tensorlang.verify_program(Program([Function("k", [], Region([inst]))]))
