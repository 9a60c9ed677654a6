"""The parser: every instruction and type, generous readings, locations, scoping, errors."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

import tensorlang
from tensorlang.diagnostics import UNKNOWN_LOC as UNKNOWN
from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Instruction, Program
from tensorlang.ir.ops import ArithOp, CmpCond, Slice, Transpose
from tensorlang.ir.types import (
    F32,
    I1,
    I32,
    INDEX,
    AddressSpace,
    GroupType,
    MemRefType,
)
from tensorlang.syntax.parser import parse_program

INPUTS = sorted((Path(__file__).parent / "inputs").glob("*.tl"))


def parse(text: str) -> Program:
    """Parse without verifying (the parser's own contract)."""
    return parse_program(text, "k.tl")


def body(args: str, *lines: str) -> list[Instruction]:
    """The instructions of ``func @k(args) { lines }``."""
    text = f"func @k({args}) {{\n" + "".join(f"  {line}\n" for line in lines) + "}\n"
    return parse(text).functions[0].body.instructions


def last(args: str, *lines: str) -> Instruction:
    """The last instruction of ``func @k(args) { lines }``."""
    return body(args, *lines)[-1]


def error_of(text: str) -> str:
    """The rendered diagnostic of parsing ``text`` (which must fail)."""
    with pytest.raises(CompileError) as info:
        parse(text)
    return str(info.value)


# -- the corpus and the reference's sample ---------------------------------------------


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_corpus_parses_and_verifies(path: Path) -> None:
    program = tensorlang.parse(path.read_text(), path.name)
    assert program.functions


def test_corpus_covers_every_instruction() -> None:
    from tensorlang.ir.ops import OPS

    seen = {inst.name for path in INPUTS
            for func in parse_program(path.read_text(), path.name).functions
            for inst in func.walk()}
    assert seen == set(OPS)


def test_corpus_covers_every_scalar_type_and_memory_kind() -> None:
    from tensorlang.ir.types import SCALAR_TYPES

    types = {v.type for path in INPUTS for func in parse(path.read_text()).functions
             for inst in func.walk() for v in [*inst.operand_values(), *inst.results]}
    types |= {a.type for path in INPUTS for func in parse(path.read_text()).functions
              for a in func.args}
    assert set(SCALAR_TYPES.values()) <= types
    memrefs = [t for t in types if isinstance(t, MemRefType)]
    assert any(t.order == 0 for t in memrefs) and any(not t.is_packed for t in memrefs)
    assert any(None in t.shape for t in memrefs) and any(None in t.strides for t in memrefs)
    assert any(t.addrspace is AddressSpace.LOCAL for t in memrefs)
    offsets = {t.offset for t in types if isinstance(t, GroupType)}
    assert {0, None} < offsets


def test_sample_fused_kernel() -> None:
    func = parse((Path(__file__).parent / "inputs" / "fused_kernel.tl").read_text()).functions[0]
    assert func.name == "fused_kernel"
    assert [a.name for a in func.args] == ["alpha", "A", "B", "C", "D"]
    assert isinstance(func.args[1].type, GroupType)
    insts = func.body.instructions
    assert [i.name for i in insts] == ["group_id", "load", "subview", "alloca", "constant",
                                       "constant", "gemm", "gemm"]
    assert str(insts[1].result.type) == "memref<f32x16x8>"
    assert str(insts[2].result.type) == "memref<f32x16x16>"
    assert insts[2].attr("slices") == (Slice(0, 0, True), Slice(0, 0, True), Slice(None, 0))
    assert insts[2].operand("dynamic") == [insts[0].result]
    assert insts[3].result.type.addrspace is AddressSpace.LOCAL
    assert (insts[6].trans_a, insts[6].trans_b) == (Transpose.N, Transpose.T)
    assert insts[6].C is insts[3].result


# -- every instruction ------------------------------------------------------------------


def test_blas_instructions() -> None:
    args = "%a: f32, %A: memref<f32x4x4>, %x: memref<f32x4>"
    insts = body(args, "gemm.t.n.atomic %a, %A, %A, %a, %A : f32, memref<f32x4x4>, "
                 "memref<f32x4x4>, f32, memref<f32x4x4>",
                 "gemv.t, %a, %A, %x, %a, %x : f32, memref<f32x4x4>, memref<f32x4>, f32, "
                 "memref<f32x4>",
                 "ger %a, %x, %x, %a, %A : f32, memref<f32x4>, memref<f32x4>, f32, "
                 "memref<f32x4x4>",
                 "hadamard %a, %x, %x, %a, %x : f32, memref<f32x4>, memref<f32x4>, f32, "
                 "memref<f32x4>",
                 "axpby.t.atomic %a, %A, %a, %A : f32, memref<f32x4x4>, f32, memref<f32x4x4>",
                 "sum.n %a, %A, %a, %x : f32, memref<f32x4x4>, f32, memref<f32x4>")
    gemm, gemv, ger, had, axpby, total = insts
    assert (gemm.trans_a, gemm.trans_b, gemm.atomic) == (Transpose.T, Transpose.N, True)
    assert (gemv.trans_a, gemv.atomic) == (Transpose.T, False)
    assert ger.attrs == {"atomic": False}
    assert had.name == "hadamard_product"
    assert (axpby.trans_a, axpby.atomic) == (Transpose.T, True)
    assert total.operand("B").name == "x"
    assert all(not i.results for i in insts)


def test_arith_cmp_cast() -> None:
    add, neg, lt, cast = body("%a: i32, %b: i32", "%c = arith.add %a, %b : i32",
                              "%d = arith.neg %a : i32", "%e = cmp.lt %a, %b : i32",
                              "%f = cast %a : i32 -> f32")
    assert (add.op.name, add.attr("op"), add.result.type) == ("arith", ArithOp.ADD, I32)
    assert neg.operand("b") is None and neg.attr("op") is ArithOp.NEG
    assert (lt.attr("cond"), lt.result.type) == (CmpCond.LT, I1)
    assert (cast.attr("from_type"), cast.attr("to_type"), cast.result.type) == (I32, F32, F32)


@pytest.mark.parametrize("text, value, type_name", [
    ("0 -> i32", 0, "i32"), ("-42 -> i64", -42, "i64"), ("+7 -> index", 7, "index"),
    ("9223372036854775807 -> i64", 2**63 - 1, "i64"),
    ("-9223372036854775807 -> i64", -(2**63) + 1, "i64"),
    ("true -> i1", True, "i1"), ("false : i1", False, "i1"),
    ("1.5 -> f32", 1.5, "f32"), ("-0.25e-3 -> f64", -0.25e-3, "f64"), (".5 -> f32", 0.5, "f32"),
    ("2. -> f32", 2.0, "f32"), ("1e10 -> f64", 1e10, "f64"), ("3E+2 -> f64", 300.0, "f64"),
    ("0x1.8p3 -> f64", 12.0, "f64"), ("-0x.8p-1 -> f64", -0.25, "f64"), ("0x1. -> f64", 1.0, "f64"),
    ("0xAp0 -> f64", 10.0, "f64"), ("[1.0, -2.5] -> c64", complex(1, -2.5), "c64"),
    ("[0x1p0, 3e2] -> c32", complex(1, 300), "c32"), ("-inf -> f32", -math.inf, "f32"),
])
def test_constants(text: str, value: object, type_name: str) -> None:
    inst = last("", f"%c = constant {text}")
    assert inst.attr("value") == value and type(inst.attr("value")) is type(value)
    assert str(inst.attr("type")) == type_name == str(inst.result.type)


def test_nan_constant() -> None:
    assert math.isnan(last("", "%c = constant nan -> f64").attr("value"))


def test_views_and_memory() -> None:
    args = "%m: memref<f32x8x?>, %g: group<memref<f32x4>, offset: ?>, %i: index"
    load, gload, size, sub, exp, fuse, store = body(
        args, "%a = load %m[%i, %i] : memref<f32x8x?>", "%b = load %g[%i] : "
        "group<memref<f32x4>, offset: ?>", "%c = size %m[1] : memref<f32x8x?>",
        "%d = subview %m[2:4, %i:%i] : memref<f32x8x?>", "%e = expand %m[0 -> 2 x %i] : "
        "memref<f32x8x?>", "%f = fuse %m[0,1] : memref<f32x8x?>",
        "store %a, %m[%i, %i] : memref<f32x8x?>")
    assert load.result.type == F32
    assert gload.result.type == MemRefType.of(F32, (4,))
    assert size.result.type == INDEX and size.attr("mode") == 1
    assert sub.attr("slices") == (Slice(2, 4), Slice(None, None))
    assert len(sub.operand("dynamic")) == 2
    assert str(sub.result.type) == "memref<f32x4x?,strided<1,8>>"
    assert exp.attr("shape") == (2, None)
    assert str(exp.result.type) == "memref<f32x2x?x?,strided<1,2,8>>"
    assert str(fuse.result.type) == "memref<f32x?>"
    assert store.operand("value") is load.result and not store.results


def test_alloca_defaults_to_local_and_keeps_explicit_space() -> None:
    local, explicit = body("", "%a = alloca -> memref<f32x4x4>",
                           "%b = alloca -> memref<f32x4,global>")
    assert local.result.type.addrspace is AddressSpace.LOCAL
    assert explicit.result.type.addrspace is AddressSpace.GLOBAL


def test_annotation_without_space_stands_for_local() -> None:
    _, load = body("", "%a = alloca -> memref<f32x4>", "%b = size %a[0] : memref<f32x4>")
    assert load.attr("type").addrspace is AddressSpace.LOCAL


def test_nullary_and_barrier() -> None:
    insts = body("", "%a = group_id", "%b = group_size", "%c = num_subgroups",
                 "%d = subgroup_size", "%e = subgroup_id", "%f = subgroup_local_id",
                 "barrier", "barrier.global", "barrier.local.global", "lifetime_stop %a")
    assert [i.result.type for i in insts[:6]] == [INDEX, INDEX, I32, I32, I32, I32]
    fences = [(i.fence_global, i.fence_local) for i in insts[6:9]]
    assert fences == [(False, False), (True, False), (True, True)]
    assert insts[9].operand("operand") is insts[0].result


def test_control_flow_regions() -> None:
    par, fe, loop, cond = (i for i in body(
        "%n: index, %c: i1", "parallel {\n barrier\n }", "foreach %i = 0, %n { }",
        "for %j = %n, 4, 2 : index { }", "%x = if %c -> (i32) { yield 1 : i32 } else "
        "{ yield 2 : i32 }") if i.name != "constant")
    assert par.regions[0].instructions[0].name == "barrier"
    assert fe.regions[0].args[0].name == "i" and fe.loop_type == INDEX
    assert loop.operand("step") is not None and loop.operand("init") == []
    assert len(cond.regions) == 2 and cond.result.type == I32
    assert cond.regions[1].instructions[0].name == "constant"


def test_if_without_else_has_one_region() -> None:
    inst = last("%c: i1", "if %c { }")
    assert len(inst.regions) == 1 and inst.attr("result_types") == ()


def test_for_loop_carried_values() -> None:
    insts = body("%n: i32, %x: f32", "%r, %s = for %i = 0, %n : i32 init(%a = %x, %b = 1) "
                 "-> (f32, i32) {\n %b2 = arith.add %b, %i : i32\n yield %a, %b2 : f32, i32\n}",
                 "%t = arith.add %r, %x : f32")
    loop = insts[-2]
    assert [a.name for a in loop.regions[0].args] == ["i", "a", "b"]
    assert [a.type for a in loop.regions[0].args] == [I32, F32, I32]
    assert loop.operand("init")[0].name == "x"
    assert [r.type for r in loop.results] == [F32, I32]
    assert insts[-1].operand("a") is loop.results[0]


def test_yield_without_values() -> None:
    inst = last("%c: i1", "if %c { yield : }")
    assert inst.regions[0].instructions[0].attr("types") == ()


# -- generous readings --------------------------------------------------------------


def test_comma_after_blas_modifiers_is_optional() -> None:
    types = "f32, memref<f32x4x4>, memref<f32x4x4>, f32, memref<f32x4x4>"
    args = "%a: f32, %A: memref<f32x4x4>"
    with_comma = last(args, f"gemm.n.t, %a, %A, %A, %a, %A : {types}")
    without = last(args, f"gemm.n.t %a, %A, %A, %a, %A : {types}")
    assert with_comma.attrs == without.attrs


def test_literal_operands_become_constants_before_the_use() -> None:
    insts = body("%n: i32", "%c = cmp.lt %n, 16 : i32")
    const, cmp = insts
    assert const.name == "constant" and const.attr("value") == 16 and const.result.type == I32
    assert cmp.operand("b") is const.result
    assert (const.loc.line, const.loc.col, const.loc.end_col) == (2, 19, 21)


@pytest.mark.parametrize("line, slot, value, type_name", [
    ("%r = load %m[5] : memref<f32x8>", "indices", 5, "index"),
    ("store 2, %m[0] : memref<f32x8>", "value", 2.0, "f32"),
    ("%r = arith.mul %x, 2 : f32", "b", 2.0, "f32"),
    ("%r = cast 3 : i32 -> f32", "a", 3, "i32"),
    ("if true { }", "cond", True, "i1"),
    ("axpby.n 1, %m, 0.5, %m : f64, memref<f32x8>, f64, memref<f32x8>", "alpha", 1.0, "f64"),
    ("%r = cmp.eq %z, [1.0, 0.0] : c32", "b", complex(1, 0), "c32"),
])
def test_literal_operand_types(line: str, slot: str, value: object, type_name: str) -> None:
    insts = body("%m: memref<f32x8>, %x: f32, %z: c32", line)
    const = insts[0]
    assert const.attr("value") == value and type(const.attr("value")) is type(value)
    assert str(const.result.type) == type_name
    used = insts[-1].operand(slot)
    assert const.result in (used if isinstance(used, list) else [used])


def test_comments_and_whitespace() -> None:
    text = "; leading comment\nfunc @k() ; trailing\n{ ; inside\n%a = group_id;x\n}\n"
    assert parse(text).functions[0].body.instructions[0].name == "group_id"


def test_function_attributes_and_names() -> None:
    prog = parse("func @k() work_group_size(16,4) subgroup_size(16) {\n}\n"
                 "func @1(%2: f32) {\n}\n")
    first, second = prog.functions
    assert (first.work_group_size, first.subgroup_size) == ((16, 4), 16)
    assert (second.name, second.work_group_size, second.subgroup_size) == ("1", None, None)


def test_empty_program() -> None:
    assert parse("  ; nothing\n").functions == []


def test_group_and_memref_types() -> None:
    func = parse("func @k(%a: group<memref<f32x?x4,strided<1,?>>, offset: 8>, "
                 "%b: memref<i8>, %c: memref<c64x2,local>, %d: group<memref<f32>>) {\n}\n"
                 ).functions[0]
    a, b, c, d = (arg.type for arg in func.args)
    assert a == GroupType(MemRefType(F32.__class__("f32"), (None, 4), (1, None)), 8)
    assert b.order == 0 and c.addrspace is AddressSpace.LOCAL and d.offset == 0


# -- locations ----------------------------------------------------------------------


def test_locations() -> None:
    text = "func @k(%a: f32) {\n  %b = arith.add %a, %a : f32\n  parallel {\n  }\n}\n"
    func = parse(text).functions[0]
    add, par = func.body.instructions
    assert (func.loc.line, func.loc.col) == (1, 6)
    assert (func.args[0].loc.line, func.args[0].loc.col) == (1, 9)
    assert (add.loc.line, add.loc.col, add.loc.end_col) == (2, 8, 30)
    assert (add.result.loc.line, add.result.loc.col, add.result.loc.end_col) == (2, 3, 5)
    assert (par.loc.line, par.loc.col) == (3, 3)
    assert (par.regions[0].loc.line, par.regions[0].loc.col) == (3, 12)
    assert add.loc.source is not None and add.loc.file == "k.tl"


def test_multiline_instruction_loc_stays_on_its_first_line() -> None:
    inst = last("%a: f32, %A: memref<f32x4>", "axpby.n %a, %A, %a, %A\n   : f32, memref<f32x4>, "
                "f32, memref<f32x4>")
    assert inst.loc.line == inst.loc.end_line == 2


def test_parsing_is_fast() -> None:
    line = "%{0} = arith.add %x, %x : f32\n"
    text = "func @k(%x: f32) {\n" + "".join(line.format(f"v{i}") for i in range(2000)) + "}\n"
    parse("func @warm() {\n}\n")
    start = time.perf_counter()
    parse(text)
    assert time.perf_counter() - start < 5.0


# -- errors -------------------------------------------------------------------------

ERRORS = [
    # syntax
    ("%b = arith.add %a %a : f32", 2, 21, "expected ',' or ':' but found '%a'"),
    ("%b = foo %a", 2, 8, "unknown instruction 'foo'"),
    ("%b = group_idx", 2, 8, "unknown instruction 'group_idx'"),
    ("%b = arith.add %a, %a : f8", 2, 27, "unknown type 'f8'"),
    ("%b = size %a[0] : memref<f8x4>", 2, 28, "unknown type 'f8'"),
    ("%b = group_id $", 2, 17, "but found '$'"),
    ("gemm.n %a", 3, 1, "expected ',' or ':' but found '}'"),
    ("%b = arith.add, %a, %a : f32", 2, 17, "unexpected ',' after 'arith.add'"),
    ("%b = constant 99999999999999999999 -> i64", 2, 17,
     "integer constant 99999999999999999999 is out of range"),
    ("%b = constant -9223372036854775808 -> i64", 2, 17, "is out of range"),
    ("%b = constant 0x10 -> i32", 2, 17, "hexadecimal integers are not supported"),
    ("%b = constant 1e999 -> f64", 2, 17, "out of the range of double precision"),
    ("%b = size %a[99999999999999999999] : memref<f32>", 2, 16, "out of range"),
    # modifiers and counts
    ("gemm.n.x %a, %a, %a, %a, %a : f32, f32, f32, f32, f32", 2, 9,
     "gemm needs 2 transpose modifiers"),
    ("gemm %a, %a, %a, %a, %a : f32, f32, f32, f32, f32", 2, 3,
     "gemm needs 2 transpose modifiers"),
    ("gemm.n.n.foo %a, %a, %a, %a, %a : f32, f32, f32, f32, f32", 2, 11,
     "unknown modifier '.foo' for gemm"),
    ("ger.atomic.atomic %a, %a, %a, %a, %a : f32, f32, f32, f32, f32", 2, 13,
     "repeated modifier '.atomic'"),
    ("%b = arith.foo %a, %a : f32", 2, 13, "arith needs one operation out of .add"),
    ("%b = cmp.lt %a : f32", 2, 8, "cmp.lt takes 2 operands, 1 given"),
    ("%b = arith.neg %a, %a : f32", 2, 8, "arith.neg takes 1 operands, 2 given"),
    ("gemm.n.n %a, %a, %a, %a : f32", 2, 3, "gemm takes 5 operands, 4 given"),
    ("barrier.foo", 2, 10, "unknown barrier modifier '.foo'"),
    ("%b, %c = group_id", 2, 12, "'group_id' returns 1 value but 2 names are given"),
    ("group_id", 2, 3, "the result of 'group_id' must be assigned"),
    ("%b = barrier", 2, 8, "'barrier' does not return a value"),
    ("yield %a : ", 2, 3, "yield has 1 value but 0 types"),
    ("%r = for %i = 0, 4 init(%x = 1) { }", 2, 22, "the loop carries 1 value (init) but 0 result"),
    # types
    ("%b = cast %a : f32 -> memref<f32>", 2, 25, "expected a scalar type, found memref<f32>"),
    ("%b = alloca -> f32", 2, 18, "expected a memref type, found f32"),
    ("%b = size %a[0] : f32", 2, 21, "expected a memref type, found f32"),
    ("for %i = 0, 4 : f32 { }", 2, 19, "expected an integer type, found f32"),
    ("%b = size %a[0] : memref<f32x4x4,strided<1,2>>", 2, 21, "(the layout must be column-major)"),
    # names and annotations
    ("%b = arith.add %a, %c : f32", 2, 22, "use of undefined value '%c'"),
    ("%a = group_id", 2, 3, "redefinition of '%a'"),
    ("%b = arith.add %a, %a : i32", 2, 27, "type mismatch: '%a' has type f32, but i32 is"),
    ("for %i = 0, %a { }", 2, 15, "the upper bound '%a' has type f32, but the loop type is index"),
    ("%b = load %a[1] : memref<f32>", 2, 21, "type mismatch: '%a' has type f32"),
    ("%b = load %a[1.5] : f32", 2, 8, "load: the operand must have memref or group type"),
    ("%x = constant 1 -> memref<f32>", 2, 22, "expected a scalar type"),
    ("%b = size %a[0] : memref<f32>", 2, 21, "type mismatch"),
    ("%b = load %a[%a] : f32", 2, 8, "load: the operand must have memref or group type"),
    ("%b = load [1.0, 2.0][] : f32", 2, 13, "expected a local identifier"),
]


@pytest.mark.parametrize("line, row, col, message", ERRORS, ids=[e[3][:40] for e in ERRORS])
def test_errors(line: str, row: int, col: int, message: str) -> None:
    rendered = error_of(f"func @k(%a: f32) {{\n  {line}\n}}\n")
    head = rendered.splitlines()[0]
    assert head.startswith(f"k.tl:{row}:{col}: error: "), rendered
    assert message in head, rendered
    assert "^" in rendered.splitlines()[2]


def test_error_quotes_the_line_with_a_caret() -> None:
    rendered = error_of("func @k(%a: f32) {\n  %b = foo %a\n}\n")
    assert rendered.splitlines() == ["k.tl:2:8: error: unknown instruction 'foo'",
                                     "  %b = foo %a", "       ^~~"]


def test_value_from_nested_region_is_not_visible_outside() -> None:
    rendered = error_of("func @k() {\n  parallel {\n    %c = group_id\n  }\n"
                        "  %d = arith.add %c, %c : index\n}\n")
    lines = rendered.splitlines()
    assert lines[0] == ("k.tl:5:18: error: '%c' is defined inside a region that does not "
                        "enclose this use")
    assert lines[3] == "k.tl:3:5: note: value defined here"


def test_redefinition_notes_the_previous_definition() -> None:
    rendered = error_of("func @k(%a: f32) {\n  %a = group_id\n}\n")
    assert "k.tl:1:9: note: previous definition is here" in rendered


def test_annotation_mismatch_notes_the_definition() -> None:
    rendered = error_of("func @k(%a: f32) {\n  %b = arith.add %a, %a : i32\n}\n")
    assert "k.tl:1:9: note: value defined here" in rendered


def test_loop_variable_is_not_visible_after_the_loop() -> None:
    rendered = error_of("func @k() {\n  foreach %i = 0, 4 { }\n  %b = arith.add %i, %i : "
                        "index\n}\n")
    assert rendered.startswith("k.tl:3:18: error: '%i' is defined inside a region")


def test_results_of_a_loop_are_not_visible_in_its_body() -> None:
    rendered = error_of("func @k() {\n  %r = for %i = 0, 4 init(%a = 1) -> (i32) {\n"
                        "    yield %r : i32\n  }\n}\n")
    assert rendered.startswith("k.tl:3:11: error: use of undefined value '%r'")


def test_duplicate_function_and_attributes() -> None:
    assert "redefinition of function '@k'" in error_of("func @k() {\n}\nfunc @k() {\n}\n")
    assert "work_group_size is given twice" in error_of(
        "func @k() work_group_size(1,1) work_group_size(2,2) {\n}\n")
    assert error_of("func @k() work_group_size(16) {\n}\n").startswith(
        "k.tl:1:29: error: expected ',' but found ')'")


@pytest.mark.parametrize("text, message", [
    ("fun @k() {}", "expected 'func' or end of input but found 'fun'"),
    ("func @k( {}", "but found '{'"),
    ("func @k() {", "but found end of input"),
    ("func @k() { %a = group_id", "but found end of input"),
    ("func @k() {} }", "expected 'func' or end of input but found '}'"),
    ("func k() {}", "expected a global identifier ('@name') but found 'k'"),
    ("func @k(%a: memref<f32x>) {}", "expected '?' or an integer but found '>'"),
])
def test_syntax_errors(text: str, message: str) -> None:
    assert message in error_of(text).splitlines()[0]


def test_reference_examples_through_tensorlang_parse() -> None:
    with pytest.raises(CompileError, match="cannot be fused"):
        tensorlang.parse("func @k(%0: memref<f32x8x16,strided<1,10>>) {\n"
                         "  %1 = fuse %0[0,1] : memref<f32x8x16,strided<1,10>>\n}\n", "k.tl")


def test_nesting_limit_is_an_error_not_a_crash() -> None:
    depth = 150
    text = "func @k() {\n" + "parallel {\n" * depth + "}\n" * depth + "}\n"
    assert "regions are nested more than 40 deep" in error_of(text)


# -- result-type inference (tensorlang.ir.infer) --------------------------------------


def _t(text: str) -> MemRefType:
    return parse(f"func @t(%e: {text}) {{\n}}\n").functions[0].args[0].type


@pytest.mark.parametrize("operand, slices, expected", [
    ("memref<f32x32x16>", (Slice(4, 8), Slice(8, 4)), "memref<f32x8x4,strided<1,32>>"),
    ("memref<f32x16x8>", (Slice(2, 4), Slice(None, 0)), "memref<f32x4>"),
    ("memref<f64x16x8>", (Slice(2, 4), Slice(None, 1)), "memref<f64x4x1,strided<1,16>>"),
    ("memref<f32x16>", (Slice(None, None),), "memref<f32x?>"),
    ("memref<f32x?x8,local>", (Slice(0, 0, True), Slice(1, 0)), "memref<f32x?,local>"),
    ("memref<f32x4x?x5,strided<1,?,?>>", (Slice(0, 0, True),) * 3,
     "memref<f32x4x?x5,strided<1,?,?>>"),
    ("memref<f32>", (), "memref<f32>"),
])
def test_infer_subview(operand: str, slices: tuple[Slice, ...], expected: str) -> None:
    from tensorlang.ir.infer import subview_type

    assert subview_type(_t(operand), slices, UNKNOWN) == _t(expected)


@pytest.mark.parametrize("operand, mode, shape, expected", [
    ("memref<f32x32x7,strided<2,64>>", 0, (4, 8), "memref<f32x4x8x7,strided<2,8,64>>"),
    ("memref<f32x?x7,strided<2,?>>", 0, (None, 4), "memref<f32x?x4x7,strided<2,?,?>>"),
    ("memref<f32x?x7,strided<2,?>>", 0, (4, None), "memref<f32x4x?x7,strided<2,8,?>>"),
    ("memref<f32x32x16>", 1, (None, 2), "memref<f32x32x?x2>"),
    ("memref<f32x32x16x8>", 1, (2, 2, 2, 2), "memref<f32x32x2x2x2x2x8>"),
])
def test_infer_expand(operand: str, mode: int, shape: tuple, expected: str) -> None:
    from tensorlang.ir.infer import expand_type

    assert expand_type(_t(operand), mode, shape, UNKNOWN) == _t(expected)


@pytest.mark.parametrize("operand, first, last, expected", [
    ("memref<f32x32x16x8x4x42>", 1, 3, "memref<f32x32x512x42>"),
    ("memref<f32x32x16x?x4x42,strided<1,32,?,?,?>>", 1, 3, "memref<f32x32x?x42,strided<1,32,?>>"),
    ("memref<f32x32x16x2x2,strided<1,48,768,1536>>", 1, 2,
     "memref<f32x32x32x2,strided<1,48,1536>>"),
    ("memref<f32x8x?x32,strided<1,?,?>>", 0, 1, "memref<f32x?x32,strided<1,?>>"),
    ("memref<f32x8x16,strided<1,?>>", 0, 1, "memref<f32x128>"),
])
def test_infer_fuse(operand: str, first: int, last: int, expected: str) -> None:
    from tensorlang.ir.infer import fuse_type

    assert fuse_type(_t(operand), first, last, UNKNOWN) == _t(expected)


@pytest.mark.parametrize("call, message", [
    (lambda i: i.subview_type(_t("memref<f32x4>"), (), UNKNOWN), "needs 1 indices or slices"),
    (lambda i: i.subview_type(_t("memref<f32x4>"), (Slice(-1, 2),), UNKNOWN),
     "offset -1 of mode 0 must be non-negative"),
    (lambda i: i.subview_type(_t("memref<f32x4>"), (Slice(0, -2),), UNKNOWN),
     "size -2 of mode 0 must be positive"),
    (lambda i: i.expand_type(_t("memref<f32x8>"), 1, (2, 4), UNKNOWN), "mode 1 is out of range"),
    (lambda i: i.expand_type(_t("memref<f32x8>"), 0, (8,), UNKNOWN), "at least two modes"),
    (lambda i: i.expand_type(_t("memref<f32x8>"), 0, (3, 3), UNKNOWN), "has 9 elements"),
    (lambda i: i.fuse_type(_t("memref<f32x8x16,strided<1,10>>"), 0, 1, UNKNOWN),
     "cannot be fused"),
    (lambda i: i.fuse_type(_t("memref<f32x8x16>"), 1, 1, UNKNOWN), "out of range"),
    (lambda i: i.load_type(_t("memref<f32x8x16>"), 1, UNKNOWN), "needs 2 indices"),
    (lambda i: i.load_type(GroupType(_t("memref<f32x8>")), 2, UNKNOWN), "exactly one index"),
    (lambda i: i.load_type(F32, 0, UNKNOWN), "must have memref or group type"),
])
def test_infer_errors(call, message: str) -> None:
    from tensorlang.ir import infer

    with pytest.raises(CompileError, match=message):
        call(infer)


def test_infer_on_ir_built_in_code() -> None:
    from tensorlang.ir import infer
    from tensorlang.ir.core import Value
    from tensorlang.ir.ops import OPS

    group = Value(GroupType(MemRefType.of(F32, (None,)), None), "g")
    index = Value(INDEX, "i")
    load = Instruction(OPS["load"], {"operand": group, "indices": [index]}, {"type": group.type})
    assert infer.result_type(load) == MemRefType.of(F32, (None,))
    loop = Instruction(OPS["for"], {"from": index, "to": index, "step": None,
                                    "init": [index, load.results or index]}, {"loop_type": INDEX})
    assert infer.result_types(loop) == [INDEX, INDEX]
    assert infer.result_types(Instruction(OPS["barrier"], {}, {})) == []
    assert infer.result_type(Instruction(OPS["subgroup_local_id"])) == I32


def test_loop_variable_cannot_shadow_a_visible_value() -> None:
    rendered = error_of("func @k(%i: index) {\n  foreach %i = 0, 4 { }\n}\n")
    assert rendered.startswith("k.tl:2:11: error: redefinition of '%i'")
    assert "k.tl:1:9: note: previous definition is here" in rendered


def test_sibling_regions_may_reuse_names() -> None:
    inst = last("%c: i1", "if %c {\n %t = group_id\n } else {\n %t = group_size\n }")
    assert [r.instructions[0].result.name for r in inst.regions] == ["t", "t"]


def test_functions_have_separate_scopes() -> None:
    prog = parse("func @a(%x: f32) {\n}\nfunc @b(%x: i32) {\n  %y = arith.neg %x : i32\n}\n")
    assert prog.functions[1].body.instructions[0].operand("a").type == I32
