"""Host callbacks: ``stablehlo.custom_call @xla_ffi_python_cpu_callback``.

jax lowers ``jax.debug.print``, ``jax.pure_callback`` and ``jax.experimental.io_callback``
(and so equinox's ``error_if``) to this custom call: ``mhlo.backend_config = {index = N}``
names the N-th of the Python functions jax keeps beside the text (``lowered._lowering.
compile_args["host_callbacks"]``), which ``tlc.jax.jit`` passes to the compiler
(:func:`backend_opencl.compile_stablehlo`'s ``host_callbacks``).  The call becomes a
``Callback`` step of the host plan: its operands are materialized into buffers, read back
when the step runs, and its results get buffers of their own that the step writes.  The
lowering knows only how many functions there will be (``FuncLowering.host_callbacks``):
without them a callback is a CompileError at its line.

An ordered ``io_callback`` (or ``jax.debug.print(..., ordered=True)``) threads a
``!stablehlo.token`` through the call and ``main``: tokens carry no data (the token buffer
of :meth:`FuncLowering.token`); the function gets None for one and its returned entry is
ignored, as XLA does.  jax's LAPACK calls on CPU are kernels (:mod:`.lapack`); other
custom-call targets are "not supported yet".
"""

from __future__ import annotations

import numpy as np

from frontend.ir.core import Op, Value
from frontend.ir.quant import is_quantized
from frontend.ir.types import TensorType, TokenType
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.registry import kernel
from frontend.lower.families import lapack
from tensorlang.diagnostics import CompileError
from tensorlang.plan import Callback, HostValue

PYTHON_CALLBACKS = frozenset(f"xla_ffi{part}_python_{device}_callback"
                             for part in ("", "_partitioned") for device in ("cpu", "gpu"))
"""The custom-call targets of jax's host callbacks (partitioned: per shard; on one device
the same call)."""


@kernel("stablehlo.custom_call")
def custom_call(lw: FuncLowering, op: Op) -> None:
    """A host callback as a ``Callback`` step, one of jax's LAPACK calls as kernels
    (:mod:`.lapack`); any other target is not supported."""
    target = op.attr("call_target_name")
    if isinstance(target, str) and target in lapack.LOWERINGS:
        lapack.lower(lw, op, target)
        return
    if target not in PYTHON_CALLBACKS:
        raise CompileError.at(op.loc, f"'{op.name}' @{target} is not supported yet")
    index = _index(lw, op)
    _check_layouts(op)
    args = tuple(None if isinstance(v.type, TokenType) else
                 _host_value(op, v, lw.materialize(v)) for v in op.operands)
    results = []
    for r in op.results:
        buf = lw.buffer_for(r)
        lw.bind(r, buf)
        results.append(None if isinstance(r.type, TokenType) else _host_value(op, r, buf))
    lw.step(Callback(index, args, tuple(results)))


def _index(lw: FuncLowering, op: Op) -> int:
    """Which host callback ``op`` calls, checked against the functions there will be."""
    config = op.attr("mhlo.backend_config")
    index = config.get("index") if isinstance(config, dict) else None
    if not isinstance(index, int):
        raise CompileError.at(op.loc, "a host callback without mhlo.backend_config = "
                              "{index = N} (jax's older callbacks) is not supported")
    if lw.host_callbacks is None:
        raise CompileError.at(op.loc, "host callbacks need the Python functions: compile "
                              "through tlc.jax.jit (jax.debug.print, jax.pure_callback, "
                              "io_callback)")
    if not 0 <= index < lw.host_callbacks:
        raise CompileError.at(op.loc, f"host callback {index} is not among the "
                              f"{lw.host_callbacks} Python functions given")
    return index


def _check_layouts(op: Op) -> None:
    """A CompileError unless every operand and result layout is row-major (jax's)."""
    for name, values in (("operand_layouts", op.operands), ("result_layouts", op.results)):
        layouts = op.attr(name, ())
        assert isinstance(layouts, (list, tuple)), layouts
        for v, layout in zip(values, layouts, strict=False):
            rank = len(v.type.shape) if isinstance(v.type, TensorType) else 0
            if [int(d) for d in np.asarray(layout).reshape(-1)] != list(range(rank))[::-1]:
                raise CompileError.at(op.loc, f"a host callback with {name} other than "
                                      "row-major is not supported yet")


def _host_value(op: Op, v: Value, buffer: int) -> HostValue:
    """How the callback of ``op`` sees value ``v`` held in ``buffer``."""
    if is_quantized(v.type):
        raise CompileError.at(op.loc, "quantized values in host callbacks are not "
                              "supported yet")
    assert isinstance(v.type, TensorType)  # buffer_for and materialize checked it
    return HostValue(buffer, np.dtype(v.type.element.dtype).name)
