"""Scheduled (isl-generated) contraction loops against numpy: sizes that do not divide the
tiles or register blocks, transposed and strided operands, dynamic shapes, CPU (blocked)
and GPU (interleaved) plans, a batched kernel over work-groups."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import backend_opencl
from backend_opencl.api.compiler import compile_program
from backend_opencl.emit import Target

HERE = Path(__file__).parent
GPU = Target(kind="gpu", max_work_group_size=1024, local_mem_size=65536)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_sched_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


GEMM = _load("test_gemm")
Case = GEMM.Case
CASES = [
    Case("f32", "n", "n", 56, 9, 9),
    Case("f64", "n", "n", 17, 13, 5, dynamic=True),
    Case("f32", "t", "n", 9, 23, 7, strided=True, wg=(2, 3)),
    Case("f32", "n", "t", 33, 5, 3, dynamic=True, strided=True, wg=(4, 1)),
    Case("f64", "t", "t", 7, 7, 7, dynamic=True, wg=(1, 2)),
    Case("f32", "n", "n", 64, 64, 64, beta="zero"),
    Case("c32", "t", "n", 10, 5, 4, dynamic=True),
    Case("f32", "n", "n", 3, 1, 2, dynamic=True, strided=True),
]


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile("\n".join(GEMM.source(c) for c in CASES) + BATCHED)


@pytest.fixture(scope="module")
def gpu_module() -> object:
    return compile_program("\n".join(GEMM.source(c) for c in CASES[:5]), target=GPU)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_scheduled_gemm(module, h, rng, case) -> None:
    GEMM._run(module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))


@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: c.name)
def test_scheduled_gemm_gpu_plan(gpu_module, h, rng, case) -> None:
    GEMM._run(gpu_module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))


BATCHED = """
func @batched(%A: memref<f32x?x?x?>, %B: memref<f32x?x?x?>, %C: memref<f32x?x?x?>) {
  %g = group_id
  %one = constant 1.0 : f32
  %a = subview %A[:, :, %g] : memref<f32x?x?x?>
  %b = subview %B[:, :, %g] : memref<f32x?x?x?>
  %c = subview %C[:, :, %g] : memref<f32x?x?x?>
  gemm.n.n %one, %a, %b, %one, %c : f32, memref<f32x?x?,strided<1,?>>,
    memref<f32x?x?,strided<1,?>>, f32, memref<f32x?x?,strided<1,?>>
}
"""


@pytest.mark.parametrize("m, k, n", [(56, 9, 9), (5, 3, 11)])
def test_batched_dynamic(module, h, rng, m, k, n) -> None:
    batch = 7
    A, B, C = (h.rand(rng, s, "f32") for s in ((m, k, batch), (k, n, batch), (m, n, batch)))
    want = np.einsum("ikb,kjb->ijb", A.astype(np.float64), B.astype(np.float64)) + C
    module.batched(A, B, C, num_groups=batch)
    h.close(C, want, "f32")
