"""Scalar IR values as affine expressions (isl text) over named parameters, and memref
views traced to their root as affine index maps.

Index arithmetic the scheduler can see through: constants, ``arith.add``/``sub``/``neg``,
multiplication by a constant, widening integer casts and ``size`` (the memref's static
size, or the parameter of its dynamic size, see :func:`view`).  Anything else (a function
argument, ``group_id``, a loop variable, a load) is an opaque parameter named after the
value.

A view's root is a function argument or an alloca result.  ``subview`` chains are exact:
a view index maps to root coordinates by adding (possibly dynamic) offsets and fixing
the modes a rank reduction removes.  ``expand``, ``fuse`` and group members are
over-approximated: an access through them may touch anything in the root.  The two
halves are one recursion (a ``size`` is its view's, a subview's offsets are affine), so
they share this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import ArithOp
from tensorlang.ir.types import GroupType, MemRefType, ScalarType


class Symbols:
    """Deterministic isl parameter names for opaque values (and the reverse map)."""

    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.values: dict[str, Value] = {}
        self.sizes: dict[str, tuple[Value, int]] = {}
        """Parameters of dynamic sizes: name -> (memref value, mode)."""
        self.bound: dict[Value, str] = {}
        """Values that are iteration-domain dimensions (a foreach variable), not parameters."""
        self.facts: dict[Value, list[str]] = {}
        """What :mod:`.bounds` knows of each opaque value, kept once worked out."""

    def param(self, value: Value) -> str:
        """The parameter standing for ``value``."""
        name = self.names.get(value)
        if name is None:
            base = re.sub(r"[^A-Za-z0-9_]", "_", value.name or "v")
            name = f"p_{base}"
            count = 1
            while name in self.values:
                name = f"p_{base}_{count}"
                count += 1
            self.names[value], self.values[name] = name, value
        return name

    def size(self, root: Value, mode: int) -> str:
        """The parameter for a dynamic size of ``root``'s mode ``mode``."""
        name = f"{self.param(root)}_n{mode}"
        self.sizes[name] = (root, mode)
        return name


def affine(value: Value, syms: Symbols) -> str:
    """``value`` as an affine isl expression (text)."""
    if value in syms.bound:
        return syms.bound[value]
    inst = value.owner
    if isinstance(inst, Instruction):
        if inst.name == "constant" and isinstance(inst.attr("value"), int) \
                and not isinstance(inst.attr("value"), bool):
            return str(inst.attr("value"))
        if inst.name == "size":
            return _size(inst, syms)
        if inst.name == "cast" and _widens(inst):
            return affine(inst.single("a"), syms)
        if inst.name == "arith":
            found = _arith(inst, syms)
            if found is not None:
                return found
    return syms.param(value)


def _widens(cast: Instruction) -> bool:
    """A cast between signed integer types that keeps every value (i32 -> index)."""
    src, dst = cast.attr_of("from_type", ScalarType), cast.attr_of("to_type", ScalarType)
    return src.is_signed_int and dst.is_signed_int and dst.bits >= src.bits


def _size(inst: Instruction, syms: Symbols) -> str:
    return view(inst.single("operand"), syms).sizes[inst.attr_of("mode", int)]


def _arith(inst: Instruction, syms: Symbols) -> str | None:
    op = inst.attr_of("op", ArithOp)
    a = affine(inst.single("a"), syms)
    if op is ArithOp.NEG:
        return f"-({a})"
    if op.unary:
        return None
    b = affine(inst.operand("b"), syms)
    if op is ArithOp.ADD:
        return f"({a}) + ({b})"
    if op is ArithOp.SUB:
        return f"({a}) - ({b})"
    if op is ArithOp.MUL and (_is_int(a) or _is_int(b)):
        const, other = (a, b) if _is_int(a) else (b, a)
        return f"{const} * ({other})"  # isl reads "(x) * (2)" as a syntax error
    return None


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


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
        return _subview(inst, view(inst.single("operand"), syms), syms)
    if isinstance(inst, Instruction) and inst.op.view:
        base = view(inst.single("operand"), syms)
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
    dynamic = iter(inst.variadic("dynamic"))
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
