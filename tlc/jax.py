"""``tlc.jax.jit(f)``: a JAX function compiled and run by tlc (see
:mod:`backend_opencl.api.jax.bridge`); ``.lower(*args).compile()`` ahead of time
(:mod:`backend_opencl.api.jax.aot`)."""

from __future__ import annotations

from backend_opencl.api.jax.aot import Compiled, Lowered, Summary
from backend_opencl.api.jax.bridge import (
    JaxCompileError,
    Jitted,
    host_callbacks,
    jit,
    set_device_results,
)
from backend_opencl.runtime.opencl.device_array import DeviceArray

__all__ = ["Compiled", "DeviceArray", "JaxCompileError", "Jitted", "Lowered", "Summary",
           "host_callbacks", "jit", "set_device_results"]
