"""The cyclic garbage collector is held off while tlc compiles, and restored after."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import numpy as np
import pytest

import backend_opencl
from backend_opencl.api import compiler
from backend_opencl.api.collector import collector_paused
from tensorlang import TlcError

KERNEL = """
func @scale(%x: memref<f32x64>) {
  foreach %i = 0, 64 {
    %v = load %x[%i] : memref<f32x64>
    %w = arith.mul %v, 3.0 : f32
    store %w, %x[%i] : memref<f32x64>
  }
}
"""

SHLO = """
func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.multiply %a, %a : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_nested_pauses_restore_the_collector() -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_off_before_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_threads_leave_it_on() -> None:
    entered, release = threading.Barrier(2), threading.Event()

    def compile_for_a_while() -> None:
        with collector_paused():
            entered.wait()
            release.wait(10)

    worker = threading.Thread(target=compile_for_a_while)
    worker.start()
    with collector_paused():
        entered.wait()
    assert not gc.isenabled()  # the worker's compile still runs
    release.set()
    worker.join()
    assert gc.isenabled()


def test_paused_while_compiling_and_after_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    emit = compiler.lower

    def spying(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return emit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compiler, "lower", spying)
    module = backend_opencl.compile(KERNEL)
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    out = x.copy()
    module.scale(out)
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)
    with pytest.raises(TlcError):
        backend_opencl.compile_stablehlo(SHLO.replace("tensor<8xf32>\n}", "tensor<9xf32>\n}"))
    assert seen == [False]
    assert gc.isenabled()
