"""Footprints (``tensorlang.schedule.deps``): a root's set keeps at most ``MAX_PIECES``
disjuncts and, when it has to give some up, still covers every element touched (an
over-approximation only adds dependences)."""

from __future__ import annotations

import islpy as isl

from tensorlang.ir.core import Value
from tensorlang.ir.types import F32, MemRefType
from tensorlang.schedule.deps import MAX_PIECES, Footprint


def _row(i: int) -> isl.Set:
    """Every other row: pieces that do not coalesce."""
    return isl.Set(f"{{ Mem[z0, z1] : z0 = {2 * i} and 0 <= z1 < 4 }}")


def test_many_pieces_stay_few_and_covered() -> None:
    root = Value(MemRefType.of(F32, (1000, 4)), "x")
    fp = Footprint()
    for i in range(200):
        fp.update(Footprint(writes={root: _row(i)}))
    written = fp.writes[root]
    assert written.n_basic_set() <= MAX_PIECES
    for i in range(200):
        assert _row(i).is_subset(written)


def test_few_pieces_stay_exact() -> None:
    root = Value(MemRefType.of(F32, (1000, 4)), "x")
    fp = Footprint()
    for i in range(3):
        fp.update(Footprint(reads={root: _row(i)}))
    exact = _row(0).union(_row(1)).union(_row(2))
    assert fp.reads[root].is_equal(exact)
    assert fp.reads[root].intersect(isl.Set("{ Mem[1, 0] }")).is_empty()  # row 1: a gap
