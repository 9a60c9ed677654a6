"""One negative test per verified constraint family: message, rule and line:col."""

from __future__ import annotations

import pytest

import frontend
from frontend import CompileError


def _func(body: str, sig: str = "%a: tensor<2x3xf32>, %b: tensor<2x3xf32>") -> str:
    return f"func.func @main({sig}) {{\n{body}\n  func.return\n}}\n"


CASES = [
    ("elementwise shape",
     _func("  %0 = stablehlo.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x2xf32>"),
     "2:8", "'stablehlo.add' (C1): operand shape 2x3 does not match result shape 3x2"),
    ("elementwise element type",
     _func("  %0 = stablehlo.sine %a : tensor<2x3xi32>", "%a: tensor<2x3xi32>"),
     "2:8", "'stablehlo.sine' (C1): element type i32 is not allowed for sine"),
    ("broadcast_in_dim rank",
     _func("  %0 = stablehlo.broadcast_in_dim %a, dims = [0] : (tensor<2x3xf32>) -> "
           "tensor<4x2x3xf32>"),
     "2:8", "'stablehlo.broadcast_in_dim' (C2): broadcast_dimensions has 1 entries"),
    ("broadcast_in_dim sizes",
     _func("  %0 = stablehlo.broadcast_in_dim %a, dims = [1, 0] : (tensor<2x3xf32>) -> "
           "tensor<2x3xf32>"),
     "2:8", "'stablehlo.broadcast_in_dim' (C5): operand dimension 0 of size 2"),
    ("reshape size",
     _func("  %0 = stablehlo.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>"),
     "2:8", "'stablehlo.reshape' (C2): cannot reshape 2x3 (6 elements) to 7 (7 elements)"),
    ("transpose permutation",
     _func("  %0 = stablehlo.transpose %a, dims = [0, 0] : (tensor<2x3xf32>) -> "
           "tensor<2x3xf32>"),
     "2:8", "'stablehlo.transpose' (C2): [0, 0] is not a permutation of range(2)"),
    ("concatenate shapes",
     _func("  %0 = stablehlo.concatenate %a, %c, dim = 0 : (tensor<2x3xf32>, tensor<2x4xf32>)"
           " -> tensor<4x3xf32>", "%a: tensor<2x3xf32>, %c: tensor<2x4xf32>"),
     "2:8", "'stablehlo.concatenate' (C2): input shapes 2x3 and 2x4 differ outside"),
    ("slice bounds",
     _func("  %0 = stablehlo.slice %a [0:3, 0:3] : (tensor<2x3xf32>) -> tensor<3x3xf32>"),
     "2:8", "'stablehlo.slice' (C3): slice 0:3 is out of bounds for dimension 0 of size 2"),
    ("dot_general contracting sizes",
     _func("  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
           "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>"),
     "2:8", "'stablehlo.dot_general' (C10): contracting dimension sizes differ"),
    ("dot_general result shape",
     _func("  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [1] : "
           "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>"),
     "2:8", "'stablehlo.dot_general' (C12): result shape must be 2x2, got 2x3"),
    ("reduce dimensions",
     _func("  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
           "  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.add across dimensions = [2]"
           " : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>"),
     "3:8", "'stablehlo.reduce' (C4): dimensions value 2 is out of range [0, 2)"),
    ("compare type",
     _func("  %0 = stablehlo.compare LT, %a, %b, SIGNED : (tensor<2x3xf32>, tensor<2x3xf32>)"
           " -> tensor<2x3xi1>"),
     "2:8", "'stablehlo.compare' (C3): compare type SIGNED is not valid for f32"),
    ("select pred shape",
     _func("  %0 = stablehlo.select %p, %a, %b : (tensor<3xi1>, tensor<2x3xf32>, "
           "tensor<2x3xf32>) -> tensor<2x3xf32>",
           "%p: tensor<3xi1>, %a: tensor<2x3xf32>, %b: tensor<2x3xf32>"),
     "2:8", "'stablehlo.select' (C1): pred shape 3 must be scalar or equal"),
    ("while cond type",
     _func("  %0 = stablehlo.while(%i = %a) : tensor<2x3xf32>\n  cond {\n"
           "    stablehlo.return %i : tensor<2x3xf32>\n  } do {\n"
           "    stablehlo.return %i : tensor<2x3xf32>\n  }"),
     "2:8", "'stablehlo.while' (C1): cond must return tensor<i1>, got tensor<2x3xf32>"),
    ("if branch types",
     _func('  %0 = "stablehlo.if"(%p) ({\n    stablehlo.return %a : tensor<2x3xf32>\n'
           '  }, {\n    stablehlo.return %p : tensor<i1>\n  }) : (tensor<i1>) -> '
           'tensor<2x3xf32>', "%p: tensor<i1>, %a: tensor<2x3xf32>"),
     "2:8", "'stablehlo.if' (C2): branch 1 returns tensor<i1>"),
    ("gather slice sizes",
     _func('  %0 = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<'
           'offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], '
           'index_vector_dim = 1>, slice_sizes = array<i64: 1>}> : (tensor<2x3xf32>, '
           'tensor<1x1xi64>) -> tensor<1x3xf32>', "%a: tensor<2x3xf32>, %i: tensor<1x1xi64>"),
     "2:8", "'stablehlo.gather' (C20): slice_sizes has 1 entries for operand rank 2"),
    ("iota dimension",
     _func("  %0 = stablehlo.iota dim = 3 : tensor<4xi32>", ""),
     "2:8", "'stablehlo.iota' (C1): iota_dimension value 3 is out of range [0, 1)"),
    ("convolution ranks",
     _func("  %0 = stablehlo.convolution(%a, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],"
           " window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
           "(tensor<1x8x2xf32>, tensor<3x2xf32>) -> tensor<1x6x4xf32>",
           "%a: tensor<1x8x2xf32>, %w: tensor<3x2xf32>"),
     "2:8", "'stablehlo.convolution' (C1): lhs rank 3 differs from rhs rank 2"),
    ("gather result shape",
     _func('  %0 = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<'
           'offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], '
           'index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>}> : (tensor<2x3xf32>, '
           'tensor<4x1xi64>) -> tensor<1x3xf32>', "%a: tensor<2x3xf32>, %i: tensor<4x1xi64>"),
     "2:8", "'stablehlo.gather' (C22): result shape must be 4x3, got 1x3"),
    ("scatter update shape",
     _func('  %0 = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers = '
           '#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], '
           'scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({\n'
           '  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
           '    stablehlo.return %y : tensor<f32>\n'
           '  }) : (tensor<2x3xf32>, tensor<4x1xi64>, tensor<5x3xf32>) -> tensor<2x3xf32>',
           "%a: tensor<2x3xf32>, %i: tensor<4x1xi64>, %u: tensor<5x3xf32>"),
     "2:8", "'stablehlo.scatter' (C4): update scatter dimensions 5 must equal 4"),
    ("scatter computation type",
     _func('  %0 = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers = '
           '#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], '
           'scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({\n'
           '  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
           '    %c = stablehlo.convert %y : (tensor<f32>) -> tensor<f64>\n'
           '    stablehlo.return %c : tensor<f64>\n'
           '  }) : (tensor<2x3xf32>, tensor<4x1xi64>, tensor<4x3xf32>) -> tensor<2x3xf32>',
           "%a: tensor<2x3xf32>, %i: tensor<4x1xi64>, %u: tensor<4x3xf32>"),
     "2:8", "'stablehlo.scatter' (C23): update_computation must take"),
    ("reduce_window result shape",
     _func('  %c = stablehlo.constant dense<0.0> : tensor<f32>\n'
           '  %0 = "stablehlo.reduce_window"(%a, %c) <{window_dimensions = array<i64: 2, 2>}>'
           ' ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
           '    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>'
           '\n  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>'),
     "3:8", "'stablehlo.reduce_window' (C15): result shape must be 1x2, got 2x3"),
    ("select_and_scatter source shape",
     _func('  %c = stablehlo.constant dense<0.0> : tensor<f32>\n'
           '  %0 = "stablehlo.select_and_scatter"(%a, %b, %c) <{window_dimensions = '
           'array<i64: 2, 2>}> ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
           '    %p = stablehlo.compare GE, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>\n'
           '    stablehlo.return %p : tensor<i1>\n  }, {\n'
           '  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
           '    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>'
           '\n  }) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>'),
     "3:8", "'stablehlo.select_and_scatter' (C2): source shape must be 1x2, got 2x3"),
    ("convolution result shape",
     _func("  %0 = stablehlo.convolution(%a, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],"
           " window = {stride = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 :"
           " i64} : (tensor<1x8x2xf32>, tensor<3x2x4xf32>) -> tensor<1x6x4xf32>",
           "%a: tensor<1x8x2xf32>, %w: tensor<3x2x4xf32>"),
     "2:8", "'stablehlo.convolution' (C25): result shape must be 1x3x4, got 1x6x4"),
    ("convolution kernel features",
     _func("  %0 = stablehlo.convolution(%a, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],"
           " window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
           "(tensor<1x8x2xf32>, tensor<3x5x4xf32>) -> tensor<1x6x4xf32>",
           "%a: tensor<1x8x2xf32>, %w: tensor<3x5x4xf32>"),
     "2:8", "'stablehlo.convolution' (C14): kernel input feature dimension must be 2, got 5"),
    ("dynamic_slice sizes",
     _func("  %0 = stablehlo.dynamic_slice %a, %i, %i, sizes = [3, 1] : (tensor<2x3xf32>, "
           "tensor<i64>, tensor<i64>) -> tensor<3x1xf32>", "%a: tensor<2x3xf32>, %i: tensor<i64>"),
     "2:8", "'stablehlo.dynamic_slice' (C4): slice_sizes [3, 1] must lie within"),
    ("dynamic_update_slice rank",
     _func("  %0 = stablehlo.dynamic_update_slice %a, %u, %i, %i : (tensor<2x3xf32>, "
           "tensor<3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x3xf32>",
           "%a: tensor<2x3xf32>, %u: tensor<3xf32>, %i: tensor<i64>"),
     "2:8", "'stablehlo.dynamic_update_slice' (C3): update rank 1 differs from operand rank 2"),
    ("clamp bounds shape",
     _func("  %0 = stablehlo.clamp %m, %a, %a : (tensor<3xf32>, tensor<2x3xf32>, "
           "tensor<2x3xf32>) -> tensor<2x3xf32>", "%m: tensor<3xf32>, %a: tensor<2x3xf32>"),
     "2:8", "'stablehlo.clamp' (C1): min must be a scalar or have the operand's shape"),
    ("case branch types",
     _func('  %0 = "stablehlo.case"(%i) ({\n    stablehlo.return %a : tensor<2x3xf32>\n'
           '  }, {\n    stablehlo.return %i : tensor<i32>\n  }) : (tensor<i32>) -> '
           'tensor<2x3xf32>', "%i: tensor<i32>, %a: tensor<2x3xf32>"),
     "2:8", "'stablehlo.case' (C3): branch 1 returns (tensor<i32>)"),
    ("fft element types",
     _func("  %0 = stablehlo.fft %a, type = FFT, length = [3] : (tensor<2x3xf32>) -> "
           "tensor<2x3xcomplex<f32>>"),
     "2:8", "'stablehlo.fft' (C2): FFT maps complex to complex"),
    ("cholesky square",
     _func("  %0 = stablehlo.cholesky %a, lower = true : tensor<2x3xf32>"),
     "2:8", "'stablehlo.cholesky' (C3): a must be square in its last two dimensions"),
    ("tuple type",
     _func("  %0 = stablehlo.tuple %a : tuple<tensor<f32>>"),
     "2:8", "'stablehlo.tuple' (C1): result type must be tuple<tensor<2x3xf32>>"),
    ("map dimensions",
     _func('  %0 = "stablehlo.map"(%a, %b) <{dimensions = array<i64: 0>}> ({\n'
           '  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
           '    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>'
           '\n  }) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>'),
     "2:8", "'stablehlo.map' (C3): dimensions must be [0, 1]"),
    ("sort comparator",
     _func('  %0 = "stablehlo.sort"(%a) <{dimension = 0 : i64}> ({\n'
           '  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
           '    stablehlo.return %x : tensor<f32>\n  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>'),
     "2:8", "'stablehlo.sort' (C5): comparator must return tensor<i1>, got tensor<f32>"),
    ("pad result shape",
     _func("  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
           "  %0 = stablehlo.pad %a, %c, low = [1, 0], high = [0, 0], interior = [0, 1] : "
           "(tensor<2x3xf32>, tensor<f32>) -> tensor<3x3xf32>"),
     "3:8", "'stablehlo.pad' (C4): result shape must be 3x5, got 3x3"),
    ("attribute kind",
     _func('  %0 = "stablehlo.transpose"(%a) <{permutation = 1 : i64}> : (tensor<2x3xf32>)'
           ' -> tensor<3x2xf32>'),
     "2:8", "'stablehlo.transpose': attribute 'permutation' must be an array<i64: ...>"),
    ("chlo top_k",
     _func("  %0:2 = chlo.top_k(%a, k = 4) : tensor<2x3xf32> -> (tensor<2x4xf32>, "
           "tensor<2x4xi32>)"),
     "2:10", "'chlo.top_k': k = 4 must be between 0 and the last dimension"),
    ("check expected type",
     _func("  check.expect_eq_const %a, dense<1.0> : tensor<3xf32>"),
     "2:3", "'check.expect_eq_const': expected value of type tensor<3xf32> does not match"),
    ("required attribute",
     _func('  %0 = "stablehlo.transpose"(%c) : (tensor<f32>) -> tensor<f32>',
           "%c: tensor<f32>"),
     "2:8", "'stablehlo.transpose': requires attribute 'permutation'"),
    ("constant type",
     _func('  %0 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> '
           'tensor<f32>', ""),
     "2:8", "'stablehlo.constant' (C1): value has type tensor<i32> but the result is"),
    ("rng element types",
     _func("  %0 = stablehlo.rng %a, %b, %s, distribution = NORMAL : (tensor<i32>, "
           "tensor<i32>, tensor<1xi64>) -> tensor<3xi32>",
           "%a: tensor<i32>, %b: tensor<i32>, %s: tensor<1xi64>"),
     "2:8", "'stablehlo.rng' (C2): NORMAL distribution needs a float element type"),
    ("uniform_dequantize expressed type",
     _func("  %0 = stablehlo.uniform_dequantize %q : (tensor<2x!quant.uniform<i8:f32, 0.5:3>>)"
           " -> tensor<2xf64>", "%q: tensor<2x!quant.uniform<i8:f32, 0.5:3>>"),
     "2:8", "'stablehlo.uniform_dequantize' (C2): result element type must be f32"),
    ("after_all tokens",
     _func("  %0 = stablehlo.after_all %a : !stablehlo.token", "%a: tensor<f32>"),
     "2:8", "'stablehlo.after_all': inputs must be !stablehlo.token, got tensor<f32>"),
    ("composite decomposition",
     _func('  %0 = stablehlo.composite "x.y" %a {decomposition = @nowhere} : (tensor<f32>) -> '
           'tensor<f32>', "%a: tensor<f32>"),
     "2:8", "'stablehlo.composite' (C2): decomposition @nowhere is not defined"),
    ("terminator position",
     "func.func @f(%x: tensor<f32>) {\n  return\n  %0 = stablehlo.abs %x : tensor<f32>\n"
     "  return\n}\n",
     "2:3", "'func.return': must be the last operation in its block"),
    ("return types",
     "func.func @main(%a: tensor<f32>) -> tensor<i32> {\n  func.return %a : tensor<f32>\n}\n",
     "2:3", "'func.return': returns tensor<f32> but @main is declared to return tensor<i32>"),
    ("call signature",
     "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  func.return %a : tensor<f32>\n}\n"
     "func.func @main(%a: tensor<i32>) -> tensor<f32> {\n"
     "  %0 = func.call @f(%a) : (tensor<i32>) -> tensor<f32>\n  func.return %0 : tensor<f32>\n}\n",
     "5:8", "'func.call': call does not match the signature of @f"),
]


@pytest.mark.parametrize(("family", "text", "where", "message"), CASES,
                         ids=[c[0] for c in CASES])
def test_constraint_is_reported(family: str, text: str, where: str, message: str) -> None:
    """The broken program is rejected at the op with the rule's message."""
    with pytest.raises(CompileError) as err:
        frontend.parse(text, "m.mlir")
    rendered = str(err.value)
    assert rendered.startswith(f"m.mlir:{where}: error: ")
    assert message in rendered.splitlines()[0]
    assert "^" in rendered


def test_valid_programs_of_each_family_pass() -> None:
    """Fixing each case's types makes the verifier accept it (so the tests can fail)."""
    ok = _func("  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [1] : "
               "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>")
    frontend.parse(ok, "m.mlir")
