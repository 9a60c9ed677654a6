"""The runtimes kernels run on: OpenCL through pyopencl (:mod:`.opencl`, the only importer
of pyopencl) and SYCL queues through dpctl (:mod:`.sycl`, the only importer of dpctl),
with what both use: device ranking (:mod:`.ranking`), the ICD loader's vendor folders
(:mod:`.icd`), profiling (:mod:`.profile`) and the late device of ``TLC_STRESS``
(:mod:`.stress`).

Device discovery and choice live in :mod:`.opencl.devices` (policy in :mod:`.ranking`,
which drivers a process loads in :mod:`.icd`); see ``docs/devices.md``.
"""

from __future__ import annotations

from backend_opencl.runtime.errors import DeviceError
from backend_opencl.runtime.opencl.devices import (
    Device,
    describe_devices,
    device_reason,
    get_device,
    list_devices,
)
from backend_opencl.runtime.opencl.smoke import smoke_test

__all__ = [
    "Device",
    "DeviceError",
    "describe_devices",
    "device_reason",
    "get_device",
    "list_devices",
    "smoke_test",
]
