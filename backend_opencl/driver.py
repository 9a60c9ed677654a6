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


def _after_passes(program: Program, check_bounds: bool = False) -> Program:
    """A copy of ``program`` after the back end's pass pipeline (with ``check_bounds``,
    ``check-bounds`` also marks the accesses that need run-time guards)."""
    from tensorlang.passes import DEFAULT_PIPELINE, run_pipeline

    work = copy.deepcopy(program)
    pipeline = DEFAULT_PIPELINE
    if check_bounds:  # last: the loads and stores other passes create are marked too
        pipeline += ",check-bounds{guards=true}"
    run_pipeline(work, pipeline)
    return work


def lower(program: Program, target: Target = DEFAULT_TARGET,
          check_bounds: bool = False) -> EmittedProgram:
    """Run the back end's passes on a copy of ``program`` and generate OpenCL C
    (``check_bounds``: with run-time bounds guards, docs/abi.md)."""
    return emit_program(_after_passes(program, check_bounds), target)


def compile_program(program: Any, device: Any = None, target: Target | None = None,
                    check_bounds: bool = False) -> Any:
    """Compile tensor-language text or a Program for ``device``; return a Module.

    ``target`` overrides the code-generation target derived from the device (tests use it
    to run GPU-style tiling on a CPU device).  ``check_bounds`` guards every access isl
    cannot prove in bounds; a violation raises ``BoundsError`` after the launch.
    """
    from backend_opencl.module import Module
    from backend_opencl.tune import cached_target

    prog = _as_program(program)
    dev = _device(device)
    if target is None:  # the device's facts plus register blocks tuned by ``tlc tune``
        target = cached_target(prog, dev, target_from_device(dev))
    return Module(lower(prog, target, check_bounds), prog, dev)


def emit(program: Any, kind: str, device: Any = None, entry: str = "main",
         check_bounds: bool = False) -> str:
    """Text for ``tlc compile --emit kind``: ``tl`` or ``cl`` (``schedule`` comes later).

    A StableHLO module is lowered first: ``tl`` prints its kernels.
    """
    if _is_stablehlo_module(program) and kind in ("tl", "cl"):
        from frontend.lower import lower_function

        parts = program.parts or [program]
        program = _kernels_program(lower_function(_part_with(parts, entry), entry))
    prog = _as_program(program)
    if kind == "tl":
        return str(prog)
    if kind == "cl":
        return lower(prog, _target_or_default(device), check_bounds).source
    if kind == "schedule":
        from backend_opencl.emit.schedule_text import schedule_text

        return schedule_text(_after_passes(prog), _target_or_default(device))
    raise TlcError(f"error: unknown --emit kind {kind!r} (use tl, cl or schedule)")


def _target_or_default(device: Any) -> Target:
    """The device's target, or the default CPU target when no OpenCL device is available."""
    from backend_opencl.runtime import DeviceError

    try:
        return target_from_device(_device(device))
    except DeviceError:
        if device is not None:
            raise
        return DEFAULT_TARGET


def _is_stablehlo_module(program: Any) -> bool:
    from frontend.ir.core import Module as StableHLOModule

    return isinstance(program, StableHLOModule)


def _kernels_program(lowered: Any) -> Program:
    """The lowered kernels parsed, without dead code (index arithmetic nobody reads)."""
    import tensorlang
    from tensorlang.passes import run_pipeline

    program = tensorlang.parse(lowered.kernels or "", filename="<lowered>")
    run_pipeline(program, "dce")
    return program


_EXECUTABLES: dict[tuple[Any, ...], Any] = {}


def compile_stablehlo_program(text: str, device: Any = None, filename: str = "<string>",
                              entry: str = "main", check_bounds: bool = False) -> Any:
    """Parse, verify and lower StableHLO text; build its kernels (one program); cached.

    ``check_bounds``: the kernels get run-time bounds guards (their locations are in
    the lowered tensor language, ``<lowered>``)."""
    import frontend
    from frontend.lower import lower_function

    dev = _device(device)
    key = (text, filename, entry, dev.key, check_bounds)
    exe = _EXECUTABLES.get(key)
    if exe is not None:
        return exe
    module = frontend.parse(text, filename=filename)
    parts = module.parts or [module]
    lowered = lower_function(_part_with(parts, entry), entry)
    exe = _executable(lowered, dev, entry, check_bounds)
    _EXECUTABLES[key] = exe
    return exe


def _part_with(parts: list[Any], entry: str) -> Any:
    return next((p for p in parts if p.func(entry) is not None), parts[0])


def compile_lowered(lowered: Any, device: Any = None) -> Any:
    """An executable for an already lowered function (``frontend.lower.Lowered``)."""
    return _executable(lowered, _device(device), lowered.func.name.strip('"'))


def _executable(lowered: Any, dev: Any, entry: str, check_bounds: bool = False) -> Any:
    from backend_opencl.plan_exec import Executable
    from frontend.ir.types import TensorType

    program = _kernels_program(lowered)
    module = compile_program(program, dev, check_bounds=check_bounds) \
        if program.functions else None
    arg_dtypes = [t.element.dtype for t in lowered.func.arg_types]
    result_dtypes = [t.element.dtype if isinstance(t, TensorType) else None
                     for t in lowered.func.result_types]
    result_dtypes += [_check_dtype(lowered, i) for i in range(len(lowered.checks))]
    return Executable(lowered.plan, module, dev, entry, arg_dtypes, result_dtypes)


def _check_dtype(lowered: Any, i: int) -> Any:
    """The numpy dtype of the i-th check result (the checked value's buffer)."""
    import numpy as np

    from backend_opencl.module import NUMPY_DTYPES

    bid = lowered.plan.results[len(lowered.func.result_types) + i]
    return np.dtype(NUMPY_DTYPES[lowered.plan.buffer(bid).dtype])


def run_cli(args: argparse.Namespace) -> int:
    """``tlc run FILE.mlir --inputs IN.npz [-o OUT.npz] [--entry NAME]``."""
    from pathlib import Path

    import numpy as np

    try:
        text = Path(args.file).read_text()
    except OSError as err:
        raise TlcError(f"{args.file}: error: cannot read file: {err.strerror}") from None
    exe = compile_stablehlo_program(text, device=args.device, filename=args.file,
                                    entry=args.entry,
                                    check_bounds=getattr(args, "check_bounds", False))
    inputs = _load_inputs(args.inputs) if args.inputs else []
    results = exe(*inputs)
    out = {f"result{i}": r for i, r in enumerate(results)}
    if args.output:
        np.savez(args.output, **out)
    else:
        for name, r in out.items():
            print(f"{name} = {np.array2string(r, threshold=64)}")
    return 0


def _load_inputs(path: str) -> list[Any]:
    import numpy as np

    try:
        with np.load(path) as data:
            return [data[k] for k in data.files]
    except (OSError, ValueError) as err:
        raise TlcError(f"{path}: error: cannot read inputs: {err}") from None
