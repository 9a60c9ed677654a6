"""Mutation fuzzing of the StableHLO parser: only located CompileErrors escape.

Seeds are the examples' .mlir files, a sample of the conformance files and jax's
lowerings in data/ (Shardy, jax's attributes and locations); the CI budget is small and
deterministic.  ``TLC_FUZZ_CASES=100000`` runs a long campaign (docs/design.md, "Parser
fuzzing").
"""

from __future__ import annotations

from pathlib import Path

import pytest

import frontend
from frontend import CompileError
from tests import mutation
from tests.frontend import corpus

_EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.mlir"))
_CONFORMANCE = ([p for p in corpus.files() if p.stat().st_size < 5000][::37]
                if corpus.ROOT.exists() else [])
_JAX = sorted((Path(__file__).resolve().parent / "data").glob("jax_*.mlir"))


def _parse(text: str) -> None:
    module = frontend.parse(text, "fuzz.mlir")
    str(module)  # the printer must cope with whatever the verifier accepted


@pytest.mark.parametrize("seeds", [_EXAMPLES, _CONFORMANCE, _JAX],
                         ids=["examples", "conformance", "jax"])
def test_mutations_raise_only_compile_errors(seeds: list[Path]) -> None:
    """A few hundred seeded mutations: no traceback, no hang, every error located."""
    if not seeds:
        pytest.skip("no seed files")
    bad = mutation.escapes(_parse, CompileError, seeds, mutation.budget(150),
                           mutation.base_seed())
    assert not bad, "\n".join(bad)


def _func(body: str, args: str = "%a: tensor<2x3xf32>", result: str = "tensor<2x3xf32>") -> str:
    return f"func.func @f({args}) -> {result} {{\n{body}\n  return %0 : {result}\n}}\n"


_TRANSPOSE = ('  %0 = "stablehlo.transpose"(%a) {{permutation = {perm}}} : (tensor<2x3xf32>)'
              ' -> tensor<3x2xf32>')
_PAD = ("  %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
        "  %0 = stablehlo.pad %a, %c, low = [{low}, 0], high = [0, 0], interior = [0, 0] "
        ": (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>")
_CONV = ("  %0 = stablehlo.convolution(%a, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], "
         "window = {{pad = {pad}}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}"
         " : (tensor<1x3x1xf32>, tensor<1x1x1xf32>) -> tensor<1x3x1xf32>")
_CONV_ARGS = "%a: tensor<1x3x1xf32>, %w: tensor<1x1x1xf32>"


@pytest.mark.parametrize(("text", "message"), [
    ("func.func @f(%a: " + "(" * 250 + "tensor<f32>" + ")" * 250 + ") {\n  return\n}\n",
     "1:138: error: nesting too deep"),
    ("func.func @f(%a: tensor<f32>) attributes {x = " + "[" * 500 + "]" * 500 + "} {\n"
     "  return\n}\n", "1:167: error: nesting too deep"),
    ("func.func @f(%a: " + "tuple<" * 600 + "f32" + ">" * 600 + ") {\n  return\n}\n",
     "nesting too deep"),
    (_func(_TRANSPOSE.format(perm="array<f32: 1.0, 0.0>"), result="tensor<3x2xf32>"),
     "attribute 'permutation' must be an array<i64: ...>, got array<f32: 1.0, 0.0>"),
    (_func('  %0 = "stablehlo.broadcast_in_dim"(%a) {broadcast_dimensions = array<f32: 0.0, '
           '1.0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>'),
     "attribute 'broadcast_dimensions' must be an array<i64: ...>"),
    (_func(_PAD.format(low=2**64)),
     "integer 18446744073709551616 is out of range [-9223372036854775808, "),
    (_func(_CONV.format(pad="[[0, 0], []]"), _CONV_ARGS, "tensor<1x3x1xf32>"),
     "each pad entry must be a [low, high] pair"),
    (_func(_CONV.format(pad=f"[[0, {2**64}]]"), _CONV_ARGS, "tensor<1x3x1xf32>"),
     "integer 18446744073709551616 is out of range"),
    (_func("  %0 = stablehlo.constant dense<1> : tensor<2x3xf32>\n"
           "  %1 = stablehlo.constant dense<1.0> : tensor<4294967296x4294967296xf32>"),
     "tensor type has more than 2^62 elements"),
    (_func('  %0 = "stablehlo.transpose"(%a) {permutation = array<i64: 1, '
           f'{2**63}>}} : (tensor<2x3xf32>) -> tensor<3x2xf32>', result="tensor<3x2xf32>"),
     "is out of range"),
    ("func.func @f(%a: tensor<" + "9" * 5000 + "xf32>) {\n  return\n}\n",
     "tensor type has more than 2^62 elements"),
    (_func("  %0 = stablehlo.constant dense<" + "9" * 5000 + "> : tensor<2x3xi32>"),
     "(5000 characters) is out of range"),
    (_func("  %0 = stablehlo.constant dense<" + "9" * 5000 + "> : tensor<2x3xf32>"),
     "float literal 99999999999999999999... is out of range for f32"),
    ("func.func @f() attributes {x = " + "9" * 5000 + " : i64} {\n  return\n}\n",
     "(5000 characters) does not fit in i64"),
])
def test_former_tracebacks_are_located_errors(text: str, message: str) -> None:
    """The issue's examples: each is a CompileError with file:line:col and a caret."""
    with pytest.raises(CompileError) as info:
        frontend.parse(text, "m.mlir")
    rendered = str(info.value)
    assert rendered.startswith("m.mlir:") and message in rendered, rendered
    assert "^" in rendered.splitlines()[2]


def test_huge_splat_constant_stays_lazy() -> None:
    """A splat of 2^34 elements parses, verifies and prints without building its data."""
    t = "tensor<17179869184xf32>"
    text = (f"func.func @f() -> {t} {{\n  %0 = stablehlo.constant dense<1.5> : {t}\n"
            f"  return %0 : {t}\n}}\n")
    with mutation.time_limit(10):
        module = frontend.parse(text, "m.mlir")
        assert f"dense<1.5> : {t}" in str(module)


def test_program_with_a_big_splat_constant_runs() -> None:
    """Lazy splats still lower: a 512x512 splat added to a random input."""
    import numpy as np

    import backend_opencl

    t = "tensor<512x512xf32>"
    text = (f"func.func @main(%x: {t}) -> {t} {{\n"
            f"  %c = stablehlo.constant dense<0.25> : {t}\n"
            f"  %0 = stablehlo.add %x, %c : {t}\n  return %0 : {t}\n}}\n")
    x = np.random.default_rng(5).standard_normal((512, 512)).astype(np.float32)
    (out,) = backend_opencl.compile_stablehlo(text)(x)
    np.testing.assert_allclose(out, x + np.float32(0.25), rtol=1e-6)


@pytest.mark.parametrize("name", ["bad.mlir", "bad.tl"])
def test_cli_reports_a_file_that_is_not_utf8(tmp_path: Path, name: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Bytes that are no UTF-8 text are a located error, not a UnicodeDecodeError."""
    from backend_opencl.tools.cli import main

    path = tmp_path / name
    path.write_bytes(b"func @k() {\r\n  \xff\xfe\n}\n")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: the file is not UTF-8 text (byte 0xff)"), err


def test_cli_reads_crlf_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Windows line ends read as before (errors keep their line numbers)."""
    from backend_opencl.tools.cli import main

    path = tmp_path / "k.tl"
    path.write_bytes(b"func @k() {\r\n  %x = constant 1 : i32\r\n  %x = constant 2 : i32\r\n}\r\n")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:3:")
