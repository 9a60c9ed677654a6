"""insert-barrier: a barrier between collective instructions that depend through memory.

In collective regions, an instruction that reads or writes elements that an earlier
instruction since the last barrier wrote, or writes elements it read, gets a ``barrier``
in front of it, with ``.local`` / ``.global`` fences matching the memory involved.
Footprints are isl sets built from the access relations of the scheduler
(:mod:`tensorlang.schedule.deps`): collectives on disjoint parts of one array (two
subviews, even with dynamic offsets) need no barrier; where isl cannot prove
disjointness, the barrier stays.
Loop bodies see the effects of their own previous iteration; an ``if`` continues with
the union of both branches.  SPMD regions are left alone (barriers there are the
author's, as the reference says).  A function whose work-group is one work-item
(``work_group_size(1,1)``: the lowering's loop kernels; with ``single_item``, every
function that leaves its work-group to a CPU plan) needs none: its one work-item sees
its own writes in program order, and a barrier under a branch makes PoCL's work-group
compiler replicate the code after it (a diffrax solve's loop kernel with its prologue
and epilogue took minutes to build).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS
from tensorlang.passes.effects import is_local
from tensorlang.passes.manager import Pass
from tensorlang.schedule.affine import Symbols
from tensorlang.schedule.deps import Footprint, footprint


@dataclass(frozen=True)
class InsertBarrier(Pass):
    """Insert barriers where collectives depend on each other.

    ``single_item`` (``insert-barrier{single_item=true}``, what the back end runs for a
    CPU plan): the target runs a function that sets neither its work-group size nor its
    subgroup size with one work-item per group, so such a function gets none.
    """

    name: ClassVar[str] = "insert-barrier"
    single_item: bool = False

    def run(self, program: Program) -> None:
        """Insert barriers in every function of ``program`` that may need them."""
        for func in program.functions:
            if not (self.single_item and runs_single_item(func)):
                insert_barriers(func)


def runs_single_item(func: Function) -> bool:
    """Whether ``func`` leaves its work-group to a target that runs one work-item per
    group: no ``work_group_size``, no ``subgroup_size``."""
    return func.work_group_size is None and func.subgroup_size is None


def insert_barriers(func: Function) -> None:
    """Insert the barriers ``func`` needs (idempotent); none in a one-work-item
    work-group."""
    if func.work_group_size != (1, 1):
        _region(func.body, Footprint(), Symbols())


def _region(region: Region, pending: Footprint, syms: Symbols) -> Footprint:
    for inst in list(region.instructions):
        if inst.name == "barrier":
            pending = _after_barrier(inst, pending)
            continue
        mine = footprint(inst, syms)
        clash = pending.conflicts(mine)
        if clash:
            _insert_before(region, inst, clash)
            pending = Footprint()
        if inst.name == "for":
            inner = pending.copy()
            inner.update(mine)  # the previous iteration (all iterations, over-approximated)
            _region(inst.regions[0], inner, syms)
        elif inst.name == "if":
            for branch in inst.regions:
                _region(branch, pending.copy(), syms)
        pending.update(mine)
    return pending


def _after_barrier(inst: Instruction, pending: Footprint) -> Footprint:
    keep_local = not inst.attr_of("fence_local", bool)
    keep_global = not inst.attr_of("fence_global", bool)
    return pending.keep(lambda v: keep_local if is_local(v) else keep_global)


def _insert_before(region: Region, inst: Instruction, clash: set[Value]) -> None:
    barrier = Instruction(OPS["barrier"], attrs={
        "fence_global": any(not is_local(v) for v in clash),
        "fence_local": any(is_local(v) for v in clash),
    }, loc=inst.loc)
    barrier.parent = region
    region.instructions.insert(region.instructions.index(inst), barrier)

