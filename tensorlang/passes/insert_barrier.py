"""insert-barrier: a barrier between collective instructions that depend through memory.

In collective regions, an instruction that reads or writes memory (a root: argument or
alloca) that an earlier instruction since the last barrier wrote, or writes memory it
read, gets a ``barrier`` in front of it, with ``.local`` / ``.global`` fences matching
the memory involved.  Nothing else gets one: independent collectives run back to back.
Loop bodies see the effects of their own previous iteration; an ``if`` continues with
the union of both branches.  SPMD regions are left alone (barriers there are the
author's, as the reference says).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS
from tensorlang.passes.effects import Effects, effects, is_local
from tensorlang.passes.manager import Pass


@dataclass(frozen=True)
class InsertBarrier(Pass):
    """Insert barriers where collectives depend on each other."""

    name: ClassVar[str] = "insert-barrier"

    def run(self, program: Program) -> None:
        """Insert barriers in every function of ``program``."""
        for func in program.functions:
            insert_barriers(func)


def insert_barriers(func: Function) -> None:
    """Insert the barriers ``func`` needs (idempotent)."""
    _region(func.body, Effects())


def _region(region: Region, pending: Effects) -> Effects:
    for inst in list(region.instructions):
        if inst.name == "barrier":
            pending = _after_barrier(inst, pending)
            continue
        mine = effects(inst)
        clash = pending.conflicts(mine)
        if clash:
            _insert_before(region, inst, clash)
            pending = Effects()
        if inst.name == "for":
            inner = pending.copy()
            inner.update(mine)
            _region(inst.regions[0], inner)
        elif inst.name == "if":
            for branch in inst.regions:
                _region(branch, pending.copy())
        pending.update(mine)
    return pending


def _after_barrier(inst: Instruction, pending: Effects) -> Effects:
    keep_local = not inst.attr("fence_local")
    keep_global = not inst.attr("fence_global")
    return Effects({v for v in pending.reads if (keep_local if is_local(v) else keep_global)},
                   {v for v in pending.writes if (keep_local if is_local(v) else keep_global)})


def _insert_before(region: Region, inst: Instruction, clash: set[Value]) -> None:
    barrier = Instruction(OPS["barrier"], attrs={
        "fence_global": any(not is_local(v) for v in clash),
        "fence_local": any(is_local(v) for v in clash),
    }, loc=inst.loc)
    barrier.parent = region
    region.instructions.insert(region.instructions.index(inst), barrier)

