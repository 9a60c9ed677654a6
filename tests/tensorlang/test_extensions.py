"""Extensions of the language: parse/print round trips, parse-time diagnostics and the
verifier rules of math, select, bitcast, complex, the multi-dimensional foreach and the
new scalar types (docs/language-constraints.md, "Extensions")."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.compare import programs_equal
from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import MATH_FNS, OPS
from tensorlang.ir.types import C32, F16, F32, I1, I32, INDEX, U16
from tensorlang.verify.rules import CHECKS
from tests.tensorlang.verify_helpers import error_of, wrap

HEAD = ("func @k(%i: i32, %u: u32, %l: u64, %h: f16, %g: bf16, %x: f32, %d: f64, %z: c32, "
        "%b: i1, %n: index) {")


def prog(*body: str) -> str:
    """``body`` inside this file's kernel header."""
    return wrap(HEAD, *body)


def _roundtrip(text: str) -> None:
    program = tensorlang.parse(text, "k.tl")
    printed = str(program)
    again = tensorlang.parse(printed, "k.tl")
    assert programs_equal(program, again)
    assert str(again) == printed


def _type_for(fn: str) -> str:
    kinds = MATH_FNS[fn].kinds
    return "f32" if "float" in kinds else ("i32" if "int" in kinds else "c32")


@pytest.mark.parametrize("fn", sorted(MATH_FNS))
def test_every_math_function_round_trips(fn: str) -> None:
    t = _type_for(fn)
    value = {"f32": "%x", "i32": "%i", "c32": "%z"}[t]
    args = f"{value}, {value}" if MATH_FNS[fn].arity == 2 else value
    _roundtrip(prog(f"%r = math.{fn} {args} : {t}"))


@pytest.mark.parametrize("t", ["u8", "u16", "u32", "u64", "f16", "bf16"])
def test_new_types_round_trip(t: str) -> None:
    literal = "1.5" if t.endswith("16") and "f" in t else "7"
    _roundtrip(prog(f"%c = constant {literal} : {t}", f"%r = arith.add %c, %c : {t}",
                    f"%p = cmp.lt %r, %c : {t}", f"%q = cast %r : {t} -> f64"))
    _roundtrip(f"func @m(%a: memref<{t}x4x?,strided<1,8>>, %s: {t}) {{\n}}\n")


def test_extension_instructions_round_trip() -> None:
    _roundtrip(prog(
        "%s = select %b, %h, %h : f16",
        "%t = bitcast %x : f32 -> u32",
        "%v = bitcast %g : bf16 -> f16",
        "%w = complex %x, 2.0 : c32",
        "%a = math.abs %z : c32",
        "%f = math.isfinite %d : f64",
        "%m = math.max %l, 3 : u64",
        "%zero = constant 0 : index",
        "foreach (%p, %q, %r) = (%zero, 1, %zero), (%n, %n, 4) {",
        "  %y = math.sin %x : f32",
        "}",
        "foreach (%p) = (0), (%i) : i32 {",
        "}",
    ))


def test_math_result_types() -> None:
    program = tensorlang.parse(prog("%a = math.abs %z : c32", "%r = math.real %z : c32",
                                    "%f = math.isfinite %h : f16", "%e = math.exp %z : c32",
                                    "%c = math.clz %u : u32"), "k.tl")
    types = [inst.result.type for inst in program.functions[0].walk() if inst.name == "math"]
    assert [str(t) for t in types] == ["f32", "f32", "i1", "c32", "u32"]


PARSE_ERRORS = [
    ("%r = math.frob %x : f32", "math needs one function out of"),
    ("%r = math.exp.log %x : f32", "math needs one function out of"),
    ("%r = math.exp %x, %x : f32", "math.exp takes 1 operand, 2 given"),
    ("%r = math.pow %x : f32", "math.pow takes 2 operands, 1 given"),
    ("%r = math.exp %x : f64", "type mismatch: '%x' has type f32, but f64 is written here"),
    ("%r = select %i, %x, %x : f32", "the condition '%i' of select has type i32, expected i1"),
    ("%r = select %b, %x, %d : f32", "type mismatch: '%d' has type f64"),
    ("%r = complex %x, %x : f32", "complex builds a complex type (c32 or c64), found f32"),
    ("%r = complex %d, %x : c32", "'%d' has type f64, but the parts of c32 have type f32"),
    ("foreach (%p, %q) = (0, 0), (%n) {\n  }", "foreach over 2 modes needs 2 upper bounds"),
    ("foreach (%p, %q) = (0), (%n, %n) {\n  }", "foreach over 2 modes needs 2 lower bounds"),
    ("foreach (%p) = (%i), (%n) {\n  }", "'%i' has type i32, but the loop type is index"),
    ("%r = constant 1.0 : u8", "1.0 is not a constant of type u8"),
]


@pytest.mark.parametrize(("line", "message"), PARSE_ERRORS)
def test_parse_errors(line: str, message: str) -> None:
    err = error_of(prog(line))
    assert err.first.loc.line == 2 and err.first.loc.file == "k.tl"
    assert message in err.first.message, err.first.message


VERIFY_ERRORS = [
    ("%r = math.popcount %x : f32",
     "math (C3): math.popcount is not defined on f32 (allowed: integer types except i1)"),
    ("%r = math.exp %i : i32", "math (C3): math.exp is not defined on i32"),
    ("%r = math.abs %b : i1", "math (C3): math.abs is not defined on i1"),
    ("%r = math.conj %x : f32", "math (C3): math.conj is not defined on f32"),
    ("%r = math.nextafter %i, %i : i32",
     "math (C3): math.nextafter is not defined on i32 (allowed: floating types)"),
    ("%r = math.hypot %z, %z : c32", "math (C3): math.hypot is not defined on c32 "
     "(allowed: floating types)"),
    ("%r = math.popcount %b : i1", "math (C3): math.popcount is not defined on i1"),
    ("%r = math.isfinite %i : i32", "math (C3): math.isfinite is not defined on i32"),
    ("%r = bitcast %x : f32 -> f64", "bitcast (C2): f32 has 32 bits but f64 has 64"),
    ("%r = bitcast %b : i1 -> i1", "bitcast (C2): i1 has no bit pattern to reinterpret"),
    ("%r = bitcast %h : f16 -> u32", "bitcast (C2): f16 has 16 bits but u32 has 32"),
    ("%r = constant 65520.0 : f16", "constant (C3): 65520.0 is out of range for f16"),
    ("%r = constant 256 : u8", "constant (C2): 256 is out of range for u8"),
]


@pytest.mark.parametrize(("line", "message"), VERIFY_ERRORS)
def test_verifier_rules(line: str, message: str) -> None:
    err = error_of(prog(line))
    assert (err.first.loc.line, err.first.loc.col) == (2, 8), str(err)
    assert message in err.first.message, err.first.message
    assert "k.tl:2:8: error:" in str(err) and "^" in str(err)


LOC = Loc("k.tl", 2, 3)


def _value(t, name: str) -> Value:
    return Value(t, name, Loc("k.tl", 1, 9))


def _inst(op: str, operands: dict, attrs: dict, results: list, regions=()) -> Instruction:
    inst = Instruction(OPS[op], operands, attrs, [Value(t, "r", LOC) for t in results],
                       list(regions), LOC)
    return inst


def _expect(inst: Instruction, message: str) -> None:
    with pytest.raises(CompileError) as info:
        CHECKS[inst.name](inst)
    assert message in info.value.first.message, info.value.first.message


def test_rules_on_ir_built_in_code() -> None:
    """Rules the parser cannot break but rewritten IR can (C1/C2/C4 of each family)."""
    x, z, b, i = _value(F32, "x"), _value(C32, "z"), _value(I1, "b"), _value(I32, "i")
    _expect(_inst("math", {"a": x, "b": None}, {"fn": "frob", "type": F32}, [F32]),
            "math (C1): unknown function 'frob'")
    _expect(_inst("math", {"a": x, "b": None}, {"fn": "pow", "type": F32}, [F32]),
            "math (C1): math.pow takes 2 operands, got 1")
    _expect(_inst("math", {"a": z, "b": None}, {"fn": "exp", "type": F32}, [F32]),
            "math (C2): operand %z has type c32, expected f32")
    _expect(_inst("math", {"a": z, "b": None}, {"fn": "abs", "type": C32}, [C32]),
            "math (C4): the result has type c32, expected f32")
    _expect(_inst("select", {"cond": i, "a": x, "b": x}, {"type": F32}, [F32]),
            "select (C1): the condition %i has type i32, expected i1")
    _expect(_inst("select", {"cond": b, "a": x, "b": i}, {"type": F32}, [F32]),
            "select (C2): operand %i has type i32, expected f32")
    _expect(_inst("select", {"cond": b, "a": x, "b": x}, {"type": F32}, [I32]),
            "select (C3): the result has type i32, expected f32")
    _expect(_inst("bitcast", {"a": i}, {"from_type": F32, "to_type": I32}, [I32]),
            "bitcast (C1): operand %i has type i32, expected f32")
    _expect(_inst("bitcast", {"a": x}, {"from_type": F32, "to_type": I32}, [F32]),
            "bitcast (C3): the result has type f32, expected i32")
    _expect(_inst("complex", {"re": x, "im": x}, {"type": F32}, [F32]),
            "complex (C1): the type must be complex")
    _expect(_inst("complex", {"re": x, "im": i}, {"type": C32}, [C32]),
            "complex (C2): part %i has type i32, expected f32")
    _expect(_inst("complex", {"re": x, "im": x}, {"type": C32}, [F32]),
            "complex (C3): the result has type f32, expected c32")


def test_foreach_nd_rules_on_ir_built_in_code() -> None:
    from tensorlang.ir.core import Region

    n, h = _value(INDEX, "n"), _value(F16, "h")

    def loop(lows, highs, args, t=INDEX) -> Instruction:
        region = Region([], [Value(a, f"a{k}", LOC) for k, a in enumerate(args)])
        return _inst("foreach_nd", {"from": lows, "to": highs}, {"loop_type": t}, [], [region])

    _expect(loop([h], [h], [F16], F16), "foreach_nd (C1): the loop type must be an integer "
            "type, got f16")
    _expect(loop([n, n], [n], [INDEX, INDEX]), "foreach_nd (C2): 2 lower and 1 upper bounds")
    _expect(loop([], [], []), "foreach_nd (C2): 0 lower and 0 upper bounds")
    _expect(loop([n], [h], [INDEX]), "foreach_nd (C2): bound %h has type f16, expected index")
    _expect(loop([n], [n], [INDEX, INDEX]), "foreach_nd (C3): the body takes one loop "
            "variable of type index per mode (1)")
    _expect(loop([n], [n], [U16]), "foreach_nd (C3)")


def test_unsigned_and_half_are_types_of_the_table() -> None:
    from tensorlang.ir.types import SCALAR_TYPES

    assert {"u8", "u16", "u32", "u64", "f16", "bf16"} <= set(SCALAR_TYPES)
    assert SCALAR_TYPES["u32"].is_unsigned and not SCALAR_TYPES["i32"].is_unsigned
    assert SCALAR_TYPES["bf16"].is_half and SCALAR_TYPES["bf16"].is_float
    assert SCALAR_TYPES["f16"].bits == 16
