"""The profile report (``TLC_PROFILE=1``, ``tlc run --profile``): per-kernel device time
and launches, bytes moved, host overhead in all and per warm call (the first call,
which builds kernels, apart)."""

from __future__ import annotations

from types import SimpleNamespace

from backend_opencl.runtime.profile import Profile


def _event(ns: int) -> SimpleNamespace:
    return SimpleNamespace(profile=SimpleNamespace(start=1000, end=1000 + ns))


def test_report_separates_the_first_call() -> None:
    prof = Profile()
    prof.launch("k0", _event(2_000_000))
    prof.call(0.010)  # first call: 10 ms wall, 2 ms of kernels
    for _ in range(4):
        prof.launch("k0", _event(30_000))
        prof.launch("k1", _event(10_000))
        prof.moved(to_device=100, to_host=8)
        prof.call(0.000100)  # warm: 100 us wall, 40 us of kernels
    report = prof.report()
    lines = report.splitlines()
    assert lines[0].startswith("tlc profile: 5 call(s)")
    k0 = next(x for x in lines if x.split()[:1] == ["k0"])
    assert k0.split()[1:3] == ["5", "2.120"]
    assert "launches: 9" in report
    assert "host->device 400, device->host 32" in report
    assert "warm calls: 60.0 us per call" in report
    assert "the first call: 10.000 ms" in report


def test_unprofiled_events_count_launches_only() -> None:
    prof = Profile()
    prof.launch("k", object())  # a queue without profiling: no device time
    prof.call(0.001)
    assert prof.kernels["k"].launches == 1 and prof.kernels["k"].device_ns == 0
    assert "warm calls" not in prof.report()
