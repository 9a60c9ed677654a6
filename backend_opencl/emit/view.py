"""Memref and group values as the emitter sees them: C expressions for pointer and layout.

A memref is a base pointer plus one C expression per mode size and stride.  Static
entries are integer literals, dynamic ones name a kernel parameter or a local variable.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorlang.ir.types import MemRefType


def is_literal(expr: str) -> bool:
    """True when ``expr`` is an integer literal."""
    return expr.lstrip("-").isdigit()


def mul(a: str, b: str) -> str:
    """``a * b`` simplified for literal 0 and 1."""
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    if is_literal(a) and is_literal(b):
        return str(int(a) * int(b))
    return f"{_paren(a)} * {_paren(b)}"


def add(*terms: str) -> str:
    """``a + b + ...`` without zero terms."""
    kept = [t for t in terms if t != "0"]
    if not kept:
        return "0"
    const = sum(int(t) for t in kept if is_literal(t))
    rest = [t for t in kept if not is_literal(t)]
    if const:
        rest.append(str(const))
    return " + ".join(rest) if rest else "0"


def _paren(expr: str) -> str:
    if expr.startswith("(") and expr.endswith(")") and "(" not in expr[1:-1]:
        return expr
    simple = expr.replace("_", "").replace(".", "").isalnum() or is_literal(expr)
    return expr if simple else f"({expr})"


@dataclass(frozen=True)
class MemView:
    """A memref in C: ``ptr`` with ``shape`` and ``strides`` expressions (in elements).

    ``valid`` (bounds guards only): a C ``bool`` that is false when a guarded subview or
    expand on the way to this view failed; its sizes are then all zero.  Empty when the
    view is always valid.
    """

    type: MemRefType
    ptr: str
    shape: tuple[str, ...]
    strides: tuple[str, ...]
    valid: str = ""

    def offset(self, indices: list[str] | tuple[str, ...]) -> str:
        """The linear element offset of ``indices``."""
        return add(*(mul(i, s) for i, s in zip(indices, self.strides, strict=False)))

    def at(self, indices: list[str] | tuple[str, ...]) -> str:
        """The lvalue ``ptr[offset]``."""
        return f"{self.ptr}[{self.offset(indices)}]"

    def numel(self) -> str:
        """The product of the mode sizes."""
        total = "1"
        for size in self.shape:
            total = mul(total, size)
        return total


@dataclass(frozen=True)
class GroupView:
    """A group in C: a table of 64-bit pointers plus per-member dynamic sizes/strides."""

    table: str
    memref: MemRefType
    shape: tuple[str, ...]  # literal, or the name of a per-member array parameter
    strides: tuple[str, ...]
    offset: str
    base: str | None = None  # without SVM: members are ``base + table[i]``
