"""Launch checks (docs/abi.md, "Launch checks"): with default settings every launch checks
the dynamic sizes, scalars and ``num_groups`` its kernel's accesses and collectives need
before anything runs (a ``LaunchError`` naming the argument and mode, outputs untouched);
accesses the host cannot check are guarded in the kernel (``BoundsError``, nothing out of
bounds).  Good calls still run and match numpy; outputs are poisoned with NaN."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import backend_opencl
import tensorlang
from backend_opencl.exec.arguments import Group
from tensorlang.diagnostics import BoundsError, LaunchError

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """\
func @transpose(%A: memref<f32x?x?>, %B: memref<f32x?x?>) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.t %one, %A, %zero, %B : f32, memref<f32x?x?>, f32, memref<f32x?x?>
}

func @batch(%A: group<memref<f32x4>>, %out: memref<f32x4x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>>
  %o = subview %out[:, %g] : memref<f32x4x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x4>, f32, memref<f32x4>
}

func @matmul(%A: memref<f32x?x?>, %B: memref<f32x?x?>, %C: memref<f32x?x?>) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.n.n %one, %A, %B, %zero, %C : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?>
}

func @window(%A: memref<f32x?>, %o: index, %C: memref<f32x8>) {
  %s = subview %A[%o:8] : memref<f32x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %s, %zero, %C : f32, memref<f32x8>, f32, memref<f32x8>
}

func @head(%A: memref<f32x?>, %n: index, %C: memref<f32x?>) {
  %c0 = constant 0 : index
  foreach %i = %c0, %n : index {
    %v = load %A[%i] : memref<f32x?>
    store %v, %C[%i] : memref<f32x?>
  }
}

func @members(%G: group<memref<f32x?>>, %out: memref<f32x?x?>) {
  %g = group_id
  %a = load %G[%g] : group<memref<f32x?>>
  %o = subview %out[:, %g] : memref<f32x?x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x?>, f32, memref<f32x?>
}

func @gather(%A: memref<f32x16>, %B: memref<i32x?>, %C: memref<f32x?>) {
  %c0 = constant 0 : index
  %n = size %C[0] : memref<f32x?>
  foreach %i = %c0, %n : index {
    %j32 = load %B[%i] : memref<i32x?>
    %j = cast %j32 : i32 -> index
    %v = load %A[%j] : memref<f32x16>
    store %v, %C[%i] : memref<f32x?>
  }
}
"""


@pytest.fixture(scope="module")
def mod() -> Any:
    return backend_opencl.compile(tensorlang.parse(SOURCE, filename="k.tl"))


@pytest.fixture(scope="module")
def fused() -> Any:
    return backend_opencl.compile((ROOT / "examples" / "fused_kernel.tl").read_text())


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asfortranarray(rng.standard_normal(shape).astype(np.float32))


def poison(*shape: int) -> np.ndarray:
    return np.asfortranarray(np.full(shape, np.nan, np.float32))


def ones(*shape: int) -> np.ndarray:
    return np.asfortranarray(np.ones(shape, np.float32))


def untouched(arr: np.ndarray) -> bool:
    return bool(np.isnan(arr).all())


# -- the reproductions ----------------------------------------------------------


def test_fused_kernel_with_too_few_batch_columns_is_a_launch_error(fused: Any) -> None:
    d = np.asfortranarray(np.full((16, 16, 2), np.nan, np.float32))
    with pytest.raises(LaunchError, match=r"argument 5 \(%D: memref<f32x16x16x\?>\), mode 2: "
                       r"the subview at .*would access outside") as err:
        fused.fused_kernel(1.0, [ones(16, 8)] * 3, ones(8, 8), ones(8, 16), d, num_groups=3)
    assert "num_groups = 3" in str(err.value) and "%D mode 2 has size 2" in str(err.value)
    assert untouched(d)


def test_fused_kernel_good_call_matches_numpy(fused: Any, rng: np.random.Generator) -> None:
    a = [rand(rng, 16, 8) for _ in range(3)]
    b, c = rand(rng, 8, 8), rand(rng, 8, 16)
    d0 = rand(rng, 16, 16, 3)
    d = d0.copy(order="F")
    fused.fused_kernel(0.5, a, b, c, d, num_groups=3)
    for g in range(3):
        want = 0.5 * a[g] @ b.T @ c + d0[:, :, g]
        np.testing.assert_allclose(d[:, :, g], want, rtol=1e-4, atol=1e-4)


def test_fused_kernel_more_groups_than_members(fused: Any) -> None:
    d = poison(16, 16, 3)
    with pytest.raises(LaunchError, match="argument 2 .*2 arrays but 3 work-groups"):
        fused.fused_kernel(1.0, [ones(16, 8)] * 2, ones(8, 8), ones(8, 16), d, num_groups=3)
    assert untouched(d)


def test_transpose_into_too_small_output(mod: Any, rng: np.random.Generator) -> None:
    b = poison(5, 4)
    with pytest.raises(LaunchError, match=r"axpby at k.tl:4:3: operand A \(%A\) mode 1 and "
                       r"operand B \(%B\) mode 0 must have equal sizes "
                       r"\(%B mode 0 has size 5, %A mode 1 has size 6\)"):
        mod.transpose(rand(rng, 4, 6), b)
    assert untouched(b)


def test_transpose_good_call(mod: Any, rng: np.random.Generator) -> None:
    a, b = rand(rng, 4, 6), poison(6, 4)
    mod.transpose(a, b)
    np.testing.assert_array_equal(b, a.T)


def test_batch_with_fewer_columns_than_groups(mod: Any, rng: np.random.Generator) -> None:
    out = poison(4, 2)
    with pytest.raises(LaunchError, match=r"argument 2 \(%out: memref<f32x4x\?>\), mode 1: "
                       r"the subview at k.tl:10:8 would access outside") as err:
        mod.batch([rand(rng, 4) for _ in range(3)], out, num_groups=3)
    assert "num_groups = 3" in str(err.value) and "%out mode 1 has size 2" in str(err.value)
    assert untouched(out)


def test_batch_good_call(mod: Any, rng: np.random.Generator) -> None:
    a = [rand(rng, 4) for _ in range(3)]
    out = poison(4, 3)
    mod.batch(a, out, num_groups=3)
    np.testing.assert_array_equal(out, np.stack(a, axis=1))


# -- sizes related by collectives, scalars and loops ------------------------------------


@pytest.mark.parametrize(("shapes", "pattern"), [
    (((4, 3), (5, 2), (4, 2)), r"A \(%A\) mode 1 and operand B \(%B\) mode 0 must"),
    (((4, 3), (3, 2), (5, 2)), r"A \(%A\) mode 0 and operand C \(%C\) mode 0 must"),
    (((4, 3), (3, 2), (4, 7)), r"B \(%B\) mode 1 and operand C \(%C\) mode 1 must"),
])
def test_gemm_sizes_must_agree(mod: Any, rng: np.random.Generator,
                               shapes: tuple[tuple[int, int], ...], pattern: str) -> None:
    a, b = rand(rng, *shapes[0]), rand(rng, *shapes[1])
    c = poison(*shapes[2])
    with pytest.raises(LaunchError, match="gemm at k.tl:19:3: operand " + pattern):
        mod.matmul(a, b, c)
    assert untouched(c)


def test_gemm_good_call(mod: Any, rng: np.random.Generator) -> None:
    a, b, c = rand(rng, 5, 3), rand(rng, 3, 7), poison(5, 7)
    mod.matmul(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("offset", [3, 100, 2**40])
def test_scalar_offset_past_the_end(mod: Any, rng: np.random.Generator, offset: int) -> None:
    c = poison(8)
    with pytest.raises(LaunchError, match=rf"argument 1 .*the subview at k.tl:23:8 .*"
                       rf"%A mode 0 has size 10, %o = {offset}"):
        mod.window(rand(rng, 10), offset, c)
    assert untouched(c)


def test_negative_scalar_offset(mod: Any, rng: np.random.Generator) -> None:
    with pytest.raises(LaunchError, match="%o = -1"):
        mod.window(rand(rng, 10), -1, poison(8))


def test_scalar_offset_in_bounds(mod: Any, rng: np.random.Generator) -> None:
    a, c = rand(rng, 10), poison(8)
    mod.window(a, 2, c)
    np.testing.assert_array_equal(c, a[2:])


@pytest.mark.parametrize(("n", "sizes", "arg"), [(9, (8, 9), "argument 1 .*%A"),
                                                 (9, (9, 8), "argument 3 .*%C")])
def test_loop_bound_from_a_scalar(mod: Any, rng: np.random.Generator, n: int,
                                  sizes: tuple[int, int], arg: str) -> None:
    c = poison(sizes[1])
    with pytest.raises(LaunchError, match=arg + rf".*%n = {n}"):
        mod.head(rand(rng, sizes[0]), n, c)
    assert untouched(c)


def test_loop_bound_in_bounds(mod: Any, rng: np.random.Generator) -> None:
    a, c = rand(rng, 9), poison(7)
    mod.head(a, 5, c)
    np.testing.assert_array_equal(c[:5], a[:5])
    assert untouched(c[5:])


def test_member_sizes_checked_per_work_group(mod: Any, rng: np.random.Generator) -> None:
    members = [rand(rng, 6), rand(rng, 5), rand(rng, 6)]
    out = poison(6, 3)
    with pytest.raises(LaunchError, match=r"member 1 of %G has size 5 in mode 0"):
        mod.members(members, out, num_groups=3)
    assert untouched(out)
    members[1] = rand(rng, 6)
    mod.members(members, out, num_groups=3)
    np.testing.assert_array_equal(out, np.stack(members, axis=1))


def test_only_the_launched_members_are_checked(mod: Any, rng: np.random.Generator) -> None:
    members = [rand(rng, 6), rand(rng, 6), rand(rng, 2)]
    out = poison(6, 2)
    mod.members(members, out, num_groups=2)
    np.testing.assert_array_equal(out, np.stack(members[:2], axis=1))


# -- what the host cannot check: guarded by default ---------------------------------------


def test_data_dependent_index_is_guarded_by_default(mod: Any,
                                                    rng: np.random.Generator) -> None:
    a = rand(rng, 16)
    idx = rng.integers(0, 16, size=9).astype(np.int32)
    c = poison(9)
    mod.gather(a, idx, c)
    np.testing.assert_array_equal(c, a[idx])
    idx[3] = 1 << 20
    with pytest.raises(BoundsError, match=r"out-of-bounds load: index 1048576 not in \[0, 16\)"):
        mod.gather(a, idx, poison(9))


def test_host_checked_kernels_have_no_guards(mod: Any) -> None:
    guarded = {name for name, k in mod.kernels.items() if k.info.guards}
    assert guarded == {"gather"}


# -- num_groups -------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2**31, 2**32, 2**40, 2**63 - 1, 2**64, 10**30])
def test_num_groups_beyond_the_device(mod: Any, rng: np.random.Generator, n: int) -> None:
    out = poison(4, 1)
    with pytest.raises(LaunchError, match=f"num_groups={n} exceeds the device's limit"):
        mod.batch([rand(rng, 4)], out, num_groups=n)
    assert untouched(out)


def test_group_with_offset_checks_member_lengths(rng: np.random.Generator) -> None:
    text = """func @shifted(%A: group<memref<f32x4>, offset: ?>, %out: memref<f32x4x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>, offset: ?>
  %o = subview %out[:, %g] : memref<f32x4x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x4>, f32, memref<f32x4>
}
"""
    mod = backend_opencl.compile(text)
    members = [rand(rng, 7) for _ in range(2)]
    out = poison(4, 2)
    with pytest.raises(LaunchError, match="at least 8 elements"):
        mod.shifted(Group(members, offset=4), out, num_groups=2)
    assert untouched(out)
    mod.shifted(Group(members, offset=3), out, num_groups=2)
    np.testing.assert_array_equal(out, np.stack([m[3:] for m in members], axis=1))


def test_accesses_isl_gives_up_on_are_guarded(monkeypatch: pytest.MonkeyPatch,
                                              rng: np.random.Generator) -> None:
    from tensorlang.schedule import bounds, launch

    monkeypatch.setattr(launch, "operation_budget", lambda: bounds.operation_budget(1))
    mod = backend_opencl.compile(tensorlang.parse(SOURCE, filename="k.tl"))
    assert mod.matmul.info.guards and mod.window.info.guards and not mod.matmul.checks
    a, b, c = rand(rng, 5, 3), rand(rng, 3, 7), poison(5, 7)
    mod.matmul(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(BoundsError, match="operand sizes disagree"):
        mod.matmul(a, rand(rng, 4, 7), poison(5, 7))
    with pytest.raises(BoundsError, match="out-of-bounds subview"):
        mod.window(rand(rng, 10), 3, poison(8))
