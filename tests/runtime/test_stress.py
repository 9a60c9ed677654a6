"""``TLC_STRESS``: a slow and late device.  Every command waits behind a random delay, so
a host read that does not wait for the command writing its memory sees stale data: the
host-loop race (a plan ``Copy`` whose event a predicate read or the final wait skipped)
failed here on every run before it was fixed, on a quiet machine."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from backend_opencl.runtime import stress

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, stress_ms: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh process (stress is installed when OpenCL is first loaded)."""
    env = {**os.environ, "TLC_STRESS": stress_ms, "TLC_STRESS_SEED": "7"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("text,want", [("", 0.0), ("0", 0.0), ("1", 2e-3), ("5", 5e-3),
                                       ("0.5", 5e-4), ("x", 2e-3)])
def test_delay_setting(monkeypatch: pytest.MonkeyPatch, text: str, want: float) -> None:
    monkeypatch.setenv(stress.ENV, text)
    assert stress.max_delay_s() == pytest.approx(want)


def test_commands_run_late() -> None:
    """Right after a kernel is enqueued it has not run: the device is behind the host."""
    done = _python("""
        import numpy as np, backend_opencl
        mod = backend_opencl.compile('''
        func @twice(%x: memref<f32x64>) {
          %two = constant 2.0 : f32
          %zero = constant 0.0 : f32
          axpby.n %two, %x, %zero, %x : f32, memref<f32x64>, f32, memref<f32x64>
        }''')
        from backend_opencl.runtime.opencl import buffers, launch
        from backend_opencl.runtime import get_device
        dev = get_device()
        x = buffers.upload(dev, np.arange(64, dtype=np.float32))
        kernel = mod.twice
        run = launch.prepared(dev.queue, mod.built.program, kernel.info.c_name, 1,
                              kernel.info.plan.work_group_size)
        late = 0
        for _ in range(20):
            event = run([x])
            late += event.command_execution_status != 0
            event.wait()
        assert np.array_equal(x.get(), np.arange(64) * 2.0 ** 20)
        print(late)
    """, "20")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 15  # a delay of 0 is drawn sometimes


def test_host_loops_wait_for_their_copies() -> None:
    """Counted host loops whose carries reach the results through plan copies: a loop of
    zero trips (the initial carry copied, nothing launched after it) and loops of several,
    with bounds from constants and from parameters, each run many times."""
    done = _python("""
        import numpy as np
        from frontend.lower.families.control import device_loop
        device_loop.MAX_ELEMENTS = 0  # loops on the host
        import backend_opencl
        from tests.lowering.test_loops import counter_loop
        rng = np.random.default_rng(0)
        for start, limit in ((6, 2), (0, 3), (3, 9)):
            text = counter_loop("i32", f"stablehlo.constant dense<{start}> : tensor<i32>",
                                "%l", 1, "LT")
            exe = backend_opencl.compile_stablehlo(text)
            for _ in range(15):
                a = rng.standard_normal(3).astype(np.float32)
                i, x = exe(a, np.int32(0), np.int32(limit))
                n = max(limit - start, 0)
                assert int(i) == start + n, (start, limit, int(i))
                np.testing.assert_allclose(x, (n + 1) * a, rtol=1e-5)
        print("ok")
    """, "5")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
