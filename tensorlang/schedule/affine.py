"""Scalar IR values as affine expressions (isl text) over named parameters.

Index arithmetic the scheduler can see through: constants, ``arith.add``/``sub``/``neg``,
multiplication by a constant, widening integer casts and ``size`` (the memref's static
size, or the parameter of its dynamic size, see :mod:`.views`).  Anything else (a function
argument, ``group_id``, a loop variable, a load) is an opaque parameter named after the
value.
"""

from __future__ import annotations

import re

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import ArithOp


class Symbols:
    """Deterministic isl parameter names for opaque values (and the reverse map)."""

    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.values: dict[str, Value] = {}
        self.sizes: dict[str, tuple[Value, int]] = {}
        """Parameters of dynamic sizes: name -> (memref value, mode)."""
        self.bound: dict[Value, str] = {}
        """Values that are iteration-domain dimensions (a foreach variable), not parameters."""

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
            return affine(inst.operand("a"), syms)
        if inst.name == "arith":
            found = _arith(inst, syms)
            if found is not None:
                return found
    return syms.param(value)


def _widens(cast: Instruction) -> bool:
    """A cast between signed integer types that keeps every value (i32 -> index)."""
    src, dst = cast.attr("from_type"), cast.attr("to_type")
    return src.is_signed_int and dst.is_signed_int and dst.bits >= src.bits


def _size(inst: Instruction, syms: Symbols) -> str:
    from tensorlang.schedule.views import view  # views builds on this module

    return view(inst.operand("operand"), syms).sizes[inst.attr("mode")]


def _arith(inst: Instruction, syms: Symbols) -> str | None:
    op = inst.attr("op")
    a = affine(inst.operand("a"), syms)
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
