"""Every example of the tensor-language reference parses, verifies and has the type its
comment gives; every illegal example is rejected with its own message.

The reference's comments have typos that are compared semantically: two subview
comments lack the closing ``>``, and one fuse example's input stride (``strided<1,16,..>``
on a mode of size 32) contradicts both the layout restriction and its own result
(``strided<1,32,?>``); it is read as ``strided<1,32,?,?,?>``.
"""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError
from tensorlang.ir.types import Type


def type_of(text: str) -> Type:
    """The type spelled ``text``, read by the parser."""
    program = tensorlang.parse(f"func @t(%e: {text}) {{\n}}\n", "t.tl")
    return program.functions[0].args[0].type


def result_of(operand_type: str, instruction: str) -> Type:
    """The type of ``%r = instruction`` where ``%0`` has ``operand_type``, %1, %2 index."""
    text = (f"func @k(%0: {operand_type}, %1: index, %2: index) {{\n"
            f"  %r = {instruction}\n}}\n")
    program = tensorlang.parse(text, "k.tl")
    return program.functions[0].body.instructions[-1].result.type


# (operand type, instruction, the reference's comment)
EXPAND = [
    ("memref<f32x32x16x8>", "expand %0[1 -> 2x8]", "memref<f32x32x2x8x8>"),
    ("memref<f32x32x16x8>", "expand %0[1 -> 2x2x2x2]", "memref<f32x32x2x2x2x2x8>"),
    ("memref<f32x32x?>", "expand %0[1 -> %1 x 2]", "memref<f32x32x?x2>"),
    ("memref<f32x32x?>", "expand %0[1 -> 2 x %1]", "memref<f32x32x2x?>"),
    ("memref<f32x32x16>", "expand %0[1 -> %1 x 2]", "memref<f32x32x?x2>"),
    ("memref<f32x32x16>", "expand %0[1 -> %1 x %2 x 2]", "memref<f32x32x?x?x2>"),
    ("memref<f32x32x16>", "expand %0[1 -> %2 x 2 x %1]", "memref<f32x32x?x2x?>"),
    ("memref<f32x32x?>", "expand %0[1 -> %1 x %2]", "memref<f32x32x?x?>"),
    ("memref<f32x32x16>", "expand %0[1 -> %1 x %2]", "memref<f32x32x?x?>"),
    ("memref<f32x32x7,strided<2,64>>", "expand %0[0->4 x 8]",
     "memref<f32x4x8x7,strided<2,8,64>>"),
    ("memref<f32x?x7,strided<2,?>>", "expand %0[0->%1 x 4]",
     "memref<f32x?x4x7,strided<2,?,?>>"),
    ("memref<f32x?x7,strided<2,?>>", "expand %0[0->4 x %1]",
     "memref<f32x4x?x7,strided<2,8,?>>"),
]

FUSE = [
    ("memref<f32x32x16x8x4x42>", "fuse %0[1,3]", "memref<f32x32x512x42>"),
    ("memref<f32x32x16x?x4x42,strided<1,32,?,?,?>>", "fuse %0[1,3]",  # reference: <1,16,...>
     "memref<f32x32x?x42,strided<1,32,?>>"),
    ("memref<f32x32x16x2x2,strided<1,48,768,1536>>", "fuse %0[1,2]",
     "memref<f32x32x32x2,strided<1,48,1536>>"),
    ("memref<f32x8x?x32,strided<1,?,?>>", "fuse %0[0,1]", "memref<f32x?x32,strided<1,?>>"),
    ("memref<f32x8x16,strided<1,?>>", "fuse %0[0,1]", "memref<f32x128>"),  # UB if stride != 8
]

SUBVIEW = [
    ("memref<f32x32x16>", "subview %0[4:8,8:4]", "memref<f32x8x4,strided<1,32>>"),
    ("memref<f32x16x8>", "subview %0[2:4, %1]", "memref<f32x4>"),
    ("memref<f32x16x8>", "subview %0[2:4, %1:0]", "memref<f32x4>"),
    ("memref<f64x16x8>", "subview %0[2:4, %1:1]", "memref<f64x4x1,strided<1,16>>"),
    ("memref<f32x16>", "subview %0[%1:4]", "memref<f32x4>"),
    ("memref<f32x16>", "subview %0[%2:%2]", "memref<f32x?>"),
    ("memref<f32x16x42x13>", "subview %0[2:4, %2:%2, 6:7]",
     "memref<f32x4x?x7,strided<1,16,672>"),  # sic: the reference lacks the final '>'
    ("memref<f32x16x42x13,strided<1,?,?>>", "subview %0[2:4, %2:%2, 6:7]",
     "memref<f32x4x?x7,strided<1,?,?>"),  # sic
]

LOAD = [
    ("memref<f32>", "load %0[]", "f32"),
    ("memref<f32x10x?>", "load %0[5, %1]", "f32"),
    ("group<memref<f32x42>>", "load %0[%1]", "memref<f32x42>"),
    ("group<memref<f32x42>, offset: ?>", "load %0[%1]", "memref<f32x42>"),
]


def _closed(text: str) -> str:
    """Add the '>' the reference's comment forgot."""
    return text + ">" * (text.count("<") - text.count(">"))


@pytest.mark.parametrize(("operand", "instruction", "expected"),
                         EXPAND + FUSE + SUBVIEW + LOAD)
def test_reference_example_types(operand: str, instruction: str, expected: str) -> None:
    got = result_of(operand, f"{instruction} : {operand}")
    assert got == type_of(_closed(expected))


def test_reference_if_example() -> None:
    text = """func @k(%0: i32) {
  %1 = cmp.lt %0, 16 : i32
  %x = if %1 -> (i32) {
      yield %0 : i32
  } else {
      yield 16 : i32
  }
}
"""
    program = tensorlang.parse(text, "k.tl")
    if_inst = program.functions[0].body.instructions[-1]
    assert [str(r.type) for r in if_inst.results] == ["i32"]


FUSED_KERNEL = """func @fused_kernel(%alpha: f32,
                     %A: group<memref<f32x16x8>>,
                     %B: memref<f32x8x8>,
                     %C: memref<f32x8x16>,
                     %D: memref<f32x16x16x?>) {
  %0 = group_id
  %1 = load %A[%0]        : group<memref<f32x16x8>> ; Returns memref<f32x16x8>
  %2 = subview %D[:,:,%0] : memref<f32x16x16x?>     ; Returns memref<f32x16x16>
  %tmp0 = alloca -> memref<f32x16x8>
  %zero = constant 0.0 : f32
  %one = constant 1.0 : f32
  gemm.n.t %one, %1, %B, %zero, %tmp0
     : f32, memref<f32x16x8>, memref<f32x8x8>, f32, memref<f32x16x8>
  gemm.n.n %alpha, %tmp0, %C, %one, %2
     : f32, memref<f32x16x8>, memref<f32x8x16>, f32, memref<f32x16x16>
}
"""


def test_reference_sample_fused_kernel() -> None:
    func = tensorlang.parse(FUSED_KERNEL, "sample.tl").functions[0]
    types = {v.name: str(v.type) for i in func.body.instructions for v in i.results}
    assert types["1"] == "memref<f32x16x8>"
    assert types["2"] == "memref<f32x16x16>"
    assert types["tmp0"] == "memref<f32x16x8,local>"


def _error(text: str) -> CompileError:
    with pytest.raises(CompileError) as info:
        tensorlang.parse(text, "k.tl")
    return info.value


def test_reference_illegal_fuse() -> None:
    err = _error("func @k(%0: memref<f32x8x16,strided<1,10>>) {\n"
                 "  %r = fuse %0[0,1] : memref<f32x8x16,strided<1,10>>\n}\n")
    assert (err.first.loc.line, err.first.loc.col) == (2, 8)
    assert "cannot be fused" in err.first.message
    assert "1 * 8" in err.first.message and "10" in err.first.message


def test_reference_fuse_example_as_written_breaks_the_layout_rule() -> None:
    err = _error("func @k(%0: memref<f32x32x16x?x4x42,strided<1,16,?,?,?>>) {\n}\n")
    assert (err.first.loc.line, err.first.loc.col) == (1, 13)
    assert "(T4)" in err.first.message and "1 * 32 = 32" in err.first.message


def test_reference_expand_product_mismatch() -> None:
    err = _error("func @k(%0: memref<f32x32x16x8>) {\n"
                 "  %r = expand %0[1 -> 2x4] : memref<f32x32x16x8>\n}\n")
    assert (err.first.loc.line, err.first.loc.col) == (2, 8)
    assert "8 elements" in err.first.message and "size 16" in err.first.message


@pytest.mark.parametrize(("layout", "words"), [
    ("memref<f32x8x16,strided<1,4>>", "(T4)"),
    ("memref<f32x8x16,strided<0,8>>", "(T3)"),
    ("memref<f32x8x16,strided<1>>", "strides"),
])
def test_reference_layout_restrictions(layout: str, words: str) -> None:
    err = _error(f"func @k(%0: {layout}) {{\n}}\n")
    assert err.first.loc.line == 1 and words in err.first.message


def test_reference_alloca_restrictions() -> None:
    err = _error("func @k() {\n  %t = alloca -> memref<f32x?x4>\n}\n")
    assert (err.first.loc.line, err.first.loc.col) == (2, 8)
    assert err.first.message.startswith("alloca (C1)")
    err = _error("func @k() {\n  %t = alloca -> memref<f32x4,global>\n}\n")
    assert err.first.message.startswith("alloca (C2)")


def test_reference_size_mode_out_of_range() -> None:
    err = _error("func @k(%0: memref<f32x4>) {\n  %s = size %0[1] : memref<f32x4>\n}\n")
    assert (err.first.loc.line, err.first.loc.col) == (2, 8)
    assert "out of range" in err.first.message
