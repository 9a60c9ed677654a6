"""Several threads call one kernel and one executable at once, with Python switching
threads every microsecond: every call gets its own arguments' results (launches set
arguments and enqueue under a per-kernel lock, docs/abi.md)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest

import backend_opencl

THREADS, CALLS = 4, 60
SOURCE = """
func @scale(%alpha: f32, %x: memref<f32x?>, %y: memref<f32x?>) {
  %zero = constant 0.0 : f32
  axpby.n %alpha, %x, %zero, %y : f32, memref<f32x?>, f32, memref<f32x?>
}

func @batch(%A: group<memref<f32x?>>, %out: memref<f32x?x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x?>>
  %o = subview %out[:, %g] : memref<f32x?x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x?>, f32, memref<f32x?>
}
"""
T = "tensor<16x8xf32>"
PROGRAM = f"""func.func @main(%x: {T}, %y: {T}) -> ({T}, tensor<8xf32>) {{
  %0 = stablehlo.multiply %x, %y : {T}
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%0 init: %c) applies stablehlo.add across dimensions = [0]
    : ({T}, tensor<f32>) -> tensor<8xf32>
  return %0, %1 : {T}, tensor<8xf32>
}}
"""


@contextmanager
def fast_switching() -> Iterator[None]:
    """Make the interpreter switch threads as often as it can (races show up)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def hammer(work: Callable[[int, np.random.Generator], None]) -> None:
    """Run ``work(thread, rng)`` ``CALLS`` times in each of ``THREADS`` threads."""
    errors: list[BaseException] = []

    def run(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            for _ in range(CALLS):
                work(k, rng)
        except BaseException as err:  # noqa: BLE001 (re-raised in the main thread)
            errors.append(err)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    with fast_switching():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile(SOURCE)


def test_one_kernel_from_many_threads(module) -> None:
    def work(k: int, rng: np.random.Generator) -> None:
        n = 5 + k * 7  # sizes differ between threads: mixed-up arguments are caught
        x = rng.standard_normal(n).astype(np.float32)
        y = np.full(n, np.nan, np.float32)
        alpha = float(rng.standard_normal())
        module.scale(alpha, x, y)
        np.testing.assert_allclose(y, np.float32(alpha) * x, rtol=1e-6)

    hammer(work)


def test_one_group_kernel_from_many_threads(module) -> None:
    def work(k: int, rng: np.random.Generator) -> None:
        n, groups = 3 + k, 2 + k
        members = [rng.standard_normal(n).astype(np.float32) for _ in range(groups)]
        out = np.asfortranarray(np.full((n, groups), np.nan, np.float32))
        module.batch(members, out, num_groups=groups)
        np.testing.assert_array_equal(out, np.stack(members, axis=1))

    hammer(work)


def test_one_executable_from_many_threads() -> None:
    exe = backend_opencl.compile_stablehlo(PROGRAM)

    def work(k: int, rng: np.random.Generator) -> None:
        x = rng.standard_normal((16, 8)).astype(np.float32)
        y = rng.standard_normal((16, 8)).astype(np.float32)
        prod, sums = exe(x, y)
        np.testing.assert_allclose(prod, x * y, rtol=1e-6)
        np.testing.assert_allclose(sums, (x * y).sum(axis=0), rtol=1e-5, atol=1e-5)

    hammer(work)
