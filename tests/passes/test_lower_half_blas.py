"""lower-half-blas (lit-style: the RUN/CHECK lines of lower-half-blas.tl): the rewritten
program verifies, round-trips through the printer and keeps other instructions."""

from __future__ import annotations

from pathlib import Path

import tensorlang
from tensorlang.ir.compare import first_difference
from tensorlang.passes import run_pipeline
from tests.filecheck import check_opt

HERE = Path(__file__).parent
SOURCE = HERE / "lower-half-blas.tl"


def test_lit() -> None:
    check_opt(SOURCE, "lower-half-blas")


def test_result_verifies_and_round_trips() -> None:
    program = tensorlang.parse(SOURCE.read_text(), "lower-half-blas.tl")
    run_pipeline(program, "lower-half-blas,insert-barrier", verify_each=True)
    names = {inst.name for inst in program.function("gemm_f16").walk()}
    assert "gemm" not in names and {"foreach_nd", "for", "if"} <= names
    again = tensorlang.parse(str(program), "printed.tl")
    assert first_difference(program, again) is None


def test_idempotent() -> None:
    program = tensorlang.parse(SOURCE.read_text(), "lower-half-blas.tl")
    run_pipeline(program, "lower-half-blas")
    once = str(program)
    run_pipeline(program, "lower-half-blas")
    assert str(program) == once
