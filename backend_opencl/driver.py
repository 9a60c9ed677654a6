"""The composition root: public compile functions and what the ``tlc`` CLI calls.

``compile_program`` parses (if given text), runs the back end's pass pipeline on a copy
(the caller's program is never modified), generates OpenCL C for the chosen device,
builds it once (cached) and returns a :class:`~backend_opencl.module.Module`.
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

from backend_opencl.emit import DEFAULT_TARGET, EmittedProgram, Target, emit_program
from backend_opencl.emit.target import target_from_device
from tensorlang.diagnostics import TlcError
from tensorlang.ir.core import Program


def _as_program(program: Any, filename: str = "<string>") -> Program:
    if isinstance(program, Program):
        return program
    if isinstance(program, str):
        import tensorlang

        return tensorlang.parse(program, filename=filename)
    raise TlcError(f"error: expected tensor-language text or a Program, got "
                   f"{type(program).__name__}")


def _device(device: Any) -> Any:
    from backend_opencl.runtime import Device, get_device

    return device if isinstance(device, Device) else get_device(device)


def lower(program: Program, target: Target = DEFAULT_TARGET) -> EmittedProgram:
    """Run the back end's passes on a copy of ``program`` and generate OpenCL C."""
    from tensorlang.passes import DEFAULT_PIPELINE, run_pipeline

    work = copy.deepcopy(program)
    run_pipeline(work, DEFAULT_PIPELINE)
    return emit_program(work, target)


def compile_program(program: Any, device: Any = None, target: Target | None = None) -> Any:
    """Compile tensor-language text or a Program for ``device``; return a Module.

    ``target`` overrides the code-generation target derived from the device (tests use it
    to run GPU-style tiling on a CPU device).
    """
    from backend_opencl.module import Module

    prog = _as_program(program)
    dev = _device(device)
    return Module(lower(prog, target or target_from_device(dev)), prog, dev)


def emit(program: Any, kind: str, device: Any = None) -> str:
    """Text for ``tlc compile --emit kind``: ``tl`` or ``cl`` (``schedule`` comes later)."""
    prog = _as_program(program)
    if kind == "tl":
        return str(prog)
    if kind == "cl":
        return lower(prog, _target_or_default(device)).source
    if kind == "schedule":
        raise TlcError("error: --emit schedule is not implemented yet (polyhedral scheduling "
                       "arrives with issue 6)")
    raise TlcError(f"error: unknown --emit kind {kind!r} (use tl or cl)")


def _target_or_default(device: Any) -> Target:
    """The device's target, or the default CPU target when no OpenCL device is available."""
    from backend_opencl.runtime import DeviceError

    try:
        return target_from_device(_device(device))
    except DeviceError:
        if device is not None:
            raise
        return DEFAULT_TARGET


def compile_stablehlo_program(text: str, device: Any = None, filename: str = "<string>") -> Any:
    """StableHLO execution (issue 5): not available yet."""
    raise TlcError("error: StableHLO execution is not implemented yet")


def run_cli(args: argparse.Namespace) -> int:
    """``tlc run`` (issue 5): not available yet."""
    raise TlcError(f"{args.file}: error: StableHLO execution is not implemented yet")
