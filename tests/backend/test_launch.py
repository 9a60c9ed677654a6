"""Launch API: argument checking before anything runs, binding by shape and strides,
write-back, pyopencl arrays in place, build caching and build failures."""

from __future__ import annotations

import time

import numpy as np
import pytest

import backend_opencl
from backend_opencl.runtime.opencl import build
from tensorlang.diagnostics import LaunchError

SOURCE = """
func @scale(%alpha: f32, %A: memref<f32x4x3>, %B: memref<f32x?x?>) work_group_size(2, 1) {
  %zero = constant 0.0 : f32
  axpby.n %alpha, %A, %zero, %B : f32, memref<f32x4x3>, f32, memref<f32x?x?>
}

func @batch(%A: group<memref<f32x4>>, %out: memref<f32x4x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>>
  %o = subview %out[:, %g] : memref<f32x4x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x4>, f32, memref<f32x4>
}
"""


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile(SOURCE)


def _args(h, rng):
    return np.float32(2.0), h.rand(rng, (4, 3), "f32"), h.poison((4, 3), "f32")


def test_binds_and_writes_back(module, h, rng) -> None:
    alpha, A, B = _args(h, rng)
    A_before = A.copy()
    module.scale(alpha, A, B)
    h.close(B, 2 * A, "f32")
    np.testing.assert_array_equal(A, A_before)


def test_empty_arrays_bind_whatever_numpy_gives_their_strides(h, rng) -> None:
    # numpy gives every mode of an empty array stride 0; no element is ever addressed.
    copy = backend_opencl.compile("""
func @copy(%a: memref<f32x?x?>, %b: memref<f32x?x?>) {
  axpby.n 1.0, %a, 0.0, %b : f32, memref<f32x?x?>, f32, memref<f32x?x?>
}""").copy
    for shape in [(3, 0), (0, 5)]:
        empty = np.zeros(shape, np.float32, order="F")
        assert 0 in empty.strides
        copy(empty, np.zeros(shape, np.float32, order="F"))
    a, b = h.rand(rng, (3, 5), "f32"), h.poison((3, 5), "f32")
    copy(a, b)
    np.testing.assert_array_equal(b, a)


def test_dynamic_strides_from_subview(module, h, rng) -> None:
    big = h.rand(rng, (9, 7), "f32")
    before = big.copy()
    view = big[2:6, 1:4]  # strides (1, 9): the dynamic second stride of memref<f32x?x?>
    A = h.rand(rng, (4, 3), "f32")
    module.scale(np.float32(1), A, view)
    h.close(big[2:6, 1:4], A, "f32")
    big[2:6, 1:4] = before[2:6, 1:4]
    np.testing.assert_array_equal(big, before)
    with pytest.raises(LaunchError, match="do not fit"):
        module.scale(np.float32(1), h.rand(rng, (5, 3), "f32")[1:], view)


@pytest.mark.parametrize("mutate, message", [
    (lambda a: a[:2], "expected 3 arguments"),
    (lambda a: (np.float64(1.0), *a[1:]), "expected a f32 .float32. scalar"),
    (lambda a: (a[0], a[1].astype(np.float64), a[2]), "dtype float32"),
    (lambda a: (a[0], np.asfortranarray(np.zeros((3, 4), np.float32)), a[2]), "size 4"),
    (lambda a: (a[0], np.ascontiguousarray(a[1]), a[2]), "do not fit the memref layout"),
    (lambda a: (a[0], a[1], np.ascontiguousarray(a[2])), r"strided<1,\?>"),
    (lambda a: (a[0], a[1][None], a[2]), "dimensions"),
    (lambda a: (a[0], [a[1]], a[2]), "numpy or pyopencl array"),
    (lambda a: ("x", a[1], a[2]), "scalar"),
])
def test_argument_errors(module, h, rng, mutate, message) -> None:
    args = _args(h, rng)
    before = args[2].copy()
    with pytest.raises(LaunchError, match=message):
        module.scale(*mutate(args))
    assert np.isnan(before).all() and np.isnan(args[2]).all()  # nothing ran


def test_float_scalar_accepts_python_numbers(module, h, rng) -> None:
    _, A, B = _args(h, rng)
    module.scale(3, A, B)
    h.close(B, 3 * A, "f32")


def test_group_binding(module, h, rng) -> None:
    A = [h.rand(rng, (4,), "f32") for _ in range(5)]
    out = h.poison((4, 5), "f32")
    module.batch(A, out, num_groups=5)
    h.close(out, np.stack(A, axis=1), "f32")


def test_too_few_groups(module, h, rng) -> None:
    A = [h.rand(rng, (4,), "f32") for _ in range(2)]
    with pytest.raises(LaunchError, match="2 arrays but 3 work-groups"):
        module.batch(A, h.poison((4, 3), "f32"), num_groups=3)


def test_bad_group_member(module, h, rng) -> None:
    A = [h.rand(rng, (4,), "f32"), h.rand(rng, (5,), "f32")]
    with pytest.raises(LaunchError, match="member 1"):
        module.batch(A, h.poison((4, 2), "f32"), num_groups=2)


@pytest.mark.parametrize("groups", [-1, 1.5, True])
def test_bad_num_groups(module, h, rng, groups) -> None:
    with pytest.raises(LaunchError, match="num_groups"):
        module.scale(*_args(h, rng), num_groups=groups)


def test_pyopencl_arrays_in_place(module, h, rng) -> None:
    import pyopencl.array as cla

    queue = module.device.queue
    _, A, _ = _args(h, rng)
    dA = cla.to_device(queue, A)
    dB = cla.to_device(queue, h.poison((4, 3), "f32"))
    module.scale(np.float32(-1), dA, dB)
    h.close(dB.get(), -A, "f32")


def test_unknown_kernel(module) -> None:
    with pytest.raises(AttributeError, match="no kernel"):
        module.nope  # noqa: B018


def test_second_compile_does_not_rebuild(module) -> None:
    builds = build.STATS.builds
    again = backend_opencl.compile(SOURCE)
    assert build.STATS.builds == builds
    assert again.source == module.source


def test_build_failure_is_reported_as_compiler_bug(module) -> None:
    with pytest.raises(build.OpenCLBuildError) as err:
        build.build_program(module.device, "kernel void broken(void) { nope; }", (),
                            ("broken",))
    text = str(err.value)
    assert "broken" in text and "bug in tlc" in text and "build log" in text
    saved = text.split("source saved as: ")[1].split("\n")[0]
    assert "nope" in open(saved).read()


WARNS = "kernel void warns(global int* x) {{ x[0] = {salt} + 1 / 0; }}"


@pytest.mark.parametrize("show", [False, True])
def test_compiler_warnings_are_quiet_unless_asked(module, monkeypatch, capsys, recwarn,
                                                  show) -> None:
    if show:
        monkeypatch.setenv(build.LOG_ENV, "1")
    salt = time.time_ns()  # a new source, so the build is not served from a cache
    build.build_program(module.device, WARNS.format(salt=salt), (), ("warns",))
    assert not [w for w in recwarn if "compiler output" in str(w.message)]
    logged = capsys.readouterr().err
    assert ("OpenCL build log for warns" in logged) == show
    if show:
        assert "division by zero" in logged


def test_read_only_inputs_are_fine_read_only_outputs_are_not(module, h, rng) -> None:
    alpha, A, B = _args(h, rng)
    A.flags.writeable = False
    module.scale(alpha, A, B)
    h.close(B, 2 * A, "f32")
    B.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only"):
        module.scale(alpha, A, B)
