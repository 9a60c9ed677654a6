"""Value ranges of a kernel's integer values: which ``index`` values fit 32 bits.

``index`` is a 64-bit signed integer (docs/language.md), but 64-bit index arithmetic
costs on CPUs (a 64-bit division per element, half-width vector lanes, no 32-bit gather
indices).  :func:`index_ranges` bounds every integer value of a function by interval
arithmetic over constants, static sizes, loop bounds and the arithmetic between them;
the emitter declares an ``index`` value ``int`` when its whole interval lies in
:data:`NARROW`, and computes it with plain 32-bit C operators when its operands are
narrow too (the exact result is in range, so no operation can overflow).  A value the
analysis cannot bound (a load, a loop-carried value, a dynamic size, ``group_id``
times a constant) stays 64-bit, and so does everything computed from it.
"""

from __future__ import annotations

from collections.abc import Callable

from tensorlang.ir.core import Function, Instruction, Value
from tensorlang.ir.ops import ArithOp, CmpCond
from tensorlang.ir.types import MemRefType, ScalarType

Range = tuple[int, int]
"""A closed interval ``(lo, hi)`` of integers."""

NARROW: Range = (-2**31 + 1, 2**31 - 2)
"""What an ``int`` may hold, with room for a loop's last increment past its bound."""

_GROUP_ID: Range = (0, 2**32 - 1)
_ANY64: Range = (-2**63, 2**63 - 1)


def fits(r: Range | None, within: Range = NARROW) -> bool:
    """True when ``r`` is known and lies inside ``within``."""
    return r is not None and within[0] <= r[0] and r[1] <= within[1]


def type_range(t: ScalarType) -> Range | None:
    """Every value of integer type ``t`` (None for other types)."""
    if not t.is_int:
        return None
    if t.is_bool:
        return (0, 1)
    if t.is_unsigned:
        return (0, 2**t.bits - 1)
    return (-2**(t.bits - 1), 2**(t.bits - 1) - 1)


def index_ranges(func: Function) -> dict[Value, Range]:
    """A proven interval for every integer value of ``func`` that has one."""
    ranges: dict[Value, Range] = {}
    for inst in func.walk():
        rule = _RULES.get(inst.name)
        if rule is not None:
            rule(inst, ranges)
        for value in inst.results:
            t = value.type
            if value not in ranges and isinstance(t, ScalarType) \
                    and (found := type_range(t)) is not None and t.bits < 64:
                ranges[value] = found
    return ranges


Rule = Callable[[Instruction, dict[Value, Range]], None]


def _set(ranges: dict[Value, Range], value: Value, r: Range | None) -> None:
    """Record ``r`` when it is known and representable in ``value``'s type."""
    t = value.type
    if r is not None and isinstance(t, ScalarType) and fits(r, type_range(t) or _ANY64):
        ranges[value] = r


def _constant(inst: Instruction, ranges: dict[Value, Range]) -> None:
    value = inst.attr("value")
    if isinstance(value, int):
        _set(ranges, inst.result, (int(value), int(value)))


def _group_id(inst: Instruction, ranges: dict[Value, Range]) -> None:
    _set(ranges, inst.result, _GROUP_ID)


def _size(inst: Instruction, ranges: dict[Value, Range]) -> None:
    t = inst.single("operand").type
    if isinstance(t, MemRefType):
        size = t.shape[inst.attr_of("mode", int)]
        if size is not None:
            _set(ranges, inst.result, (size, size))


def _arith(inst: Instruction, ranges: dict[Value, Range]) -> None:
    op: ArithOp = inst.attr_of("op", ArithOp)
    a = ranges.get(inst.single("a"))
    b_value = inst.operand("b")
    b = ranges.get(b_value) if b_value is not None else None
    if a is None or (b_value is not None and b is None):
        return
    _set(ranges, inst.result, _binary(op, a, b))


def _binary(op: ArithOp, a: Range, b: Range | None) -> Range | None:
    """The interval of ``a op b`` (exact integer arithmetic); None when unknown."""
    if b is None:
        return (-a[1], -a[0]) if op is ArithOp.NEG else None
    if op is ArithOp.ADD:
        return (a[0] + b[0], a[1] + b[1])
    if op is ArithOp.SUB:
        return (a[0] - b[1], a[1] - b[0])
    if op is ArithOp.MUL:
        corners = [x * y for x in a for y in b]
        return (min(corners), max(corners))
    if op is ArithOp.DIV and a[0] >= 0 and b[0] > 0:
        return (a[0] // b[1], a[1] // b[0])
    if op is ArithOp.REM and a[0] >= 0 and b[0] > 0:
        return (0, min(a[1], b[1] - 1))
    return None


def _select(inst: Instruction, ranges: dict[Value, Range]) -> None:
    """The union of both sides, narrowed for the ``min``/``max`` idiom
    ``select(cmp.lt(x, y), x, y)``."""
    x, y = inst.single("a"), inst.operand("b")
    rx, ry = ranges.get(x), ranges.get(y)
    if rx is None or ry is None:
        return
    r = (min(rx[0], ry[0]), max(rx[1], ry[1]))
    cond = inst.single("cond").owner
    if isinstance(cond, Instruction) and cond.name == "cmp":
        pair = (cond.single("a"), cond.operand("b"))
        less = cond.attr_of("cond", CmpCond) in (CmpCond.LT, CmpCond.LE)
        more = cond.attr_of("cond", CmpCond) in (CmpCond.GT, CmpCond.GE)
        if (less and pair == (x, y)) or (more and pair == (y, x)):  # min(x, y)
            r = (min(rx[0], ry[0]), min(rx[1], ry[1]))
        elif (more and pair == (x, y)) or (less and pair == (y, x)):  # max(x, y)
            r = (max(rx[0], ry[0]), max(rx[1], ry[1]))
    _set(ranges, inst.result, r)


def _cast(inst: Instruction, ranges: dict[Value, Range]) -> None:
    src: ScalarType = inst.attr_of("from_type", ScalarType)
    r = ranges.get(inst.single("a")) or type_range(src)
    _set(ranges, inst.result, r)


def _loop_vars(inst: Instruction, ranges: dict[Value, Range]) -> None:
    """A loop variable lies in ``[from, to - 1]`` (for: with a positive step)."""
    if inst.name == "for":
        step = inst.optional("step")
        if step is not None and not (ranges.get(step) or (0, 0))[0] > 0:
            return
        bounds = [(inst.operand("from"), inst.operand("to"))]
    elif inst.name == "foreach":
        bounds = [(inst.operand("from"), inst.operand("to"))]
    else:
        bounds = list(zip(inst.operand("from"), inst.operand("to"), strict=True))
    for arg, (lo, hi) in zip(inst.regions[0].args, bounds, strict=False):
        rlo, rhi = ranges.get(lo), ranges.get(hi)
        if rlo is not None and rhi is not None:
            _set(ranges, arg, (rlo[0], max(rlo[0], rhi[1] - 1)))


_RULES: dict[str, Rule] = {
    "constant": _constant, "group_id": _group_id, "size": _size, "arith": _arith,
    "select": _select, "cast": _cast, "for": _loop_vars, "foreach": _loop_vars,
    "foreach_nd": _loop_vars,
}
