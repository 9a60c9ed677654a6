"""Static bounds checking (the ``check-bounds`` pass): a subview, load or store that isl
proves out of bounds of its memref is an error.  Accesses isl cannot prove in bounds are
listed by :func:`unproven` (candidates for run-time guards)."""

from __future__ import annotations

from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Function, Instruction
from tensorlang.schedule.affine import Symbols
from tensorlang.schedule.bounds import check


def check_bounds(func: Function) -> None:
    """Raise CompileError at the first access of ``func`` proven out of bounds."""
    syms = Symbols()
    for inst in func.walk():
        if check(inst, syms) == "out":
            what = "view" if inst.name == "subview" else "element"
            raise CompileError.at(inst.loc, f"{inst.name}: the {what} lies outside the memref "
                                  f"%{inst.operand('operand').name} for every value of its "
                                  "dynamic sizes and indices (out of bounds)")


def unproven(func: Function) -> list[Instruction]:
    """Accesses of ``func`` that isl can prove neither in nor out of bounds."""
    syms = Symbols()
    return [inst for inst in func.walk() if check(inst, syms) == "unknown"]
