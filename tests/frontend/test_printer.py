"""The printer writes each op in its pretty form, and reparsing gives the same text."""

from __future__ import annotations

import pytest

import frontend

_SIG = "%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %i: tensor<i64>, %t: tuple<tensor<f32>>"


def _body(line: str) -> str:
    """The first op line of ``line`` wrapped in a function, as printed."""
    text = f"func.func @f({_SIG}) {{\n  {line}\n  func.return\n}}\n"
    printed = str(frontend.parse(text, "m.mlir"))
    assert str(frontend.parse(printed, "again.mlir")) == printed
    return printed.splitlines()[1].strip()


@pytest.mark.parametrize(("source", "pretty"), [
    ('%0 = "stablehlo.add"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>',
     "%0 = stablehlo.add %arg0, %arg0 : tensor<2x3xf32>"),
    ('%0 = "stablehlo.broadcast_in_dim"(%a) <{broadcast_dimensions = array<i64: 0, 1>}> : '
     '(tensor<2x3xf32>) -> tensor<2x3xf32>',
     "%0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<2x3xf32>) -> "
     "tensor<2x3xf32>"),
    ('%0 = "stablehlo.compare"(%a, %a) {comparison_direction = #stablehlo<comparison_direction'
     ' LT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x3xf32>, '
     'tensor<2x3xf32>) -> tensor<2x3xi1>',
     "%0 = stablehlo.compare LT, %arg0, %arg0, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
     "tensor<2x3xi1>"),
    ('%0 = "stablehlo.slice"(%a) <{start_indices = array<i64: 0, 1>, limit_indices = '
     'array<i64: 2, 3>, strides = array<i64: 1, 2>}> : (tensor<2x3xf32>) -> tensor<2x1xf32>',
     "%0 = stablehlo.slice %arg0 [0:2, 1:3:2] : (tensor<2x3xf32>) -> tensor<2x1xf32>"),
    ('%0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<'
     'lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : '
     '(tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>',
     "%0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : "
     "(tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>"),
    ('%0 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x3xi32>',
     "%0 = stablehlo.iota dim = 1 : tensor<2x3xi32>"),
    ('%0 = "stablehlo.get_tuple_element"(%t) <{index = 0 : i32}> : (tuple<tensor<f32>>) -> '
     'tensor<f32>',
     "%0 = stablehlo.get_tuple_element %arg3[0] : (tuple<tensor<f32>>) -> tensor<f32>"),
    ('%0 = "stablehlo.select"(%p, %a, %a) : (tensor<i1>, tensor<2x3xf32>, tensor<2x3xf32>) -> '
     'tensor<2x3xf32>',
     "%1 = stablehlo.select %0, %arg0, %arg0 : tensor<i1>, tensor<2x3xf32>"),
    ('%0 = "stablehlo.dynamic_slice"(%a, %i, %i) <{slice_sizes = array<i64: 1, 2>}> : '
     '(tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<1x2xf32>',
     "%0 = stablehlo.dynamic_slice %arg0, %arg2, %arg2, sizes = [1, 2] : (tensor<2x3xf32>, "
     "tensor<i64>, tensor<i64>) -> tensor<1x2xf32>"),
    ('%0 = "stablehlo.reduce_precision"(%a) <{exponent_bits = 5 : i32, mantissa_bits = 10 : '
     'i32}> : (tensor<2x3xf32>) -> tensor<2x3xf32>',
     "%0 = stablehlo.reduce_precision %arg0, format = e5m10 : tensor<2x3xf32>"),
])
def test_generic_input_prints_pretty(source: str, pretty: str) -> None:
    """Generic spellings come out in the pretty form MLIR uses."""
    if "%p" in source:
        source = "%p = stablehlo.constant dense<true> : tensor<i1>\n  " + source
        text = f"func.func @f({_SIG}) {{\n  {source}\n  func.return\n}}\n"
        printed = str(frontend.parse(text)).splitlines()[2].strip()
        assert printed == pretty
        return
    assert _body(source) == pretty


def test_reduce_prints_applies_form_and_region_form() -> None:
    """A reducer that is one binary op prints as ``applies``; others as ``reducer``."""
    text = """func.func @f(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
   reducer(%x: tensor<f32>, %y: tensor<f32>) {
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }
  %1 = stablehlo.reduce(%a init: %c) across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
   reducer(%x: tensor<f32>, %y: tensor<f32>) {
    %s = stablehlo.add %y, %x : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }
  func.return %1 : tensor<2xf32>
}
"""  # noqa: E501
    printed = str(frontend.parse(text))
    assert ("%1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = "
            "[1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>") in printed
    assert "reducer(%arg1: tensor<f32>, %arg2: tensor<f32>) {" in printed
    assert str(frontend.parse(printed)) == printed


def test_constants_print_exactly() -> None:
    """NaN payloads, -0.0, infinities and bf16 values survive a print/parse cycle."""
    text = """func.func @f() {
  %0 = stablehlo.constant dense<[0x7FC00001, -0.0, 0xFF800000, 0.1]> : tensor<4xf32>
  %1 = stablehlo.constant dense<[1.5, 0.1]> : tensor<2xbf16>
  %2 = stablehlo.constant dense<[(1.0, 2.5), (0x7FF0000000000000, -0.0)]> : tensor<2xcomplex<f64>>
  func.return
}
"""
    m = frontend.parse(text)
    again = frontend.parse(str(m))
    for a, b in zip(m.funcs[0].body.block.ops, again.funcs[0].body.block.ops, strict=True):
        assert a.attrs == b.attrs
    assert "0x7FC00001" in str(m)


_RARE = """func.func @f(%a: tensor<2x2xf32>, %v: tensor<2xf32>, %s: tensor<2xi64>, %i: tensor<i64>,
             %t: !stablehlo.token) {
  %0 = stablehlo.cholesky %a, lower = true : tensor<2x2xf32>
  %1 = stablehlo.dot %a, %v, precision = [DEFAULT, HIGH] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = stablehlo.broadcast %v, sizes = [3] : (tensor<2xf32>) -> tensor<3x2xf32>
  %3 = stablehlo.create_token : !stablehlo.token
  %4 = stablehlo.replica_id : tensor<ui32>
  %5 = stablehlo.real_dynamic_slice %a, %s, %s, %s : (tensor<2x2xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %6 = stablehlo.dynamic_pad %a, %c, %s, %s, %s : (tensor<2x2xf32>, tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  %7 = stablehlo.uniform_quantize %v : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-3>>
  %8 = stablehlo.custom_call @"my target"(%a) {has_side_effect = true} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %9 = chlo.broadcast_add %a, %v {broadcast_dimensions = array<i64: 1>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %10:2 = chlo.top_k(%a, k = 1) : tensor<2x2xf32> -> (tensor<2x1xf32>, tensor<2x1xi32>)
  %11 = stablehlo.after_all %t, %3 : !stablehlo.token
  %12 = stablehlo.tuple %a, %t : tuple<tensor<2x2xf32>, !stablehlo.token>
  %13 = stablehlo.get_tuple_element %12[1] : (tuple<tensor<2x2xf32>, !stablehlo.token>) -> !stablehlo.token
  %14 = stablehlo.rng %c, %c, %s, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>
  %15 = stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi64>) -> tensor<?x?xi32>
  %16 = stablehlo.dynamic_broadcast_in_dim %v, %s, dims = [1] : (tensor<2xf32>, tensor<2xi64>) -> tensor<?x2xf32>
  %17 = stablehlo.get_dimension_size %a, dim = 1 : (tensor<2x2xf32>) -> tensor<i32>
  %18 = stablehlo.dynamic_reshape %a, %s : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %19 = stablehlo.is_finite %a : (tensor<2x2xf32>) -> tensor<2x2xi1>
  %20 = stablehlo.complex %v, %v : tensor<2xcomplex<f32>>
  %21 = stablehlo.real %20 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  %22 = stablehlo.fft %20, type = FFT, length = [2] : (tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>>
  %23 = stablehlo.reverse %a, dims = [0] : tensor<2x2xf32>
  %24 = stablehlo.concatenate %v, %v, dim = 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  %25 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %26 = stablehlo.bitcast_convert %v : (tensor<2xf32>) -> tensor<2xi32>
  %27 = stablehlo.dynamic_update_slice %a, %a, %i, %i : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<i64>, tensor<i64>) -> tensor<2x2xf32>
  %28 = stablehlo.clamp %c, %a, %c : (tensor<f32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %29:2 = stablehlo.optimization_barrier %a, %v : tensor<2x2xf32>, tensor<2xf32>
  func.return
}
"""  # noqa: E501


def test_every_pretty_syntax_round_trips() -> None:
    """Ops outside the corpus print in a form that parses back to the same text."""
    printed = str(frontend.parse(_RARE, "rare.mlir"))
    assert str(frontend.parse(printed, "printed.mlir")) == printed
    assert '@"my target"(%arg0) {has_side_effect = true}' in printed
    assert "chlo.top_k(%arg0, k = 1) : tensor<2x2xf32> -> (tensor<2x1xf32>, " in printed
    assert "stablehlo.dot %arg0, %arg1, precision = [DEFAULT, HIGH] :" in printed
