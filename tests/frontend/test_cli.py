"""``tlc check`` / ``tlc compile --emit shlo`` on StableHLO files."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend_opencl.tools.cli import main

GOOD = """module @m {
  func.func public @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
    %0 = "stablehlo.transpose"(%a) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
    return %0 : tensor<3x2xf32>
  }
}
"""  # noqa: E501


def test_check_accepts_and_compile_prints_pretty(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A valid file checks silently; --emit shlo prints the canonical pretty form."""
    path = tmp_path / "m.mlir"
    path.write_text(GOOD)
    assert main(["check", str(path)]) == 0
    assert main(["compile", str(path), "--emit", "shlo"]) == 0
    out = capsys.readouterr().out
    assert "%0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> " in out


def test_check_reports_a_located_diagnostic(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A broken file gives exit status 1 and file:line:col: error: with a caret."""
    path = tmp_path / "bad.mlir"
    path.write_text(GOOD.replace("1, 0>", "1, 1>"))
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:3:10: error: 'stablehlo.transpose' (C2): [1, 1] is not a "
                          "permutation of range(2)")
    assert "^~~" in err
    assert "Traceback" not in err
