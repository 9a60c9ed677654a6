"""Static bounds analysis: does a subview, load or store stay inside its root?

The region a view or element access touches (through exact subview chains, see
:mod:`.views`) is compared with the root's box ``0 <= z_d < size_d`` (dynamic sizes and
offsets are parameters).  The verdict is ``"in"`` when isl proves the access in bounds
for every parameter value, ``"out"`` when no parameter value keeps it in bounds, and
``"unknown"`` otherwise (or when the view is not exact).
"""

from __future__ import annotations

from typing import Literal

import islpy as isl

from tensorlang.ir.core import Instruction
from tensorlang.ir.types import MemRefType
from tensorlang.schedule import space
from tensorlang.schedule.affine import Symbols, affine
from tensorlang.schedule.views import View, view

Verdict = Literal["in", "out", "unknown"]


def _box(v: View, syms: Symbols) -> isl.Set:
    root = view(v.root, syms)
    dims = [f"z{d}" for d in range(v.root_rank)]
    return space.set_(f"R[{', '.join(dims)}]",
                      [f"0 <= {d} < {s}" for d, s in zip(dims, root.sizes, strict=True)])


def _touched(v: View, points: list[str], constraints: list[str]) -> isl.Set | None:
    coords = v.at(tuple(points))
    if coords is None:
        return None
    dims = [p for p in points if p.startswith("x")]
    domain = space.set_(f"D[{', '.join(dims)}]", constraints)
    return space.map_(f"D[{', '.join(dims)}] -> R[{', '.join(coords)}]", domain).range()


def verdict(touched: isl.Set | None, box: isl.Set) -> Verdict:
    """Compare the touched root elements with the root's box."""
    if touched is None:
        return "unknown"
    outside = touched.subtract(box)
    if outside.is_empty():
        return "in"
    good = outside.params().complement().intersect(touched.params())
    nonneg = good.get_space()
    for i in range(nonneg.dim(isl.dim_type.param)):  # sizes and offsets are not negative
        good = good.lower_bound_val(isl.dim_type.param, i, 0)
    return "out" if good.is_empty() else "unknown"


def check(inst: Instruction, syms: Symbols) -> Verdict | None:
    """The verdict for a subview, load or store of a memref (None for other instructions)."""
    operand = inst.operands.get("operand")
    if inst.name not in ("subview", "load", "store") or \
            not isinstance(getattr(operand, "type", None), MemRefType):
        return None
    if inst.name == "subview":
        v = view(inst.result, syms)
        points = [f"x{d}" for d in range(v.rank)]
        constraints = [f"0 <= x{d} < {s}" for d, s in enumerate(v.sizes)]
    else:
        v = view(operand, syms)
        points = [affine(i, syms) for i in inst.operand("indices")]
        constraints = []
    if v.index is None or v.root_rank != len(view(v.root, syms).sizes):
        return "unknown"  # not exact (expand, fuse) or a group member
    try:
        return verdict(_touched(v, points, constraints), _box(v, syms))
    except isl.Error:  # an index isl cannot read: no verdict
        return "unknown"
