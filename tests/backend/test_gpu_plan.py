"""GPU-style code (rows interleaved across work-items, default (32, 4) work-groups) run
on the CPU device: the same numerics as the CPU plan."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from backend_opencl.api.compiler import compile_program
from backend_opencl.emit import Target

HERE = Path(__file__).parent
GPU = Target(kind="gpu", max_work_group_size=1024, local_mem_size=65536)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_gpu_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


GEMM = _load("test_gemm")
BLAS = _load("test_blas")
GEMM_CASES = [c for c in GEMM.CASES if c.wg is None or c.wg[0] > 2][:6]
BLAS_CASES = [c for c in BLAS.CASES if c.t in ("f32", "c64")]


@pytest.fixture(scope="module")
def module() -> object:
    text = "\n".join([GEMM.source(c) for c in GEMM_CASES] + [BLAS.source(c) for c in BLAS_CASES])
    return compile_program(text, target=GPU)


def test_plans_are_gpu_style(module) -> None:
    kernel = getattr(module, GEMM_CASES[0].name)
    assert not kernel.info.plan.blocked
    assert "get_local_id(0)" in module.source


@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: c.name)
def test_gemm_gpu_plan(module, h, rng, case) -> None:
    GEMM._run(module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))


@pytest.mark.parametrize("case", BLAS_CASES, ids=lambda c: c.name)
def test_blas_gpu_plan(module, h, rng, case) -> None:
    out = BLAS.run_case(module, h, rng, case)
    assert np.isfinite(out).all()
