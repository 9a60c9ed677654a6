"""Local memory planning: every alloca gets an offset in one work-group slab.

An alloca lives from its position (in pre-order over the function) to its
``lifetime_stop`` or to the end of the region that contains it.  Allocas whose
lifetimes do not overlap share space (first fit, 16-byte aligned).  An alloca that
reuses bytes of an earlier one is marked, so a barrier separates the old and new uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorlang.ir.core import Function, Instruction, Region
from tensorlang.ir.types import MemRefType

ALIGN = 16


def memref_bytes(t: MemRefType) -> int:
    """Bytes spanned by a static memref (largest offset + 1 elements)."""
    span = 1
    for size, stride in zip(t.shape, t.strides, strict=False):
        assert size is not None and stride is not None, f"{t} is not static"
        span += (size - 1) * stride
    itemsize = max(1, t.element.bits // 8)
    return span * itemsize


@dataclass
class LocalPlan:
    """Offsets of the allocas of one function and the slab's size in bytes."""

    offsets: dict[Instruction, int] = field(default_factory=dict)
    reused: set[Instruction] = field(default_factory=set)
    size: int = 0


def plan_local_memory(func: Function) -> LocalPlan:
    """Assign slab offsets to the allocas of ``func``."""
    intervals = _lifetimes(func)
    plan = LocalPlan()
    live: list[tuple[int, int, int]] = []  # (end, offset, size)
    high_water = 0
    for inst, (start, end) in sorted(intervals.items(), key=lambda kv: kv[1][0]):
        live = [entry for entry in live if entry[0] >= start]
        size = _round(memref_bytes(inst.result.memref_type))
        offset = _first_fit(sorted((o, s) for _, o, s in live), size)
        if offset < high_water:
            plan.reused.add(inst)
        high_water = max(high_water, offset + size)
        live.append((end, offset, size))
        plan.offsets[inst] = offset
    plan.size = high_water
    return plan


def _round(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _first_fit(used: list[tuple[int, int]], size: int) -> int:
    offset = 0
    for start, length in used:
        if offset + size <= start:
            return offset
        offset = max(offset, start + length)
    return offset


def _lifetimes(func: Function) -> dict[Instruction, tuple[int, int]]:
    order: dict[Instruction, int] = {}
    ends: dict[Region, int] = {}
    _number(func.body, order, ends)
    intervals: dict[Instruction, tuple[int, int]] = {}
    stops: dict[object, int] = {}
    for inst, position in order.items():
        if inst.name == "lifetime_stop":
            stops[inst.single("operand")] = position
    for inst, position in order.items():
        if inst.name == "alloca":
            region = inst.parent
            assert region is not None, "an alloca outside a region"
            end = stops.get(inst.result, ends[region])
            intervals[inst] = (position, end)
    return intervals


def _number(region: Region, order: dict[Instruction, int], ends: dict[Region, int]) -> None:
    for inst in region.instructions:
        order[inst] = len(order)
        for inner in inst.regions:
            _number(inner, order, ends)
    ends[region] = len(order)
