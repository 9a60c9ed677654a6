"""Recognising counted loops: a ``stablehlo.while`` whose trip count is decided before it.

JAX's ``fori_loop`` and ``scan`` carry an integer counter that starts at a value known
before the loop, adds a constant step in the body, and is compared (LT, LE, GT, GE, NE)
against a constant, a value defined before the loop, or another carried value the body
passes through unchanged.  Such a loop runs its body a number of times the executor can
compute before the first iteration (:class:`tensorlang.plan.TripCount`), so the
condition need not be evaluated nor read back per iteration.
"""

from __future__ import annotations

from collections.abc import Sequence

from frontend.ir.core import Block, Op, Value
from frontend.lower.core import types
from frontend.lower.core.driver import FuncLowering
from tensorlang.plan import Bound, TripCount

_SWAP = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE"}


def trip_count(lw: FuncLowering, op: Op, carry: Sequence[int]) -> TripCount | None:
    """The trip count of while ``op`` (its carried buffers ``carry``), or None when the
    loop is not counted.  Limits defined before the loop are materialized here."""
    return _trip_count(lw, op, None, carry)


def constant_count(op: Op, compare: Op | None = None) -> int | None:
    """The number of iterations of while ``op`` when its counter's start, step and limit
    are compile-time constants (and it does not wrap around), else None; nothing is
    materialized.  ``compare``: one compare of a conjunction the condition is (default:
    the condition itself), which then bounds the iterations."""
    trips = _trip_count(None, op, compare, [-1] * len(op.operands))
    return None if trips is None else trips.known()


def _trip_count(lw: FuncLowering | None, op: Op, compare: Op | None, carry: Sequence[int]
                ) -> TripCount | None:
    """:func:`trip_count` of ``compare`` (None: the condition's result) as the condition;
    without ``lw``, a limit defined before the loop makes it None instead of being
    materialized."""
    cond, body = op.regions[0].block, op.regions[1].block
    test = cond.ops[-1].operands[0].owner if compare is None else compare
    if not isinstance(test, Op) or test.name != "stablehlo.compare":
        return None
    lhs, rhs = test.operands
    direction = str(test.attr("comparison_direction"))
    if lhs not in cond.args:
        lhs, rhs, direction = rhs, lhs, _SWAP.get(direction, "")
    if lhs not in cond.args or direction not in _SWAP:
        return None
    k = cond.args.index(lhs)
    dtype = types.elem(lhs)
    if types.shape(lhs) != () or dtype[0] not in "iu" or dtype == "i1":
        return None
    step = _step(body, k)
    limit = _limit(lw, op, rhs, carry)
    if step is None or limit is None:
        return None
    signed = _signed(test, dtype)
    start = _constant(op.operands[k])
    return TripCount(Bound(start) if start is not None else Bound(buffer=carry[k]), limit,
                     step, direction, int(dtype[1:]), signed)


def _signed(compare: Op, dtype: str) -> bool:
    kind = str(compare.attr("compare_type", "") or "")
    return kind == "SIGNED" if kind in ("SIGNED", "UNSIGNED") else dtype.startswith("i")


def _step(body: Block, k: int) -> int | None:
    """The constant the body adds to counter ``k`` (only there is it written)."""
    new = body.ops[-1].operands[k]
    add = new.owner
    if not isinstance(add, Op) or add.name != "stablehlo.add":
        return None
    a, b = add.operands
    if b is body.args[k]:
        a, b = b, a
    return _constant(b) if a is body.args[k] else None


def _limit(lw: FuncLowering | None, op: Op, v: Value, carry: Sequence[int]) -> Bound | None:
    """The limit: a constant, a carried value the body passes through, or a value defined
    before the loop (materialized now; None without ``lw``)."""
    cond, body = op.regions[0].block, op.regions[1].block
    value = _constant(v)
    if value is not None:
        return Bound(value)
    if v in cond.args:
        j = cond.args.index(v)
        if body.ops[-1].operands[j] is not body.args[j]:
            return None
        value = _constant(op.operands[j])
        return Bound(value) if value is not None else Bound(buffer=carry[j])
    if isinstance(v.owner, Op) and v.owner in cond.ops or lw is None:
        return None
    return Bound(buffer=lw.materialize(v))


def _constant(v: Value) -> int | None:
    """The value of a scalar integer ``stablehlo.constant``, else None."""
    owner = v.owner
    if not isinstance(owner, Op) or owner.name != "stablehlo.constant" or types.shape(v) != ():
        return None
    array = owner.dense_attr("value")
    if array.dtype.kind not in "iu":
        return None
    return int(array.reshape(-1)[0])


def captured(op: Op) -> list[Value]:
    """Values used in ``op``'s regions (nested ones too) but defined outside it."""
    inside: set[Value] = set()
    used: list[Value] = []
    for region in op.regions:
        _walk(region.block, inside, used)
    return [v for v in used if v not in inside]


def _walk(block: Block, inside: set[Value], used: list[Value]) -> None:
    inside.update(block.args)
    for o in block.ops:
        used.extend(o.operands)
        inside.update(o.results)
        for region in o.regions:
            _walk(region.block, inside, used)
