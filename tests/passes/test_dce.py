"""dce (lit-style: the RUN/CHECK lines of dce.tl): dead pure instructions go, effects stay,
the result verifies, and lowered StableHLO kernels carry no dead index arithmetic."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import tensorlang
from backend_opencl.cli import main
from tensorlang.passes import run_pipeline
from tensorlang.passes.dce import clean_function

HERE = Path(__file__).parent
SOURCE = HERE / "dce.tl"
FILECHECK = Path(sys.executable).parent / "filecheck"


def test_lit() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["opt", str(SOURCE), "-p", "dce"]) == 0
    result = subprocess.run([str(FILECHECK), str(SOURCE)], input=out.getvalue(), text=True,
                            capture_output=True, check=False)
    assert result.returncode == 0, result.stderr + "\n" + out.getvalue()


def test_verifies_and_is_idempotent() -> None:
    program = tensorlang.parse(SOURCE.read_text(), "dce.tl")
    run_pipeline(program, "dce", verify_each=True)
    assert all(clean_function(f) == 0 for f in program.functions)


def test_lowered_elementwise_kernel_has_no_dead_index_math() -> None:
    from backend_opencl.driver import emit

    text = """func.func public @main(%a: tensor<3x5x7xf32>, %b: tensor<7xf32>)
    -> tensor<3x5x7xf32> {
  %0 = stablehlo.broadcast_in_dim %b, dims = [2] : (tensor<7xf32>) -> tensor<3x5x7xf32>
  %1 = stablehlo.add %a, %0 : tensor<3x5x7xf32>
  return %1 : tensor<3x5x7xf32>
}
"""
    import frontend

    tl = emit(frontend.parse(text), "tl")
    assert "arith.div" not in tl and tl.count("arith.rem") == 1
