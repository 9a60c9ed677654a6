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

_VIEWS = ("subview", "expand", "fuse", "load")
_READ_WRITE = {"gemm": ("A", "B"), "gemv": ("A", "B"), "ger": ("A", "B"),
               "hadamard_product": ("A", "B"), "axpby": ("A",), "sum": ("A",)}
_OUTPUT = {"gemm": "C", "gemv": "C", "ger": "C", "hadamard_product": "C", "axpby": "B",
           "sum": "B"}


def root(value: Value) -> Value:
    """The argument or alloca result that memref/group ``value`` points into."""
    while isinstance(value.owner, Instruction) and value.owner.name in _VIEWS:
        value = value.owner.operand("operand")
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
    name = inst.name
    if name in _OUTPUT:
        out = root(inst.operand(_OUTPUT[name]))
        reads = {root(inst.operand(x)) for x in _READ_WRITE[name]} | {out}
        return Effects(reads, {out})
    if name == "load" and isinstance(inst.operand("operand").type, MemRefType):
        return Effects({root(inst.operand("operand"))}, set())
    if name == "store":
        return Effects(set(), {root(inst.operand("operand"))})
    return Effects()


def written_arguments(func: Function) -> set[int]:
    """Indices of the function arguments some instruction writes into."""
    written: set[Value] = set()
    for inst in func.walk():
        written |= _own_effects(inst).writes
    return {i for i, arg in enumerate(func.args) if arg in written}
