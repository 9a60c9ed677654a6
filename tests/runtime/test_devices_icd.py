"""Which OpenCL drivers a process loads (fake ICD folders; no OpenCL needed)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from backend_opencl.runtime import dispatch, icd

SYSTEM_POCL = icd.Icd("/etc/OpenCL/vendors/pocl.icd", "libpocl.so.2", bundled=False)
NVIDIA = icd.Icd("/etc/OpenCL/vendors/nvidia.icd", "libnvidia-opencl.so.1", bundled=False)
WHEEL_POCL = icd.Icd("/venv/pyopencl/.libs/pocl.icd", "libpocl-21062cec.so", bundled=True)


@pytest.fixture
def fake_icds(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[icd.Icd]]:
    """Make ``prepare_loader`` see the ICD lists in the returned dict."""
    found: dict[str, list[icd.Icd]] = {"system": [], "bundled": []}
    monkeypatch.setattr(icd, "system_icds", lambda: list(found["system"]))
    monkeypatch.setattr(icd, "bundled_icds", lambda: list(found["bundled"]))
    monkeypatch.setattr(icd, "pip_intel_library", lambda: found["intel"][0].library
                        if found.get("intel") else None)
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    monkeypatch.setenv("PYOPENCL_HOME", "/venv/pyopencl")
    return found


def test_reads_icd_files(tmp_path: Path) -> None:
    (tmp_path / "pocl.icd").write_text("libpocl.so.2.10.0\n")
    (tmp_path / "nvidia.icd").write_text("libnvidia-opencl.so.1")
    (tmp_path / "empty.icd").write_text("")
    (tmp_path / "README").write_text("not an icd")
    found = icd._read_folder(tmp_path, bundled=False)
    assert [(Path(i.path).name, i.library, i.is_pocl) for i in found] == [
        ("nvidia.icd", "libnvidia-opencl.so.1", False),
        ("pocl.icd", "libpocl.so.2.10.0", True),
    ]
    assert icd._read_folder(tmp_path / "missing", bundled=True) == []


def test_system_pocl_hides_the_wheel_pocl(fake_icds: dict[str, list[icd.Icd]]) -> None:
    fake_icds.update(system=[NVIDIA, SYSTEM_POCL], bundled=[WHEEL_POCL])
    plan, old = icd.prepare_loader(want_pypi=False)
    assert plan.mode == "system" and plan.hidden == (WHEEL_POCL,)
    assert plan.loaded == (NVIDIA, SYSTEM_POCL)
    assert not (Path(os.environ["PYOPENCL_HOME"]) / ".libs").exists()
    assert "OCL_ICD_VENDORS" not in os.environ
    icd.restore_env(old)
    assert os.environ["PYOPENCL_HOME"] == "/venv/pyopencl"


def test_pypi_request_loads_the_wheel_pocl_alone(fake_icds: dict[str, list[icd.Icd]]) -> None:
    fake_icds.update(system=[NVIDIA, SYSTEM_POCL], bundled=[WHEEL_POCL])
    plan, old = icd.prepare_loader(want_pypi=True)
    assert plan.mode == "pypi" and plan.loaded == (WHEEL_POCL,)
    assert os.environ["OCL_ICD_VENDORS"] == WHEEL_POCL.path
    icd.restore_env(old)
    assert "OCL_ICD_VENDORS" not in os.environ


def test_pypi_request_without_the_wheel_says_how_to_install(
    fake_icds: dict[str, list[icd.Icd]],
) -> None:
    fake_icds.update(system=[SYSTEM_POCL])
    plan, _ = icd.prepare_loader(want_pypi=True)
    assert plan.loaded == () and "pip install pocl-binary-distribution" in plan.note
    assert "OCL_ICD_VENDORS" not in os.environ


def test_without_a_system_pocl_everything_loads(fake_icds: dict[str, list[icd.Icd]]) -> None:
    fake_icds.update(system=[NVIDIA], bundled=[WHEEL_POCL])
    plan, _ = icd.prepare_loader(want_pypi=False)
    assert plan.mode == "all" and plan.hidden == ()
    assert os.environ["PYOPENCL_HOME"] == "/venv/pyopencl"


def test_a_users_single_icd_is_left_alone(
    fake_icds: dict[str, list[icd.Icd]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_icds.update(system=[SYSTEM_POCL], bundled=[WHEEL_POCL])
    monkeypatch.setenv("OCL_ICD_VENDORS", "/opt/oclgrind/oclgrind.icd")
    plan, _ = icd.prepare_loader(want_pypi=False)
    assert plan.mode == "user"
    assert os.environ["OCL_ICD_VENDORS"] == "/opt/oclgrind/oclgrind.icd"
    assert os.environ["PYOPENCL_HOME"] == "/venv/pyopencl"


def test_vendor_folder_follows_the_loaders_variables(tmp_path: Path) -> None:
    assert icd.system_vendor_dir({}) == "/etc/OpenCL/vendors"
    assert icd.system_vendor_dir({"OPENCL_VENDOR_PATH": "/opt/v"}) == "/opt/v"
    assert icd.system_vendor_dir({"OCL_ICD_VENDORS": str(tmp_path)}) == str(tmp_path)
    assert icd.system_vendor_dir({"OCL_ICD_VENDORS": "/x/one.icd"}) == "/etc/OpenCL/vendors"


def test_wheel_libraries_are_not_system_drivers() -> None:
    assert icd.is_wheel_library("/venv/lib/python3.11/site-packages/pyopencl/.libs/libpocl-1.so")
    assert icd.is_wheel_library("/usr/lib/python3/dist-packages/x/libpocl.so")
    assert not icd.is_wheel_library("/usr/lib/x86_64-linux-gnu/libpocl.so.2.10.0")


def test_null_handles_have_no_library_nor_properties() -> None:
    assert dispatch.library_of(0) is None
    assert dispatch.device_size_array(0, dispatch.CL_DEVICE_SUB_GROUP_SIZES_INTEL) == ()


def test_describe_says_whose_an_icd_is() -> None:
    assert (
        icd.describe(SYSTEM_POCL) == "system driver: /etc/OpenCL/vendors/pocl.icd -> libpocl.so.2"
    )
    assert icd.describe(WHEEL_POCL).startswith("PyPI's PoCL (pocl-binary-distribution ")


def test_pip_intel_runtime_gets_a_tlc_vendor_folder(
    fake_icds: dict[str, list[icd.Icd]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    intel = icd.Icd("", "/venv/lib/libintelocl.so", bundled=False)
    fake_icds.update(system=[SYSTEM_POCL], bundled=[WHEEL_POCL], intel=[intel])
    plan, old = icd.prepare_loader(want_pypi=False)
    folder = Path(os.environ["OCL_ICD_VENDORS"])
    assert plan.mode == "system" and plan.vendor_dir == str(folder)
    assert folder.parent == tmp_path / "vendors"
    written = {p.name: p.read_text().strip() for p in folder.glob("*.icd")}
    assert written == {"pocl.icd": "libpocl.so.2", "tlc-intel-cpu.icd": intel.library}
    assert [i.library for i in plan.loaded] == ["libpocl.so.2", intel.library]
    assert plan.hidden == (WHEEL_POCL,)
    icd.restore_env(old)
    assert "OCL_ICD_VENDORS" not in os.environ


def test_a_working_intel_icd_or_a_users_folder_is_left_alone(
    fake_icds: dict[str, list[icd.Icd]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = tmp_path / "libintelocl.so"
    library.write_text("")
    system_intel = icd.Icd("/etc/OpenCL/vendors/intel.icd", str(library), bundled=False)
    fake_icds.update(system=[system_intel], intel=[system_intel])
    plan, _ = icd.prepare_loader(want_pypi=False)
    assert plan.vendor_dir == "" and "OCL_ICD_VENDORS" not in os.environ
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    fake_icds.update(system=[SYSTEM_POCL])
    plan, _ = icd.prepare_loader(want_pypi=False)
    assert plan.vendor_dir == "" and os.environ["OCL_ICD_VENDORS"] == str(tmp_path)


def test_pypi_request_hides_intels_runtime(fake_icds: dict[str, list[icd.Icd]]) -> None:
    intel = icd.Icd("", "/venv/lib/libintelocl.so", bundled=False)
    fake_icds.update(system=[SYSTEM_POCL], bundled=[WHEEL_POCL], intel=[intel])
    plan, old = icd.prepare_loader(want_pypi=True)
    assert plan.loaded == (WHEEL_POCL,)
    assert os.environ["OCL_ICD_VENDORS"] == WHEEL_POCL.path
    icd.restore_env(old)


def test_driver_specs_name_each_installed_cpu_driver(fake_icds: dict[str, list[icd.Icd]]) -> None:
    fake_icds.update(system=[SYSTEM_POCL], bundled=[WHEEL_POCL])
    assert icd.driver_specs() == ["pocl", "pypi"]
    fake_icds.update(intel=[icd.Icd("", "/venv/lib/libintelocl.so", bundled=False)])
    assert icd.driver_specs() == ["pocl", "intel", "pypi"]


def test_pocl_workers_pinned_only_when_the_process_may_use_every_cpu() -> None:
    env: dict[str, str] = {}
    assert icd.pin_pocl_workers(env, allowed={0, 1}, cpus=2) and env == {"POCL_AFFINITY": "1"}
    env = {}
    assert not icd.pin_pocl_workers(env, allowed={1}, cpus=2) and env == {}  # a cpuset
    env = {"POCL_AFFINITY": "0"}
    assert not icd.pin_pocl_workers(env, allowed={0, 1}, cpus=2)
    assert env == {"POCL_AFFINITY": "0"}  # the user's choice stands


def test_pinning_is_for_pocls_start_only() -> None:
    """prepare_loader sets the variable for the first platform query; restore_env puts
    the environment back as it was."""
    before = os.environ.get("POCL_AFFINITY")
    _, old = icd.prepare_loader(False)
    icd.restore_env(old)
    assert os.environ.get("POCL_AFFINITY") == before


def test_batch_policy_only_where_tlc_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POCL_AFFINITY", "1")
    assert icd.pinned_by_tlc({"POCL_AFFINITY": None})
    assert not icd.pinned_by_tlc({"POCL_AFFINITY": "1"})  # the user's own setting
    monkeypatch.setenv("POCL_AFFINITY", "0")
    assert not icd.pinned_by_tlc({"POCL_AFFINITY": None})


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH") or not os.path.isdir("/proc/self/task"),
                    reason="Linux scheduling policies")
def test_threads_started_since_get_the_batch_policy() -> None:
    before = icd.thread_ids()
    started, stop = threading.Event(), threading.Event()

    def worker() -> None:
        started.set()
        stop.wait()

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait()
    try:
        assert icd.batch_workers(before) >= 1
        assert thread.native_id is not None
        assert os.sched_getscheduler(thread.native_id) == os.SCHED_BATCH
        assert os.sched_getscheduler(threading.get_native_id()) != os.SCHED_BATCH
    finally:
        stop.set()
        thread.join()
