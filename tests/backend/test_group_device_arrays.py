"""Groups of pyopencl arrays: bound on the device (SVM members in place, other members
copied device-to-device), results against numpy, and argument errors before anything runs.

Run it on both PoCLs: ``pytest tests/backend/test_group_device_arrays.py`` and with
``TLC_DEVICE=pypi``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl.array as cla
import pyopencl.tools as cl_tools
import pytest

import backend_opencl
from backend_opencl.exec.arguments import Group
from backend_opencl.runtime import get_device
from backend_opencl.runtime.opencl import device_groups
from tensorlang.diagnostics import LaunchError

SOURCE = """
func @gemm_read(%A: group<memref<f32x8x6>>, %B: memref<f32x6x5>, %C: memref<f32x8x5x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x8x6>>
  %c = subview %C[:, :, %g] : memref<f32x8x5x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.n.n %one, %a, %B, %zero, %c
    : f32, memref<f32x8x6>, memref<f32x6x5>, f32, memref<f32x8x5>
}

func @gemm_write(%A: group<memref<f64x?x?>>, %B: group<memref<f64x?x?>>,
                 %C: group<memref<f64x?x?>>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f64x?x?>>
  %b = load %B[%g] : group<memref<f64x?x?>>
  %c = load %C[%g] : group<memref<f64x?x?>>
  %one = constant 1.0 : f64
  %zero = constant 0.0 : f64
  gemm.n.n %one, %a, %b, %zero, %c
    : f64, memref<f64x?x?>, memref<f64x?x?>, f64, memref<f64x?x?>
}

func @shift(%A: group<memref<f32x4>, offset: ?>, %out: group<memref<f32x4>>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>, offset: ?>
  %o = load %out[%g] : group<memref<f32x4>>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x4>, f32, memref<f32x4>
}
"""

pytestmark = pytest.mark.filterwarnings(
    "ignore::pyopencl.array.InconsistentOpenCLQueueWarning")  # see svm_alloc

SHAPES = [(5, 3, 4), (1, 7, 2), (9, 2, 6), (4, 4, 4)]  # (m, k, n) per group member


@pytest.fixture(scope="module")
def module() -> Any:
    return backend_opencl.compile(SOURCE)


@pytest.fixture(scope="module")
def packed_module() -> Any:
    """The same kernels compiled for a device without SVM (offsets into a packed buffer)."""
    from backend_opencl.api.compiler import compile_program
    from backend_opencl.emit import Target

    return compile_program(SOURCE, target=Target(has_svm=False))


@pytest.fixture(scope="module")
def queue() -> Any:
    return get_device().queue


@pytest.fixture(scope="module")
def svm_alloc(queue) -> Any:
    if not get_device().has_svm:
        pytest.skip("the device has no shared virtual memory")
    # No queue: pyopencl would free through clEnqueueSVMFree, and PoCL 3.0 keeps the
    # pointer array pyopencl frees at once, then reads it in its worker thread (a
    # use-after-free that corrupted the heap; docs/devices.md).  Every test reads its
    # results back before its arrays go, so a synchronous free is safe here, which is
    # what pyopencl's warning about the arrays' other queue is about.
    return cl_tools.SVMAllocator(queue.context, alignment=0)


def dev(queue: Any, host: np.ndarray, allocator: Any = None) -> Any:
    """A pyopencl copy of ``host`` (same strides), optionally from ``allocator``."""
    return cla.to_device(queue, host, allocator=allocator)


def gemm_case(h, rng) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Random A and B members of different shapes, and the numpy products."""
    A = [h.rand(rng, (m, k), "f64") for m, k, _ in SHAPES]
    B = [h.rand(rng, (k, n), "f64") for _, k, n in SHAPES]
    return A, B, [a @ b for a, b in zip(A, B, strict=True)]


def test_read_group_of_buffers(module, h, rng, queue) -> None:
    A = [h.rand(rng, (8, 6), "f32") for _ in range(5)]
    B = h.rand(rng, (6, 5), "f32")
    C = h.poison((8, 5, 5), "f32")
    module.gemm_read([dev(queue, a) for a in A], B, C, num_groups=5)
    h.close(C, np.stack([a @ B for a in A], axis=2), "f32")


@pytest.mark.parametrize("mod", ["module", "packed_module"])
def test_write_group_dynamic_shapes(request, mod, h, rng, queue) -> None:
    A, B, want = gemm_case(h, rng)
    dA, dB = [dev(queue, a) for a in A], [dev(queue, b) for b in B]
    dC = [dev(queue, h.poison(w.shape, "f64")) for w in want]
    request.getfixturevalue(mod).gemm_write(dA, dB, dC, num_groups=len(SHAPES))
    for c, w in zip(dC, want, strict=True):
        h.close(c.get(), w, "f64")
    for d, a in zip(dA + dB, A + B, strict=True):
        np.testing.assert_array_equal(d.get(), a)


@pytest.mark.parametrize("mod", ["module", "packed_module"])
def test_write_group_of_strided_views(request, mod, h, rng, queue) -> None:
    """Members are subviews of one larger device array; only their elements change."""
    A, B, want = gemm_case(h, rng)
    host = h.poison((12, 40), "f64")
    big = dev(queue, host)
    cols = np.cumsum([0] + [w.shape[1] + 1 for w in want])[:-1]
    dC = [big[1:1 + w.shape[0], c:c + w.shape[1]] for w, c in zip(want, cols, strict=True)]
    request.getfixturevalue(mod).gemm_write(
        [dev(queue, a) for a in A], Group([dev(queue, b) for b in B]), dC, num_groups=4)
    got = big.get()
    for w, c in zip(want, cols, strict=True):
        h.close(got[1:1 + w.shape[0], c:c + w.shape[1]], w, "f64")
        got[1:1 + w.shape[0], c:c + w.shape[1]] = np.nan
    assert np.isnan(got).all()  # nothing outside the members was written


@pytest.mark.parametrize("mod", ["module", "packed_module"])
def test_svm_members(request, mod, h, rng, queue, svm_alloc) -> None:
    """SVM members are used in place by SVM kernels (ordinary buffers beside them are
    copied into SVM); kernels without SVM copy them all into a packed buffer."""
    A, B, want = gemm_case(h, rng)
    dA = [dev(queue, a, svm_alloc) for a in A]
    dB = [dev(queue, b, svm_alloc if k % 2 else None) for k, b in enumerate(B)]
    dC = [dev(queue, h.poison(w.shape, "f64"), None if k == 1 else svm_alloc)
          for k, w in enumerate(want)]
    request.getfixturevalue(mod).gemm_write(dA, dB, dC, num_groups=len(SHAPES))
    for c, w in zip(dC, want, strict=True):
        h.close(c.get(), w, "f64")


def test_svm_views_in_place(module, h, rng, queue, svm_alloc) -> None:
    """Members at offsets inside one SVM array get their own addresses in the table."""
    A = [h.rand(rng, (8, 6), "f32") for _ in range(3)]
    whole = dev(queue, np.asfortranarray(np.concatenate(A, axis=1)), svm_alloc)
    B = h.rand(rng, (6, 5), "f32")
    C = h.poison((8, 5, 3), "f32")
    module.gemm_read([whole[:, 6 * i:6 * i + 6] for i in range(3)], B, C, num_groups=3)
    h.close(C, np.stack([a @ B for a in A], axis=2), "f32")


def test_svm_binding_needs_no_copies(queue, svm_alloc, h, rng) -> None:
    members = [dev(queue, h.rand(rng, (4, 3), "f32"), svm_alloc) for _ in range(2)]
    args, _, back = device_groups.bind_device_group(queue.context, queue, members,
                                                    [12, 12], writes=True, svm=True)
    assert len(args) == 1 and back is None  # the table only; nothing to copy back


def test_views_of_one_buffer_bind_in_place_without_svm(queue, h, rng) -> None:
    big = dev(queue, h.rand(rng, (4, 6), "f32"))
    members = [big[:, 0:3], big[:, 3:6]]
    args, _, back = device_groups.bind_device_group(queue.context, queue, members,
                                                    [12, 12], writes=True, svm=False)
    assert args[1] == big.base_data and back is None


@pytest.mark.parametrize("mod", ["module", "packed_module"])
def test_group_with_offset(request, mod, h, rng, queue) -> None:
    A = [h.rand(rng, (10,), "f32") for _ in range(3)]
    out = [dev(queue, h.poison((4,), "f32")) for _ in range(3)]
    request.getfixturevalue(mod).shift(Group([dev(queue, a) for a in A], offset=5), out,
                                       num_groups=3)
    for o, a in zip(out, A, strict=True):
        h.close(o.get(), a[5:9], "f32")


def test_numpy_and_device_groups_in_one_call(module, h, rng, queue) -> None:
    A, B, want = gemm_case(h, rng)
    C = [h.poison(w.shape, "f64") for w in want]
    module.gemm_write([dev(queue, a) for a in A], [dev(queue, b) for b in B], C,
                      num_groups=len(SHAPES))
    for c, w in zip(C, want, strict=True):
        h.close(c, w, "f64")


def _errors(h, rng, queue) -> list[tuple[str, Any, str]]:
    """(name, how to change the gemm_write arguments, expected message)."""
    def member(i: int, value: Any) -> Any:
        def change(args: list[list[Any]]) -> list[list[Any]]:
            args[0] = args[0][:i] + [value] + args[0][i + 1:]
            return args
        return change

    c_order = dev(queue, np.ascontiguousarray(h.rand(rng, (9, 2), "f64")))
    return [
        ("mixed", member(1, h.rand(rng, (1, 7), "f64")),
         "member 1 is a numpy array but the group starts with a pyopencl array"),
        ("dtype", member(2, dev(queue, h.rand(rng, (9, 2), "f32"))),
         "member 2: expected dtype float64"),
        ("rank", member(0, dev(queue, h.rand(rng, (5,), "f64"))), "expected 2 dimensions"),
        ("layout", member(2, c_order), r"member 2: array strides \(2, 1\) .* do not fit"),
        ("too_few", lambda a: [a[0][:3], a[1], a[2]], "3 arrays but 4 work-groups"),
        ("not_array", member(3, [[1.0]]), "member 3 must be a numpy or pyopencl array"),
    ]


@pytest.mark.parametrize("case", ["mixed", "dtype", "rank", "layout", "too_few",
                                  "not_array"])
def test_errors_before_anything_runs(module, h, rng, queue, case) -> None:
    name, change, message = next(e for e in _errors(h, rng, queue) if e[0] == case)
    A, B, want = gemm_case(h, rng)
    dC = [dev(queue, h.poison(w.shape, "f64")) for w in want]
    args = change([[dev(queue, a) for a in A], [dev(queue, b) for b in B], dC])
    with pytest.raises(LaunchError, match=message):
        module.gemm_write(*args, num_groups=len(SHAPES))
    assert all(np.isnan(c.get()).all() for c in dC), name  # nothing ran


def test_static_shape_and_layout_errors(module, h, rng, queue) -> None:
    B, C = h.rand(rng, (6, 5), "f32"), h.poison((8, 5, 2), "f32")
    good = dev(queue, h.rand(rng, (8, 6), "f32"))
    wrong_shape = dev(queue, h.rand(rng, (8, 5), "f32"))
    c_order = dev(queue, np.ascontiguousarray(h.rand(rng, (8, 6), "f32")))
    with pytest.raises(LaunchError, match="member 1: mode 1 must have size 6"):
        module.gemm_read([good, wrong_shape], B, C, num_groups=2)
    with pytest.raises(LaunchError, match="member 1: array strides .* do not fit"):
        module.gemm_read([good, c_order], B, C, num_groups=2)
    with pytest.raises(LaunchError, match="member 1 is a pyopencl array but the group starts"):
        module.gemm_read([h.rand(rng, (8, 6), "f32"), good], B, C, num_groups=2)
    assert np.isnan(C).all()


def test_offset_member_too_short(module, h, rng, queue) -> None:
    out = [dev(queue, h.poison((4,), "f32")) for _ in range(2)]
    A = [dev(queue, h.rand(rng, (10,), "f32")), dev(queue, h.rand(rng, (8,), "f32"))]
    with pytest.raises(LaunchError, match="member 1 must be a contiguous 1-D f32 array of "
                                          "at least 9 elements"):
        module.shift(Group(A, offset=5), out, num_groups=2)
    assert all(np.isnan(o.get()).all() for o in out)
