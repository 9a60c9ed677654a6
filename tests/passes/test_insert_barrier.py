"""insert-barrier (lit-style: the RUN/CHECK lines of insert-barrier.tl) and the pass
manager's pipeline parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

import tensorlang
from tensorlang.diagnostics import TlcError
from tensorlang.passes import REGISTRY, parse_pipeline, run_pipeline
from tests.filecheck import check_opt

HERE = Path(__file__).parent


def test_lit() -> None:
    check_opt(HERE / "insert-barrier.tl", "insert-barrier")


def test_idempotent() -> None:
    program = tensorlang.parse((HERE / "insert-barrier.tl").read_text())
    run_pipeline(program, "insert-barrier", verify_each=True)
    once = str(program)
    run_pipeline(program, "insert-barrier,insert-barrier", verify_each=True)
    assert str(program) == once


def test_pipeline_parsing() -> None:
    assert [type(p) for p in parse_pipeline(" insert-barrier , insert-barrier{} ", REGISTRY)] \
        == [REGISTRY["insert-barrier"]] * 2
    assert parse_pipeline("", REGISTRY) == []
    with pytest.raises(TlcError, match="unknown pass 'nope'"):
        parse_pipeline("nope", REGISTRY)
    with pytest.raises(TlcError, match="has no option 'x'"):
        parse_pipeline("insert-barrier{x=1}", REGISTRY)


DEPENDENT = """func @{name}(%A: memref<f32x16x8>, %B: memref<f32x8x8>, %C: memref<f32x8x16>,
                %D: memref<f32x16x16>) {attrs} {{
  %t = alloca -> memref<f32x16x8,local>
  %zero = constant 0.0 : f32
  %one = constant 1.0 : f32
  gemm.n.t %one, %A, %B, %zero, %t : f32, memref<f32x16x8>, memref<f32x8x8>, f32,
    memref<f32x16x8,local>
  gemm.n.n %one, %t, %C, %one, %D : f32, memref<f32x16x8,local>, memref<f32x8x16>, f32,
    memref<f32x16x16>
}}
"""


def test_single_item_skips_only_functions_that_leave_the_work_group_to_the_target() -> None:
    """``single_item`` (a CPU plan: one work-item per group): no barriers where the
    function chose no work-group or subgroup size; kept where it chose several items."""
    text = "".join(DEPENDENT.format(name=name, attrs=attrs) for name, attrs in (
        ("left", ""), ("chosen", "work_group_size(16,1)"), ("subgroups", "subgroup_size(8)")))
    program = tensorlang.parse(text)
    run_pipeline(program, "insert-barrier{single_item=true}", verify_each=True)
    barriers = {f.name: sum(i.name == "barrier" for i in f.walk()) for f in program.functions}
    assert barriers == {"left": 0, "chosen": 1, "subgroups": 1}
    default = tensorlang.parse(text)
    run_pipeline(default, "insert-barrier", verify_each=True)
    assert all(sum(i.name == "barrier" for i in f.walk()) == 1 for f in default.functions)
