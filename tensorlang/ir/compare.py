"""Structural equality of programs: :func:`programs_equal`.

Two programs are equal when their functions agree in order, name, attributes and
argument types, and their instructions agree one by one in op, attributes, operand
structure, result types and regions.  Values are matched by position (where they are
defined), never by name; locations are ignored.  Constants compare exactly: ``true``
differs from ``1``, ``-0.0`` from ``0.0``, and ``nan`` equals ``nan``.
"""

from __future__ import annotations

import math
from typing import Any

from tensorlang.ir.core import Function, Instruction, Program, Region, Value


def programs_equal(a: Program, b: Program) -> bool:
    """True when ``a`` and ``b`` are the same program up to value names and locations."""
    return first_difference(a, b) is None


def first_difference(a: Program, b: Program) -> str | None:
    """A description of the first place where ``a`` and ``b`` differ, or None."""
    if len(a.functions) != len(b.functions):
        return f"{len(a.functions)} functions vs {len(b.functions)}"
    for fa, fb in zip(a.functions, b.functions, strict=True):
        diff = _Matcher().function(fa, fb)
        if diff is not None:
            return f"@{fa.name}: {diff}"
    return None


class _Matcher:
    """Pairs the values of two functions as their definitions are reached."""

    def __init__(self) -> None:
        self.pairs: dict[int, Value] = {}

    def define(self, a: list[Value], b: list[Value], what: str) -> str | None:
        if len(a) != len(b):
            return f"{what}: {len(a)} values vs {len(b)}"
        for va, vb in zip(a, b, strict=True):
            if va.type != vb.type:
                return f"{what}: type {va.type} vs {vb.type}"
            self.pairs[id(va)] = vb
        return None

    def same_use(self, va: Any, vb: Any) -> bool:
        if va is None or vb is None:
            return va is None and vb is None
        if isinstance(va, list) or isinstance(vb, list):
            return (isinstance(va, list) and isinstance(vb, list) and len(va) == len(vb)
                    and all(self.same_use(x, y) for x, y in zip(va, vb, strict=True)))
        return self.pairs.get(id(va)) is vb

    def function(self, a: Function, b: Function) -> str | None:
        if (a.name, a.work_group_size, a.subgroup_size) != (
                b.name, b.work_group_size, b.subgroup_size):
            return "name or attributes differ"
        return self.define(a.args, b.args, "arguments") or self.region(a.body, b.body)

    def region(self, a: Region, b: Region) -> str | None:
        diff = self.define(a.args, b.args, "region arguments")
        if diff is not None:
            return diff
        if len(a.instructions) != len(b.instructions):
            return f"{len(a.instructions)} instructions vs {len(b.instructions)}"
        for ia, ib in zip(a.instructions, b.instructions, strict=True):
            diff = self.instruction(ia, ib)
            if diff is not None:
                return diff
        return None

    def instruction(self, a: Instruction, b: Instruction) -> str | None:
        if a.op is not b.op:
            return f"{a.name} vs {b.name}"
        if a.operands.keys() != b.operands.keys() or not all(
                self.same_use(a.operands[k], b.operands[k]) for k in a.operands):
            return f"{a.name}: operands differ"
        if a.attrs.keys() != b.attrs.keys() or not all(
                same_attr(a.attrs[k], b.attrs[k]) for k in a.attrs):
            return f"{a.name}: attributes differ"
        if len(a.regions) != len(b.regions):
            return f"{a.name}: {len(a.regions)} regions vs {len(b.regions)}"
        for ra, rb in zip(a.regions, b.regions, strict=True):
            diff = self.region(ra, rb)
            if diff is not None:
                return f"{a.name}: {diff}"
        return self.define(a.results, b.results, f"{a.name} results")


def same_attr(a: object, b: object) -> bool:
    """Exact equality of attribute values (types, enums, numbers, tuples)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        return _same_float(a, b)
    if isinstance(a, complex):
        assert isinstance(b, complex)
        return _same_float(a.real, b.real) and _same_float(a.imag, b.imag)
    if isinstance(a, tuple | list):
        assert isinstance(b, tuple | list)
        return len(a) == len(b) and all(same_attr(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
