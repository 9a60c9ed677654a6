"""OpenCL back end: code generation, the pyopencl runtime, the public API and the ``tlc`` CLI.

Public API::

    mod = backend_opencl.compile(prog_or_text, device=None)  # kernels callable by name
    mod.kernel_name(*args, num_groups=N)                     # numpy / pyopencl arrays
    exe = backend_opencl.compile_stablehlo(mlir_text, device=None, host_callbacks=None)
    outs = exe(*numpy_arrays)                                # tuple of numpy arrays

``device`` may also be a ``dpctl.SyclQueue`` (OpenCL backend): kernels are built through
dpctl and take USM memory too (``backend_opencl.runtime.sycl``, docs/devices.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backend_opencl.exec.executable import Executable
    from backend_opencl.exec.module import Module


def compile(program: object, device: object = None, autotune: bool = False,  # noqa: A001
            check_bounds: bool = False) -> Module:
    """Compile a tensor-language program (text or ``tensorlang.Program``) for ``device``
    (a device spec, a ``runtime.Device`` or a ``dpctl.SyclQueue``).

    ``autotune``: first time register-block candidates of each kernel on the device and
    cache the fastest (as ``tlc tune`` does; later compiles reuse the cache).
    ``check_bounds``: guard every access isl cannot prove in bounds; a launch that
    violates one raises ``tensorlang.BoundsError`` naming the access.
    """
    from backend_opencl.api.compiler import compile_program, device_of, facts_of

    dev = device_of(device)
    facts = facts_of(dev)
    if autotune and facts.cl_device is not None:  # measured through pyopencl
        from backend_opencl.tools.tune import tune

        tune(program, device=facts)
    return compile_program(program, device=dev, check_bounds=check_bounds)


def compile_stablehlo(text: str, device: object = None, filename: str = "<string>",
                      check_bounds: bool = False,
                      host_callbacks: Sequence[Callable[..., object]] | None = None) -> Executable:
    """Compile a StableHLO program; the result is callable with numpy arrays
    (``check_bounds`` as for :func:`compile`).

    ``host_callbacks``: the Python functions the program's host callbacks call, by the
    index of each ``stablehlo.custom_call @xla_ffi_python_cpu_callback`` (its
    ``mhlo.backend_config = {index = N}``), as jax keeps them beside its lowering
    (``tlc.jax.jit`` passes them). Each is called with one numpy array per operand (None
    for a token) and returns a sequence with one array per result (shape and dtype as
    declared; the entry of a token is ignored). Without them such a program is a
    CompileError at the callback."""
    from backend_opencl.api.compiler import compile_stablehlo_program

    return compile_stablehlo_program(text, device=device, filename=filename,
                                     check_bounds=check_bounds, host_callbacks=host_callbacks)
