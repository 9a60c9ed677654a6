"""Native subgroups (``cl_intel_subgroups``, e.g. Intel's OpenCL CPU runtime): the subgroup
queries and GPU-style tilings with hardware subgroups of 8 and 16 work-items.

The queries must give what the emulation (local id / size) gives on every device; GPU-style
plans (rows interleaved across work-items, local-memory staging) with a required native
subgroup size must compute what numpy does.  Skipped on devices without native subgroups
(PoCL); run them with ``TLC_DEVICE=intel`` after ``pip install -e '.[intel]'``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from backend_opencl.api.compiler import compile_program
from backend_opencl.emit import Target
from backend_opencl.emit.target import target_from_device
from backend_opencl.runtime import get_device
from tests.backend import test_blas as BLAS
from tests.backend import test_gemm as GEMM

SIZES = (8, 16)

QUERIES = """
func @queries_{sg}(%out: memref<i32x{n}x4>) work_group_size({wx}, 2) subgroup_size({sg}) {{
  %zero = constant 0 : index
  %n = constant {n} : index
  %k0 = constant 0 : index
  %k1 = constant 1 : index
  %k2 = constant 2 : index
  %k3 = constant 3 : index
  foreach %i = %zero, %n {{
    %a = subgroup_id
    %b = subgroup_local_id
    %c = subgroup_size
    %d = num_subgroups
    store %a, %out[%i, %k0] : memref<i32x{n}x4>
    store %b, %out[%i, %k1] : memref<i32x{n}x4>
    store %c, %out[%i, %k2] : memref<i32x{n}x4>
    store %d, %out[%i, %k3] : memref<i32x{n}x4>
  }}
}}
"""


def _native_target() -> Target:
    target = target_from_device(get_device())
    if not target.native_subgroups or not set(SIZES) <= set(target.subgroup_sizes):
        pytest.skip("the device has no native subgroups of sizes 8 and 16 (cl_intel_subgroups)")
    return target


def _queries(sg: int) -> tuple[str, int, int]:
    wx = 2 * sg
    items = 2 * wx
    return QUERIES.format(sg=sg, wx=wx, n=3 * items), items, 3 * items


def _expected(sg: int, items: int, n: int) -> np.ndarray:
    lid = np.arange(n) % items  # foreach points are dealt cyclically when the body asks
    return np.asfortranarray(np.stack(
        [lid // sg, lid % sg, np.full(n, sg), np.full(n, items // sg)], axis=1).astype(np.int32))


@pytest.mark.parametrize("sg", SIZES)
def test_native_queries_match_the_emulation(sg: int) -> None:
    native = _native_target()
    text, items, n = _queries(sg)
    for target in (native, replace(native, intel_subgroups=False)):
        module = compile_program(text, target=target)
        if target.native_subgroups:
            assert "get_sub_group_local_id()" in module.source
            assert f"intel_reqd_sub_group_size({sg})" in module.source
        else:
            assert "get_sub_group" not in module.source
        out = np.asfortranarray(np.full((n, 4), -7, np.int32))
        getattr(module, f"queries_{sg}")(out)
        np.testing.assert_array_equal(out, _expected(sg, items, n))


GEMM_CASES = GEMM.CASES
BLAS_CASES = [c for c in BLAS.CASES if c.t in ("f32", "c64")]


@pytest.fixture(scope="module", params=SIZES, ids=lambda sg: f"sg{sg}")
def gpu_module(request: pytest.FixtureRequest) -> tuple[object, int]:
    """GEMM and BLAS kernels in GPU-style plans with one native subgroup size."""
    native = _native_target()
    sg = request.param
    target = replace(native, kind="gpu", subgroup_sizes=(sg,), max_work_group_size=1024,
                     local_mem_size=65536)
    text = "\n".join([GEMM.source(c) for c in GEMM_CASES] + [BLAS.source(c) for c in BLAS_CASES])
    return compile_program(text, target=target), sg


def test_gpu_plans_require_the_native_size(gpu_module: tuple[object, int]) -> None:
    module, sg = gpu_module
    plan = getattr(module, GEMM_CASES[0].name).info.plan
    assert plan.native_subgroups and plan.subgroup_size == sg and not plan.blocked
    assert plan.work_group_size[0] == sg
    assert f"intel_reqd_sub_group_size({sg})" in module.source


def test_sums_reduce_through_subgroups(gpu_module: tuple[object, int]) -> None:
    """f32 ``sum`` kernels reduce each subgroup in registers (``sub_group_reduce_add``),
    complex ones keep the local-memory tree; test_blas_native_subgroups checks both."""
    module, _ = gpu_module
    assert any(c.t == "f32" and c.name.startswith("sum") for c in BLAS_CASES)
    assert "sub_group_reduce_add(acc)" in module.source


@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: c.name)
def test_gemm_native_subgroups(gpu_module: tuple[object, int], h, rng, case) -> None:
    module, _ = gpu_module
    GEMM._run(module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))


@pytest.mark.parametrize("case", BLAS_CASES, ids=lambda c: c.name)
def test_blas_native_subgroups(gpu_module: tuple[object, int], h, rng, case) -> None:
    module, _ = gpu_module
    out = BLAS.run_case(module, h, rng, case)
    assert np.isfinite(out).all()


def test_cpu_default_work_group_falls_back_to_emulated_subgroups() -> None:
    import tensorlang
    from backend_opencl.emit.target import choose_plan

    intel_cpu = Target(kind="cpu", subgroup_sizes=(4, 8, 16, 32, 64), intel_subgroups=True)
    func = tensorlang.parse("func @k() {\n}\n").functions[0]
    plan = choose_plan(func, intel_cpu)
    assert plan.work_group_size == (1, 1) and plan.subgroup_size == 1
    assert not plan.native_subgroups
    sized = tensorlang.parse("func @k() work_group_size(24, 2) {\n}\n").functions[0]
    plan = choose_plan(sized, intel_cpu)
    assert plan.subgroup_size == 8 and plan.native_subgroups
