"""``tlc.jax.jit(f)``: a JAX function compiled and run by tlc (see
:mod:`backend_opencl.jax_bridge`)."""

from __future__ import annotations

from backend_opencl.jax_bridge import JaxCompileError, Jitted, jit

__all__ = ["JaxCompileError", "Jitted", "jit"]
