"""The OpenCL runtime: the only package of tlc that imports pyopencl.

Device discovery and choice live in :mod:`.devices` (policy in :mod:`.ranking`, which
drivers a process loads in :mod:`.icd`); see ``docs/devices.md``.
"""

from __future__ import annotations

from backend_opencl.runtime.devices import (
    Device,
    describe_devices,
    device_reason,
    get_device,
    list_devices,
)
from backend_opencl.runtime.errors import DeviceError
from backend_opencl.runtime.smoke import smoke_test

__all__ = [
    "Device",
    "DeviceError",
    "describe_devices",
    "device_reason",
    "get_device",
    "list_devices",
    "smoke_test",
]
