"""``tlc.jax.jit(f)``: a JAX function compiled and run by tlc (see
:mod:`backend_opencl.jax_bridge`); ``.lower(*args).compile()`` ahead of time
(:mod:`backend_opencl.jax_aot`)."""

from __future__ import annotations

from backend_opencl.jax_aot import Compiled, Lowered, Summary
from backend_opencl.device_array import DeviceArray
from backend_opencl.jax_bridge import (JaxCompileError, Jitted, host_callbacks, jit,
                                       set_device_results)

__all__ = ["Compiled", "DeviceArray", "JaxCompileError", "Jitted", "Lowered", "Summary",
           "host_callbacks", "jit", "set_device_results"]
