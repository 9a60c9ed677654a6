"""Memref views traced to their root, as affine index maps.

A root is a function argument or an alloca result.  ``subview`` chains are exact:
a view index maps to root coordinates by adding (possibly dynamic) offsets and fixing
the modes a rank reduction removes.  ``expand``, ``fuse`` and group members are
over-approximated: an access through them may touch anything in the root.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.types import GroupType, MemRefType
from tensorlang.schedule.affine import Symbols, affine


@dataclass(frozen=True)
class View:
    """A memref as the scheduler sees it.

    ``sizes``: affine size per mode.  ``index``: for each root mode, an affine expression
    in the view's mode placeholders ``@0@, @1@, ...``, or None when inexact (anywhere).
    """

    root: Value
    rank: int
    root_rank: int
    sizes: tuple[str, ...]
    index: tuple[str, ...] | None

    def at(self, indices: tuple[str, ...]) -> tuple[str, ...] | None:
        """Root coordinates of view element ``indices`` (affine texts), or None."""
        if self.index is None:
            return None
        out = []
        for expr in self.index:
            for d in range(self.rank):
                idx = indices[d]
                expr = expr.replace(f"@{d}@", idx if idx.isidentifier() else f"({idx})")
            out.append(expr)
        return tuple(out)


def view(value: Value, syms: Symbols) -> View:
    """The :class:`View` of memref ``value``."""
    inst = value.owner
    t = _memref(value)
    if isinstance(inst, Instruction) and inst.name == "subview":
        return _subview(inst, view(inst.operand("operand"), syms), syms)
    if isinstance(inst, Instruction) and inst.op.view:
        base = view(inst.operand("operand"), syms)
        return View(base.root, t.order, base.root_rank, _sizes(value, t, syms), None)
    return View(value, t.order, _root_rank(value), _sizes(value, t, syms),
                tuple(f"@{d}@" for d in range(t.order)))


def _memref(value: Value) -> MemRefType:
    t = value.type
    return t.memref if isinstance(t, GroupType) else value.memref_type


def _root_rank(value: Value) -> int:
    return _memref(value).order + (1 if isinstance(value.type, GroupType) else 0)


def _sizes(value: Value, t: MemRefType, syms: Symbols) -> tuple[str, ...]:
    return tuple(str(s) if s is not None else syms.size(value, d) for d, s in enumerate(t.shape))


def _subview(inst: Instruction, base: View, syms: Symbols) -> View:
    dynamic = iter(inst.operand("dynamic"))
    sizes: list[str] = []
    coords: list[str] = []
    for d, sl in enumerate(inst.attr("slices")):
        if sl.full:
            coords.append(f"@{len(sizes)}@")
            sizes.append(base.sizes[d])
            continue
        offset = str(sl.offset) if sl.offset is not None else affine(next(dynamic), syms)
        if sl.size == 0:
            coords.append(offset)
            continue
        size = str(sl.size) if sl.size is not None else affine(next(dynamic), syms)
        coords.append(f"({offset}) + @{len(sizes)}@")
        sizes.append(size)
    index = None
    if base.index is not None:
        index = tuple(_substitute(e, coords) for e in base.index)
    return View(base.root, len(sizes), base.root_rank, tuple(sizes), index)


def _substitute(expr: str, coords: list[str]) -> str:
    """``expr`` over the base view's placeholders, rewritten over the subview's."""
    for d, c in enumerate(coords):
        expr = expr.replace(f"@{d}@", "(" + c.replace("@", "#") + ")")
    return expr.replace("#", "@")
