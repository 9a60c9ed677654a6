"""dce (lit-style: the RUN/CHECK lines of dce.tl): dead pure instructions go, effects stay,
the result verifies, and lowered StableHLO kernels carry no dead index arithmetic."""

from __future__ import annotations

from pathlib import Path

import tensorlang
from tensorlang.passes import run_pipeline
from tensorlang.passes.dce import clean_function
from tests.filecheck import check_opt

HERE = Path(__file__).parent
SOURCE = HERE / "dce.tl"


def test_lit() -> None:
    check_opt(SOURCE, "dce")


def test_verifies_and_is_idempotent() -> None:
    program = tensorlang.parse(SOURCE.read_text(), "dce.tl")
    run_pipeline(program, "dce", verify_each=True)
    assert all(clean_function(f) == 0 for f in program.functions)


def test_lowered_elementwise_kernel_has_no_dead_index_math() -> None:
    from backend_opencl.api.compiler import emit

    text = """func.func public @main(%a: tensor<3x5x7xf32>, %b: tensor<7xf32>)
    -> tensor<3x5x7xf32> {
  %0 = stablehlo.broadcast_in_dim %b, dims = [2] : (tensor<7xf32>) -> tensor<3x5x7xf32>
  %1 = stablehlo.add %a, %0 : tensor<3x5x7xf32>
  return %1 : tensor<3x5x7xf32>
}
"""
    import frontend

    tl = emit(frontend.parse(text), "tl")
    # A multi-dimensional foreach indexes the operands directly: no div/rem at all.
    assert "arith.div" not in tl and "arith.rem" not in tl
    assert tl.count("arith.mul") == 2
