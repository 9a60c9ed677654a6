"""dce: remove instructions whose results are never used and that have no effect.

Pure instructions (the op table's ``pure`` trait: scalar arithmetic, constants, casts,
comparisons, views, loads, size and id queries, allocas) go when none of their results
is used; so do ``for`` and
``if`` whose results are unused and whose regions hold only pure instructions.  Stores,
BLAS updates, barriers, ``foreach``/``parallel`` regions and anything else stay.  Runs to
a fixed point, so whole dead index computations disappear.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.passes.manager import Pass

_STRUCTURED = frozenset({"for", "if"})


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Delete unused pure instructions (and pure loops/conditionals with unused results)."""

    name: ClassVar[str] = "dce"

    def run(self, program: Program) -> None:
        """Clean every function in place."""
        for func in program.functions:
            clean_function(func)


def clean_function(func: Function) -> int:
    """Remove dead instructions of ``func`` until none is left; return how many went."""
    removed = 0
    while True:
        used = _used_values(func)
        count = _sweep(func.body, used)
        if count == 0:
            return removed
        removed += count


def _used_values(func: Function) -> set[Value]:
    return {v for inst in func.walk() for v in inst.operand_values()}


def _sweep(region: Region, used: set[Value]) -> int:
    """Drop dead instructions of ``region`` (innermost first); return how many."""
    count = 0
    kept: list[Instruction] = []
    for inst in region.instructions:
        for nested in inst.regions:
            count += _sweep(nested, used)
        if _removable(inst) and not any(r in used for r in inst.results):
            count += 1
            continue
        kept.append(inst)
    region.instructions[:] = kept
    return count


def _removable(inst: Instruction) -> bool:
    if inst.op.pure:
        return True
    if inst.name not in _STRUCTURED:
        return False
    return all(n.op.pure or n.name in _STRUCTURED or n.name == "yield"
               for region in inst.regions for n in region.walk())
