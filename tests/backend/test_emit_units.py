"""Unit tests of code-generation pieces that need no device: names, literals, plans."""

from __future__ import annotations

import math

import pytest

import tensorlang
from backend_opencl.emit.cnames import literal
from backend_opencl.emit.target import Target, choose_plan
from backend_opencl.emit.writer import Namer
from tensorlang.diagnostics import CompileError
from tensorlang.ir.types import C32, F32, F64, I1, I64, INDEX


def test_namer_avoids_keywords_builtins_and_duplicates() -> None:
    namer = Namer()
    names = [namer.fresh(x) for x in ["barrier", "as_float", "0", "x", "x", "int", "tlc_a"]]
    assert names == ["barrier_1", "u_as_float", "v0", "x", "x_1", "int_1", "u_tlc_a"]


@pytest.mark.parametrize("value, t, text", [
    (1.5, F32, "1.5f"), (-2.0, F64, "(-2.0)"), (math.inf, F32, "INFINITY"),
    (math.nan, F64, "((double)NAN)"), (1 + 2j, C32, "((float2)(1.0f, 2.0f))"),
    (True, I1, "true"), (-3, I64, "(-3L)"), (7, INDEX, "7L"), (1e-30, F32, "1e-30f"),
])
def test_literals(value, t, text) -> None:
    assert literal(value, t) == text


def _func(attrs: str) -> tensorlang.Function:
    return tensorlang.parse(f"func @k(){attrs} {{\n}}\n").functions[0]


def test_plan_defaults() -> None:
    cpu = choose_plan(_func(""), Target(kind="cpu"))
    assert cpu.work_group_size == (1, 1) and cpu.blocked
    gpu = choose_plan(_func(""), Target(kind="gpu", max_work_group_size=256))
    assert gpu.work_group_size == (32, 4) and gpu.subgroup_size == 32 and not gpu.blocked
    sized = choose_plan(_func(" work_group_size(24, 2)"), Target())
    assert sized.subgroup_size == 8


@pytest.mark.parametrize("attrs, message", [
    (" work_group_size(64, 64)", "exceeds"),
    (" work_group_size(8, 1) subgroup_size(16)", "multiple of the subgroup size"),
])
def test_plan_errors(attrs: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        choose_plan(_func(attrs), Target(max_work_group_size=1024))


def test_native_subgroup_sizes_are_enforced() -> None:
    intel = Target(kind="gpu", subgroup_sizes=(8, 16, 32), intel_subgroups=True)
    with pytest.raises(CompileError, match="not supported"):
        choose_plan(_func(" work_group_size(64, 1) subgroup_size(64)"), intel)
    plan = choose_plan(_func(" work_group_size(32, 1) subgroup_size(16)"), intel)
    assert plan.native_subgroups and plan.subgroup_size == 16


def test_local_memory_limit() -> None:
    from backend_opencl.emit import emit_program

    program = tensorlang.parse("func @k() {\n  %t = alloca -> memref<f64x128x128,local>\n}\n")
    with pytest.raises(CompileError, match="131072 bytes of local memory"):
        emit_program(program, Target(local_mem_size=65536))
