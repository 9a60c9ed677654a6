"""Work-group distribution of ``foreach`` and ``foreach_nd``, as isl schedules.

A foreach's domain is the (parametric) box ``S[i0, ..., i(n-1)] : lo_d <= i_d < hi_d`` of
:func:`tensorlang.schedule.domains.statement`.  Its points are dealt to the ``W``
work-items of the work-group, and each work-item's share is scanned by isl's AST
generator (the work-item's linear id is the parameter ``lid``, ``0 <= lid < W``):

* ``block == 1`` (cyclic, GPUs): the box is linearised with the first mode fastest,
  ``L = (i0 - lo0) + E0 (i1 - lo1) + ...``, and point ``L`` goes to work-item
  ``L mod W``.  Only modes whose extent ``E_d`` is a constant can be linearised
  affinely: the longest such prefix is (plus the next mode), the remaining outer modes
  are sequential.  isl turns this into strided loops with a per-row start offset.
* ``block > 1`` (blocked, CPUs): the first mode is cut into runs of ``block``
  contiguous points dealt cyclically to the work-items, so a work-item's innermost loop
  is contiguous (vectorisable); the last run is exact (``min`` bound).

The schedule is ``S[i] -> [i(n-1), ..., i1, ...]`` outermost first; every point is
visited exactly once by exactly one work-item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import islpy as isl

from tensorlang.schedule import space
from tensorlang.schedule.astgen import generate
from tensorlang.schedule.domains import Statement
from tensorlang.schedule.loops import Node, substitute

LOCAL_ID = "lid"
"""The isl parameter standing for the work-item's linear id."""


@dataclass(frozen=True)
class Distribution:
    """``work_items`` share the points; ``block`` contiguous first-mode points at a time."""

    work_items: int
    block: int = 1


def extent(lower: str, upper: str) -> int | None:
    """``upper - lower`` when it is the same for every parameter value, else None."""
    params = space.parameters(lower, upper)
    prefix = f"[{', '.join(params)}] -> " if params else ""
    aff = isl.Aff(f"{prefix}{{ [({upper}) - ({lower})] }}")
    return int(aff.get_constant_val().to_python()) if aff.is_cst() else None


def schedule(stmt: Statement, dist: Distribution) -> isl.Map:
    """``S[i...] -> [outer ... inner]`` restricted to the points of work-item ``lid``."""
    outer = list(reversed(stmt.dims[1:]))
    if dist.work_items > 1 and dist.block > 1:
        return _blocked(stmt, dist, outer)
    dims = ", ".join(stmt.dims)
    constraints = list(stmt.constraints)
    if dist.work_items > 1:
        linear, modes = _linear(stmt)
        if _prefix_divides(stmt, modes, dist.work_items):
            return _rounds(stmt, dist, linear, modes)
        constraints.append(f"exists (q: {linear} = {LOCAL_ID} + {dist.work_items} * q)")
    domain = space.set_(f"S[{dims}]", constraints)
    return space.map_(f"S[{dims}] -> [{', '.join([*outer, stmt.dims[0]])}]", domain)


def _prefix_divides(stmt: Statement, modes: int, work_items: int) -> bool:
    """Whether the extent of a proper prefix of the ``modes`` linearised modes divides
    ``work_items``: there isl's AST generator drops rounds of the existential form (a
    (8, 8) box over 16 work-items came out as the one point ``(lid % 8, lid / 8)``, 16 of
    its 64 points; a sweep of 349 boxes found no other failing case)."""
    size = 1
    for lo, hi in stmt.box[:modes - 1]:
        size *= max(extent(lo, hi) or 1, 1)
        if work_items % size == 0:
            return True
    return False


def _rounds(stmt: Statement, dist: Distribution, linear: str, modes: int) -> isl.Map:
    """The cyclic schedule with the round as a dimension (:func:`_prefix_divides`): the
    sequential outer modes, the round ``q`` (linear index ``lid + W q``), then the
    linearised modes, which ``q`` fixes."""
    order = [*reversed(stmt.dims[modes:]), "q", *reversed(stmt.dims[:modes])]
    params = [p for p in space.parameters(linear) if p not in stmt.dims]
    prefix = f"[{', '.join([*params, LOCAL_ID])}] -> "
    cond = f"{linear} = {LOCAL_ID} + {dist.work_items} * q"
    sched = isl.Map(f"{prefix}{{ S[{', '.join(stmt.dims)}] -> [{', '.join(order)}] : {cond} }}")
    domain = stmt.domain().align_params(sched.get_space())
    return sched.align_params(domain.get_space()).intersect_domain(domain)


def _linear(stmt: Statement) -> tuple[str, int]:
    """The linear index of the constant-extent prefix of the box (first mode fastest) and
    how many modes it spans."""
    terms, coef = [], 1
    for d, (lo, hi) in enumerate(stmt.box):
        terms.append(f"{coef} * ({stmt.dims[d]} - ({lo}))")
        size = extent(lo, hi)
        if size is None or d == len(stmt.box) - 1:
            break
        coef *= max(size, 1)  # an empty mode empties the box: any coefficient will do
    return " + ".join(terms), len(terms)


def _blocked(stmt: Statement, dist: Distribution, outer: list[str]) -> isl.Map:
    """Runs of ``block`` first-mode points, run ``k`` to work-item ``k mod W``."""
    v, w = dist.block, dist.work_items
    dims = ", ".join(stmt.dims)
    lo = stmt.box[0][0]
    cond = f"{stmt.dims[0]} - ({lo}) = {v} * {LOCAL_ID} + {v * w} * q + r and 0 <= r < {v}"
    params = [p for p in space.parameters(lo) if p not in stmt.dims]
    prefix = f"[{', '.join([*params, LOCAL_ID])}] -> "
    sched = isl.Map(f"{prefix}{{ S[{dims}] -> [{', '.join([*outer, 'q', 'r'])}] : {cond} }}")
    domain = stmt.domain().align_params(sched.get_space())
    return sched.align_params(domain.get_space()).intersect_domain(domain)


def foreach_loops(stmt: Statement, dist: Distribution, names: Mapping[str, str],
                  iterators: Sequence[str]) -> Node:
    """The loop tree of work-item ``names[LOCAL_ID]`` (statement ``S(i0, i1, ...)``).

    ``names`` renames isl parameters (the domain's and ``lid``) to the caller's names;
    ``iterators`` name the schedule's dimensions (:func:`depth` of them).
    """
    _, canonical = _loops(_box_of(stmt), dist)
    return substitute(canonical, {**names, **{_iterator(d): name
                                              for d, name in enumerate(iterators)}})


def _box_of(stmt: Statement) -> Statement:
    """What of ``stmt`` its schedule depends on (the key of the memoised schedules: boxes
    repeat within a program and across programs)."""
    return Statement("S", stmt.dims, stmt.constraints, (), box=stmt.box)


def _iterator(d: int) -> str:
    return f"_c{d}"


@lru_cache(maxsize=4096)
def _loops(box: Statement, dist: Distribution) -> tuple[int, Node]:
    """How many loops the schedule of work-item ``lid`` has, and their tree with loop
    variables ``_c0, _c1, ...``."""
    sched = schedule(box, dist)
    depth = sched.dim(isl.dim_type.out)
    context = [f"0 <= {LOCAL_ID} < {dist.work_items}"] if dist.work_items > 1 else []
    ctx = space.context(context) if context else isl.Set("{ : }")
    return depth, generate(sched, ctx, tuple(_iterator(d) for d in range(depth)))


def depth(stmt: Statement, dist: Distribution) -> int:
    """How many loops (schedule dimensions) :func:`foreach_loops` has."""
    return _loops(_box_of(stmt), dist)[0]


def parameters(stmt: Statement) -> list[str]:
    """The isl parameters of ``stmt``'s domain (what :func:`foreach_loops` may rename)."""
    return list(_parameters(_box_of(stmt)))


@lru_cache(maxsize=4096)
def _parameters(box: Statement) -> tuple[str, ...]:
    domain = box.domain()
    return tuple(_named(domain.get_dim_name(isl.dim_type.param, k))
                 for k in range(domain.dim(isl.dim_type.param)))


def _named(name: str | None) -> str:
    assert name is not None, "tlc names every isl parameter"
    return name
