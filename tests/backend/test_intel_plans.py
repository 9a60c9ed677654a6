"""Plans for a compiler that vectorises across work-items (``Target.simd_across_work_items``,
set for Intel's OpenCL CPU runtime): element loops run on 16-work-item groups with
consecutive points on consecutive work-items, collectives keep the CPU plan, and PoCL's
CPU plan is unchanged.  The generated text is checked on any device, the Intel plan's
numerics on the current device (PoCL runs it too) and, under ``TLC_DEVICE=intel``, whole
StableHLO programs on Intel's runtime."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import tensorlang
from backend_opencl.api.compiler import compile_program, lower
from backend_opencl.emit import DEFAULT_TARGET, Target
from backend_opencl.emit.target import SIMD_WORK_ITEMS, choose_plan, target_from_device

INTEL = Target(max_work_group_size=8192, local_mem_size=262144,
               subgroup_sizes=(4, 8, 16, 32, 64), intel_subgroups=True,
               simd_across_work_items=True)
"""What ``target_from_device`` derives for Intel's CPU runtime on this machine."""

ELEMENTS = """
func @gelu(%a: memref<f32x?>, %out: memref<f32x?>) {
  %n = size %a[0] : memref<f32x?>
  foreach %i = 0, %n {
    %x = load %a[%i] : memref<f32x?>
    %t = math.tanh %x : f32
    %u = arith.add %t, 1.0 : f32
    %y = arith.mul %x, %u : f32
    store %y, %out[%i] : memref<f32x?>
  }
}
"""

BOX = """
func @box(%a: memref<f32x8x8x?>, %out: memref<f32x8x8x?>) {
  %g = group_id
  foreach (%i, %j) = (0, 0), (8, 8) {
    %x = load %a[%i, %j, %g] : memref<f32x8x8x?>
    %y = arith.mul %x, 3.0 : f32
    store %y, %out[%i, %j, %g] : memref<f32x8x8x?>
  }
}
"""

GEMM = """
func @mm(%a: memref<f32x?x?>, %b: memref<f32x?x?>, %c: memref<f32x?x?>) {
  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?>
}
"""


def _source(text: str, target: Target) -> str:
    return lower(tensorlang.parse(text), target).source


def _kernel(source: str, name: str) -> str:
    """The text of kernel ``name`` (from its attributes to its closing brace)."""
    start = source.rindex("kernel ", 0, source.index(f"void {name}("))
    return source[start:source.index("\n}\n", start) + 3]


def test_element_kernel_text_on_intel() -> None:
    """CHECK lines: 16 work-items, a native 16-lane subgroup, a loop strided by the
    work-group starting at the local id, no loop-vectoriser hint."""
    text = _kernel(_source(ELEMENTS, INTEL), "gelu")
    assert text.startswith("kernel __attribute__((reqd_work_group_size(16, 1, 1))) "
                           "__attribute__((intel_reqd_sub_group_size(16)))\nvoid gelu(")
    assert "const long lid = (long)get_local_id(0);" in text
    assert "for (long c0 = lid; c0 <= a_size0 - 1; c0 += 16) {" in text
    assert "vectorize_width" not in text


def test_pocl_keeps_the_one_work_item_plan() -> None:
    text = _kernel(_source(ELEMENTS, DEFAULT_TARGET), "gelu")
    assert text.startswith("kernel __attribute__((reqd_work_group_size(1, 1, 1)))\nvoid gelu(")
    assert "#pragma clang loop vectorize_width(16)" in text
    assert "get_local_id" not in text


def test_collectives_keep_the_cpu_plan() -> None:
    (func,) = tensorlang.parse(GEMM).functions
    plan = choose_plan(func, INTEL)
    assert plan.work_group_size == (1, 1) and plan.blocked
    (func,) = tensorlang.parse(ELEMENTS).functions
    plan = choose_plan(func, INTEL)
    assert plan.work_group_size == (SIMD_WORK_ITEMS, 1) and not plan.blocked
    assert plan.native_subgroups and plan.subgroup_size == 16


@pytest.mark.parametrize(("platform", "kind", "expected"), [
    ("Intel(R) OpenCL", "cpu", True),
    ("Portable Computing Language", "cpu", False),
    ("Intel(R) OpenCL Graphics", "gpu", False),
])
def test_trait_from_the_platform(platform: str, kind: str, expected: bool) -> None:
    device = SimpleNamespace(platform_name=platform, kind=kind, extensions=frozenset(),
                             max_work_group_size=8192, local_mem_size=1 << 18)
    assert target_from_device(device).simd_across_work_items is expected


def test_intel_plan_matches_numpy() -> None:
    """The Intel plan on the current device: 1000 points (not a multiple of 16)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(1000).astype(np.float32)
    out = np.full(1000, np.nan, np.float32)
    module = compile_program(ELEMENTS, target=INTEL)
    module.gelu(a, out, num_groups=1)
    np.testing.assert_allclose(out, a * (np.tanh(a) + 1), rtol=2e-6, atol=2e-6)


def test_intel_plan_box_matches_numpy() -> None:
    """An (8, 8) box over 16 work-items visits all 64 points (isl once dropped rounds)."""
    rng = np.random.default_rng(8)
    a = np.asfortranarray(rng.standard_normal((8, 8, 5)).astype(np.float32))
    out = np.asfortranarray(np.full((8, 8, 5), np.nan, np.float32))
    compile_program(BOX, target=INTEL).box(a, out, num_groups=5)
    np.testing.assert_allclose(out, 3 * a, rtol=1e-6)


# -- whole programs on Intel's runtime (TLC_DEVICE=intel) ----------------------------------

PROGRAM = """
module @m {
  func.func public @main(%a: tensor<64x1024xf32>, %b: tensor<64x1024xf32>,
                         %w: tensor<1024x32xf32>) -> (tensor<64x1024xf32>, tensor<64xf32>,
                                                     tensor<64x32xf32>) {
    %0 = stablehlo.add %a, %b : tensor<64x1024xf32>
    %1 = stablehlo.tanh %0 : tensor<64x1024xf32>
    %2 = stablehlo.multiply %1, %a : tensor<64x1024xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %z) applies stablehlo.add across dimensions = [1]
        : (tensor<64x1024xf32>, tensor<f32>) -> tensor<64xf32>
    %4 = stablehlo.dot_general %2, %w, contracting_dims = [1] x [0]
        : (tensor<64x1024xf32>, tensor<1024x32xf32>) -> tensor<64x32xf32>
    return %2, %3, %4 : tensor<64x1024xf32>, tensor<64xf32>, tensor<64x32xf32>
  }
}
"""


@pytest.fixture(scope="module")
def intel_device() -> object:
    from backend_opencl.runtime import get_device

    device = get_device()
    if not device.platform_name.lower().startswith("intel(r) opencl"):
        pytest.skip("Intel's OpenCL CPU runtime is not the current device: run with "
                    "TLC_DEVICE=intel (pip install -e '.[intel]')")
    return device


def test_intel_device_gets_the_trait(intel_device: object) -> None:
    assert target_from_device(intel_device).simd_across_work_items


def test_program_on_intel_matches_numpy(intel_device: object) -> None:
    import backend_opencl

    rng = np.random.default_rng(9)
    a, b = (rng.standard_normal((64, 1024)).astype(np.float32) for _ in range(2))
    w = rng.standard_normal((1024, 32)).astype(np.float32)
    ew, sums, dot = backend_opencl.compile_stablehlo(PROGRAM, device=intel_device)(a, b, w)
    want = np.tanh(a.astype(np.float64) + b) * a
    np.testing.assert_allclose(ew, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sums, want.sum(axis=1), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(dot, want @ w, rtol=1e-4, atol=1e-3)
