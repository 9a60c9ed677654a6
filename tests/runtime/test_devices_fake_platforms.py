"""The whole selection path over fake OpenCL platform lists (no driver is loaded)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from backend_opencl.runtime import (
    DeviceError,
    describe_devices,
    dispatch,
    get_device,
    icd,
    properties,
)
from backend_opencl.runtime.opencl import devices

FAKE_CL = SimpleNamespace(
    device_type=SimpleNamespace(CPU=2, GPU=4, ACCELERATOR=8), Error=RuntimeError
)
LIBRARIES = {
    1: "/venv/lib/python3.11/site-packages/pyopencl/.libs/libpocl-21062cec.so",
    2: "/usr/lib/x86_64-linux-gnu/libpocl.so.2.10.0",
    3: "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.550.54",
}


def _device(handle: int, name: str, version: str, kind: int, **extra: Any) -> SimpleNamespace:
    facts = dict(
        name=name,
        vendor="v",
        driver_version=version,
        type=kind,
        int_ptr=handle,
        extensions="cl_khr_fp64 cl_khr_int64_base_atomics",
        max_work_group_size=1024,
        max_work_item_sizes=[1024, 1024, 64],
        local_mem_size=65536,
        svm_capabilities=1,
        preferred_vector_width_float=8,
    )
    return SimpleNamespace(**{**facts, **extra})


def _platform(name: str, version: str, *devs: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(
        name=name, version=version, int_ptr=devs[0].int_ptr, get_devices=lambda: list(devs)
    )


PYPI = _platform(
    "Portable Computing Language",
    "OpenCL 3.0 PoCL 3.0-rc2  Linux, DISTRO",
    _device(1, "pthread-AMD EPYC", "3.0-rc2", 2),
)
DEBIAN = _platform(
    "Portable Computing Language",
    "OpenCL 3.0 PoCL 3.1+debian  Linux, DISTRO",
    _device(2, "pthread-haswell-AMD EPYC", "3.1+debian", 2),
)
NVIDIA = _platform(
    "NVIDIA CUDA",
    "OpenCL 3.0 CUDA 12.4",
    _device(
        3,
        "NVIDIA H100",
        "550.54",
        4,
        svm_capabilities=3,
        extensions="cl_khr_fp64 cl_khr_subgroups",
        warp_size_nv=32,
    ),
)


@pytest.fixture
def platforms(monkeypatch: pytest.MonkeyPatch) -> list[SimpleNamespace]:
    """The fake platform list the runtime will see (fill it in the test)."""
    found: list[SimpleNamespace] = []
    plan = icd.LoaderPlan("all", (), (), "")
    monkeypatch.setattr(devices, "_STATE", devices._State())
    monkeypatch.setattr(devices, "_open_platforms", lambda want_pypi: (FAKE_CL, found, plan))
    monkeypatch.setattr(dispatch, "library_of", LIBRARIES.get)
    monkeypatch.delenv("TLC_DEVICE", raising=False)
    return found


def test_gpu_first(platforms: list[SimpleNamespace]) -> None:
    platforms += [PYPI, DEBIAN, NVIDIA]
    device = get_device()
    assert (device.name, device.kind, device.is_pocl) == ("NVIDIA H100", "gpu", False)
    assert device.subgroup_sizes == (32,) and device.has_svm_fine_grain
    text = describe_devices()
    assert "* 2  gpu" in text and text.endswith("chosen: first GPU -> 2: NVIDIA H100")


def test_system_pocl_before_pypi_pocl(platforms: list[SimpleNamespace]) -> None:
    platforms += [PYPI, DEBIAN]
    device = get_device()
    assert device.driver_version == "3.1+debian" and device.is_system_driver
    assert device.label == (
        "Portable Computing Language [PoCL 3.1+debian, system]: pthread-haswell-AMD EPYC"
    )
    pypi = get_device("3.0-rc2")
    assert pypi.is_pocl and not pypi.is_system_driver and "PyPI" in pypi.label
    assert get_device("pypi") is pypi


def test_pypi_pocl_when_alone(platforms: list[SimpleNamespace]) -> None:
    platforms.append(PYPI)
    assert get_device().driver_version == "3.0-rc2"
    assert "chosen: PyPI's PoCL (PoCL 3.0-rc2" in describe_devices()


def test_env_then_spec(platforms: list[SimpleNamespace], monkeypatch: pytest.MonkeyPatch) -> None:
    platforms += [PYPI, DEBIAN, NVIDIA]
    monkeypatch.setenv("TLC_DEVICE", "haswell")
    assert get_device().driver_version == "3.1+debian"
    assert get_device(0).driver_version == "3.0-rc2"
    assert get_device("H100").kind == "gpu"


def test_no_platforms(platforms: list[SimpleNamespace]) -> None:
    with pytest.raises(DeviceError, match="no OpenCL device found; install"):
        get_device()


def test_facts_of_a_device(platforms: list[SimpleNamespace]) -> None:
    platforms.append(DEBIAN)
    d = get_device()
    assert d.max_work_item_sizes == (1024, 1024, 64) and d.local_mem_size == 65536
    assert d.has_fp64 and d.has_svm and not d.has_svm_fine_grain and d.subgroup_sizes == ()
    assert d.preferred_vector_width["float"] == 8 and d.preferred_vector_width["double"] == 0
    assert d.extensions == frozenset({"cl_khr_fp64", "cl_khr_int64_base_atomics"})
    assert d.library == LIBRARIES[2]


def test_intel_subgroup_sizes_come_from_the_driver(
    platforms: list[SimpleNamespace], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = []
    monkeypatch.setattr(
        properties,
        "device_size_array",
        lambda handle, param: asked.append((handle, param)) or (8, 16, 32),
    )
    platforms.append(
        _platform(
            "Intel(R) OpenCL Graphics",
            "OpenCL 3.0 ",
            _device(
                4,
                "Intel(R) Arc(TM) A770",
                "24.09",
                4,
                extensions="cl_intel_subgroups cl_khr_subgroups",
            ),
        )
    )
    assert get_device().subgroup_sizes == (8, 16, 32)
    assert asked == [(4, dispatch.CL_DEVICE_SUB_GROUP_SIZES_INTEL)]
