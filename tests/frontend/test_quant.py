"""Quantization rules: ``!quant.uniform`` types (C1-C13) and the ops' quantized rules."""

from __future__ import annotations

import pytest

import frontend
from frontend import CompileError

Q = "!quant.uniform<i8:f32, 0.5:-20>"
Q2 = "!quant.uniform<i8:f32, 0.25:3>"
QI16 = "!quant.uniform<i16:f32, 0.5>"
QF16 = "!quant.uniform<i8:f16, 0.5>"
QA0 = "!quant.uniform<i8:f32:0, {0.1:-30, 0.5:-20}>"
QA1 = "!quant.uniform<i8:f32:1, {0.1:-30, 0.5:-20}>"
QW = "!quant.uniform<i8:f32, 0.5>"
QW_AXIS1 = "!quant.uniform<i8:f32:1, {0.1, 0.5}>"


def _arg(t: str) -> str:
    """A function whose argument has type ``t`` (the type starts at 1:21)."""
    return f"func.func @main(%a: {t}) {{\n  func.return\n}}\n"


def _op(line: str, sig: str) -> str:
    """A function with ``line`` as its one op (at 2:8)."""
    return f"func.func @main({sig}) {{\n  %0 = {line}\n  func.return\n}}\n"


TYPE_CASES = [
    ("storage i1", _arg("tensor<2x!quant.uniform<i1:f32, 0.5>>"), "1:30",
     "'!quant.uniform' (C1): storage type must be an integer type, got i1"),
    ("storage_min range", _arg("tensor<2x!quant.uniform<i8<-200:7>:f32, 0.5>>"), "1:30",
     "'!quant.uniform' (C1): storage_min -200 is outside i8's range [-128, 127]"),
    ("storage_max range", _arg("tensor<2x!quant.uniform<ui8<0:300>:f32, 0.5>>"), "1:30",
     "'!quant.uniform' (C2): storage_max 300 is outside ui8's range [0, 255]"),
    ("storage min < max", _arg("tensor<2x!quant.uniform<i8<9:7>:f32, 0.5>>"), "1:30",
     "'!quant.uniform' (C3): storage_min 9 must be less than storage_max 7"),
    ("scale in expressed type", _arg("tensor<2x!quant.uniform<i8:f16, 1.0e10>>"), "1:30",
     "'!quant.uniform' (C4): scale 10000000000.0 is not a positive finite f16 value"),
    ("scale positive", _arg("tensor<2x!quant.uniform<i8:f32, -0.5>>"), "1:30",
     "'!quant.uniform' (C5): scales must be positive, got -0.5"),
    ("scale finite", _arg("tensor<2x!quant.uniform<i8:f32, 1.0e400>>"), "1:30",
     "'!quant.uniform' (C6): scales must be finite, got inf"),
    ("zero point in storage range", _arg("tensor<2x!quant.uniform<i8<-8:7>:f32, 0.5:-20>>"),
     "1:30", "'!quant.uniform' (C7): zero point -20 is outside [storage_min, storage_max]"),
    ("zero point in storage type", _arg("tensor<2x!quant.uniform<i8:f32, 0.5:300>>"), "1:30",
     "'!quant.uniform' (C8): zero point 300 is outside i8's range [-128, 127]"),
    ("quantization dimension >= 0", _arg("tensor<2x!quant.uniform<i8:f32:-1, {0.5, 0.1}>>"),
     "1:30", "'!quant.uniform' (C11): quantization_dimension must be non-negative, got -1"),
    ("quantization dimension < rank", _arg("tensor<2x!quant.uniform<i8:f32:1, {0.5, 0.2}>>"),
     "1:21", "'!quant.uniform' (C12): quantization_dimension 1 is out of range for rank 1"),
    ("scales per slice", _arg("tensor<3x!quant.uniform<i8:f32:0, {0.5, 0.2}>>"), "1:21",
     "'!quant.uniform' (C13): dimension 0 has size 3 but there are 2 scales"),
]

OP_CASES = [
    ("add all quantized",
     _op(f"stablehlo.add %a, %b : (tensor<2x{Q}>, tensor<2xf32>) -> tensor<2x{Q}>",
         f"%a: tensor<2x{Q}>, %b: tensor<2xf32>"),
     "'stablehlo.add' (C2): lhs, rhs and result must all be quantized"),
    ("add storage types",
     _op(f"stablehlo.add %a, %b : (tensor<2x{Q}>, tensor<2x{QI16}>) -> tensor<2x{Q}>",
         f"%a: tensor<2x{Q}>, %b: tensor<2x{QI16}>"),
     "'stablehlo.add' (C3): storage types differ: i8, i16, i8"),
    ("add expressed types",
     _op(f"stablehlo.add %a, %b : (tensor<2x{Q}>, tensor<2x{QF16}>) -> tensor<2x{Q}>",
         f"%a: tensor<2x{Q}>, %b: tensor<2x{QF16}>"),
     "'stablehlo.add' (C4): expressed types differ: f32, f16, f32"),
    ("add per-axis result",
     _op(f"stablehlo.add %a, %b : (tensor<2x2x{QA0}>, tensor<2x2x{Q}>) -> tensor<2x2x{Q}>",
         f"%a: tensor<2x2x{QA0}>, %b: tensor<2x2x{Q}>"),
     "'stablehlo.add' (C5): the result must be per-axis quantized exactly when"),
    ("add lhs quantization dimension",
     _op(f"stablehlo.add %a, %b : (tensor<2x2x{QA0}>, tensor<2x2x{Q}>) -> "
         f"tensor<2x2x{QA1}>", f"%a: tensor<2x2x{QA0}>, %b: tensor<2x2x{Q}>"),
     "'stablehlo.add' (C6): lhs quantization_dimension 0 differs from the result's 1"),
    ("add rhs quantization dimension",
     _op(f"stablehlo.add %a, %b : (tensor<2x2x{Q}>, tensor<2x2x{QA1}>) -> "
         f"tensor<2x2x{QA0}>", f"%a: tensor<2x2x{Q}>, %b: tensor<2x2x{QA1}>"),
     "'stablehlo.add' (C7): rhs quantization_dimension 1 differs from the result's 0"),
    ("dot_general element types",
     _op("stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         "(tensor<2x3xf32>, tensor<3x2xf16>) -> tensor<2x2xf32>",
         "%a: tensor<2x3xf32>, %b: tensor<3x2xf16>"),
     "'stablehlo.dot_general' (C13): lhs and rhs element types differ: f32 vs f16"),
    ("dot_general quantized lhs",
     _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         f"(tensor<2x3x{Q}>, tensor<3x2x{QW}>) -> tensor<2x2xf32>",
         f"%a: tensor<2x3x{Q}>, %b: tensor<3x2x{QW}>"),
     "'stablehlo.dot_general' (C14): lhs is quantized, so rhs and result must be"),
    ("dot_general rhs zero points",
     _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         f"(tensor<2x3x{Q}>, tensor<3x2x{Q2}>) -> tensor<2x2x{Q}>",
         f"%a: tensor<2x3x{Q}>, %b: tensor<3x2x{Q2}>"),
     "'stablehlo.dot_general' (C15): rhs zero points must be 0, got [3]"),
    ("dot_general rhs axis contracted",
     _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [1] : "
         f"(tensor<2x2x{Q}>, tensor<3x2x{QW_AXIS1}>) -> tensor<2x3x{Q}>",
         f"%a: tensor<2x2x{Q}>, %b: tensor<3x2x{QW_AXIS1}>"),
     "'stablehlo.dot_general' (C16): rhs quantization_dimension 1 must not be a contracting"),
    ("dot_general storage types",
     _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         f"(tensor<2x3x{QI16}>, tensor<3x2x{QW}>) -> tensor<2x2x{Q}>",
         f"%a: tensor<2x3x{QI16}>, %b: tensor<3x2x{QW}>"),
     "'stablehlo.dot_general' (C17): lhs and rhs storage types differ: i16 vs i8"),
    ("dot_general expressed types",
     _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         f"(tensor<2x3x{Q}>, tensor<3x2x{QW}>) -> tensor<2x2x{QF16}>",
         f"%a: tensor<2x3x{Q}>, %b: tensor<3x2x{QW}>"),
     "'stablehlo.dot_general' (C18): expressed types differ: f32, f32, f16"),
    ("dot_general per-tensor result",
     _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         f"(tensor<2x3x{Q}>, tensor<3x2x{QW}>) -> tensor<2x2x{QA1}>",
         f"%a: tensor<2x3x{Q}>, %b: tensor<3x2x{QW}>"),
     "'stablehlo.dot_general' (C19): per-tensor quantized rhs needs a per-tensor"),
    ("dot_general hybrid types",
     _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
         f"(tensor<2x3xf16>, tensor<3x2x{QW}>) -> tensor<2x2xf32>",
         f"%a: tensor<2x3xf16>, %b: tensor<3x2x{QW}>"),
     "'stablehlo.dot_general' (C20): lhs element type f16, rhs expressed type f32"),
    ("convolution element types",
     _op("stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
         "window = {} : (tensor<1x4x2xf32>, tensor<3x2x2xf16>) -> tensor<1x2x2xf32>",
         "%a: tensor<1x4x2xf32>, %b: tensor<3x2x2xf16>"),
     "'stablehlo.convolution' (C27): lhs and rhs element types differ: f32 vs f16"),
    ("convolution rhs axis",
     _op(f"stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
         f"window = {{}} : (tensor<1x4x2x{Q}>, tensor<3x2x2x{QW_AXIS1}>) -> "
         f"tensor<1x2x2x{Q}>", f"%a: tensor<1x4x2x{Q}>, %b: tensor<3x2x2x{QW_AXIS1}>"),
     "'stablehlo.convolution' (C29): rhs quantization_dimension must be the kernel output"),
    ("convolution storage types",
     _op(f"stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
         f"window = {{}} : (tensor<1x4x2x{QI16}>, tensor<3x2x2x{QW}>) -> "
         f"tensor<1x2x2x{Q}>", f"%a: tensor<1x4x2x{QI16}>, %b: tensor<3x2x2x{QW}>"),
     "'stablehlo.convolution' (C31): lhs and rhs storage types differ: i16 vs i8"),
    ("broadcast_in_dim element",
     _op(f"stablehlo.broadcast_in_dim %a, dims = [0] : (tensor<2x{Q}>) -> tensor<2x3x{Q2}>",
         f"%a: tensor<2x{Q}>"),
     "'stablehlo.broadcast_in_dim' (C1): result element type"),
    ("broadcast_in_dim quantization dimension",
     _op(f"stablehlo.broadcast_in_dim %a, dims = [0, 1] : (tensor<2x2x{QA0}>) -> "
         f"tensor<2x2x{QA1}>", f"%a: tensor<2x2x{QA0}>"),
     "'stablehlo.broadcast_in_dim' (C6): result quantization_dimension must be 0, got 1"),
    ("reshape quantized dimension",
     _op(f"stablehlo.reshape %a : (tensor<2x3x{QA0}>) -> tensor<3x2x{QA1}>",
         f"%a: tensor<2x3x{QA0}>"),
     "'stablehlo.reshape' (C3): reshape must keep quantization dimension 0"),
    ("transpose quantized dimension",
     _op(f"stablehlo.transpose %a, dims = [1, 0] : (tensor<2x2x{QA0}>) -> "
         f"tensor<2x2x{QA0}>", f"%a: tensor<2x2x{QA0}>"),
     "'stablehlo.transpose' (C4): operand quantization_dimension 0 must equal "
     "permutation[0] = 1"),
    ("uniform_quantize expressed type",
     _op(f"stablehlo.uniform_quantize %a : (tensor<2xf16>) -> tensor<2x{Q}>",
         "%a: tensor<2xf16>"),
     "'stablehlo.uniform_quantize' (C2): result expressed type must be f16, got f32"),
    ("uniform_dequantize result type",
     _op(f"stablehlo.uniform_dequantize %a : (tensor<2x{Q}>) -> tensor<2xf16>",
         f"%a: tensor<2x{Q}>"),
     "'stablehlo.uniform_dequantize' (C2): result element type must be f32, got f16"),
]

VALID = [
    _op(f"stablehlo.add %a, %b : (tensor<2x2x{QA0}>, tensor<2x2x{Q}>) -> tensor<2x2x{QA0}>",
        f"%a: tensor<2x2x{QA0}>, %b: tensor<2x2x{Q}>"),
    _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
        f"(tensor<2x3x{Q}>, tensor<3x2x{QW}>) -> tensor<2x2x{Q}>",
        f"%a: tensor<2x3x{Q}>, %b: tensor<3x2x{QW}>"),
    _op(f"stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
        f"(tensor<2x3xf32>, tensor<3x2x{QW}>) -> tensor<2x2xf32>",
        f"%a: tensor<2x3xf32>, %b: tensor<3x2x{QW}>"),
    _op(f"stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
        f"window = {{}} : (tensor<1x4x2x{Q}>, tensor<3x2x2x{QW}>) -> tensor<1x2x2x{Q}>",
        f"%a: tensor<1x4x2x{Q}>, %b: tensor<3x2x2x{QW}>"),
    _op(f"stablehlo.broadcast_in_dim %a, dims = [1, 0] : (tensor<2x2x{QA0}>) -> "
        f"tensor<2x2x{QA1}>", f"%a: tensor<2x2x{QA0}>"),
    _op(f"stablehlo.transpose %a, dims = [1, 0] : (tensor<2x2x{QA0}>) -> "
        f"tensor<2x2x{QA1}>", f"%a: tensor<2x2x{QA0}>"),
    _op(f"stablehlo.reshape %a : (tensor<2x3x{QA0}>) -> tensor<2x3x1x{QA0}>",
        f"%a: tensor<2x3x{QA0}>"),
    _op(f"stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x{Q}>",
        "%a: tensor<2xf32>"),
    _op(f"stablehlo.uniform_quantize %a : (tensor<2x{Q2}>) -> tensor<2x{Q}>",
        f"%a: tensor<2x{Q2}>"),
    _arg("tensor<2x!quant.uniform<i8<-127:127>:f32, 0.5:-127>>"),
    _arg("tensor<?x!quant.uniform<ui4:bf16:0, {0.5:1, 0.25:15}>>"),
    _arg("tensor<2x!quant.uniform<u8<0:15>:f32, 0.5:3>>"),
]


def test_unsigned_storage_prints_as_the_quant_dialect_does() -> None:
    """``ui8`` and MLIR's ``u8`` storage spellings both read; ``u8`` is printed."""
    text = _arg("tensor<2x!quant.uniform<ui8:f32, 0.5:3>>")
    assert "!quant.uniform<u8:f32, 0.5:3>" in str(frontend.parse(text, "m.mlir"))


def _rejected(text: str, where: str, message: str) -> None:
    with pytest.raises(CompileError) as err:
        frontend.parse(text, "m.mlir")
    rendered = str(err.value)
    first = rendered.splitlines()[0]
    assert first.startswith(f"m.mlir:{where}: error: "), first
    assert message in first, first
    assert "^" in rendered


@pytest.mark.parametrize(("rule", "text", "where", "message"), TYPE_CASES,
                         ids=[c[0] for c in TYPE_CASES])
def test_quantized_type_rule(rule: str, text: str, where: str, message: str) -> None:
    """A bad ``!quant.uniform`` type is reported where it is written."""
    _rejected(text, where, message)


@pytest.mark.parametrize(("rule", "text", "message"), OP_CASES, ids=[c[0] for c in OP_CASES])
def test_quantized_op_rule(rule: str, text: str, message: str) -> None:
    """An op breaking a quantization rule is reported at the op."""
    _rejected(text, "2:8", message)


@pytest.mark.parametrize("text", VALID)
def test_valid_quantized_programs_pass(text: str) -> None:
    """Correct quantized programs verify and round-trip."""
    module = frontend.parse(text, "m.mlir")
    assert str(frontend.parse(str(module), "m.mlir")) == str(module)
