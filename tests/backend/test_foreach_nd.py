"""The multi-dimensional foreach: every point of the box [from, to) is visited exactly
once by the work-group (2-D and 3-D, offsets, empty and single-point boxes, i32 loop
variables, several work-group shapes), checked against numpy with poisoned outputs."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl

FOREACH_2D = """
func @box2_{wx}x{wy}(%a: memref<f32x?x?>, %out: memref<f32x?x?>, %lo0: index, %lo1: index,
                   %hi0: index, %hi1: index) work_group_size({wx}, {wy}) {{
  foreach (%i, %j) = (%lo0, %lo1), (%hi0, %hi1) {{
    %x = load %a[%i, %j] : memref<f32x?x?>
    %fi = cast %i : index -> f32
    %fj = cast %j : index -> f32
    %t = arith.mul %fj, 100.0 : f32
    %u = arith.add %fi, %t : f32
    %v = arith.add %x, %u : f32
    store %v, %out[%i, %j] : memref<f32x?x?>
  }}
}}
"""

FOREACH_3D = """
func @box3(%out: memref<i32x5x4x3>, %lo: i32) work_group_size(8, 1) {
  %hi0 = constant 5 : i32
  %hi1 = constant 4 : i32
  %hi2 = constant 3 : i32
  foreach (%i, %j, %k) = (%lo, 0, 1), (%hi0, %hi1, %hi2) : i32 {
    %c = arith.mul %k, 100 : i32
    %d = arith.mul %j, 10 : i32
    %e = arith.add %c, %d : i32
    %f = arith.add %e, %i : i32
    %ii = cast %i : i32 -> index
    %jj = cast %j : i32 -> index
    %kk = cast %k : i32 -> index
    store %f, %out[%ii, %jj, %kk] : memref<i32x5x4x3>
  }
}
"""

SHAPES = [(1, 1), (4, 1), (3, 2), (16, 1)]


@pytest.fixture(scope="module")
def module() -> object:
    parts = [FOREACH_2D.format(wx=wx, wy=wy) for wx, wy in SHAPES] + [FOREACH_3D]
    return backend_opencl.compile("\n".join(parts))


@pytest.mark.parametrize(("wx", "wy"), SHAPES)
@pytest.mark.parametrize("box", [(0, 0, 13, 7), (2, 3, 11, 5), (4, 4, 5, 5), (5, 0, 3, 6),
                                 (0, 0, 13, 0)])
def test_foreach_2d(module, rng, wx: int, wy: int, box: tuple[int, int, int, int]) -> None:
    lo0, lo1, hi0, hi1 = box
    a = np.asfortranarray(rng.standard_normal((13, 7)).astype(np.float32))
    out = np.full((13, 7), np.nan, np.float32, order="F")
    getattr(module, f"box2_{wx}x{wy}")(a, out, lo0, lo1, hi0, hi1)
    want = np.full((13, 7), np.nan, np.float32)
    i, j = np.meshgrid(np.arange(13), np.arange(7), indexing="ij")
    inside = (i >= lo0) & (i < hi0) & (j >= lo1) & (j < hi1)
    want[inside] = (a + (i + 100.0 * j).astype(np.float32))[inside]
    np.testing.assert_array_equal(out, want)


def test_foreach_3d_i32(module) -> None:
    out = np.full((5, 4, 3), -7, np.int32, order="F")
    module.box3(out, 1)
    i, j, k = np.meshgrid(np.arange(5), np.arange(4), np.arange(3), indexing="ij")
    want = np.where((i >= 1) & (k >= 1), 100 * k + 10 * j + i, -7)
    np.testing.assert_array_equal(out, want)
