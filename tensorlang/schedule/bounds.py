"""Static bounds analysis: does a subview, load or store stay inside its root?

The region a view or element access touches (through exact subview chains, see
:func:`.affine.view`) is compared with the root's box ``0 <= z_d < size_d`` (dynamic sizes and
offsets are parameters).  The verdict is ``"in"`` when isl proves the access in bounds
for every parameter value, ``"out"`` when no parameter value keeps it in bounds, and
``"unknown"`` otherwise (or when the view is not exact).

Parameters are constrained by the *facts* that hold where the access runs
(:func:`facts`): the ranges of enclosing ``foreach``/``foreach_nd``/``for`` loops and the
integer comparisons of enclosing ``if`` branches.  With ``size`` results standing for the
sizes of their views (:mod:`.affine`), ``foreach %i = 0, %n`` with ``%n = size %A[0]``
proves ``load %A[%i]`` in bounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Literal, NamedTuple

import islpy as isl

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import ArithOp, CmpCond
from tensorlang.ir.types import MemRefType
from tensorlang.schedule import space
from tensorlang.schedule.affine import Symbols, View, affine, view

Verdict = Literal["in", "out", "unknown"]


class SizePair(NamedTuple):
    """Two mode sizes of a collective's operands that must agree (operand names, modes)."""

    a: str
    a_mode: int
    b: str
    b_mode: int


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


def verdict(touched: isl.Set | None, box: isl.Set, where: isl.Set | None = None) -> Verdict:
    """Compare the touched root elements with the root's box.

    ``where`` (the access's :func:`facts`) narrows the parameters for the "in" proof
    only: "out" stays a claim about every admissible parameter value, so code that never
    runs (or runs only for values a fact excludes) is not an error.
    """
    if touched is None:
        return "unknown"
    narrowed = touched if where is None else _restrict(touched, where)
    if narrowed.subtract(box).is_empty():
        return "in"
    outside = touched.subtract(box)
    good = outside.params().complement().intersect(touched.params())
    nonneg = good.get_space()
    for i in range(nonneg.dim(isl.dim_type.param)):  # sizes and offsets are not negative
        good = good.lower_bound_val(isl.dim_type.param, i, 0)
    return "out" if good.is_empty() else "unknown"


def _restrict(touched: isl.Set, where: isl.Set) -> isl.Set:
    where = where.align_params(touched.get_space())
    return touched.align_params(where.get_space()).intersect_params(where)


def check(inst: Instruction, syms: Symbols) -> Verdict | None:
    """The verdict for a subview, load or store of a memref (None for other instructions)."""
    operand = inst.operands.get("operand")
    if inst.name not in ("subview", "load", "store") or not isinstance(operand, Value) \
            or not isinstance(operand.type, MemRefType):
        return None
    if inst.name == "subview":
        v = view(inst.result, syms)
        points = [f"x{d}" for d in range(v.rank)]
        constraints = [f"0 <= x{d} < {s}" for d, s in enumerate(v.sizes)]
    else:
        v = view(operand, syms)
        points = [affine(i, syms) for i in inst.variadic("indices")]
        constraints = []
    if v.index is None or v.root_rank != len(view(v.root, syms).sizes):
        return "unknown"  # not exact (expand, fuse) or a group member
    try:
        with operation_budget():
            touched, box = _touched(v, points, constraints), _box(v, syms)
            if touched is None:
                return "unknown"
            if touched.subtract(box).is_empty():
                return "in"  # in bounds whatever holds where it runs: no facts needed
            where = facts(inst, syms, _params(touched) + _params(box))
            return verdict(touched, box, where)
    except isl.Error:  # an index isl cannot read, or a proof over budget: no verdict
        return "unknown"


ISL_OPERATIONS = 30_000
"""isl's budget for one bounds question: past it the answer is "unknown" (a runtime guard
under ``check-bounds{guards=true}``, no error otherwise), so a kernel full of clamped
indices in nested loops cannot make compilation take minutes."""


@contextmanager
def operation_budget(operations: int = ISL_OPERATIONS) -> Iterator[None]:
    """Within the block, isl raises ``isl.Error`` after ``operations`` operations."""
    ctx = isl.DEFAULT_CONTEXT
    ctx.reset_operations()
    ctx.set_max_operations(operations)
    try:
        yield
    finally:
        ctx.set_max_operations(0)


def _params(s: isl.Set) -> list[str]:
    return space.param_names(s)


# -- facts: what holds where an instruction runs --------------------------------------------

_NEGATED = {CmpCond.LT: CmpCond.GE, CmpCond.GE: CmpCond.LT, CmpCond.LE: CmpCond.GT,
            CmpCond.GT: CmpCond.LE, CmpCond.EQ: CmpCond.NE, CmpCond.NE: CmpCond.EQ}
_RELATION = {CmpCond.LT: "<", CmpCond.LE: "<=", CmpCond.GT: ">", CmpCond.GE: ">=",
             CmpCond.EQ: "="}  # isl has no "!=": a ``ne`` fact is dropped


def facts(inst: Instruction, syms: Symbols, about: Iterable[str] | None = None) -> isl.Set:
    """The parameter set where ``inst`` can run: enclosing loop ranges and if conditions,
    and what is known of the opaque values they and the access use.

    With ``about``, only the facts that bear on those parameters are kept: the rest
    cannot change the answer and only make isl's sets larger (each min/max fact is a
    disjunction).
    """
    found: list[str] = []
    child: Instruction = inst
    while child.parent is not None and isinstance(child.parent.parent, Instruction):
        owner = child.parent.parent
        found += _owner_facts(owner, owner.regions.index(child.parent), syms)
        child = owner
    if about is None:
        return _all_of(found + _every_value_fact(syms))
    return _all_of(_bearing_on(found, set(about), syms))


def _every_value_fact(syms: Symbols) -> list[str]:
    """What is known of every opaque value met so far, and of the values those facts
    bring in."""
    known: dict[str, list[str]] = {}
    while len(known) < len(syms.values):
        for name, value in list(syms.values.items()):
            if name not in known:
                known[name] = _known_value_facts(value, syms)
    return [fact for facts in known.values() for fact in facts]


def _bearing_on(found: list[str], about: set[str], syms: Symbols) -> list[str]:
    """The facts of ``found`` (where the access runs) that share a parameter with
    ``about``, closed over the facts kept, and those without parameters (false ones mark
    code that never runs); with what is known of each opaque value kept.

    What is known of a value (``r = min(a, b)``) holds for some ``r`` whatever ``a`` and
    ``b`` are, so it bears on the answer only when ``r`` does: it is asked for the values
    the access or a kept fact uses, and brings in their operands (the clamps of a
    function's other accesses, sharing their operands, stay out of the question).
    """
    params = [_fact_parameters(fact) for fact in found]
    keep = [not names for names in params]
    values: dict[str, list[str]] = {}
    grew = True
    while grew:
        grew = False
        for i, names in enumerate(params):
            if not keep[i] and names & about:
                keep[i], grew = True, True
                about |= names
        for name in sorted(about - values.keys()):
            value = syms.values.get(name)
            values[name] = [] if value is None else _known_value_facts(value, syms)
            for fact in values[name]:
                grew = grew or not _fact_parameters(fact) <= about
                about |= _fact_parameters(fact)
    return ([fact for fact, kept in zip(found, keep, strict=True) if kept]
            + [fact for name in sorted(values) for fact in values[name]])


def _all_of(found: list[str]) -> isl.Set:
    """The parameter set where every fact of ``found`` holds.  Not cached: isl's
    operations count against the question's budget, and a verdict must not depend on
    which questions were asked before."""
    where = space.context([])
    for fact in found:
        try:
            extra = space.context([fact])
        except isl.Error:  # not affine after all: no fact
            continue
        where = where.align_params(extra.get_space())
        where = where.intersect(extra.align_params(where.get_space()))
    return where


@lru_cache(maxsize=8192)
def _fact_parameters(fact: str) -> frozenset[str]:
    return frozenset(space.parameters(fact))


def _known_value_facts(value: Value, syms: Symbols) -> list[str]:
    """:func:`_value_facts`, worked out once per value while no loop variable is bound
    (the facts then depend on the value alone, and many accesses ask about it)."""
    if syms.bound:
        return _value_facts(value, syms)
    known = syms.facts.get(value)
    if known is None:
        known = syms.facts[value] = _value_facts(value, syms)
    return known


def _value_facts(value: Value, syms: Symbols) -> list[str]:
    """What is known about an opaque value: ``group_id >= 0``, a ``select`` that is a min
    or max, the sign and range of ``arith.rem`` by a positive constant."""
    inst = value.owner
    if not isinstance(inst, Instruction):
        return []
    r = syms.param(value)
    if inst.name == "group_id":
        return [f"{r} >= 0"]
    if inst.name == "select" and inst.attr("type").is_int:
        return _min_max(inst, r, syms)
    if inst.name == "arith" and inst.attr_of("op", ArithOp) is ArithOp.REM and \
            inst.attr("type").is_int and not inst.attr("type").is_unsigned:
        c, d = affine(inst.operand("b"), syms), affine(inst.single("a"), syms)
        if c.isdigit() and int(c) > 0:  # C's remainder has the dividend's sign
            return [f"-{c} < {r} < {c}", f"{d} < 0 or {r} >= 0", f"{d} > 0 or {r} <= 0"]
    return []


def _min_max(select: Instruction, r: str, syms: Symbols) -> list[str]:
    """``select (cmp.lt a, b), a, b`` is min(a, b); the other orders give min or max."""
    cond = select.single("cond").owner
    x, y = select.single("a"), select.operand("b")
    if not isinstance(cond, Instruction) or cond.name != "cmp" or \
            {cond.single("a"), cond.operand("b")} != {x, y} or x is y:
        return []
    how = cond.attr_of("cond", CmpCond)
    if how not in (CmpCond.LT, CmpCond.LE, CmpCond.GT, CmpCond.GE):
        return []
    is_min = (how in (CmpCond.LT, CmpCond.LE)) == (cond.single("a") is x)
    ax, ay = affine(x, syms), affine(y, syms)
    rel = "<=" if is_min else ">="
    return [f"{r} {rel} {ax}", f"{r} {rel} {ay}", f"{r} = {ax} or {r} = {ay}"]


def _owner_facts(owner: Instruction, region: int, syms: Symbols) -> list[str]:
    args = owner.regions[region].args
    if owner.name in ("foreach", "for"):
        if owner.name == "for" and not _positive_step(owner):
            return []
        return [_range(args[0], owner.operand("from"), owner.operand("to"), syms)]
    if owner.name == "foreach_nd":
        return [_range(a, lo, hi, syms) for a, lo, hi in
                zip(args, owner.operand("from"), owner.operand("to"), strict=False)]
    if owner.name == "if":
        return _condition(owner.single("cond"), region == 1, syms)
    return []


def _positive_step(loop: Instruction) -> bool:
    step = loop.optional("step")
    if step is None:
        return True
    text = affine(step, Symbols())
    return text.isdigit() and int(text) > 0


def _range(var: Value, lo: Value, hi: Value, syms: Symbols) -> str:
    v = affine(var, syms)
    return f"{affine(lo, syms)} <= {v} < {affine(hi, syms)}"


def _condition(cond: Value, negated: bool, syms: Symbols) -> list[str]:
    """Facts implied by ``cond`` being true (false when ``negated``)."""
    inst = cond.owner
    if not isinstance(inst, Instruction):
        return []
    if inst.name == "cmp" and inst.attr("type").is_int and not inst.attr("type").is_unsigned:
        how = _NEGATED[inst.attr_of("cond", CmpCond)] if negated else inst.attr_of("cond", CmpCond)
        if how not in _RELATION:
            return []
        a, b = affine(inst.single("a"), syms), affine(inst.operand("b"), syms)
        return [f"{a} {_RELATION[how]} {b}"]
    if inst.name == "arith" and inst.attr("type").is_bool:
        op = inst.attr_of("op", ArithOp)
        if op is ArithOp.NOT:
            return _condition(inst.single("a"), not negated, syms)
        if (op is ArithOp.AND and not negated) or (op is ArithOp.OR and negated):
            return (_condition(inst.single("a"), negated, syms)
                    + _condition(inst.operand("b"), negated, syms))
    return []


def sizes_equal(a: str, b: str, inst: Instruction, syms: Symbols) -> bool:
    """True when isl proves the affine sizes ``a`` and ``b`` equal for every parameter value
    where ``inst`` runs (its :func:`facts`)."""
    if a == b:
        return True
    try:
        with operation_budget():
            below, above = space.context([f"{a} < {b}"]), space.context([f"{a} > {b}"])
            differ = below.union(above.align_params(below.get_space()))
            where = facts(inst, syms, space.parameters(a, b))
            where = where.align_params(differ.get_space())
            return differ.align_params(where.get_space()).intersect(where).is_empty()
    except isl.Error:  # not affine, or over budget: not proven
        return False
