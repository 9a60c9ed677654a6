"""Views (subview, expand, fuse, size), groups with dynamic shapes and offsets, alloca
with lifetimes and reuse, subgroup queries (emulated without device subgroups),
group_size and parallel regions with manual barriers."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl
import tensorlang
from backend_opencl.emit.localmem import plan_local_memory
from backend_opencl.exec.arguments import Group

VIEWS = """
func @views(%X: memref<f32x4x6x?>, %Y: memref<f32x24x?>, %Z: memref<f32x2x3>,
            %W: memref<f32x2x3>, %S: memref<indexx3>, %o: index) work_group_size(2, 2) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  %i0 = constant 0 : index
  %i1 = constant 1 : index
  %i2 = constant 2 : index
  %f = fuse %X[0, 1] : memref<f32x4x6x?>
  axpby.n %one, %f, %zero, %Y : f32, memref<f32x24x?>, f32, memref<f32x24x?>
  %s = subview %X[1:2, %o:3, %i1] : memref<f32x4x6x?>
  axpby.n %one, %s, %zero, %Z : f32, memref<f32x2x3,strided<1,4>>, f32, memref<f32x2x3>
  %v = fuse %X[0, 1] : memref<f32x4x6x?>
  %e = expand %v[0 -> 2x12] : memref<f32x24x?>
  %e2 = subview %e[0:2, 0:3, %i1] : memref<f32x2x12x?>
  axpby.n %one, %e2, %zero, %W : f32, memref<f32x2x3,strided<1,2>>, f32, memref<f32x2x3>
  %n = size %X[2] : memref<f32x4x6x?>
  %m = size %f[0] : memref<f32x24x?>
  %sz = size %s[1] : memref<f32x2x3,strided<1,4>>
  parallel {
    store %n, %S[%i0] : memref<indexx3>
    store %m, %S[%i1] : memref<indexx3>
    store %sz, %S[%i2] : memref<indexx3>
  }
}
"""

DYNAMIC_VIEWS = """
func @dyn_views(%X: memref<f32x?x?,strided<1,?>>, %Y: memref<f32x?>, %Z: memref<f32x?x?>,
                %o: index, %s: index, %f: i32) work_group_size(3, 2) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  %i1 = constant 1 : index
  %v = subview %X[%o:%s, %i1] : memref<f32x?x?,strided<1,?>>
  axpby.n %one, %v, %zero, %Y : f32, memref<f32x?>, f32, memref<f32x?>
  %w = subview %X[0:6, 0:4] : memref<f32x?x?,strided<1,?>>
  %e = expand %w[0 -> %s x 2] : memref<f32x6x4,strided<1,?>>
  %e1 = subview %e[:, %i1, :] : memref<f32x?x2x4,strided<1,?,?>>
  axpby.n %one, %e1, %zero, %Z : f32, memref<f32x?x4>, f32, memref<f32x?x?>
  %zero_i = constant 0 : i32
  %fo = cast %f : i32 -> f32
  foreach %j = %zero_i, %f : i32 {
    %jx = cast %j : i32 -> index
    %y = load %Y[%jx] : memref<f32x?>
    %yy = arith.add %y, %fo : f32
    store %yy, %Y[%jx] : memref<f32x?>
  }
}
"""

GROUPS = """
func @group_dyn(%A: group<memref<f64x?x3>>, %out: memref<f64x?>) work_group_size(1, 1) {
  %g = group_id
  %a = load %A[%g] : group<memref<f64x?x3>>
  %one = constant 1.0 : f64
  %zero = constant 0.0 : f64
  %o = subview %out[%g] : memref<f64x?>
  %last = constant 2 : index
  %col = subview %a[:, %last] : memref<f64x?x3>
  sum.n %one, %col, %zero, %o : f64, memref<f64x?>, f64, memref<f64>
}

func @group_offset(%A: group<memref<f32x4>, offset: ?>, %out: memref<f32x4x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>, offset: ?>
  %o = subview %out[:, %g] : memref<f32x4x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x4>, f32, memref<f32x4>
}
"""

ALLOCA = """
func @alloca_reuse(%A: memref<f32x8x8>, %B: memref<f32x8x8>, %C: memref<f32x8x8>,
                   %D: memref<f32x8x8>) work_group_size(4, 2) {
  %one = constant 1.0 : f32
  %two = constant 2.0 : f32
  %zero = constant 0.0 : f32
  %t1 = alloca -> memref<f32x8x8,local>
  axpby.n %two, %A, %zero, %t1 : f32, memref<f32x8x8>, f32, memref<f32x8x8,local>
  gemm.n.n %one, %t1, %A, %zero, %C
    : f32, memref<f32x8x8,local>, memref<f32x8x8>, f32, memref<f32x8x8>
  lifetime_stop %t1
  %t2 = alloca -> memref<f32x8x8,local>
  axpby.t %one, %B, %zero, %t2 : f32, memref<f32x8x8>, f32, memref<f32x8x8,local>
  gemm.n.n %one, %t2, %t2, %zero, %D
    : f32, memref<f32x8x8,local>, memref<f32x8x8,local>, f32, memref<f32x8x8>
}
"""

SUBGROUPS = """
func @subgroups(%out: memref<i32x32x4>, %gs: memref<indexx?>) work_group_size(16, 2)
    subgroup_size(8) {
  %zero = constant 0 : index
  %sixteen = constant 32 : index
  %g = group_id
  %n = group_size
  foreach %i = %zero, %sixteen {
    %a = subgroup_id
    %b = subgroup_local_id
    %c = subgroup_size
    %d = num_subgroups
    %k0 = constant 0 : index
    %k1 = constant 1 : index
    %k2 = constant 2 : index
    %k3 = constant 3 : index
    store %a, %out[%i, %k0] : memref<i32x32x4>
    store %b, %out[%i, %k1] : memref<i32x32x4>
    store %c, %out[%i, %k2] : memref<i32x32x4>
    store %d, %out[%i, %k3] : memref<i32x32x4>
  }
  parallel {
    store %n, %gs[%g] : memref<indexx?>
  }
}

func @manual_barrier(%A: memref<f32x8>, %out: memref<f32x8>) work_group_size(8, 1) {
  %t = alloca -> memref<f32x8,local>
  %zero = constant 0 : index
  %eight = constant 8 : index
  %seven = constant 7 : index
  foreach %i = %zero, %eight {
    %x = load %A[%i] : memref<f32x8>
    store %x, %t[%i] : memref<f32x8,local>
  }
  parallel {
    barrier.local
  }
  foreach %i = %zero, %eight {
    %j = arith.sub %seven, %i : index
    %y = load %t[%j] : memref<f32x8,local>
    store %y, %out[%i] : memref<f32x8>
  }
}
"""


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile(VIEWS + DYNAMIC_VIEWS + GROUPS + ALLOCA + SUBGROUPS)


def test_views(module, h, rng) -> None:
    X = h.rand(rng, (4, 6, 3), "f32")
    Y, Z, W = h.poison((24, 3), "f32"), h.poison((2, 3), "f32"), h.poison((2, 3), "f32")
    S = np.full(3, -1, np.int64)
    module.views(X, Y, Z, W, S, 2)
    h.close(Y, X.reshape(24, 3, order="F"), "f32")
    h.close(Z, X[1:3, 2:5, 1], "f32")
    h.close(W, X.reshape(2, 12, 3, order="F")[:, :3, 1], "f32")
    np.testing.assert_array_equal(S, [3, 24, 3])


def test_dynamic_views(module, h, rng) -> None:
    base = h.rand(rng, (11, 7), "f32")
    X = base[2:10, 1:6]  # 8 x 5 with strides (1, 11)
    Y, Z = h.poison((3,), "f32"), h.poison((3, 4), "f32")
    module.dyn_views(X, Y, Z, 4, 3, np.int32(2))
    want_y = X[4:7, 1].copy()
    want_y[:2] += 2
    h.close(Y, want_y, "f32")
    h.close(Z, X[0:6, 0:4].reshape(3, 2, 4, order="F")[:, 1, :], "f32")


def test_group_dynamic_shapes(module, h, rng) -> None:
    A = [h.rand(rng, (m, 3), "f64") for m in (5, 1, 9, 4)]
    out = h.poison((4,), "f64")
    module.group_dyn(A, out, num_groups=4)
    h.close(out, np.array([a[:, 2].sum() for a in A]), "f64")


def test_group_offset(module, h, rng) -> None:
    A = [h.rand(rng, (10,), "f32") for _ in range(3)]
    out = h.poison((4, 3), "f32")
    module.group_offset(Group(A, offset=5), out, num_groups=3)
    h.close(out, np.stack([a[5:9] for a in A], axis=1), "f32")


def test_alloca_reuse(module, h, rng) -> None:
    A, B = h.rand(rng, (8, 8), "f32"), h.rand(rng, (8, 8), "f32")
    C, D = h.poison((8, 8), "f32"), h.poison((8, 8), "f32")
    module.alloca_reuse(A, B, C, D, num_groups=2)
    h.close(C, 2 * A @ A, "f32")
    h.close(D, B.T @ B.T, "f32")


def test_alloca_plan_reuses_space() -> None:
    func = tensorlang.parse(ALLOCA).functions[0]
    plan = plan_local_memory(func)
    offsets = sorted(plan.offsets.values())
    assert offsets == [0, 0] and plan.size == 256 and len(plan.reused) == 1


def test_subgroups_emulated(module) -> None:
    out = np.full((32, 4), -1, np.int32, order="F")
    gs = np.full(3, -1, np.int64)
    module.subgroups(out, gs, num_groups=3)
    lid = np.arange(32)  # foreach hands iteration i to work-item i here
    np.testing.assert_array_equal(out[:, 0], lid // 8)
    np.testing.assert_array_equal(out[:, 1], lid % 8)
    np.testing.assert_array_equal(out[:, 2], 8)
    np.testing.assert_array_equal(out[:, 3], 4)
    np.testing.assert_array_equal(gs, 3)


def test_manual_barrier_in_spmd(module, h, rng) -> None:
    A = h.rand(rng, (8,), "f32")
    out = h.poison((8,), "f32")
    module.manual_barrier(A, out)
    h.close(out, A[::-1], "f32")


def test_groups_without_svm(h, rng) -> None:
    """Devices without SVM get a table of element offsets into one packed buffer."""
    from backend_opencl.api.compiler import compile_program
    from backend_opencl.emit import Target

    mod = compile_program(GROUPS, target=Target(has_svm=False))
    assert "A_base + A[" in mod.source
    A = [h.rand(rng, (m, 3), "f64") for m in (5, 1, 9)]
    out = h.poison((3,), "f64")
    mod.group_dyn(A, out, num_groups=3)
    h.close(out, np.array([a[:, 2].sum() for a in A]), "f64")
    B = [h.rand(rng, (10,), "f32") for _ in range(2)]
    out2 = h.poison((4, 2), "f32")
    mod.group_offset(Group(B, offset=3), out2, num_groups=2)
    h.close(out2, np.stack([b[3:7] for b in B], axis=1), "f32")
