"""The API and CLI: argument checking, unsupported ops, tlc run and tlc compile --emit tl."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import backend_opencl
from backend_opencl.tools.cli import main
from tensorlang.diagnostics import CompileError, LaunchError
from tests.lowering.conftest import module, rand

ADD = module("(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32>", """
  %0 = stablehlo.add %a, %b : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>""")


@pytest.mark.parametrize("args, message", [
    ((rand((2, 3)),), "expected 2 arguments, got 1"),
    ((rand((2, 3)), rand((2, 3), np.float64)), "argument 1 must have dtype float32"),
    ((rand((2, 3)), rand((3, 2))), "argument 1 must have shape (2, 3)"),
])
def test_wrong_arguments(args: tuple[np.ndarray, ...], message: str) -> None:
    exe = backend_opencl.compile_stablehlo(ADD)
    with pytest.raises(LaunchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        exe(*args)


def test_compilation_is_cached() -> None:
    assert backend_opencl.compile_stablehlo(ADD) is backend_opencl.compile_stablehlo(ADD)


def test_unsupported_op_points_at_it() -> None:
    text = module("(%a: tensor<4xf32>) -> tensor<4xf32>", """
  %t = stablehlo.create_token : !stablehlo.token
  %0:2 = "stablehlo.infeed"(%t) {infeed_config = ""}
      : (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)
  return %0#0 : tensor<4xf32>""")
    with pytest.raises(CompileError) as err:
        backend_opencl.compile_stablehlo(text, filename="f.mlir")
    assert "f.mlir:4:10: error: 'stablehlo.infeed' is not supported yet" in str(err.value)


def test_tlc_run_and_emit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "add.mlir"
    src.write_text(ADD)
    a, b = rand((2, 3)), rand((2, 3))
    np.savez(tmp_path / "in.npz", a=a, b=b)
    assert main(["run", str(src), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(tmp_path / "out.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["result0"], a + b)
    assert main(["compile", str(src), "--emit", "tl"]) == 0
    assert "func @k0_add" in capsys.readouterr().out


def test_tlc_run_bad_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "add.mlir"
    src.write_text(ADD)
    assert main(["run", str(src), "--entry", "nope"]) == 1
    assert "no function @nope" in capsys.readouterr().err
