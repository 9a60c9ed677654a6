"""Tiling of collectives onto the two-dimensional work-group, as isl schedules.

Contractions ``C[i,j] += sum_k A[i,k] B[k,j]``: the work-group covers tiles of
``TM x TN = (RM*WGX) x (RN*WGY)`` elements of C (first mode over the work-group's first
dimension, second over its columns) and each work-item accumulates an ``RM x RN``
register block.  ``blocked`` tiles give a work-item RM *contiguous* rows (vectorisable
along the contiguous first mode on CPUs); otherwise rows are interleaved across
work-items (coalesced on GPUs).

The blocks of one work-item are split, exactly, into *full* blocks (every element in
range: straight-line register code) and *edge* blocks, whose intra-block loops isl
bounds by the remaining rows and columns, so nothing is accessed out of bounds and no
full-block work is wasted on a small remainder.

Elementwise updates and vector reductions distribute points cyclically over the
work-items (:func:`distributed`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorlang.schedule import space
from tensorlang.schedule.astgen import generate
from tensorlang.schedule.loops import Node


@dataclass(frozen=True)
class TileShape:
    """Work-group ``wg``, register block ``rm x rn``, rows ``blocked`` or interleaved."""

    wg: tuple[int, int]
    rm: int
    rn: int
    blocked: bool

    @property
    def tm(self) -> int:
        """Rows of C per work-group tile."""
        return self.rm * self.wg[0]

    @property
    def tn(self) -> int:
        """Columns of C per work-group tile."""
        return self.rn * self.wg[1]

    def row_offset(self, r: str) -> str:
        """Offset of register row ``r`` from the block's first row."""
        return r if self.blocked else f"{self.wg[0]}{r}" if r.isalpha() else f"{self.wg[0]}*{r}"

    def col_offset(self, c: str) -> str:
        """Offset of register column ``c`` from the block's first column."""
        return c if self.blocked else f"{self.wg[1]}{c}" if c.isalpha() else f"{self.wg[1]}*{c}"

    def first_row(self) -> str:
        """The first row of the work-item's block in a tile (relative to ``m0``)."""
        return f"{self.rm}lx" if self.blocked else "lx"

    def first_col(self) -> str:
        """The first column of the work-item's block in a tile (relative to ``n0``)."""
        return f"{self.rn}ly" if self.blocked else "ly"


@dataclass(frozen=True)
class ContractionLoops:
    """Loop trees of a tiled contraction over ``m x n`` (statement names in comments).

    ``full`` / ``edge`` visit the work-item's full / edge blocks (``Full(m0, n0)``,
    ``Edge(m0, n0)``); ``rows``, ``cols``, ``cells`` are the intra-block loops
    (``Row(r)``, ``Col(c)``, ``Cell(c, r)``) of a full block and ``edge_*`` those of an
    edge block, bounded by ``m - mb`` rows and ``n - nb`` columns.
    """

    full: Node
    edge: Node
    rows: Node
    cols: Node
    cells: Node
    edge_rows: Node
    edge_cols: Node
    edge_cells: Node


def contraction_loops(shape: TileShape, m: str, n: str) -> ContractionLoops:
    """isl-generated loops of a contraction over an ``m x n`` output."""
    ctx = _work_item_context(shape, [f"{m} >= 0", f"{n} >= 0"])
    full, edge = block_domains(shape, m, n)
    order = "Blk[m0, n0] -> [n0, m0]"
    loops = [generate(space.map_(order, d), ctx, ("n0", "m0")) for d in (full, edge)]
    loops = [_rename(tree, name) for tree, name in zip(loops, ("Full", "Edge"), strict=True)]
    intra = [_intra(shape, None, None)] + [_intra(shape, m, n)]
    (rows, cols, cells), (erows, ecols, ecells) = intra
    return ContractionLoops(loops[0], loops[1], rows, cols, cells, erows, ecols, ecells)


def block_domains(shape: TileShape, m: str, n: str) -> tuple[object, object]:
    """(full, edge) sets of block origins ``Blk[m0, n0]`` of one work-item."""
    tile = f"exists (a, b: m0 = {shape.tm}a and n0 = {shape.tn}b)"
    first = [tile, "m0 >= 0", "n0 >= 0", f"m0 + {shape.first_row()} < {m}",
             f"n0 + {shape.first_col()} < {n}", *_work_item_bounds(shape)]
    last_row = f"m0 + {shape.first_row()} + {shape.row_offset(str(shape.rm - 1))} < {m}"
    last_col = f"n0 + {shape.first_col()} + {shape.col_offset(str(shape.rn - 1))} < {n}"
    blocks = space.set_("Blk[m0, n0]", first)
    full = space.set_("Blk[m0, n0]", [*first, last_row, last_col])
    return full, blocks.subtract(full)


def _intra(shape: TileShape, m: str | None, n: str | None) -> tuple[Node, Node, Node]:
    rows = [f"0 <= r < {shape.rm}"] + ([f"mb + {shape.row_offset('r')} < {m}"] if m else [])
    cols = [f"0 <= c < {shape.rn}"] + ([f"nb + {shape.col_offset('c')} < {n}"] if n else [])
    known = ["mb >= 0", "nb >= 0"] + ([f"mb < {m}", f"nb < {n}"] if m and n else [])
    ctx = space.context(known)
    return (generate(space.map_("Row[r] -> [r]", space.set_("Row[r]", rows)), ctx, ("r",)),
            generate(space.map_("Col[c] -> [c]", space.set_("Col[c]", cols)), ctx, ("c",)),
            generate(space.map_("Cell[c, r] -> [c, r]", space.set_("Cell[c, r]", rows + cols)),
                     ctx, ("c", "r")))


def distributed(extents: tuple[str, ...], ids: tuple[str, ...], counts: tuple[int, ...],
                lower: tuple[str, ...] | None = None) -> Node:
    """Loops over ``[lower, lower + extent)`` per mode, outermost mode last, where mode ``d``
    is dealt cyclically to ``ids[d]`` in ``0 .. counts[d] - 1`` (statement ``P(i0, i1...)``).
    """
    lower = lower or tuple("0" for _ in extents)
    dims = [f"i{d}" for d in range(len(extents))]
    cons, ctx = [], []
    for d, (ext, lid, cnt, lo) in enumerate(zip(extents, ids, counts, lower, strict=True)):
        cons.append(f"{lo} <= i{d} < {lo} + {ext}")
        if cnt > 1:
            cons.append(f"exists (q{d}: i{d} = {lo} + {lid} + {cnt}q{d})")
            ctx.append(f"0 <= {lid} < {cnt}")
    domain = space.set_(f"P[{', '.join(dims)}]", cons)
    order = f"P[{', '.join(dims)}] -> [{', '.join(reversed(dims))}]"
    return generate(space.map_(order, domain), space.context(ctx), tuple(reversed(dims)))


def _work_item_bounds(shape: TileShape) -> list[str]:
    wgx, wgy = shape.wg
    return [f"0 <= lx < {wgx}" if wgx > 1 else "lx = 0",
            f"0 <= ly < {wgy}" if wgy > 1 else "ly = 0"]


def _work_item_context(shape: TileShape, extra: list[str]) -> object:
    return space.context([*_work_item_bounds(shape), *extra])


def _rename(tree: Node, name: str) -> Node:
    """Statement ``Blk`` renamed to ``name`` (the same domain serves two callers)."""
    from dataclasses import replace

    from tensorlang.schedule.loops import Block, Call, For, If

    if isinstance(tree, Call):
        return replace(tree, name=name)
    if isinstance(tree, For):
        return replace(tree, body=_rename(tree.body, name))
    if isinstance(tree, If):
        orelse = None if tree.orelse is None else _rename(tree.orelse, name)
        return replace(tree, then=_rename(tree.then, name), orelse=orelse)
    assert isinstance(tree, Block)
    return Block(tuple(_rename(t, name) for t in tree.items))
