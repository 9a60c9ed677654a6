"""PoCL's first-time compiles, moved off the critical path.

The helper process that compiles a first call's kernels into PoCL's disk cache
(:mod:`backend_opencl.runtime.opencl.prewarm`): it compiles every kernel it is given (its
own cache folder shows them), it is stopped when the first call returns, the results
are numpy's with it running (a host loop of a data-dependent trip count, poisoned
outputs), and it starts only where it pays off.  The background set-up of PoCL's
compiler (:func:`backend_opencl.runtime.opencl.build.warm_up`): once per process and
device, a build that completes, nothing elsewhere."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import backend_opencl
from backend_opencl.exec import executable
from backend_opencl.runtime.opencl import build, prewarm
from backend_opencl.runtime.opencl.devices import get_device
from tensorlang.plan import launches
from tests.runtime.test_plan_frame_loops import HALVING

RNG = np.random.default_rng(43)

V = "tensor<256xf32>"

# kernels before, in and after test_plan_frame_loops' loop of a data-dependent trip
# count (its halving factor HALF)
PROGRAM = (HALVING
           .replace("  %0:2 = stablehlo.while(%v = %x,",
                    f"  %x2 = stablehlo.sine %x : {V}\n  %0:2 = stablehlo.while(%v = %x2,")
           .replace("dense<0.5>", "dense<HALF>")
           .replace("  return %0#0, %0#1", f"""  %a = stablehlo.exponential %0#0 : {V}
  %b = stablehlo.multiply %a, %x : {V}
  %r = stablehlo.reverse %b, dims = [0] : {V}
  %t = stablehlo.tanh %r : {V}
  return %t, %0#1"""))


def _numpy(x: np.ndarray, limit: float, half: float) -> tuple[np.ndarray, int]:
    v, i = np.sin(x.astype(np.float64)), 0
    while float(np.sum(v * v)) > limit:
        w = v * half
        v, i = np.cos(w) * w, i + 1
    return np.tanh((np.exp(v) * x)[::-1]), i


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> list[prewarm.Helper]:
    """The helpers started (each source may start one again)."""
    device = get_device()
    if not device.is_pocl or prewarm.os.environ.get(prewarm.KERNEL_CACHE_ENV) == "0":
        pytest.skip("the helper shares PoCL's kernel cache")
    started: list[prewarm.Helper] = []
    start = prewarm.start

    def recording(*args: object, **kwargs: object) -> prewarm.Helper | None:
        helper = start(*args, **kwargs)  # type: ignore[arg-type]
        if helper is not None:
            started.append(helper)
            stop = helper.stop

            def stopped() -> None:
                helper.stopped = True  # type: ignore[attr-defined]
                stop()

            helper.stop = stopped  # type: ignore[method-assign]
        return helper

    monkeypatch.setattr(prewarm, "start", recording)
    monkeypatch.setattr(prewarm, "_STARTED", set())
    monkeypatch.setenv(prewarm.ENV, "1")
    return started


def _compiled(text: str) -> executable.Executable:
    return backend_opencl.compile_stablehlo(text)


def test_helper_compiles_every_kernel_into_its_cache(helpers: list[prewarm.Helper],
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch
                                                     ) -> None:
    exe = _compiled(PROGRAM.replace("HALF", "0.5"))  # PoCL starts with its own cache
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))  # the helper's
    exe._resolve()  # what a first call does before its launches
    assert len(helpers) == 1
    assert helpers[0].process.wait(timeout=120) == 0  # it launched every kernel
    kernels = exe.kernels().kernels
    expected = {kernels[s.kernel].info.c_name for s in launches(exe.plan.steps)}
    compiled = {p.parent.parent.name for p in tmp_path.rglob("*.so")}
    assert len(expected) >= 3 and expected <= compiled, expected - compiled


def test_first_call_stops_helper_and_matches_numpy(helpers: list[prewarm.Helper],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executable, "POISON", True)
    exe = _compiled(PROGRAM.replace("HALF", "0.45"))
    x = RNG.standard_normal(256).astype(np.float32)
    limit = np.float32(1e-3)
    out, trips = exe(x, limit)
    assert len(helpers) == 1
    assert getattr(helpers[0], "stopped", False)  # when the call returned
    assert helpers[0].process.poll() is not None
    want, want_trips = _numpy(x, float(limit), 0.45)
    assert int(trips) == want_trips > 3
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-6)
    again, _ = exe(x, limit)  # no second helper for the same program
    np.testing.assert_allclose(again, want, rtol=2e-5, atol=1e-6)
    assert len(helpers) == 1


def test_no_helper_where_it_would_not_pay_off(monkeypatch: pytest.MonkeyPatch) -> None:
    device = get_device()
    monkeypatch.setattr(prewarm, "_STARTED", set())
    monkeypatch.delenv(prewarm.ENV, raising=False)
    kernels = [prewarm.KernelLaunch(f"k{i}", (1, 1), (4,)) for i in range(prewarm.MIN_KERNELS)]
    assert prewarm.start(device, "kernel void k0() {}", False, kernels) is None  # cached
    assert prewarm.start(device, "kernel void k0() {}", True, kernels[:-1]) is None  # few
    monkeypatch.setenv(prewarm.ENV, "0")
    assert prewarm.start(device, "kernel void k0() {}", True, kernels) is None  # off


def test_helper_workers_are_not_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pinned as the caller's are (``POCL_AFFINITY=1``), the helper's compiling worker
    shared the caller's core: both compiled at half speed (MobileNetV2's first call 3.7
    instead of 2.3 s)."""
    from backend_opencl.runtime import icd

    device = get_device()
    monkeypatch.setitem(icd.LOADER_ENV, icd.AFFINITY_ENV, "1")
    spec = prewarm._spec(device, "kernel void k0() {}", [prewarm.KernelLaunch("k0", (1, 1), (4,))])
    assert spec["loader_env"][icd.AFFINITY_ENV] == "0"
    assert {k: v for k, v in spec["loader_env"].items() if k != icd.AFFINITY_ENV} == \
        {k: v for k, v in icd.LOADER_ENV.items() if k != icd.AFFINITY_ENV}


def test_compiler_warm_up_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    device = get_device()
    monkeypatch.setattr(build, "_WARMED", set())
    thread = build.warm_up(device, "a program's text")
    if not device.is_pocl:
        assert thread is None
        return
    assert thread is not None
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert build.warm_up(device, "another program's text") is None
    exe = _compiled(PROGRAM.replace("HALF", "0.55"))  # builds after the warm-up
    x = RNG.standard_normal(256).astype(np.float32)
    out, trips = exe(x, np.float32(1e-2))
    want, want_trips = _numpy(x, 1e-2, 0.55)
    assert int(trips) == want_trips
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-6)


def test_no_helper_for_a_first_call_that_does_not_wait(helpers: list[prewarm.Helper]) -> None:
    exe = _compiled(PROGRAM.replace("HALF", "0.6"))
    x = RNG.standard_normal(256).astype(np.float32)
    out, trips = exe.dispatch(x, np.float32(1e-2))
    want, want_trips = _numpy(x, 1e-2, 0.6)
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-5, atol=1e-6)
    assert int(np.asarray(trips)) == want_trips
    assert not helpers  # nothing would stop it
