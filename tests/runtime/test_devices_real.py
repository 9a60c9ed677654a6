"""The device runtime on this machine's real OpenCL drivers (skipped when there are none)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from backend_opencl import runtime
from backend_opencl.runtime import DeviceError, dispatch, icd
from backend_opencl.runtime.opencl import devices

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh process: computes on the chosen device, then lists the PoCL libraries
# mapped into the process (all from one PoCL installation: the system's or the wheel's).
PROBE = """
import sys
from backend_opencl.runtime import get_device, smoke_test
device = get_device()
assert smoke_test(device), "wrong result"
maps = open("/proc/self/maps").read().split()
pocls = sorted({w for w in maps if "libpocl" in w.rsplit("/", 1)[-1]})
print(device.label, device.is_system_driver, *pocls, sep="\\n")
"""


@pytest.fixture(scope="module")
def device() -> runtime.Device:
    """The device this process computes on."""
    try:
        return runtime.get_device()
    except DeviceError as err:
        pytest.skip(f"no usable OpenCL device: {err}")


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "TLC_DEVICE"}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**clean, **env},
        timeout=120,
    )


def test_chosen_device_runs_a_kernel(device: runtime.Device) -> None:
    assert runtime.smoke_test(device)
    assert runtime.smoke_test()  # the default device again, through the cache


def test_device_and_its_context_are_cached(device: runtime.Device) -> None:
    assert runtime.get_device() is device
    assert runtime.get_device(device) is device
    assert device.context is device.context and device.queue is device.queue
    assert device in runtime.list_devices()
    assert device.kind in ("gpu", "cpu", "accelerator")
    assert device.max_work_group_size >= 1 and device.preferred_vector_width["float"] >= 1
    assert device.key and hash(device) == hash(replace(device))


def test_driver_queries_through_the_dispatch_table(device: runtime.Device) -> None:
    handle = device.cl_device.int_ptr
    max_work_item_sizes = 0x1005  # CL_DEVICE_MAX_WORK_ITEM_SIZES
    assert dispatch.device_size_array(handle, max_work_item_sizes) == device.max_work_item_sizes
    assert device.library and dispatch.library_of(handle) == device.library


def test_describe_marks_the_chosen_device(device: runtime.Device) -> None:
    text = runtime.describe_devices()
    marked = [line for line in text.splitlines() if line.startswith("* ")]
    assert marked == [f"* {runtime.list_devices().index(device)}  {device.kind:<11} {device.label}"]
    assert text.splitlines()[-1].startswith(runtime.device_reason() + " -> ")


def test_bad_spec_is_a_device_error(device: runtime.Device) -> None:
    with pytest.raises(DeviceError, match="matches no device"):
        runtime.get_device("no such device anywhere")


def test_tlc_devices_prints_a_marked_device() -> None:
    done = _run(["-m", "backend_opencl.tools.cli", "devices"])
    if done.returncode and "no OpenCL device" in done.stderr:
        pytest.skip("no OpenCL device")
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("* 0") or line.startswith("* ") for line in done.stdout.splitlines())
    assert "chosen: " in done.stdout


def test_tlc_devices_with_a_bad_spec_is_one_clear_error() -> None:
    done = _run(["-m", "backend_opencl.tools.cli", "--device", "foo", "devices"])
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    if "no OpenCL device" not in done.stderr:
        assert done.stderr.startswith("error: requested 'foo' matches no device")


def _probe(**env: str) -> tuple[str, bool, list[str]]:
    if not Path("/proc/self/maps").exists():
        pytest.skip("needs /proc/self/maps")
    done = _run(["-c", PROBE], **env)
    if done.returncode and "no OpenCL device" in done.stderr:
        pytest.skip("no OpenCL device")
    if done.returncode and "unknown target CPU" in done.stderr:
        # PyPI's PoCL 3.0 (LLVM 14) builds nothing on CPUs newer than LLVM 14 (AMD Zen 5).
        pytest.skip("this driver's LLVM does not know this CPU (docs/devices.md)")
    assert done.returncode == 0, done.stderr
    label, system, *pocls = done.stdout.splitlines()
    return label, system == "True", pocls


def test_default_process_loads_at_most_one_pocl() -> None:
    label, system, pocls = _probe()
    assert len({icd.is_wheel_library(p) for p in pocls}) <= 1, pocls
    if any(i.is_pocl for i in icd.system_icds()) and "PoCL" in label:
        assert system and "system" in label
        assert not any(icd.is_wheel_library(p) for p in pocls)


def test_pypi_spec_forces_pypi_pocl_alone() -> None:
    if not any(i.is_pocl for i in icd.bundled_icds()):
        pytest.skip("PyPI's PoCL (pocl-binary-distribution) is not installed")
    label, system, pocls = _probe(TLC_DEVICE="pypi")
    assert not system and "PyPI" in label
    assert pocls and all(icd.is_wheel_library(p) for p in pocls), pocls


def test_no_context_on_a_second_pocl(
    monkeypatch: pytest.MonkeyPatch, device: runtime.Device
) -> None:
    first = replace(device, is_pocl=True, platform_version="PoCL A", key="a", cl_device=None)
    second = replace(first, platform_version="PoCL B", key="b")
    state = devices._State(devices=[first, second], contexts={"a": object()})
    monkeypatch.setattr(devices, "_STATE", state)
    with pytest.raises(DeviceError, match="two PoCLs"):
        _ = second.context
    assert first.context is state.contexts["a"]
