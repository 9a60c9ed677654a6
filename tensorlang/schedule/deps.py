"""Dependence analysis on isl access relations: barriers and fusion.

A :class:`Footprint` is the memory an instruction (or a run of instructions) reads and
writes, one isl set per root.  Two collectives need a barrier between them exactly when
isl cannot prove the later one's footprint disjoint from the earlier one's (read after
write, write after read, write after write) for every value of the parameters.  Values
that vary inside an instruction (loop variables, results computed in a body) are
projected out, so a footprint covers all iterations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import islpy as isl

from tensorlang.ir.core import Instruction, Value
from tensorlang.schedule.affine import Symbols
from tensorlang.schedule.domains import Statement, defined_inside, statement

Sets = dict[Value, isl.Set]


@dataclass
class Footprint:
    """Roots read and written, each with the set of its elements touched."""

    reads: Sets = field(default_factory=dict)
    writes: Sets = field(default_factory=dict)

    def update(self, other: Footprint) -> None:
        """Add ``other``'s accesses to these."""
        _merge(self.reads, other.reads)
        _merge(self.writes, other.writes)

    def conflicts(self, later: Footprint) -> set[Value]:
        """Roots through which ``later`` may depend on these accesses (RAW, WAR, WAW)."""
        clash = set()
        for root, written in later.writes.items():
            if _overlap(written, self.reads.get(root)) or _overlap(written, self.writes.get(root)):
                clash.add(root)
        for root, read in later.reads.items():
            if _overlap(read, self.writes.get(root)):
                clash.add(root)
        return clash

    def copy(self) -> Footprint:
        """An independent copy."""
        return Footprint(dict(self.reads), dict(self.writes))

    def keep(self, predicate: Callable[[Value], bool]) -> Footprint:
        """Only the roots for which ``predicate`` holds."""
        return Footprint({r: s for r, s in self.reads.items() if predicate(r)},
                         {r: s for r, s in self.writes.items() if predicate(r)})

    def roots(self) -> set[Value]:
        """Every root touched."""
        return set(self.reads) | set(self.writes)


MAX_PIECES = 8
"""The most disjuncts a footprint set keeps: beyond, it becomes its simple hull (an
over-approximation: a dependence more, never one less).  A statement with hundreds of
accesses to one root (a concatenation of 500 inputs) made every merge coalesce a set
that kept growing: 36 s of a 44 s compile."""


def _merge(into: Sets, other: Sets) -> None:
    for root, s in other.items():
        if root not in into:
            into[root] = s
            continue
        try:
            merged = into[root].union(s).coalesce()
            if merged.n_basic_set() > MAX_PIECES:
                merged = merged.simple_hull().to_set()
            into[root] = merged
        except isl.Error:  # incomparable spaces: the whole root
            into[root] = isl.Set.universe(s.get_space())


def _overlap(a: isl.Set, b: isl.Set | None) -> bool:
    if b is None:
        return False
    try:
        return not a.intersect(b).is_empty()
    except isl.Error:  # incomparable spaces: assume the worst
        return True


def statement_footprint(stmt: Statement) -> Footprint:
    """The footprint of one statement over its whole domain."""
    fp = Footprint()
    for acc in stmt.accesses:
        touched = forget(stmt.access_map(acc, "Mem").range(), stmt.local)
        _merge(fp.writes if acc.write else fp.reads, {acc.root: touched})
    return fp


def _safe_footprint(stmt: Statement) -> Footprint:
    """The statement's footprint, or every root it names entirely if isl cannot build it."""
    try:
        return statement_footprint(stmt)
    except isl.Error:
        fp = Footprint()
        for acc in stmt.accesses:
            dims = ", ".join(f"z{d}" for d in range(acc.root_rank))
            _merge(fp.writes if acc.write else fp.reads, {acc.root: isl.Set(f"{{ Mem[{dims}] }}")})
        return fp


def footprint(inst: Instruction, syms: Symbols) -> Footprint:
    """Everything ``inst`` and the instructions nested in it access."""
    fp = Footprint()
    nested_in_foreach: set[int] = set()
    for nested in inst.walk():
        if id(nested) in nested_in_foreach:
            continue
        stmt = statement(nested, syms)
        if nested.name in ("foreach", "foreach_nd"):
            nested_in_foreach |= {id(x) for x in nested.walk()}
        if stmt is not None:
            fp.update(_safe_footprint(stmt))
    if inst.regions:
        local = defined_inside(inst, syms)
        fp = Footprint({r: forget(s, local) for r, s in fp.reads.items()},
                       {r: forget(s, local) for r, s in fp.writes.items()})
    return fp


def forget(s: isl.Set, names: Iterable[str]) -> isl.Set:
    """``s`` with parameters ``names`` existentially projected out."""
    for name in names:
        pos = s.find_dim_by_name(isl.dim_type.param, name)
        if pos >= 0:
            s = s.project_out(isl.dim_type.param, pos, 1)
    return s


def fusable(first: Statement, second: Statement) -> bool:
    """True when ``second`` may run in one loop nest with ``first``, point by point.

    Both have the same domain and every dependence between them joins equal points
    (``second`` at x touches what ``first`` touched only at x), so fusing the loops
    needs no barrier.
    """
    if first.dims != second.dims or not first.domain().is_equal(second.domain()):
        return False
    for a in first.accesses:
        for b in second.accesses:
            if a.root is not b.root or not (a.write or b.write):
                continue
            if a.index is None or b.index is None:
                return False
            pairs = first.access_map(a, "Mem").apply_range(second.access_map(b, "Mem").reverse())
            if not pairs.is_subset(isl.Map.identity(pairs.get_space())):
                return False
    return True
