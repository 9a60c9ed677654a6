"""Runs of independent launches merged side by side into one kernel
(:mod:`frontend.lower.core.merge_independent`): which launches merge, the work-group
ranges of the parts, what keeps a launch apart, and programs against numpy with
poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl
import frontend
from frontend.lower import lower_function, merged_launches
from frontend.lower.core.merge_independent import merge_independent
from frontend.lower.core.merge_launches import MAX_PARTS
from tensorlang.plan import Copy, Free, Launch, launches

from .conftest import RNG, module

SCALE = """func @k{n}(%b{a}: memref<f32x{size}>, %b{o}: memref<f32x{size}>) {{
  %g1 = group_id
  %c2 = constant {block} -> index
  %t3 = arith.mul %g1, %c2 : index
  %t4 = arith.add %t3, %c2 : index
  foreach %i5 = %t3, %t4 : index {{
    %x6 = load %b{a}[%i5] : memref<f32x{size}>
    %t7 = arith.add %x6, %x6 : f32
    store %t7, %b{o}[%i5] : memref<f32x{size}>
  }}
}}"""


def scale(n: int, a: int, o: int, size: int = 64, block: int = 16) -> str:
    """Kernel ``k{n}``: buffer ``o`` = 2 x buffer ``a``, ``block`` elements a work-group."""
    return SCALE.format(n=n, a=a, o=o, size=size, block=block)


def test_independent_launches_share_one_kernel() -> None:
    texts = [scale(0, 0, 1), scale(1, 2, 3, size=32)]
    steps = (Launch("k0", (0, 1), 4), Free((0,)), Launch("k1", (2, 3), 2))
    kept, merged = merge_independent(texts, steps, params=(0, 2))
    assert merged == (Launch("k0_side0", (0, 1, 2, 3), 6), Free((0,)))
    (text,) = kept
    assert text.startswith("func @k0_side0(%b0: memref<f32x64>, %b1: memref<f32x64>, "
                           "%b2: memref<f32x32>, %b3: memref<f32x32>) {\n"
                           "  %tlc_gid = group_id\n")
    # part 1 runs on work-groups 4 and 5, as its own work-groups 0 and 1
    assert "%tlc_start1 = constant 4 -> index" in text
    assert "%tlc_end1 = constant 6 -> index" in text
    assert "%g1_1 = arith.sub %tlc_gid, %tlc_start1 : index" in text
    assert "store %t7_1, %b3[%i5_1]" in text


def test_a_launch_reading_what_the_run_writes_starts_a_new_run() -> None:
    texts = [scale(0, 0, 1), scale(1, 1, 2), scale(2, 3, 4)]
    steps = (Launch("k0", (0, 1), 4), Launch("k1", (1, 2), 4), Launch("k2", (3, 4), 4))
    _, merged = merge_independent(texts, steps, params=(0, 3))
    assert [(s.kernel, s.num_groups) for s in launches(merged)] == [("k0", 4),
                                                                     ("k1_side0", 8)]


def test_a_launch_writing_what_the_run_reads_or_writes_starts_a_new_run() -> None:
    texts = [scale(0, 0, 1), scale(1, 2, 0), scale(2, 3, 1)]
    steps = (Launch("k0", (5, 1), 4), Launch("k1", (2, 5), 4))  # k1 writes what k0 reads
    assert merge_independent(texts, steps, params=(2,))[1] == steps
    steps = (Launch("k0", (0, 1), 4), Launch("k2", (3, 1), 4))  # both write buffer 1
    assert merge_independent(texts, steps, params=(0, 3))[1] == steps


def test_reading_one_buffer_together_is_independent() -> None:
    texts = [scale(0, 0, 1), scale(1, 0, 2)]
    steps = (Launch("k0", (0, 1), 4), Launch("k1", (0, 2), 4))
    _, merged = merge_independent(texts, steps, params=(0,))
    assert merged == (Launch("k0_side0", (0, 1, 2), 8),)


def test_what_keeps_a_launch_apart() -> None:
    """A kernel writing a parameter (the caller's arrays may share memory), one with
    local memory or a work-group size, and a copy between launches."""
    writes_param = scale(0, 1, 0)
    local = scale(1, 2, 3).replace("  %g1 = group_id", "  %g1 = group_id\n"
                                   "  %a9 = alloca -> memref<f32x16,local>")
    sized = scale(2, 4, 5).replace(") {", ") work_group_size(4,1) {", 1)
    texts = [writes_param, local, sized, scale(3, 6, 7), scale(4, 8, 9)]
    steps = (Launch("k0", (1, 0), 4), Launch("k1", (2, 3), 4), Launch("k2", (4, 5), 4),
             Launch("k3", (6, 7), 4), Copy(7, 10), Launch("k4", (8, 9), 4))
    assert merge_independent(texts, steps, params=(0, 2, 4, 6, 8))[1] == steps


def test_a_kernel_launched_elsewhere_joins_only_when_short() -> None:
    long = scale(1, 2, 3).replace(
        "    store", "".join(f"    %u{j} = arith.add %t7, %t7 : f32\n" for j in range(40))
        + "    store")
    texts = [scale(0, 0, 1), long]
    steps = (Launch("k0", (0, 1), 4), Launch("k1", (2, 3), 4), Launch("k1", (4, 5), 4))
    _, merged = merge_independent(texts, steps, params=(0, 2, 4))
    assert [s.kernel for s in launches(merged)] == ["k0", "k1", "k1"]
    texts = [scale(0, 0, 1), scale(1, 2, 3)]
    _, merged = merge_independent(texts, steps, params=(0, 2, 4))
    assert [s.kernel for s in launches(merged)] == ["k0_side0"]


def test_at_most_max_parts_kernels_merge() -> None:
    count = MAX_PARTS + 3
    texts = [scale(i, 2 * i, 2 * i + 1) for i in range(count)]
    steps = tuple(Launch(f"k{i}", (2 * i, 2 * i + 1), 4) for i in range(count))
    _, merged = merge_independent(texts, steps, params=tuple(range(0, 2 * count, 2)))
    assert [s.num_groups for s in launches(merged)] == [4 * MAX_PARTS, 12]


UPDATES = """
  %c9 = stablehlo.constant dense<0.9> : tensor<f32>
  %c1 = stablehlo.constant dense<0.1> : tensor<f32>
  %a9 = stablehlo.broadcast_in_dim %c9, dims = [] : (tensor<f32>) -> tensor<64x300xf32>
  %a1 = stablehlo.broadcast_in_dim %c1, dims = [] : (tensor<f32>) -> tensor<64x300xf32>
  %b9 = stablehlo.broadcast_in_dim %c9, dims = [] : (tensor<f32>) -> tensor<48x200xf32>
  %b1 = stablehlo.broadcast_in_dim %c1, dims = [] : (tensor<f32>) -> tensor<48x200xf32>
  %d9 = stablehlo.broadcast_in_dim %c9, dims = [] : (tensor<f32>) -> tensor<10xf32>
  %d1 = stablehlo.broadcast_in_dim %c1, dims = [] : (tensor<f32>) -> tensor<10xf32>
  %md = stablehlo.multiply %d9, %m2 : tensor<10xf32>
  %gd = stablehlo.multiply %d1, %g2 : tensor<10xf32>
  %n2 = stablehlo.add %md, %gd : tensor<10xf32>
  %mb = stablehlo.multiply %b9, %m1 : tensor<48x200xf32>
  %gb = stablehlo.multiply %b1, %g1 : tensor<48x200xf32>
  %n1 = stablehlo.add %mb, %gb : tensor<48x200xf32>
  %ma = stablehlo.multiply %a9, %m0 : tensor<64x300xf32>
  %ga = stablehlo.multiply %a1, %g0 : tensor<64x300xf32>
  %n0 = stablehlo.add %ma, %ga : tensor<64x300xf32>
  return %n0, %n1, %n2 : tensor<64x300xf32>, tensor<48x200xf32>, tensor<10xf32>"""
PROGRAM = module("(%m0: tensor<64x300xf32>, %g0: tensor<64x300xf32>, %m1: tensor<48x200xf32>, "
                 "%g1: tensor<48x200xf32>, %m2: tensor<10xf32>, %g2: tensor<10xf32>) -> "
                 "(tensor<64x300xf32>, tensor<48x200xf32>, tensor<10xf32>)", UPDATES)


@pytest.mark.usefixtures("uncached")
def test_an_optimizers_updates_run_as_one_launch_against_numpy() -> None:
    lowered = lower_function(frontend.parse(PROGRAM))
    assert len(list(launches(lowered.plan.steps))) == 3
    (merged,) = launches(merged_launches(lowered).plan.steps)
    assert merged.num_groups > 3  # both matrices' parts have several work-groups
    shapes = [(64, 300), (64, 300), (48, 200), (48, 200), (10,), (10,)]
    args = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    results = backend_opencl.compile_stablehlo(PROGRAM)(*args)
    for got, (m, g) in zip(results, zip(args[::2], args[1::2], strict=True), strict=True):
        np.testing.assert_allclose(got, np.float32(0.9) * m + np.float32(0.1) * g,
                                   rtol=1e-6)


def test_each_part_sees_its_own_work_groups_against_numpy() -> None:
    """The merged kernel of two parts indexing by work-group (4 and 2 of them), launched
    over all 6: each part's output is all written, from its own input."""
    texts = [scale(0, 0, 1), scale(1, 2, 3, size=32)]
    steps = (Launch("k0", (0, 1), 4), Launch("k1", (2, 3), 2))
    (text,), (launch,) = merge_independent(texts, steps, params=(0, 2))
    a = RNG.standard_normal(64).astype(np.float32)
    b = RNG.standard_normal(32).astype(np.float32)
    out_a = np.full(64, np.nan, np.float32)
    out_b = np.full(32, np.nan, np.float32)
    kernel = getattr(backend_opencl.compile(text), launch.kernel)
    kernel(a, out_a, b, out_b, num_groups=launch.num_groups)
    np.testing.assert_array_equal(out_a, 2 * a)
    np.testing.assert_array_equal(out_b, 2 * b)
