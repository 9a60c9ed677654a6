"""``tlc compile --emit schedule``: the scheduler's view of each kernel with this back end's
work-group plan and register blocks (the same tiling the OpenCL code uses)."""

from __future__ import annotations

from functools import partial

from backend_opencl.emit.control import distribution
from backend_opencl.emit.target import KernelPlan, Target, choose_plan
from backend_opencl.emit.tiling import register_block
from tensorlang.ir.core import Instruction, Program
from tensorlang.ir.types import MemRefType
from tensorlang.schedule.domains import Statement
from tensorlang.schedule.show import show_function
from tensorlang.schedule.tiling import TileShape

_TILED = ("gemm", "gemv", "ger", "sum")
"""The collectives tiled onto work-items (the others run as foreach loops)."""


def schedule_text(program: Program, target: Target) -> str:
    """Every kernel's schedule (``program`` has had its passes run)."""
    parts = []
    for func in program.functions:
        plan = choose_plan(func, target)
        parts.append(show_function(func, plan.work_group_size, partial(_shape, plan),
                                   partial(distribution, plan)))
    return "\n".join(parts)


def _shape(plan: KernelPlan, inst: Instruction, stmt: Statement) -> TileShape | None:
    if inst.name not in _TILED or (inst.name == "sum" and len(stmt.dims) == 1):
        return None
    out: MemRefType = inst.operand(inst.op.output).type
    m = stmt.constraints[0].split(" < ")[-1]
    n = stmt.constraints[1].split(" < ")[-1] if len(stmt.dims) > 2 or inst.name == "ger" \
        else "1"
    rm, rn = register_block(plan, out.element, m, n)
    return TileShape(plan.work_group_size, rm, rn, plan.blocked)
