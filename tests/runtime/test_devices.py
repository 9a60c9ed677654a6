"""The device choice, tested with fake device lists (no OpenCL needed)."""

from __future__ import annotations

import pytest

from backend_opencl.runtime import DeviceError
from backend_opencl.runtime.ranking import Candidate, choose
from tensorlang.diagnostics import TlcError

GPU = Candidate("NVIDIA CUDA [driver 550.54]: NVIDIA H100", "gpu", False, True, "550.54")
SYS_POCL = Candidate(
    "Portable Computing Language [PoCL 3.1+debian, system]: pthread-haswell",
    "cpu",
    True,
    True,
    "3.1+debian",
)
INTEL_CPU = Candidate(
    "Intel(R) OpenCL [driver 2024.1]: Intel(R) Xeon(R)", "cpu", False, True, "2024.1"
)
PYPI_POCL = Candidate(
    "Portable Computing Language [PoCL 3.0-rc2, PyPI]: pthread-AMD EPYC",
    "cpu",
    True,
    False,
    "3.0-rc2",
)
FPGA = Candidate(
    "Intel(R) FPGA Emulation [driver 1.0]: FPGA emulator", "accelerator", False, True, "1.0"
)


@pytest.mark.parametrize(
    "order", [[PYPI_POCL, SYS_POCL, GPU], [GPU, PYPI_POCL, SYS_POCL], [SYS_POCL, GPU, PYPI_POCL]]
)
def test_gpu_beats_system_cpu_beats_pypi_pocl(order: list[Candidate]) -> None:
    index, reason = choose(order)
    assert order[index] is GPU
    assert reason == "chosen: first GPU"


@pytest.mark.parametrize("order", [[PYPI_POCL, SYS_POCL], [SYS_POCL, PYPI_POCL]])
def test_system_cpu_driver_beats_pypi_pocl(order: list[Candidate]) -> None:
    index, reason = choose(order)
    assert order[index] is SYS_POCL
    assert reason.startswith("chosen: system CPU driver (PoCL 3.1+debian")


def test_only_pocl_3_1_and_later_claims_inlined_builtins() -> None:
    assert choose([SYS_POCL])[1].endswith("(PoCL 3.1+debian, builtins inlined)")
    ubuntu = Candidate(
        "Portable Computing Language [PoCL 1.8, system]: pthread", "cpu", True, True, "1.8"
    )
    assert choose([ubuntu])[1] == "chosen: system CPU driver (PoCL 1.8)"


def test_intels_cpu_runtime_ranks_between_the_pocls() -> None:
    index, reason = choose([PYPI_POCL, INTEL_CPU])
    assert index == 1
    assert reason == "chosen: Intel's OpenCL CPU runtime (driver 2024.1)"
    pip_intel = Candidate(INTEL_CPU.label, "cpu", False, False, "2026.22")
    assert choose([PYPI_POCL, pip_intel])[0] == 1
    assert choose([INTEL_CPU, SYS_POCL])[0] == 1
    old_pocl = Candidate("Portable Computing Language [PoCL 1.8, system]: x", "cpu", True, True,
                         "1.8")
    assert choose([old_pocl, INTEL_CPU])[0] == 1


def test_pypi_pocl_is_the_last_resort_before_accelerators() -> None:
    index, reason = choose([FPGA, PYPI_POCL])
    assert index == 1
    assert "PyPI's PoCL" in reason and "make system-pocl" in reason
    assert choose([FPGA])[1].startswith("chosen: no GPU or CPU driver found; first other")


def test_oclgrind_is_chosen_only_when_asked_for() -> None:
    oclgrind = Candidate("Oclgrind [driver 21.10]: Oclgrind Simulator", "cpu", False, True)
    assert choose([oclgrind, PYPI_POCL])[0] == 1
    assert choose([oclgrind, PYPI_POCL], "oclgrind")[0] == 0


def test_ties_keep_the_loader_order() -> None:
    second_gpu = Candidate(
        "AMD Accelerated Parallel Processing [driver 3.0]: gfx90a", "gpu", False, True
    )
    assert choose([SYS_POCL, second_gpu, GPU])[0] == 1


def test_spec_overrides_the_automatic_order() -> None:
    devices = [GPU, SYS_POCL, PYPI_POCL]
    assert choose(devices, "3.0-RC2") == (2, "chosen: requested '3.0-RC2'")
    assert choose(devices, 1) == (1, "chosen: requested '1'")
    assert choose(devices, " 2 ")[0] == 2
    assert choose(devices, "pypi")[0] == 2


def test_spec_beats_env_and_env_beats_automatic() -> None:
    devices = [GPU, SYS_POCL, PYPI_POCL]
    env = {"TLC_DEVICE": "pthread-haswell"}
    assert choose(devices, None, env) == (1, "chosen: TLC_DEVICE=pthread-haswell")
    assert choose(devices, "nvidia", env)[0] == 0
    assert choose(devices, "", {"TLC_DEVICE": "  "})[0] == 0


def test_spec_matching_several_takes_the_best_ranked() -> None:
    index, reason = choose([PYPI_POCL, SYS_POCL], "portable computing")
    assert index == 1
    assert "2 devices match" in reason


def test_a_spec_naming_a_platform_beats_device_names_holding_it() -> None:
    """On an Intel CPU PoCL's device name holds "Intel", and PoCL ranks first: "intel"
    must still mean Intel's runtime (CI's Intel slice took PoCL on a Xeon)."""
    pocl_on_xeon = Candidate("Portable Computing Language [PoCL 3.1+debian, system]: "
                             "pthread-skylake-avx512-Intel(R) Xeon(R) Processor", "cpu", True,
                             True, "3.1+debian")
    devices = [pocl_on_xeon, INTEL_CPU]
    assert choose(devices, None, {"TLC_DEVICE": "intel"})[0] == 1
    assert choose(devices, "intel")[0] == 1
    assert choose(devices, "xeon")[0] == 0  # in both device names: the best ranked
    assert choose([pocl_on_xeon], "intel")[0] == 0  # no platform of the name: device names


@pytest.mark.parametrize("spec", ["foo", 3, "-1"])
def test_bad_spec_lists_the_devices(spec: str | int) -> None:
    with pytest.raises(DeviceError) as err:
        choose([GPU, SYS_POCL, PYPI_POCL], spec)
    text = str(err.value)
    assert text.startswith("error: requested")
    assert f"  0: {GPU.label}" in text and f"  2: {PYPI_POCL.label}" in text


def test_bad_env_spec_names_the_variable() -> None:
    with pytest.raises(DeviceError, match="TLC_DEVICE=amd matches no device"):
        choose([SYS_POCL], None, {"TLC_DEVICE": "amd"})


def test_no_devices_says_how_to_install_a_driver() -> None:
    with pytest.raises(DeviceError) as err:
        choose([])
    text = str(err.value)
    assert "no OpenCL device found" in text
    assert "pip install pocl-binary-distribution" in text and "pocl-opencl-icd" in text


def test_device_error_is_a_user_error() -> None:
    assert issubclass(DeviceError, TlcError)
