"""The quick way through calls that do not wait (``backend_opencl.runtime.opencl.quick``)
and the held queue it submits to in batches (``.held``): results equal numpy's whether
a call takes the quick way or the general one, results kept alive are never overwritten,
chains stay on the device, results feed waiting calls, threads share an executable, and
nothing ever waits forever for held commands (a read, polling, the user's own work on the
device's queue, the interpreter's exit).  All on random data, with poisoned frames where
a test says so.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import backend_opencl
from backend_opencl.exec import executable
from backend_opencl.runtime.opencl import held, quick
from backend_opencl.runtime.opencl.device_array import DeviceArray
from tensorlang.diagnostics import LaunchError
from tests.lowering.test_executor_io import call_concurrently

ROOT = Path(__file__).resolve().parents[2]
T = "tensor<16x32xf32>"
STEP = f"""func.func public @main(%x: {T}, %w: tensor<32x32xf32>) -> ({T}, tensor<32xf32>) {{
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : ({T}, tensor<32x32xf32>) -> {T}
  %1 = stablehlo.tanh %0 : {T}
  %c = stablehlo.constant dense<5.000000e-01> : {T}
  %2 = stablehlo.multiply %x, %c : {T}
  %3 = stablehlo.add %1, %2 : {T}
  %z = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %4 = stablehlo.reduce(%3 init: %z) applies stablehlo.add across dimensions = [0]
       : ({T}, tensor<f32>) -> tensor<32xf32>
  return %3, %4 : {T}, tensor<32xf32>
}}
"""
BIG = "tensor<256x256xf32>"
ROW_SUMS = f"""func.func public @main(%x: {BIG}) -> tensor<256xf32> {{
  %0 = stablehlo.exponential %x : {BIG}
  %1 = stablehlo.multiply %0, %x : {BIG}
  %z = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [1]
       : ({BIG}, tensor<f32>) -> tensor<256xf32>
  return %2 : tensor<256xf32>
}}
"""
SCALE = f"""func.func public @main(%x: {BIG}) -> {BIG} {{
  %0 = stablehlo.exponential %x : {BIG}
  %1 = stablehlo.multiply %0, %x : {BIG}
  return %1 : {BIG}
}}
"""
LOOP = """func.func public @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.while(%c = %x) : tensor<8xf32>
    cond {
      %m = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %z = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %s = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [0]
           : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
      %p = stablehlo.compare GT, %s, %m : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %h = stablehlo.constant dense<5.000000e-01> : tensor<8xf32>
      %n = stablehlo.multiply %c, %h : tensor<8xf32>
      stablehlo.return %n : tensor<8xf32>
    }
  return %0 : tensor<8xf32>
}
"""
W = (np.random.default_rng(1).standard_normal((32, 32)) / 6).astype(np.float32)


def _x(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((16, 32)).astype(np.float32)


def _step(x: np.ndarray, w: np.ndarray = W) -> tuple[np.ndarray, np.ndarray]:
    y = np.tanh(x.astype(np.float64) @ w) + 0.5 * x
    return y, y.sum(0)


def _check(results: tuple[object, ...], x: np.ndarray) -> None:
    for got, want in zip(results, _step(x), strict=True):
        assert isinstance(got, DeviceArray)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.fixture(params=[False, True], ids=["pooled", "poisoned"])
def exe(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
        ) -> executable.Executable:
    """The step program, its first call made (the quick way exists from then on)."""
    monkeypatch.setattr(executable, "POISON", request.param)
    exe = backend_opencl.compile_stablehlo(STEP)
    exe.dispatch(_x(0), W)
    return exe


def test_quick_calls_equal_numpy(exe: executable.Executable) -> None:
    assert isinstance(exe.quick, quick.QuickDispatch)
    for seed in range(1, 40):  # more than a batch: some submitted by the batch, some by reads
        x = _x(seed)
        taken = exe.quick((x, W))
        assert taken is not None
        _check(taken, x)


def test_the_first_call_and_every_kind_of_argument_agree(exe: executable.Executable) -> None:
    fresh = backend_opencl.compile_stablehlo(STEP.replace("@main", "@main ", 1))
    x = _x(2)
    _check(fresh.dispatch(x, W), x)  # the first call, which makes the quick way
    _check(fresh.dispatch(x.astype(">f4"), W), x)  # converted: the general way
    _check(fresh.dispatch(np.asfortranarray(x), W), x)  # any layout: copied in
    y, _ = fresh.dispatch(x, W)
    _check(fresh.dispatch(y, W), _step(x)[0])  # a result of the quick way, borrowed


def test_calls_it_does_not_take_are_refused_or_checked(exe: executable.Executable) -> None:
    assert exe.quick is not None
    x = _x(3)
    assert exe.quick((x,)) is None  # too few
    assert exe.quick((x.T.copy(), W)) is None  # another shape
    assert exe.quick((x.astype(np.float64), W)) is None  # another dtype
    assert exe.quick((x.tolist(), W)) is None  # not an array
    with pytest.raises(LaunchError, match="argument 0"):
        exe.dispatch(x.T.copy(), W)


def test_results_kept_alive_are_never_overwritten(exe: executable.Executable) -> None:
    assert exe.quick is not None
    xs = [_x(100 + i) for i in range(3 * held.BATCH)]  # more results than spare frames
    kept = [exe.dispatch(x, W) for x in xs]
    for _ in range(held.BATCH + 3):  # more calls, their results dropped unread
        exe.dispatch(xs[0], W)
    for x, results in zip(xs, kept, strict=True):
        _check(results, x)


def test_frames_are_reused_once_results_are_gone(exe: executable.Executable) -> None:
    assert isinstance(exe.quick, quick.QuickDispatch)
    if exe.poison:
        pytest.skip("poisoned calls take fresh frames")
    before = exe.quick._made  # frames of earlier tests (the executable is cached)
    for seed in range(5 * held.BATCH):
        exe.dispatch(_x(seed), W)
    assert exe.quick._made <= max(before, exe.quick.spare)


def test_a_chain_stays_on_the_held_queue(exe: executable.Executable) -> None:
    x = _x(4)
    y, want = x, x.astype(np.float64)
    for _ in range(12):
        y, _ = exe.dispatch(y, W)
        want = _step(want)[0]
    assert isinstance(y, DeviceArray) and y.borrow(held.held_queue(exe.device).queue)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-5)


def test_results_feed_a_waiting_call_on_the_device_queue(exe: executable.Executable) -> None:
    x = _x(5)
    y, _ = exe.dispatch(x, W)  # held behind the gate (a batch is not full)
    got, total = exe(y, W)  # the device's queue: waits for y's commands first
    want = _step(_step(x)[0])
    np.testing.assert_allclose(got, want[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(total, want[1], rtol=1e-4, atol=1e-4)


def test_polling_sees_held_commands_finish(exe: executable.Executable) -> None:
    y, _ = exe.dispatch(_x(6), W)
    deadline = time.monotonic() + 30
    while not y.is_ready():
        assert time.monotonic() < deadline, "a held call never ran"
        time.sleep(1e-3)
    np.testing.assert_allclose(np.asarray(y), _step(_x(6))[0], rtol=1e-5, atol=1e-5)


def test_threads_dispatching_at_once(exe: executable.Executable) -> None:
    def work(seed: int) -> None:
        kept = []
        for i in range(30):
            x = _x(1000 * seed + i)
            results = exe.dispatch(x, W)
            if i % 3 == 0:
                kept.append((x, results))
            else:
                _check(results, x)
        y = _x(seed)
        for _ in range(5):
            y = exe.dispatch(y, W)[0]
        for x, results in kept:
            _check(results, x)

    call_concurrently(work, list(range(4)))


def test_a_plan_with_large_frames_is_submitted_at_once() -> None:
    exe = backend_opencl.compile_stablehlo(ROW_SUMS)
    x = np.random.default_rng(7).standard_normal((256, 256)).astype(np.float32)
    exe.dispatch(x)
    assert isinstance(exe.quick, quick.QuickDispatch) and not exe.quick.batched
    y = exe.dispatch(x)[0]
    assert exe.quick.held._gate is None  # nothing left held behind the gate
    np.testing.assert_allclose(np.asarray(y), (np.exp(x) * x).sum(1), rtol=1e-4, atol=1e-3)


def test_dropped_poisoned_frames_live_until_their_commands_ran(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh frames whose results are dropped unread: their host memory must outlive the
    queued kernels writing it (under ``TLC_STRESS`` those run late)."""
    monkeypatch.setattr(executable, "POISON", True)
    general = backend_opencl.compile_stablehlo(SCALE)  # a 256 KiB result: the general way
    x = np.random.default_rng(9).standard_normal((256, 256)).astype(np.float32)
    for _ in range(6):
        general.dispatch(x)
        exe = backend_opencl.compile_stablehlo(STEP)
        exe.dispatch(_x(9), W)
    assert general.quick is None
    np.testing.assert_allclose(np.asarray(general.dispatch(x)[0]), np.exp(x) * x,
                               rtol=1e-5, atol=1e-5)
    _check(exe.dispatch(_x(9), W), _x(9))


def test_plans_that_wait_for_the_device_take_the_general_way() -> None:
    exe = backend_opencl.compile_stablehlo(LOOP)
    x = np.random.default_rng(8).uniform(1, 2, 8).astype(np.float32)
    got = exe.dispatch(x)[0]
    assert exe.quick is None
    want = x.copy()
    while want.sum() > 1:
        want = want * np.float32(0.5)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def _run_script(body: str) -> str:
    """Run ``body`` in a fresh interpreter (a hang fails the test, it does not stall it)."""
    script = textwrap.dedent("""
        import numpy as np
        import backend_opencl
        from tests.runtime.test_quick_dispatch import STEP, W, _x
        exe = backend_opencl.compile_stablehlo(STEP)
        exe.dispatch(_x(0), W)
    """) + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_users_own_work_on_the_device_queue_never_waits_for_held_calls() -> None:
    out = _run_script("""
        import pyopencl.array as cl_array
        y = exe.dispatch(_x(1), W)  # held
        data = np.arange(64, dtype=np.float32)
        mine = cl_array.to_device(exe.device.queue, data)  # a blocking write
        print(float((mine * 2).get().sum()), float(np.asarray(y[1]).sum()))
    """)
    mine, total = map(float, out.split())
    assert mine == 2 * 63 * 64 / 2
    assert total == pytest.approx(float(_step(_x(1))[1].sum()), rel=1e-4, abs=1e-4)


def test_the_interpreter_exits_with_calls_held() -> None:
    _run_script("""
        results = [exe.dispatch(_x(i), W) for i in range(3)]  # held, never read
        print("done")
    """)
