"""Scalar IR values as affine expressions (isl text) over named parameters.

Index arithmetic the scheduler can see through: constants, ``arith.add``/``sub``/``neg``
and multiplication by a constant.  Anything else (a function argument, ``group_id``, a
loop variable, a load) is an opaque parameter named after the value.
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
        return f"{self.param(root)}_n{mode}"


def affine(value: Value, syms: Symbols) -> str:
    """``value`` as an affine isl expression (text)."""
    if value in syms.bound:
        return syms.bound[value]
    inst = value.owner
    if isinstance(inst, Instruction):
        if inst.name == "constant" and isinstance(inst.attr("value"), int) \
                and not isinstance(inst.attr("value"), bool):
            return str(inst.attr("value"))
        if inst.name == "arith":
            found = _arith(inst, syms)
            if found is not None:
                return found
    return syms.param(value)


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
        return f"({a}) * ({b})"
    return None


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()
