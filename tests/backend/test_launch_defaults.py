"""A kernel call without ``num_groups``: the count comes from the argument modes that
``group_id`` indexes when they agree (a group's member count counts too), 1 for a kernel
that never reads its group, and a LaunchError naming the arguments otherwise: never a
partial run (``backend_opencl.exec.arguments.default_num_groups``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import backend_opencl
import tensorlang
from tensorlang.diagnostics import LaunchError
from tensorlang.schedule.launch import GroupCount, Quantity, group_count

SOURCE = """
func @columns(%X: memref<f32x8x?>) {
  %g = group_id
  %c = subview %X[:, %g] : memref<f32x8x?>
  %one = constant 1.0 : f32
  %two = constant 2.0 : f32
  axpby.n %one, %c, %two, %c : f32, memref<f32x8>, f32, memref<f32x8>
}

func @static_columns(%X: memref<f32x8x6>) {
  %g = group_id
  %c = subview %X[:, %g] : memref<f32x8x6>
  %three = constant 3.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %three, %c, %zero, %c : f32, memref<f32x8>, f32, memref<f32x8>
}

func @batch(%alpha: f32, %A: group<memref<f32x4x4>>, %D: memref<f32x4x4x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4x4>>
  %d = subview %D[:, :, %g] : memref<f32x4x4x?>
  %one = constant 1.0 : f32
  axpby.n %alpha, %a, %one, %d : f32, memref<f32x4x4>, f32, memref<f32x4x4>
}

func @through_views(%X: memref<f32x5x?x3>) {
  %g = group_id
  %zero = constant 0 -> index
  %all = subview %X[:, :, %zero] : memref<f32x5x?x3>
  %col = subview %all[:, %g] : memref<f32x5x?>
  %two = constant 2.0 : f32
  %none = constant 0.0 : f32
  axpby.n %two, %col, %none, %col : f32, memref<f32x5>, f32, memref<f32x5>
}

func @elements(%x: memref<f32x?>) {
  %g = group_id
  %v = load %x[%g] : memref<f32x?>
  %w = arith.mul %v, %v : f32
  store %w, %x[%g] : memref<f32x?>
}

func @shifted(%x: memref<f32x?>) {
  %g = group_id
  %one = constant 1 -> index
  %i = arith.add %g, %one : index
  %v = load %x[%i] : memref<f32x?>
  %w = arith.add %v, %v : f32
  store %w, %x[%i] : memref<f32x?>
}

func @whole(%x: memref<f32x?>) {
  %two = constant 2.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %two, %x, %zero, %x : f32, memref<f32x?>, f32, memref<f32x?>
}
"""


@pytest.fixture(scope="module")
def module() -> Any:
    return backend_opencl.compile(SOURCE)


def test_dynamic_group_mode_runs_every_column(module, h, rng) -> None:
    x = h.rand(rng, (8, 6), "f32")
    want = 3 * x
    module.columns(x)
    h.close(x, want, "f32")


def test_static_group_mode_runs_every_column(module, h, rng) -> None:
    x = h.rand(rng, (8, 6), "f32")
    want = 3 * x
    module.static_columns(x)
    h.close(x, want, "f32")


def test_group_members_and_mode_that_agree(module, h, rng) -> None:
    A = [h.rand(rng, (4, 4), "f32") for _ in range(5)]
    D = h.rand(rng, (4, 4, 5), "f32")
    want = D + 2 * np.stack(A, axis=-1)
    module.batch(np.float32(2), A, D)
    h.close(D, want, "f32")


def test_group_members_and_mode_that_disagree_name_both(module, h, rng) -> None:
    A = [h.rand(rng, (4, 4), "f32") for _ in range(5)]
    D = h.poison((4, 4, 4), "f32")
    with pytest.raises(LaunchError, match=r"argument 2 \(%A\)'s member count has 5, "
                                          r"argument 3 \(%D\) mode 2 has 4"):
        module.batch(np.float32(2), A, D)
    assert np.isnan(D).all()


def test_explicit_num_groups_still_decides(module, h, rng) -> None:
    A = [h.rand(rng, (4, 4), "f32") for _ in range(5)]
    D = h.rand(rng, (4, 4, 4), "f32")
    want = D + np.stack(A[:4], axis=-1)
    module.batch(np.float32(1), A, D, num_groups=4)
    h.close(D, want, "f32")


def test_mode_reached_through_subviews(module, h, rng) -> None:
    x = h.rand(rng, (5, 7, 3), "f32")
    want = x.copy()
    want[:, :, 0] *= 2
    module.through_views(x)
    h.close(x, want, "f32")


def test_load_and_store_at_the_group_id(module, h, rng) -> None:
    x = h.rand(rng, (37,), "f32")
    want = x * x
    module.elements(x)
    h.close(x, want, "f32")


def test_group_id_without_an_indexed_mode_needs_num_groups(module, h, rng) -> None:
    x = h.rand(rng, (9,), "f32")
    before = x.copy()
    with pytest.raises(LaunchError, match="pass num_groups"):
        module.shifted(x)
    np.testing.assert_array_equal(x, before)


def test_kernel_without_group_id_runs_once(module, h, rng) -> None:
    x = h.rand(rng, (33,), "f32")
    want = 2 * x
    module.whole(x)
    h.close(x, want, "f32")


def test_group_count_analysis() -> None:
    funcs = {f.name: f for f in tensorlang.parse(SOURCE).functions}
    assert group_count(funcs["columns"]).modes == (Quantity("size", 0, 1),)
    assert group_count(funcs["batch"]).modes == (Quantity("members", 1),
                                                 Quantity("size", 2, 2))
    assert group_count(funcs["through_views"]).modes == (Quantity("size", 0, 1),)
    assert group_count(funcs["shifted"]) == GroupCount((), True)
    assert not group_count(funcs["whole"]).uses_groups
