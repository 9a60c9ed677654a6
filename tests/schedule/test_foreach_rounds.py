"""The cyclic foreach distribution over several linearised modes whose extents divide the
work-group (or the other way round): isl once dropped whole rounds there (a (8, 8) box
over 16 work-items visited 16 of its 64 points), so the round is a schedule dimension."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from loopeval import visit

from tensorlang.schedule.domains import Statement
from tensorlang.schedule.foreach import LOCAL_ID, Distribution, depth, foreach_loops

BOXES = [(8, 8), (4, 4), (16, 4), (8, 3), (64, 3), (2, 8, 3), (8, 8, 1), (3, 3, 3, 16, 2),
         (5, 7), (1, 16)]


def _box(extents: tuple[int, ...]) -> Statement:
    dims = tuple(f"i{d}" for d in range(len(extents)))
    bounds = tuple(f"0 <= {n} < {e}" for n, e in zip(dims, extents, strict=True))
    return Statement("S", dims, bounds, (), box=tuple(("0", str(e)) for e in extents))


@pytest.mark.parametrize("extents", BOXES, ids=str)
@pytest.mark.parametrize("work_items", [2, 8, 16, 32, 128])
def test_every_point_exactly_once(extents: tuple[int, ...], work_items: int) -> None:
    stmt, dist = _box(extents), Distribution(work_items)
    tree = foreach_loops(stmt, dist, {}, [f"c{d}" for d in range(depth(stmt, dist))])
    seen: Counter = Counter()
    for lid in range(work_items):
        out: list = []
        visit(tree, {LOCAL_ID: lid}, out)
        linear = [sum(p * c for p, c in zip(point, _coefficients(extents), strict=True))
                  for _, point in out]
        assert all(i % work_items == lid for i in linear), "a point on the wrong work-item"
        seen.update(point for _, point in out)
    assert seen == Counter(itertools.product(*(range(e) for e in extents)))


def _coefficients(extents: tuple[int, ...]) -> list[int]:
    """The linear index's coefficients (first mode fastest)."""
    out, coef = [], 1
    for e in extents:
        out.append(coef)
        coef *= e
    return out
