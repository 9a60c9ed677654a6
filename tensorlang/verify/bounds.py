"""Static bounds checking (the ``check-bounds`` pass): a subview, load or store that isl
proves out of bounds of its memref is an error.  Accesses isl cannot prove in bounds are
listed by :func:`unproven`; :func:`mark_guards` marks them (and the other instructions
whose safety depends on run-time values) for run-time guards.

A mark is the attribute :data:`GUARD` on the instruction, read by the OpenCL emitter:

- ``subview``, ``load``, ``store``: ``True``; check every index (every slice) against
  the extent of its mode at run time;
- ``expand`` with a dynamic size on either side: ``True``; check that the product of the
  new sizes equals the expanded mode's size (the reference leaves a mismatch undefined);
- a BLAS collective: a tuple of :class:`SizePair` whose sizes must agree but are not
  proven equal (dynamic sizes the program does not relate).
"""

from __future__ import annotations

from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Function, Instruction
from tensorlang.ir.ops import Transpose
from tensorlang.ir.types import MemRefType
from tensorlang.schedule.affine import Symbols, view
from tensorlang.schedule.bounds import SizePair, check, sizes_equal

GUARD = "guard"
"""The attribute :func:`mark_guards` sets on an instruction that needs a run-time guard."""


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


def mark_guards(func: Function) -> int:
    """Set :data:`GUARD` on every instruction of ``func`` that needs a run-time guard;
    return how many were marked."""
    syms = Symbols()
    marked = 0
    for inst in func.walk():
        mark = _guard(inst, syms)
        if mark:
            inst.attrs[GUARD] = mark
            marked += 1
    return marked


def _guard(inst: Instruction, syms: Symbols) -> bool | tuple[SizePair, ...]:
    if inst.name in ("subview", "load", "store"):
        return check(inst, syms) == "unknown"
    if inst.name == "expand":
        t = inst.single("operand").memref_type
        return t.shape[inst.attr_of("mode", int)] is None or None in inst.attr("shape")
    if inst.op.blas:
        return tuple(p for p in size_pairs(inst) if not _agree(inst, p, syms))
    return False


def _agree(inst: Instruction, pair: SizePair, syms: Symbols) -> bool:
    a = view(inst.operand(pair.a), syms).sizes[pair.a_mode]
    b = view(inst.operand(pair.b), syms).sizes[pair.b_mode]
    return sizes_equal(a, b, inst, syms)


def size_pairs(inst: Instruction) -> tuple[SizePair, ...]:
    """The operand modes of a BLAS collective whose sizes must agree (docs/language.md)."""
    def op(name: str, mode: int, trans: str = "trans_a") -> tuple[str, int]:
        t: MemRefType = inst.operand(name).type
        flipped = t.order == 2 and inst.attrs.get(trans) is Transpose.T
        return name, (1 - mode if flipped else mode)

    def pair(a: tuple[str, int], b: tuple[str, int]) -> SizePair:
        return SizePair(*a, *b)

    name = inst.name
    if name == "gemm":
        return (pair(op("A", 0), ("C", 0)), pair(op("B", 1, "trans_b"), ("C", 1)),
                pair(op("A", 1), op("B", 0, "trans_b")))
    if name == "gemv":
        return pair(op("A", 0), ("C", 0)), pair(op("A", 1), ("B", 0))
    if name == "ger":
        return pair(("A", 0), ("C", 0)), pair(("B", 0), ("C", 1))
    if name == "hadamard_product":
        return pair(("A", 0), ("C", 0)), pair(("B", 0), ("C", 0))
    if name == "axpby":
        return tuple(pair(op("A", m), ("B", m)) for m in range(inst.single("B").memref_type.order))
    if name == "sum" and inst.single("A").memref_type.order == 2:
        return (pair(op("A", 0), ("B", 0)),)
    return ()
