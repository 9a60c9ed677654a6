"""OpenCL devices: discovery, the choice of one, and its context and queue.

``get_device(spec)`` picks the device a process computes on: the user's spec (an index into
``list_devices()`` or text matched against "platform [driver]: device"), else ``$TLC_DEVICE``, else
GPUs, then CPU drivers by measured merit, PyPI's PoCL last (see :mod:`.ranking`).  Which
drivers are loaded at all is decided once per process, before OpenCL is first touched (see
:mod:`.icd`): never two PoCLs; Intel's CPU runtime beside one PoCL is fine.  pyopencl is
imported lazily, so importing this module is cheap.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from backend_opencl.runtime import dispatch, icd, stress
from backend_opencl.runtime.errors import DeviceError
from backend_opencl.runtime.properties import device_facts
from backend_opencl.runtime.ranking import ENV_VAR, PYPI_SPEC, Candidate, choose

if TYPE_CHECKING:
    import pyopencl as cl
    from pyopencl import Device as ClDevice
    from pyopencl import Platform as ClPlatform

__all__ = [
    "Device",
    "DeviceError",
    "describe_devices",
    "device_reason",
    "get_device",
    "list_devices",
]


@dataclass(frozen=True)
class Device:
    """One OpenCL device and the facts code generation needs about it."""

    name: str
    platform_name: str
    vendor: str
    driver_version: str
    kind: str  #: "gpu" | "cpu" | "accelerator"
    is_pocl: bool
    is_system_driver: bool  #: False for PyPI's PoCL (a wheel's library)
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_size: int
    has_fp64: bool
    has_svm: bool
    has_svm_fine_grain: bool
    subgroup_sizes: tuple[int, ...]  #: () without cl_khr_subgroups / cl_intel_subgroups
    preferred_vector_width: dict[str, int] = field(hash=False)
    extensions: frozenset[str]
    key: str  #: stable identity for caches: platform, device and driver version
    cl_device: cl.Device | None = field(default=None, compare=False, repr=False, hash=False)
    platform_version: str = ""
    library: str = ""  #: the driver's shared library, when it could be found

    @property
    def label(self) -> str:
        """``"platform [driver]: device"``, the text a device spec is matched against."""
        if self.is_pocl:
            tag = f"PoCL {self.driver_version}, {'system' if self.is_system_driver else 'PyPI'}"
        else:
            tag = f"driver {self.driver_version}"
        return f"{self.platform_name} [{tag}]: {self.name}"

    @property
    def context(self) -> cl.Context:
        """The process's one ``pyopencl.Context`` on this device (created on first use)."""
        return _context_of(self)

    @property
    def queue(self) -> cl.CommandQueue:
        """The process's one in-order ``pyopencl.CommandQueue`` on this device."""
        return _queue_of(self)

    def candidate(self) -> Candidate:
        """The plain record the ranking works on."""
        return Candidate(
            self.label, self.kind, self.is_pocl, self.is_system_driver, self.driver_version
        )


@dataclass
class _State:
    lock: threading.RLock = field(default_factory=threading.RLock)
    devices: list[Device] | None = None
    plan: icd.LoaderPlan | None = None
    chosen: dict[str, tuple[Device, str]] = field(default_factory=dict)
    contexts: dict[str, cl.Context] = field(default_factory=dict)
    queues: dict[str, cl.CommandQueue] = field(default_factory=dict)


_STATE = _State()


def list_devices() -> list[Device]:
    """Every device of every loaded OpenCL platform, in the loader's order."""
    return list(_load(None))


def get_device(spec: str | int | Device | None = None) -> Device:
    """The device to use: ``spec``, else ``$TLC_DEVICE``, else the automatic order.

    Raises :class:`DeviceError` when no device is installed or ``spec`` matches none.
    """
    if isinstance(spec, Device):
        return spec
    return _choose(spec)[0]


def device_reason(spec: str | int | Device | None = None) -> str:
    """Why ``get_device(spec)`` picks its device, e.g. ``"chosen: first GPU"``."""
    if isinstance(spec, Device):
        return "chosen: given as a Device"
    return _choose(spec)[1]


def describe_devices(spec: str | int | Device | None = None) -> str:
    """What ``tlc devices`` prints: every device, the chosen one marked, and why."""
    devices = _load(spec)
    chosen, reason = get_device(spec), device_reason(spec)
    lines = ["OpenCL devices (* = chosen):"]
    for i, d in enumerate(devices):
        mark = "*" if d == chosen else " "
        lines.append(f"{mark} {i}  {d.kind:<11} {d.label}")
    plan = _STATE.plan
    if plan is not None and plan.hidden:
        lines.append("not loaded in this process:")
        lines += [f"    {icd.describe(h)}" for h in plan.hidden]
    if plan is not None and plan.note:
        lines.append(f"note: {plan.note}")
    if plan is not None and plan.vendor_dir:
        lines.append(f"note: Intel's OpenCL CPU runtime (pip) is registered through tlc's "
                     f"vendor folder {plan.vendor_dir}")
    index = devices.index(chosen) if chosen in devices else "-"
    lines.append(f"{reason} -> {index}: {chosen.name}")
    return "\n".join(lines)


def _choose(spec: str | int | None) -> tuple[Device, str]:
    env_text = os.environ.get(ENV_VAR, "")
    cache_key = f"{spec!r}|{env_text}"
    with _STATE.lock:
        if cache_key in _STATE.chosen:
            return _STATE.chosen[cache_key]
        devices = _load(spec)
        try:
            index, reason = choose([d.candidate() for d in devices], spec, {ENV_VAR: env_text})
        except DeviceError as err:
            raise DeviceError(_with_plan_note(str(err))) from None
        _STATE.chosen[cache_key] = devices[index], reason
        return devices[index], reason


def _with_plan_note(message: str) -> str:
    plan = _STATE.plan
    return f"{message}\nnote: {plan.note}" if plan is not None and plan.note else message


def _wants_pypi(spec: object) -> bool:
    text = spec if isinstance(spec, str) and spec.strip() else os.environ.get(ENV_VAR, "")
    return text.strip().lower() == PYPI_SPEC


def _load(spec: object) -> list[Device]:
    """Load the OpenCL platforms once per process (the first call decides which ICDs)."""
    with _STATE.lock:
        if _STATE.devices is None:
            _STATE.devices = _discover(_wants_pypi(spec))
        return _STATE.devices


def _discover(want_pypi: bool) -> list[Device]:
    cl, platforms, plan = _open_platforms(want_pypi)
    devices = []
    for platform in platforms:
        devices += [_describe(cl, platform, d, plan) for d in _platform_devices(cl, platform)]
    _STATE.plan = _checked(plan, devices)
    return devices


def _open_platforms(want_pypi: bool) -> tuple[ModuleType, list[cl.Platform], icd.LoaderPlan]:
    """pyopencl, its platforms and the loader plan (the one place OpenCL is first called)."""
    try:
        import pyopencl as cl
    except ImportError as err:
        raise DeviceError(f"error: cannot load OpenCL (pyopencl): {err}") from None
    stress.install(cl)  # TLC_STRESS: tests run every command late
    before = icd.thread_ids()
    plan, old = icd.prepare_loader(want_pypi)
    _STATE.plan = plan
    try:
        platforms = list(cl.get_platforms())
        for platform in platforms:  # PoCL 3.1 starts its CPU device, whose worker threads
            _platform_devices(cl, platform)  # read POCL_AFFINITY, at the device query
        if icd.pinned_by_tlc(old):
            icd.batch_workers(before)
    except cl.Error:
        platforms = []
    finally:
        icd.restore_env(old)
    return cl, platforms, plan


def _checked(plan: icd.LoaderPlan, devices: list[Device]) -> icd.LoaderPlan:
    """The plan as it turned out: OpenCL may have been loaded before tlc could choose."""
    pocls = {d.library or d.platform_version for d in devices if d.is_pocl}
    if len(pocls) < 2:
        return plan
    note = (
        "several PoCLs are loaded (OpenCL was used before tlc chose its drivers, or "
        "OCL_ICD_VENDORS names a folder); tlc creates contexts on one of them only"
    )
    return icd.LoaderPlan(plan.mode, plan.loaded, (), note)


def _platform_devices(cl: ModuleType, platform: ClPlatform) -> list[ClDevice]:
    try:
        return list(platform.get_devices())
    except cl.Error:
        return []


def _describe(cl: ModuleType, platform: ClPlatform, d: ClDevice, plan: icd.LoaderPlan
              ) -> Device:
    library = dispatch.library_of(d.int_ptr) or dispatch.library_of(platform.int_ptr) or ""
    is_pocl = "pocl" in f"{platform.name} {platform.version}".lower() or (
        platform.name == "Portable Computing Language"
    )
    system = not icd.is_wheel_library(library) if library else plan.mode != "pypi"
    facts = device_facts(cl, d)
    key = "|".join(x.strip() for x in (platform.name, platform.version, d.name, d.driver_version))
    return Device(
        name=d.name.strip(),
        platform_name=platform.name.strip(),
        vendor=d.vendor.strip(),
        driver_version=d.driver_version.strip(),
        is_pocl=is_pocl,
        is_system_driver=system,
        key=key,
        cl_device=d,
        platform_version=platform.version.strip(),
        library=library,
        **facts,
    )


def _context_of(device: Device) -> cl.Context:
    with _STATE.lock:
        ctx = _STATE.contexts.get(device.key)
        if ctx is None:
            _check_one_pocl(device)
            import pyopencl as cl

            ctx = cl.Context([_cl_device(device)])
            _STATE.contexts[device.key] = ctx
        return ctx


def _queue_of(device: Device) -> cl.CommandQueue:
    with _STATE.lock:
        queue = _STATE.queues.get(device.key)
        if queue is None:
            import pyopencl as cl

            from backend_opencl.runtime.profile import queue_properties

            queue = cl.CommandQueue(_context_of(device), _cl_device(device),
                                    properties=queue_properties(cl))
            _STATE.queues[device.key] = queue
        return queue


def _cl_device(device: Device) -> cl.Device:
    if device.cl_device is None:
        raise DeviceError(f"error: device {device.label!r} has no OpenCL handle (a fake?)")
    return device.cl_device


def _check_one_pocl(device: Device) -> None:
    """Refuse a context on a second PoCL: two PoCLs in one process conflict."""
    if not device.is_pocl:
        return
    others = [
        d.label
        for d in _context_devices()
        if d.is_pocl and d.platform_version != device.platform_version
    ]
    if others:
        raise DeviceError(
            f"error: this process already computes on {others[0]!r}; a context on "
            f"{device.label!r} too would mix two PoCLs in one process, which conflict; "
            f"run each PoCL in its own process (--device or {ENV_VAR})"
        )


def _context_devices() -> list[Device]:
    return [d for d in (_STATE.devices or []) if d.key in _STATE.contexts]
