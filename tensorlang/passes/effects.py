"""Memory effects: which memory (function argument or alloca) an instruction reads or writes.

Root-level and syntactic: used to know which arguments a kernel writes (copy-back).
Barrier placement uses the element-level isl footprints of
:mod:`tensorlang.schedule.deps` instead.

Views (subview, expand, fuse, a group member from load) are traced back to their
*root*: the function argument or alloca result they point into.  Distinct roots are
assumed not to alias (arguments behave like ``restrict`` pointers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorlang.ir.core import Function, Instruction, Value
from tensorlang.ir.types import AddressSpace, GroupType, MemRefType


def root(value: Value) -> Value:
    """The argument or alloca result that memref/group ``value`` points into."""
    while isinstance(value.owner, Instruction) and value.owner.op.view:
        value = value.owner.single("operand")
    return value


def is_local(value: Value) -> bool:
    """True when a root lives in local memory."""
    t = value.type
    if isinstance(t, GroupType):
        t = t.memref
    return isinstance(t, MemRefType) and t.addrspace is AddressSpace.LOCAL


@dataclass
class Effects:
    """Roots read and written."""

    reads: set[Value] = field(default_factory=set)
    writes: set[Value] = field(default_factory=set)

    def update(self, other: Effects) -> None:
        """Add ``other``'s effects to these."""
        self.reads |= other.reads
        self.writes |= other.writes

    def conflicts(self, later: Effects) -> set[Value]:
        """Roots through which ``later`` depends on these effects (RAW, WAR, WAW)."""
        return (later.writes & (self.reads | self.writes)) | (later.reads & self.writes)

    def copy(self) -> Effects:
        """An independent copy."""
        return Effects(set(self.reads), set(self.writes))


def effects(inst: Instruction) -> Effects:
    """Everything ``inst`` (and the instructions nested in it) reads and writes."""
    result = Effects()
    for nested in inst.walk():
        result.update(_own_effects(nested))
    return result


def _own_effects(inst: Instruction) -> Effects:
    """The roots ``inst`` itself reads and writes (the op table's ``reads``/``writes``; a
    ``load`` of a group's member is a view, not a read)."""
    op = inst.op
    if op.name == "load" and isinstance(inst.single("operand").type, GroupType):
        return Effects()
    return Effects({root(inst.operand(name)) for name in op.reads},
                   {root(inst.operand(name)) for name in op.writes})


def written_arguments(func: Function) -> set[int]:
    """Indices of the function arguments some instruction writes into."""
    written: set[Value] = set()
    for inst in func.walk():
        written |= _own_effects(inst).writes
    return {i for i, arg in enumerate(func.args) if arg in written}
