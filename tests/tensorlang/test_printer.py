"""The printer: canonical text that parses back to the same IR; structural comparison."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tensorlang
from tensorlang.ir.compare import first_difference, programs_equal, same_attr
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS
from tensorlang.ir.types import F32, I32, INDEX
from tensorlang.syntax.parser import parse_program
from tensorlang.syntax.printer import print_program

INPUTS = sorted((Path(__file__).parent / "inputs").glob("*.tl"))


def parse(text: str) -> Program:
    """Parse without verifying."""
    return parse_program(text, "k.tl")


def printed(*lines: str, args: str = "") -> str:
    """The canonical text of ``func @k(args) { lines }``'s body lines."""
    text = f"func @k({args}) {{\n" + "".join(f"  {line}\n" for line in lines) + "}\n"
    return str(parse(text))


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_corpus_round_trip(path: Path) -> None:
    program = tensorlang.parse(path.read_text(), path.name)
    text = str(program)
    again = tensorlang.parse(text, "printed.tl")
    assert first_difference(program, again) is None
    assert str(again) == text  # fixed point


def test_sample_prints_canonically() -> None:
    text = str(parse((Path(__file__).parent / "inputs" / "fused_kernel.tl").read_text()))
    assert text == """\
func @fused_kernel(%alpha: f32,
                   %A: group<memref<f32x16x8>>,
                   %B: memref<f32x8x8>,
                   %C: memref<f32x8x16>,
                   %D: memref<f32x16x16x?>) {
  %0 = group_id
  %1 = load %A[%0] : group<memref<f32x16x8>>
  %2 = subview %D[:, :, %0] : memref<f32x16x16x?>
  %tmp0 = alloca -> memref<f32x16x8,local>
  %zero = constant 0.0 -> f32
  %one = constant 1.0 -> f32
  gemm.n.t %one, %1, %B, %zero, %tmp0
      : f32, memref<f32x16x8>, memref<f32x8x8>, f32, memref<f32x16x8,local>
  gemm.n.n %alpha, %tmp0, %C, %one, %2
      : f32, memref<f32x16x8,local>, memref<f32x8x16>, f32, memref<f32x16x16>
}
"""


@pytest.mark.parametrize("line, expected", [
    ("%c = constant 0.0 : f32", "%c = constant 0.0 -> f32"),
    ("%c = constant 0x1.8p3 -> f64", "%c = constant 12.0 -> f64"),
    ("%c = constant [1, 2.5] -> c32", "%c = constant [1.0, 2.5] -> c32"),
    ("%c = constant -inf -> f64", "%c = constant -inf -> f64"),
    ("%c = constant true -> i1", "%c = constant true -> i1"),
    ("%c = alloca -> memref<f32x4>", "%c = alloca -> memref<f32x4,local>"),
    ("gemm.t.n, %x, %A, %A, %x, %A : f32, memref<f32x2x2>, memref<f32x2x2>, f32, "
     "memref<f32x2x2>", "gemm.t.n %x, %A, %A, %x, %A : f32, memref<f32x2x2>, memref<f32x2x2>, "
     "f32, memref<f32x2x2>"),
    ("hadamard.atomic %x, %v, %v, %x, %v : f32, memref<f32x2>, memref<f32x2>, f32, "
     "memref<f32x2>", "hadamard_product.atomic %x, %v, %v, %x, %v : f32, memref<f32x2>, "
     "memref<f32x2>, f32, memref<f32x2>"),
    ("%s = subview %A[:, %i:0] : memref<f32x2x2>", "%s = subview %A[:, %i] : memref<f32x2x2>"),
    ("%s = subview %A[1:1, 0:0] : memref<f32x2x2>",
     "%s = subview %A[1:1, 0] : memref<f32x2x2>"),
    ("%e = expand %v[0->1x2] : memref<f32x2>", "%e = expand %v[0 -> 1 x 2] : memref<f32x2>"),
    ("barrier.local.global", "barrier.global.local"),
    ("%r = cmp.ge %i, 1 : index", "%0 = constant 1 -> index\n  %r = cmp.ge %i, %0 : index"),
])
def test_canonical_forms(line: str, expected: str) -> None:
    args = "%x: f32, %A: memref<f32x2x2>, %v: memref<f32x2>, %i: index"
    assert printed(line, args=args) == f"func @k({args}) {{\n  {expected}\n}}\n"


def test_regions_are_indented_by_two_spaces() -> None:
    text = printed("%r = for %i = 0, 4 : i32 init(%a = %x) -> (f32) {",
                   "  if %c { parallel { barrier } } else { yield : }", "  yield %a : f32", "}",
                   args="%x: f32, %c: i1, %z: i32")
    assert text == """\
func @k(%x: f32, %c: i1, %z: i32) {
  %0 = constant 0 -> i32
  %1 = constant 4 -> i32
  %r = for %i = %0, %1 : i32 init(%a = %x) -> (f32) {
    if %c {
      parallel {
        barrier
      }
    } else {
      yield :
    }
    yield %a : f32
  }
}
"""


def _function(names: list[str]) -> Function:
    """``func @k(args named names) { %r = group_id }`` built in code."""
    args = [Value(F32, name) for name in names]
    inst = Instruction(OPS["group_id"], {}, {}, [Value(INDEX, "1")])
    return Function("k", args, Region([inst]))


def test_invalid_and_duplicate_names_get_fresh_numbers() -> None:
    program = Program([_function(["a", "a", "", "bad-name", "0", "2"])])
    text = print_program(program)
    assert text.splitlines()[0] == "func @k(%a: f32, %3: f32, %4: f32, %5: f32, %0: f32, %2: f32) {"
    assert "  %1 = group_id" in text
    assert programs_equal(program, parse(text))


def test_functions_are_separated_by_a_blank_line() -> None:
    text = str(parse("func @a() {}\nfunc @b() work_group_size(16,1) subgroup_size(16) {}"))
    assert text == "func @a() {\n}\n\nfunc @b() work_group_size(16,1) subgroup_size(16) {\n}\n"


def test_program_str_is_print_program() -> None:
    program = parse("func @a(%x: i32) {}")
    assert str(program) == print_program(program) == "func @a(%x: i32) {\n}\n"


# -- structural comparison ------------------------------------------------------------

BASE = """\
func @k(%x: f32, %y: f32, %n: i32) {
  %a = arith.add %x, %y : f32
  %c = constant 1 -> i32
  %r = for %i = 0, %n : i32 init(%s = %a) -> (f32) {
    yield %s : f32
  }
}
"""


@pytest.mark.parametrize("old, new", [
    ("arith.add %x, %y", "arith.add %y, %x"),
    ("arith.add", "arith.sub"),
    ("constant 1 -> i32", "constant 2 -> i32"),
    ("init(%s = %a)", "init(%s = %x)"),
    ("func @k", "func @j"),
    ("func @k(%x: f32, %y: f32, %n: i32)", "func @k(%x: f32, %y: f32, %n: i32) subgroup_size(8)"),
    ("yield %s : f32", "yield %a : f32"),
    ("%n: i32) {", "%n: i32) {\n  barrier"),
])
def test_programs_differ(old: str, new: str) -> None:
    assert old in BASE
    assert not programs_equal(parse(BASE), parse(BASE.replace(old, new)))


def test_programs_equal_ignores_names_and_locations() -> None:
    renamed = BASE.replace("%a", "%other").replace("%s", "%t").replace("%x", "%xx")
    assert programs_equal(parse(BASE), parse("; moved\n\n" + renamed))


@pytest.mark.parametrize("a, b, equal", [
    (1, True, False), (0.0, -0.0, False), (math.nan, math.nan, True), (1.0, 1, False),
    (complex(0, -0.0), complex(0, 0.0), False), ((1, None), (1, None), True),
    ((1, 2), (1, 3), False), (F32, F32, True), (F32, I32, False),
])
def test_same_attr(a: object, b: object, equal: bool) -> None:
    assert same_attr(a, b) is equal


def test_first_difference_describes_the_place() -> None:
    diff = first_difference(parse(BASE), parse(BASE.replace("arith.add", "arith.mul")))
    assert diff == "@k: arith: attributes differ"


def test_broken_ir_still_prints() -> None:
    from tensorlang.ir.ops import ArithOp

    stray = Value(F32, "gone")
    inst = Instruction(OPS["arith"], {"a": stray, "b": None},
                       {"op": ArithOp.NEG, "type": F32}, [Value(F32, "r")])
    text = print_program(Program([Function("k", [], Region([inst]))]))
    assert "  %r = arith.neg %undefined1 : f32" in text
