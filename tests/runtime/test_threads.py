"""Launches from several threads with Python switching threads every microsecond: a
guarded kernel (each launch has its own bounds record, so a violation in one thread is
never reported by another), a kernel with launch checks (errors stay in the calling
thread) and a StableHLO executable; every result is checked against numpy.  Each test
is bounded to a few seconds (docs/abi.md, "numpy arrays in place": threads).
``tests/backend/test_thread_stress.py`` covers plain and group kernels."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

import backend_opencl
from tensorlang.diagnostics import BoundsError, LaunchError

THREADS = 4
SECONDS = 2.0
SOURCE = """
func @gather(%A: memref<f32x?>, %B: memref<i32x?>, %C: memref<f32x?>) {
  %c0 = constant 0 : index
  %n = size %C[0] : memref<f32x?>
  foreach %i = %c0, %n : index {
    %j32 = load %B[%i] : memref<i32x?>
    %j = cast %j32 : i32 -> index
    %v = load %A[%j] : memref<f32x?>
    store %v, %C[%i] : memref<f32x?>
  }
}

func @matmul(%A: memref<f32x?x?>, %B: memref<f32x?x?>, %C: memref<f32x?x?>) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.n.n %one, %A, %B, %zero, %C : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?>
}
"""
T = "tensor<12x5xf32>"
PROGRAM = f"""func.func @main(%x: {T}, %y: {T}) -> {T} {{
  %0 = stablehlo.multiply %x, %y : {T}
  %1 = stablehlo.tanh %0 : {T}
  %2 = stablehlo.add %1, %x : {T}
  return %2 : {T}
}}
"""


def hammer(work: Callable[[int, int, np.random.Generator], None]) -> int:
    """Run ``work(thread, call, rng)`` in ``THREADS`` threads for ``SECONDS`` (at least 3
    calls each) with a 1 us switch interval; re-raise the first failure; return the calls."""
    errors: list[BaseException] = []
    counts = [0] * THREADS
    stop = time.monotonic() + SECONDS

    def run(k: int) -> None:
        rng = np.random.default_rng(100 + k)
        try:
            while counts[k] < 3 or time.monotonic() < stop:
                work(k, counts[k], rng)
                counts[k] += 1
        except BaseException as err:  # noqa: BLE001 (re-raised in the main thread)
            errors.append(err)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0]
    return sum(counts)


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile(SOURCE)


def test_guarded_kernel_reports_violations_to_the_right_thread(module) -> None:
    assert module.gather.info.guards  # a loaded index: guarded by default

    def work(k: int, call: int, rng: np.random.Generator) -> None:
        n = 40 + 13 * k
        a = rng.standard_normal(n).astype(np.float32)
        idx = rng.integers(0, n, size=n + k).astype(np.int32)
        c = np.full(n + k, np.nan, np.float32)
        bad = (call + k) % 3 == 0
        if bad:
            idx[call % idx.size] = n + 1000 * k
            with pytest.raises(BoundsError, match=f"index {n + 1000 * k} not in"):
                module.gather(a, idx, c)
        else:
            module.gather(a, idx, c)
            np.testing.assert_array_equal(c, a[idx])

    assert hammer(work) >= 3 * THREADS


def test_launch_checks_from_many_threads(module) -> None:
    def work(k: int, call: int, rng: np.random.Generator) -> None:
        m, kk, n = 3 + k, 2 + call % 4, 5 + k
        a = np.asfortranarray(rng.standard_normal((m, kk)).astype(np.float32))
        b = np.asfortranarray(rng.standard_normal((kk + (call % 2), n)).astype(np.float32))
        c = np.asfortranarray(np.full((m, n), np.nan, np.float32))
        if call % 2:
            with pytest.raises(LaunchError, match=f"has size {kk + 1}"):
                module.matmul(a, b, c)
            assert np.isnan(c).all()
        else:
            module.matmul(a, b, c)
            np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)

    assert hammer(work) >= 3 * THREADS


def test_one_executable_from_many_threads() -> None:
    exe = backend_opencl.compile_stablehlo(PROGRAM)

    def work(k: int, call: int, rng: np.random.Generator) -> None:
        x = rng.standard_normal((12, 5)).astype(np.float32)
        y = rng.standard_normal((12, 5)).astype(np.float32) + k
        (out,) = exe(x, y)
        np.testing.assert_allclose(out, np.tanh(x * y) + x, rtol=1e-5, atol=1e-5)

    assert hammer(work) >= 3 * THREADS
