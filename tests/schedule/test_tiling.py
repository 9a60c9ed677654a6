"""isl-generated loops of the tiled collectives: every point exactly once, partial tiles
exact (edge loops stop at the last row and column), for sizes that do not divide the
tiles, static and dynamic, blocked (CPU) and interleaved (GPU) rows."""

from __future__ import annotations

import itertools

import pytest
from loopeval import visit

from tensorlang.schedule.loops import For, render
from tensorlang.schedule.tiling import TileShape, contraction_loops, distributed

SHAPES = [TileShape((1, 1), 8, 4, True), TileShape((4, 2), 4, 4, False),
          TileShape((2, 3), 8, 2, True), TileShape((8, 1), 4, 1, False)]


def _elements(shape: TileShape, m: str, n: str, sizes: dict[str, int]) -> list[tuple[int, int]]:
    """C elements the contraction's loops touch, over all work-items."""
    loops = contraction_loops(shape, m, n)
    got = []
    for lx, ly in itertools.product(range(shape.wg[0]), range(shape.wg[1])):
        env = {**sizes, "lx": lx, "ly": ly}
        for tree, cells in ((loops.full, loops.cells), (loops.edge, loops.edge_cells)):
            blocks: list = []
            visit(tree, env, blocks)
            for _, (m0, n0) in blocks:
                mb = m0 + (shape.rm * lx if shape.blocked else lx)
                nb = n0 + (shape.rn * ly if shape.blocked else ly)
                inner: list = []
                visit(cells, {**env, "mb": mb, "nb": nb}, inner)
                step_r = 1 if shape.blocked else shape.wg[0]
                step_c = 1 if shape.blocked else shape.wg[1]
                got += [(mb + r * step_r, nb + c * step_c) for _, (c, r) in inner]
    return got


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s.wg}_{s.rm}x{s.rn}_{s.blocked}")
@pytest.mark.parametrize("m, n", [(1, 1), (7, 3), (8, 4), (13, 9), (56, 9), (33, 17), (0, 5)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_every_element_exactly_once(shape: TileShape, m: int, n: int, dynamic: bool) -> None:
    ms, ns = ("M", "N") if dynamic else (str(m), str(n))
    got = _elements(shape, ms, ns, {"M": m, "N": n})
    assert sorted(got) == sorted(itertools.product(range(m), range(n)))


def test_full_blocks_are_straight_line_and_edges_exact() -> None:
    loops = contraction_loops(TileShape((1, 1), 8, 4, True), "56", "9")
    assert isinstance(loops.rows, For) and loops.rows.trip_count == 8
    # 56 rows = 7 full row blocks; 9 columns = 2 full column blocks + 1 edge column.
    blocks: list = []
    visit(loops.full, {}, blocks)
    assert len(blocks) == 14
    edges: list = []
    visit(loops.edge, {}, edges)
    assert [b for _, b in edges] == [(m0, 8) for m0 in range(0, 56, 8)]
    cells: list = []
    visit(loops.edge_cells, {"mb": 0, "nb": 8}, cells)
    assert len(cells) == 8  # one column of eight rows, no wasted work
    assert "min" in render(loops.edge_cells)


def test_dynamic_sizes_are_parameters() -> None:
    text = render(contraction_loops(TileShape((1, 1), 8, 4, True), "M", "N").full)
    assert "M" in text and "N" in text and "step 8" in text


@pytest.mark.parametrize("wg", [(1, 1), (4, 2), (3, 5)])
def test_distributed_points(wg: tuple[int, int]) -> None:
    tree = distributed(("M", "N"), ("lx", "ly"), wg)
    seen: list = []
    for lx, ly in itertools.product(range(wg[0]), range(wg[1])):
        visit(tree, {"M": 11, "N": 6, "lx": lx, "ly": ly}, seen)
    assert sorted(p for _, p in seen) == sorted(itertools.product(range(11), range(6)))


def test_distributed_with_offset() -> None:
    tree = distributed(("hi - lo",), ("lid",), (4,), ("lo",))
    seen: list = []
    for lid in range(4):
        visit(tree, {"lo": 3, "hi": 14, "lid": lid}, seen)
    assert sorted(p[0] for _, p in seen) == list(range(3, 14))
