"""Parser: syntax forms, literals, locations and friendly parse errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import frontend
from frontend import CompileError
from frontend.ir.core import walk
from frontend.ir.types import QuantizedType, TensorType


def _const(body: str, t: str) -> np.ndarray:
    m = frontend.parse(f"func.func @f() -> {t} {{\n  %0 = stablehlo.constant dense<{body}> : "
                       f"{t}\n  func.return %0 : {t}\n}}\n")
    return m.funcs[0].body.block.ops[0].attr("value")


def test_dense_literals() -> None:
    """Splats, lists, booleans, hex floats, complex pairs, blobs, empty tensors."""
    assert _const("1", "tensor<2x2xi32>").tolist() == [[1, 1], [1, 1]]
    assert _const("[[1, 2], [3, 4]]", "tensor<2x2xi8>").dtype == np.int8
    assert _const("[true, false]", "tensor<2xi1>").tolist() == [True, False]
    assert np.isneginf(_const("0xFF800000", "tensor<f32>"))
    assert _const("[1.5, 0x3F800000]", "tensor<2xf32>").tolist() == [1.5, 1.0]
    assert _const("(1.0, -2.0)", "tensor<complex<f32>>")[()] == 1 - 2j
    assert _const('"0x0100000002000000"', "tensor<2xi32>").tolist() == [1, 2]
    assert _const('"0x0100"', "tensor<2xi1>").tolist() == [True, False]
    assert _const('"0x07000000"', "tensor<3xi32>").tolist() == [7, 7, 7]
    assert _const("", "tensor<0xf32>").shape == (0,)
    assert _const("1.0", "tensor<bf16>").dtype == ml_dtypes.bfloat16
    assert _const("18446744073709551615", "tensor<ui64>")[()] == 2**64 - 1


def test_types_and_multi_results() -> None:
    """Quantized types, bounds, tuples, tokens and %0:2 / %0#1."""
    text = """
func.func @f(%q: tensor<4x!quant.uniform<i8:f32, 0.5:3>>,
             %d: tensor<?x3xf32, #stablehlo.bounds<8, ?>>,
             %t: !stablehlo.token) -> tensor<i32> {
  %0:2 = chlo.top_k(%i, k = 1) : tensor<3xi32> -> (tensor<1xi32>, tensor<1xi32>)
  func.return %c : tensor<i32>
}
"""
    with pytest.raises(CompileError, match="use of undefined value '%i'"):
        frontend.parse(text)
    m = frontend.parse(text.replace("%i,", "%k,").replace(
        "{\n  %0:2", "{\n  %k = stablehlo.iota dim = 0 : tensor<3xi32>\n  %0:2").replace(
        "func.return %c", "%c = stablehlo.reshape %0#1 : (tensor<1xi32>) -> tensor<i32>\n"
        "  func.return %c"))
    f = m.funcs[0]
    assert isinstance(f.arg_types[0].element, QuantizedType)
    assert f.arg_types[1] == TensorType((None, 3), f.arg_types[1].element, (8, None))
    ops = walk(f.body)
    assert [o.name for o in ops][:2] == ["stablehlo.iota", "chlo.top_k"]
    assert ops[2].operands[0] is ops[1].results[1]


def test_generic_and_pretty_forms_give_the_same_ir() -> None:
    """The generic spelling prints back in the pretty form."""
    generic = ('func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
               '  %0 = "stablehlo.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> '
               'tensor<2xf32>\n  "func.return"(%0) : (tensor<2xf32>) -> ()\n}\n')
    assert "%0 = stablehlo.add %arg0, %arg0 : tensor<2xf32>" in str(frontend.parse(generic))


def test_locations_are_kept() -> None:
    """Ops carry their source position; loc(...) and #loc aliases are read."""
    text = ('module {\n  func.func @f(%a: tensor<f32> loc("x.py":1:2)) -> tensor<f32> {\n'
            '    %0 = stablehlo.abs %a : tensor<f32> loc(#loc1)\n'
            '    func.return %0 : tensor<f32> loc(#loc)\n  } loc(#loc)\n} loc(#loc)\n'
            '#loc = loc(unknown)\n#loc1 = loc("x.py":3:4 to 5:6)\n')
    m = frontend.parse(text, "m.mlir")
    op = m.funcs[0].body.block.ops[0]
    assert (op.loc.line, op.loc.col) == (3, 10)
    assert str(op.src_loc) == "loc(#loc1)"
    assert (op.origin.file, op.origin.line, op.origin.col) == ("x.py", 3, 4)


def test_verifier_errors_point_at_the_source_location_too() -> None:
    """A verifier error names the op's position and, as a note, the loc(...) it carries."""
    text = ('func.func @f(%a: tensor<2xf32>) {\n'
            '  %0 = stablehlo.reshape %a : (tensor<2xf32>) -> tensor<3xf32> loc(#loc2)\n'
            '  func.return\n}\n#loc1 = loc("model.py":7:9)\n#loc2 = loc("reshape"(#loc1))\n')
    with pytest.raises(CompileError) as err:
        frontend.parse(text, "m.mlir")
    lines = str(err.value).splitlines()
    assert lines[0].startswith("m.mlir:2:8: error: 'stablehlo.reshape' (C2)")
    assert "model.py:7:9: note: the operation comes from here" in lines


@pytest.mark.parametrize(("text", "where", "message"), [
    ("func.func @f() {\n  %0 = stablehlo.constant dense<1> : tensor<2x>\n}\n", "2:47",
     "expected an element type, found '>'"),
    ("func.func @f() {\n  %0 = stablehlo.frobnicate : tensor<f32>\n}\n", "2:8",
     "unknown operation 'stablehlo.frobnicate'"),
    ("func.func @f() {\n  %0 = stablehlo.constant dense<[1, 2]> : tensor<3xi32>\n}\n",
     "2:27", "dense literal has shape 2 but the type is tensor<3xi32>"),
    ("func.func @f() {\n  %0 = stablehlo.constant dense<300> : tensor<i8>\n}\n", "2:27",
     "integer 300 does not fit in i8"),
    ("func.func @f(%a: tensor<f32>) {\n  %0 = stablehlo.abs %a : tensor<i32>\n}\n", "2:27",
     "use of value '%a' expects different type than prior uses: 'tensor<i32>' vs "
     "'tensor<f32>'"),
    ("module {\n  func.func @f( {\n", "2:17", "expected an argument name like %arg0, found '{'"),
    ("func.func @f() {\n  %0 = stablehlo.constant dense<1> : tensor<f32>\n", "3:1",
     "expected '}' to close the region, found end of input"),
    ('func.func @f() {\n  "foo.bar"() : () -> ()\n}\n', "2:3",
     "unknown operation 'foo.bar' (only stablehlo, chlo, func, check and interpreter ops"),
    ("module {\n  sdy.mesh mesh = <[]>\n}\n", "2:12", "expected a mesh name, found 'mesh'"),
    ("module {\n  sdy.mesh @mesh = [\"x\"=2]\n}\n", "2:20",
     "expected '<' to start the mesh, found '['"),
    ("module {\n  sdy.mesh @mesh = <[\"x\"=2]\n}\n", "2:20", "unbalanced brackets"),
    ("module {\n  stablehlo.add\n}\n", "2:3",
     "expected 'func.func', 'sdy.mesh' or '}', found 'stablehlo.add'"),
])
def test_parse_errors_are_diagnostics(text: str, where: str, message: str) -> None:
    """Syntax errors render as file:line:col: error: ... with a caret, never a traceback."""
    with pytest.raises(CompileError) as err:
        frontend.parse(text, "m.mlir")
    first = str(err.value).splitlines()[0]
    assert first.startswith(f"m.mlir:{where}: error: {message}")


def test_split_files_give_parts() -> None:
    """``// -----`` separates independent modules; printing keeps the markers."""
    text = ("func.func @f() {\n  func.return\n}\n// -----\n"
            "func.func @f() {\n  func.return\n}\n")
    m = frontend.parse(text)
    assert len(m.parts) == 2
    assert str(m).count("// -----") == 1
    assert str(frontend.parse(str(m))) == str(m)


def test_dense_resources_are_read_from_the_metadata_section() -> None:
    """``dense_resource<name>`` takes its bytes from ``{-# dialect_resources #-}``;
    elided ones stay symbolic and print back unchanged."""
    text = """module {
  func.func @f() -> tensor<2xi32> {
    %0 = stablehlo.constant dense_resource<blob1> : tensor<2xi32>
    %1 = stablehlo.constant dense_resource<__elided__> : tensor<2xi32>
    %2 = stablehlo.add %0, %1 : tensor<2xi32>
    return %2 : tensor<2xi32>
  }
}
{-#
  dialect_resources: { builtin: { blob1: "0x040000000100000002000000" } }
#-}
"""
    m = frontend.parse(text)
    ops = m.funcs[0].body.block.ops
    assert ops[0].attr("value").tolist() == [1, 2]
    assert "dense_resource<__elided__> : tensor<2xi32>" in str(m)
    assert str(frontend.parse(str(m))) == str(m)


def test_declarations_and_redefinitions() -> None:
    """Bodiless declarations list argument types only; SSA names cannot be redefined."""
    text = ("func.func private @g(tensor<f32>) -> tensor<f32>\n"
            "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n"
            "  %0 = func.call @g(%x) : (tensor<f32>) -> tensor<f32>\n"
            "  return %0 : tensor<f32>\n}\n")
    m = frontend.parse(text)
    assert m.funcs[0].body is None
    assert str(m).startswith("func.func private @g(tensor<f32>) -> tensor<f32>\n")
    bad = "func.func @f(%x: tensor<f32>) {\n  %x = stablehlo.abs %x : tensor<f32>\n  return\n}\n"
    with pytest.raises(CompileError) as err:
        frontend.parse(bad, "m.mlir")
    assert str(err.value).startswith("m.mlir:2:3: error: redefinition of SSA value '%x'")
    assert "m.mlir:1:14: note: previously defined here" in str(err.value)


def test_shardy_meshes_and_function_locations_print_back() -> None:
    """``sdy.mesh`` declarations, ``#sdy.sharding`` attributes and the ``loc(...)`` of
    modules, functions and arguments survive printing."""
    text = ('module @jit_f attributes {mhlo.num_partitions = 8 : i32} {\n'
            '  sdy.mesh @mesh = <["x"=2, "y"=4]>\n'
            '  sdy.mesh @ids = <["a"=2],   device_ids=[1, 0]> loc(#loc1)\n'
            '  func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = '
            '#sdy.sharding<@mesh, [{"x"}, {}]>} loc("a")) -> (tensor<8x8xf32> '
            '{jax.result_info = ""}) {\n'
            '    return %arg0 : tensor<8x8xf32>\n'
            '  } loc(#loc1)\n'
            '  func.func private @g(tensor<f32>) -> tensor<f32> loc(#loc1)\n'
            '} loc(#loc1)\n'
            '#loc1 = loc("x.py":3:4)\n')
    m = frontend.parse(text, "m.mlir")
    assert [(d.kind, d.name) for d in m.decls] == [("sdy.mesh", "mesh"), ("sdy.mesh", "ids")]
    assert str(m.funcs[0].arg_locs[0]) == 'loc("a")'
    printed = str(m)
    assert '  sdy.mesh @ids = <["a"=2], device_ids=[1, 0]> loc(#loc1)\n' in printed
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>} loc("a")) ->' in printed
    assert "  } loc(#loc1)\n" in printed
    assert "func.func private @g(tensor<f32>) -> tensor<f32> loc(#loc1)\n" in printed
    assert printed.endswith('} loc(#loc1)\n#loc1 = loc("x.py":3:4)\n')
    assert str(frontend.parse(printed, "again.mlir")) == printed


def test_shardy_annotations_inside_functions_are_the_identity() -> None:
    """``sdy.sharding_constraint`` binds its result to its operand and leaves no op
    (tests/frontend/test_jax_headers.py has the others, and what is rejected)."""
    text = ("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  %0 = sdy.sharding_constraint %a <@mesh, [{}]> : tensor<2xf32>\n"
            "  return %0 : tensor<2xf32>\n}\n")
    f = frontend.parse(text, "m.mlir").funcs[0]
    (ret,) = f.body.block.ops
    assert ret.operands == [f.args[0]]
