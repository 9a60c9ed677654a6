"""A driver whose LLVM predates the CPU (PyPI's PoCL 3.0 on AMD Zen 5) is a clear DeviceError."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pyopencl as cl
import pytest

from backend_opencl.runtime.errors import DeviceError
from backend_opencl.runtime.opencl import build


class _FailingProgram:
    def __init__(self, context: Any, source: str) -> None:
        self.source = source

    def build(self, **_: Any) -> None:
        raise cl.RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n"
                              "error: unknown target CPU 'generic'")


def test_unknown_target_cpu_names_the_driver_and_the_way_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build.cl, "Program", _FailingProgram)
    device = SimpleNamespace(context=None, cl_device=None, name="pthread-Some CPU")
    with pytest.raises(DeviceError, match=r"cannot compile for this CPU.*intel"):
        build._build(device, "__kernel void k() {}", (), ("k",))
