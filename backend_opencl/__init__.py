"""OpenCL back end: code generation, the pyopencl runtime, the public API and the ``tlc`` CLI.

Public API::

    mod = backend_opencl.compile(prog_or_text, device=None)  # kernels callable by name
    mod.kernel_name(*args, num_groups=N)                     # numpy / pyopencl arrays
    exe = backend_opencl.compile_stablehlo(mlir_text, device=None, host_callbacks=None)
    outs = exe(*numpy_arrays)                                # tuple of numpy arrays

``device`` may also be a ``dpctl.SyclQueue`` (OpenCL backend): kernels are built through
dpctl and take USM memory too (``backend_opencl.exec.sycl_module``, docs/devices.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def compile(program: Any, device: Any = None, autotune: bool = False,  # noqa: A001
            check_bounds: bool = False) -> Any:
    """Compile a tensor-language program (text or ``tensorlang.Program``) for ``device``
    (a device spec, a ``runtime.Device`` or a ``dpctl.SyclQueue``).

    ``autotune``: first time register-block candidates of each kernel on the device and
    cache the fastest (as ``tlc tune`` does; later compiles reuse the cache).
    ``check_bounds``: guard every access isl cannot prove in bounds; a launch that
    violates one raises ``tensorlang.BoundsError`` naming the access.
    """
    from backend_opencl.runtime.sycl.queue import is_queue, sycl_device

    sycl = is_queue(device)
    if autotune:  # measured through pyopencl, so a SYCL device only when pyopencl sees it
        from backend_opencl.tools.tune import tune

        facts = sycl_device(device).facts if sycl else None
        if not sycl or facts.cl_device is not None:
            tune(program, device=facts if sycl else device)
    if sycl:  # a dpctl.SyclQueue: built through dpctl, run on the queue
        from backend_opencl.exec.sycl_module import compile_for_queue

        return compile_for_queue(program, device, check_bounds)
    from backend_opencl.api.compiler import compile_program

    return compile_program(program, device=device, check_bounds=check_bounds)


def compile_stablehlo(text: str, device: Any = None, filename: str = "<string>",
                      check_bounds: bool = False,
                      host_callbacks: Sequence[Callable[..., Any]] | None = None) -> Any:
    """Compile a StableHLO program; the result is callable with numpy arrays
    (``check_bounds`` as for :func:`compile`).

    ``host_callbacks``: the Python functions the program's host callbacks call, by the
    index of each ``stablehlo.custom_call @xla_ffi_python_cpu_callback`` (its
    ``mhlo.backend_config = {index = N}``), as jax keeps them beside its lowering
    (``tlc.jax.jit`` passes them). Each is called with one numpy array per operand (None
    for a token) and returns a sequence with one array per result (shape and dtype as
    declared; the entry of a token is ignored). Without them such a program is a
    CompileError at the callback."""
    from backend_opencl.runtime.sycl.queue import is_queue

    if is_queue(device):
        from backend_opencl.exec.sycl_executable import compile_stablehlo_for_queue

        return compile_stablehlo_for_queue(text, device, filename, check_bounds,
                                           host_callbacks=host_callbacks)
    from backend_opencl.api.compiler import compile_stablehlo_program

    return compile_stablehlo_program(text, device=device, filename=filename,
                                     check_bounds=check_bounds, host_callbacks=host_callbacks)
