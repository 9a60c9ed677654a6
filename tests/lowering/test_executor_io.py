"""How the plan executor takes and gives arrays: numpy arguments bound in place on CPU
devices (aligned, C-contiguous, large enough) or copied (misaligned, Fortran order,
strided), pyopencl arguments used on the device, results after one wait, inputs never
modified, concurrent calls; all against numpy with poisoned buffers (conftest)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyopencl.array as cl_array
import pytest

import backend_opencl
from backend_opencl.exec import executable
from backend_opencl.exec.module import aligned_empty
from backend_opencl.runtime import get_device
from backend_opencl.runtime.opencl import buffers, launch, memory
from tensorlang.diagnostics import LaunchError
from tests.lowering.conftest import module, rand

N = 128  # 128 x 128 f32 = 64 KiB: at executable.IN_PLACE_BYTES, so bound in place
BIG = f"tensor<{N}x{N}xf32>"
MULTI = module(f"(%a: {BIG}, %b: {BIG}, %s: tensor<4xf32>) -> ({BIG}, {BIG}, tensor<4xf32>, "
               f"{BIG})", f"""
  %0 = stablehlo.add %a, %b : {BIG}
  %1 = stablehlo.multiply %a, %b : {BIG}
  %2 = stablehlo.add %s, %s : tensor<4xf32>
  return %0, %1, %2, %a : {BIG}, {BIG}, tensor<4xf32>, {BIG}""")
LOOP = module(f"(%a: {BIG}) -> (tensor<i32>, {BIG})", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, {BIG}
   cond {{
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %y = stablehlo.add %x, %x : {BIG}
    stablehlo.return %j, %y : tensor<i32>, {BIG}
  }}
  return %0#0, %0#1 : tensor<i32>, {BIG}""")


def _aligned(x: np.ndarray, shift: int = 0) -> np.ndarray:
    align = max(128, memory.host_alignment(get_device(None)))
    raw = aligned_empty((x.nbytes + shift,), np.uint8, align=align)
    out = raw[shift:].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out


def _check_multi(outs: tuple[np.ndarray, ...], a: np.ndarray, b: np.ndarray,
                 s: np.ndarray) -> None:
    np.testing.assert_allclose(outs[0], a + b, rtol=1e-6)
    np.testing.assert_allclose(outs[1], a * b, rtol=1e-6)
    np.testing.assert_allclose(outs[2], s + s, rtol=1e-6)
    np.testing.assert_array_equal(outs[3], a)
    assert not np.shares_memory(outs[3], a)  # a result never aliases an argument


@pytest.mark.parametrize("layout", ["aligned", "misaligned", "fortran", "strided"])
def test_numpy_arguments(layout: str) -> None:
    exe = backend_opencl.compile_stablehlo(MULTI)
    a, b, s = rand((N, N)), rand((N, N)), rand((4,))
    if layout == "aligned":
        a, b = _aligned(a), _aligned(b)
    elif layout == "misaligned":
        a, b = _aligned(a, 4), _aligned(b, 12)
    elif layout == "fortran":
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    else:
        a, b = rand((2 * N, N))[::2], rand((N, 2 * N))[:, 1::2]
    before = a.copy(), b.copy()
    _check_multi(exe(a, b, s), a, b, s)
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])


def record_in_place_bindings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The host addresses numpy arrays are bound at in place from now on (a list that
    grows); skips the test on devices that never bind numpy memory in place."""
    if not memory.host_alignment(get_device(None)):
        pytest.skip("the device does not bind numpy memory in place")
    made: list[int] = []

    class Counting(buffers.HostArray):
        def _set(self, ctx, queue, host, writes) -> None:
            super()._set(ctx, queue, host, writes)
            made.append(host.ctypes.data)

    monkeypatch.setattr(buffers, "HostArray", Counting)
    return made


def test_aligned_arguments_and_results_are_bound_in_place(monkeypatch) -> None:
    made = record_in_place_bindings(monkeypatch)
    exe = backend_opencl.compile_stablehlo(MULTI)
    a, b, s = _aligned(rand((N, N))), _aligned(rand((N, N))), rand((4,))
    outs = exe(a, b, s)
    _check_multi(outs, a, b, s)
    assert a.ctypes.data in made and b.ctypes.data in made
    assert outs[0].ctypes.data in made and outs[1].ctypes.data in made


def test_results_come_back_after_one_wait(monkeypatch) -> None:
    waits: list[object] = []
    real = launch.finish
    monkeypatch.setattr(launch, "finish", lambda q, last=None, spin=None: (
        waits.append(q), real(q, last, spin)))
    monkeypatch.setattr(buffers, "download", lambda *a: pytest.fail("a blocking read"))
    exe = backend_opencl.compile_stablehlo(MULTI)
    a, b, s = rand((N, N)), rand((N, N)), rand((4,))
    _check_multi(exe(a, b, s), a, b, s)
    assert len(waits) == 1


def test_pyopencl_arguments_stay_on_the_device() -> None:
    queue = get_device(None).queue
    exe = backend_opencl.compile_stablehlo(MULTI)
    a, b, s = rand((N, N)), rand((N, N)), rand((4,))
    da, db, ds = (cl_array.to_device(queue, x) for x in (a, b, s))
    _check_multi(exe(da, db, ds), a, b, s)
    _check_multi(exe(da, b, ds), a, b, s)  # mixed
    np.testing.assert_array_equal(da.get(), a)


def test_pyopencl_argument_errors() -> None:
    queue = get_device(None).queue
    exe = backend_opencl.compile_stablehlo(MULTI)
    a, s = rand((N, N)), rand((4,))
    with pytest.raises(LaunchError, match="argument 1 must have dtype float32"):
        exe(a, cl_array.to_device(queue, a.astype(np.float64)), s)
    strided = cl_array.to_device(queue, rand((N, 2 * N)))[:, ::2]
    with pytest.raises(LaunchError, match="C-contiguous"):
        exe(a, strided, s)


@pytest.mark.parametrize("kind", ["aligned", "pyopencl"])
def test_loop_carry_from_an_argument_leaves_it_unchanged(kind: str) -> None:
    exe = backend_opencl.compile_stablehlo(LOOP)
    a = _aligned(rand((N, N)))
    before = a.copy()
    arg = cl_array.to_device(get_device(None).queue, a) if kind == "pyopencl" else a
    i, x = exe(arg)
    assert int(i) == 3
    np.testing.assert_allclose(x, 8 * before, rtol=1e-6)
    np.testing.assert_array_equal(a, before)
    if kind == "pyopencl":
        np.testing.assert_array_equal(arg.get(), before)


def test_warm_calls_reuse_pooled_buffers(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    exe = backend_opencl.compile_stablehlo(MULTI)
    for _ in range(3):
        a, b, s = rand((N, N)), _aligned(rand((N, N)), 8), rand((4,))
        _check_multi(exe(a, b, s), a, b, s)


def test_concurrent_calls() -> None:
    exe = backend_opencl.compile_stablehlo(MULTI)
    data = [(rand((N, N)), _aligned(rand((N, N))), rand((4,))) for _ in range(4)]

    def work(args: tuple[np.ndarray, ...]) -> None:
        for _ in range(4):
            _check_multi(exe(*args), *args)

    call_concurrently(work, data)


def call_concurrently(work: Callable[[Any], None], items: Sequence[Any]) -> None:
    """Run ``work`` on every item at once, each in a thread of its own; re-raise the
    first error a thread met."""
    with ThreadPoolExecutor(len(items)) as pool:
        for future in [pool.submit(work, item) for item in items]:
            future.result()
