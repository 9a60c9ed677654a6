"""numpy arrays bound in place on CPU devices (``CL_MEM_USE_HOST_PTR``): aligned arrays
and misaligned read-only ones are the kernel's memory, misaligned written ones go through
an aligned staging copy, groups of numpy members become a table of their addresses;
results match numpy in every case."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import backend_opencl
from backend_opencl.exec.module import aligned_empty
from backend_opencl.runtime import get_device
from backend_opencl.runtime.opencl import memory
from tensorlang.diagnostics import LaunchError

SOURCE = """
func @scale(%alpha: f32, %A: memref<f32x?x?,strided<1,?>>, %B: memref<f32x?x?,strided<1,?>>) {
  %zero = constant 0.0 : f32
  axpby.n %alpha, %A, %zero, %B
    : f32, memref<f32x?x?,strided<1,?>>, f32, memref<f32x?x?,strided<1,?>>
}

func @gemm(%A: memref<f64x8x5x?>, %B: memref<f64x5x6x?>, %C: memref<f64x8x6x?>) {
  %g = group_id
  %one = constant 1.0 : f64
  %zero = constant 0.0 : f64
  %a = subview %A[:, :, %g] : memref<f64x8x5x?>
  %b = subview %B[:, :, %g] : memref<f64x5x6x?>
  %c = subview %C[:, :, %g] : memref<f64x8x6x?>
  gemm.n.n %one, %a, %b, %zero, %c : f64, memref<f64x8x5>, memref<f64x5x6>, f64, memref<f64x8x6>
}

func @group(%A: group<memref<f32x4x3>>, %B: group<memref<f32x4x3>>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4x3>>
  %b = load %B[%g] : group<memref<f32x4x3>>
  %two = constant 2.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %two, %a, %zero, %b : f32, memref<f32x4x3>, f32, memref<f32x4x3>
}
"""

ALIGN = 128


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile(SOURCE)


@pytest.fixture(scope="module")
def in_place() -> int:
    align = memory.host_alignment(get_device(None))
    if not align:
        pytest.skip("the device does not bind numpy memory in place")
    return align


def _aligned(x: np.ndarray, shift: int = 0) -> np.ndarray:
    """A Fortran-ordered copy of ``x`` at ``shift`` bytes past a boundary of the device's
    in-place alignment (at least 128 bytes)."""
    align = max(ALIGN, memory.host_alignment(get_device(None)))
    raw = aligned_empty((x.nbytes + shift,), np.uint8, align=align)
    out = raw[shift:].view(x.dtype).reshape(x.shape, order="F")
    out[...] = x
    return out


def test_probe_finds_host_memory_shared(in_place) -> None:
    assert memory._probe(get_device(None), in_place)  # what non-PoCL CPU drivers run


def test_aligned_arrays_are_the_kernels_memory(in_place, h, rng) -> None:
    A = _aligned(h.rand(rng, (6, 5), "f32"))
    buf, back = memory.bind_in_place(get_device(None).context, A, A.size, True, in_place)
    assert back is None
    view = buf.get_host_array((A.size,), np.float32)
    assert view.ctypes.data == A.ctypes.data  # no copy: the buffer is A's memory


@pytest.mark.parametrize("writes", [False, True])
@pytest.mark.parametrize("shift", [4, 68])
def test_misaligned_arrays_in_place_on_pocl(in_place, h, rng, shift, writes) -> None:
    """PoCL binds element-aligned memory as it is, read or written; another driver would
    copy it at every launch, so it gets an aligned staging copy (copied back if written)."""
    A = _aligned(h.rand(rng, (6, 5), "f32"), shift)
    ctx = get_device(None).context
    anywhere = memory.binds_anywhere(get_device(None))
    buf, back = memory.bind_in_place(ctx, A, A.size, writes, in_place, anywhere)
    address = buf.get_host_array((A.size,), np.float32).ctypes.data
    if anywhere:  # PoCL
        assert back is None and address == A.ctypes.data
    else:
        assert back is not None and address % in_place == 0
        back()
    buf, back = memory.bind_in_place(ctx, A, A.size, writes, in_place, anywhere=False)
    assert back is not None  # not anywhere: an aligned staging copy
    assert buf.get_host_array((A.size,), np.float32).ctypes.data != A.ctypes.data
    back()


@pytest.mark.parametrize("shift", [0, 4, 68])
def test_scale_in_place_and_misaligned(module, h, rng, shift) -> None:
    A = _aligned(h.rand(rng, (6, 5), "f32"), shift)
    B = _aligned(h.poison((6, 5), "f32"), shift)
    before = A.copy()
    module.scale(np.float32(3), A, B)
    h.close(B, 3 * before, "f32")
    np.testing.assert_array_equal(A, before)


def test_strided_subview_in_place(module, h, rng) -> None:
    big = _aligned(h.rand(rng, (9, 7), "f32"))
    out = _aligned(h.poison((9, 7), "f32"))
    before, untouched = big.copy(), out.copy()
    module.scale(np.float32(-2), big[2:6, 1:4], out[2:6, 1:4])
    h.close(out[2:6, 1:4], -2 * before[2:6, 1:4], "f32")
    mask = np.ones(out.shape, bool)
    mask[2:6, 1:4] = False
    np.testing.assert_array_equal(np.isnan(out[mask]), np.isnan(untouched[mask]))
    np.testing.assert_array_equal(big, before)


def test_read_only_input_in_place(module, h, rng) -> None:
    A = _aligned(h.rand(rng, (3, 4), "f32"))
    A.flags.writeable = False
    B = _aligned(h.poison((3, 4), "f32"))
    module.scale(np.float32(1.5), A, B)
    h.close(B, 1.5 * A, "f32")


@pytest.mark.parametrize("shift", [0, 8])
def test_batched_gemm_numpy_path(module, h, rng, shift) -> None:
    n = 37
    A = _aligned(h.rand(rng, (8, 5, n), "f64"), shift)
    B = _aligned(h.rand(rng, (5, 6, n), "f64"), shift)
    C = _aligned(h.poison((8, 6, n), "f64"), shift)
    module.gemm(A, B, C, num_groups=n)
    h.close(C, np.einsum("ikb,kjb->ijb", A, B), "f64")


def test_c_order_array_is_still_an_error(module, h, rng) -> None:
    A = np.ascontiguousarray(h.rand(rng, (8, 5, 3), "f64"))
    with pytest.raises(LaunchError, match="do not fit|column-major"):
        module.gemm(A, h.rand(rng, (5, 6, 3), "f64"), h.poison((8, 6, 3), "f64"),
                    num_groups=3)


@pytest.mark.parametrize("shift", [0, 4])
def test_group_members_by_address(module, h, rng, shift) -> None:
    n = 5
    A = _aligned(h.rand(rng, (4, 3, n), "f32"), shift)
    B = _aligned(h.poison((4, 3, n), "f32"), shift)
    module.group([A[:, :, g] for g in range(n)], [B[:, :, g] for g in range(n)],
                 num_groups=n)
    h.close(B, 2 * A, "f32")


def test_zero_copy_off_gives_the_same_results(monkeypatch, h, rng) -> None:
    monkeypatch.setenv(memory.ZERO_COPY_ENV, "0")
    mod = backend_opencl.compile(SOURCE)
    assert mod.runtime._align == 0
    A = _aligned(h.rand(rng, (6, 5), "f32"))
    B = _aligned(h.poison((6, 5), "f32"))
    mod.scale(np.float32(3), A, B)
    h.close(B, 3 * A, "f32")


def test_concurrent_launches(module, h, rng) -> None:
    inputs = [_aligned(h.rand(rng, (8, 5, 9), "f64")) for _ in range(4)]
    bs = [_aligned(h.rand(rng, (5, 6, 9), "f64")) for _ in range(4)]
    outs = [_aligned(h.poison((8, 6, 9), "f64")) for _ in range(4)]

    def work(i: int) -> None:
        for _ in range(5):
            module.gemm(inputs[i], bs[i], outs[i], num_groups=9)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b, c in zip(inputs, bs, outs, strict=True):
        h.close(c, np.einsum("ikb,kjb->ijb", a, b), "f64")
