"""check-bounds: accesses isl proves out of bounds are errors; provably in-bounds and
undecidable ones (dynamic offsets) pass."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError
from tensorlang.passes import run_pipeline
from tensorlang.verify.bounds import unproven


def _func(body: str) -> str:
    return f"""func @f(%A: memref<f32x16x8>, %D: memref<f32x?x8>, %i: index) {{
  %c0 = constant 0 : index
  %c3 = constant 3 : index
  %c8 = constant 8 : index
  %c16 = constant 16 : index
{body}
}}"""


def _run(body: str) -> tensorlang.Program:
    program = tensorlang.parse(_func(body))
    run_pipeline(program, "check-bounds")
    return program


@pytest.mark.parametrize("body", [
    "  %v = load %A[%c16, %c0] : memref<f32x16x8>",
    "  %one = constant 1.0 : f32\n  store %one, %A[%c3, %c8] : memref<f32x16x8>",
    "  %o = arith.add %c8, %c16 : index\n  %s = subview %A[%o:4, :] : memref<f32x16x8>",
    "  %j = arith.add %i, %c16 : index\n  %s = subview %A[%j:4, :] : memref<f32x16x8>",
    "  %s = subview %A[0:8, 0:4] : memref<f32x16x8>\n"
    "  %v = load %s[%c0, %c8] : memref<f32x8x4,strided<1,16>>",
])
def test_proven_out_of_bounds_is_an_error(body: str) -> None:
    with pytest.raises(CompileError, match="out of bounds"):
        _run(body)


def test_in_bounds_and_unknown_pass() -> None:
    body = ("  %s = subview %A[8:8, :] : memref<f32x16x8>\n"
            "  %v = load %s[%c3, %c3] : memref<f32x8x8,strided<1,16>>\n"
            "  %t = subview %A[%i:4, :] : memref<f32x16x8>\n"
            "  %w = load %D[%c3, %c3] : memref<f32x?x8>")
    program = _run(body)
    names = [inst.name for inst in unproven(program.functions[0])]
    assert names == ["subview", "load"]  # %A[%i:4] and %D[3, 3] depend on run-time values


def test_access_in_a_branch_that_never_runs_is_not_an_error() -> None:
    # Lowered StableHLO scatters guard constant indices like this one (10 into 16 rows
    # is fine, 20 is not): the condition is false, so the load never happens.
    body = ("  %c20 = constant 20 : index\n"
            "  %ok = cmp.lt %c20, %c16 : index\n"
            "  if %ok {\n"
            "    %v = load %A[%c20, %c0] : memref<f32x16x8>\n"
            "  }")
    program = _run(body)
    assert unproven(program.functions[0]) == []
