"""OpenCL C generation: one kernel per tensor-language function.

``emit_program(program, target)`` returns the source of one OpenCL program holding
every kernel plus shared helpers, and per kernel its launch plan and argument ABI.
The instruction families live in ``scalar``, ``memref``, ``control`` and
``collectives``; collectives build their loops through ``tiling``.
"""

from __future__ import annotations

from dataclasses import dataclass

from backend_opencl import progress
from backend_opencl.abi import ArgAbi
from backend_opencl.emit import (  # noqa: F401 (handlers)
    collectives,
    control,
    mathfns,
    memref,
    numeric,
    scalar,
)
from backend_opencl.emit.cnames import kernel_c_name
from backend_opencl.emit.guards import GuardSite
from backend_opencl.emit.kernel import KernelEmitter
from backend_opencl.emit.target import DEFAULT_TARGET, KernelPlan, Target, choose_plan
from backend_opencl.emit.unit import Unit
from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Program
from tensorlang.schedule.launch import GroupCount, group_count

__all__ = ["DEFAULT_TARGET", "EmittedProgram", "KernelInfo", "Target", "emit_program"]


@dataclass(frozen=True)
class KernelInfo:
    """What the runtime needs to launch one kernel."""

    name: str
    c_name: str
    plan: KernelPlan
    abi: tuple[ArgAbi, ...]
    local_mem_bytes: int
    guards: tuple[GuardSite, ...] = ()
    """Bounds-guard sites; when present the kernel takes the error record last."""
    groups: GroupCount | None = None
    """Where the number of work-groups comes from when a call omits ``num_groups``."""


@dataclass(frozen=True)
class EmittedProgram:
    """OpenCL C source and the kernels it defines, in program order."""

    source: str
    kernels: dict[str, KernelInfo]


def emit_program(program: Program, target: Target = DEFAULT_TARGET) -> EmittedProgram:
    """Generate OpenCL C for every function of ``program`` (barriers already inserted)."""
    unit = Unit()
    texts, infos = [], {}
    for done, func in enumerate(program.functions):
        progress.phase("generate", done, len(program.functions))
        numeric.check_supported(func)
        plan = choose_plan(func, target)
        emitter = KernelEmitter(func, plan, target, unit)
        texts.append(emitter.emit())
        if emitter.slab_bytes() > target.local_mem_size:
            raise CompileError.at(func.loc, f"@{func.name} needs {emitter.slab_bytes()} bytes "
                                  f"of local memory; the device has {target.local_mem_size}")
        infos[func.name] = KernelInfo(func.name, kernel_c_name(func.name), plan,
                                      tuple(emitter.abi), emitter.slab_bytes(),
                                      tuple(emitter.guard_sites), group_count(func))
    return EmittedProgram(unit.source(texts), infos)
