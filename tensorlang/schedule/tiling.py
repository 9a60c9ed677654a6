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

A contraction with a staged operand (:func:`staged_loops`) walks the panels of that
operand and their K chunks uniformly over the work-group (barriers go between them), deals
each chunk's copy to the work-items along the operand's contiguous mode, and visits the
work-item's full and edge blocks within the panel.

Elementwise updates and vector reductions distribute points cyclically over the
work-items (:func:`distributed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from tensorlang.schedule import space
from tensorlang.schedule.astgen import generate
from tensorlang.schedule.loops import Block, Node

if TYPE_CHECKING:
    import islpy as isl


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


@lru_cache(maxsize=1024)
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


def block_domains(shape: TileShape, m: str, n: str,
                  tuple_: str = "Blk[m0, n0]") -> tuple[isl.Set, isl.Set]:
    """(full, edge) sets of block origins ``Blk[m0, n0]`` of one work-item.

    With ``tuple_`` ``Blk[n0]`` (or ``Blk[m0]``) the other origin is a parameter: the
    blocks of one panel of a staged contraction.
    """
    tile = f"exists (a, b: m0 = {shape.tm}a and n0 = {shape.tn}b)"
    first = [tile, "m0 >= 0", "n0 >= 0", f"m0 + {shape.first_row()} < {m}",
             f"n0 + {shape.first_col()} < {n}", *_work_item_bounds(shape)]
    last_row = f"m0 + {shape.first_row()} + {shape.row_offset(str(shape.rm - 1))} < {m}"
    last_col = f"n0 + {shape.first_col()} + {shape.col_offset(str(shape.rn - 1))} < {n}"
    blocks = space.set_(tuple_, first)
    full = space.set_(tuple_, [*first, last_row, last_col])
    return full, blocks.subtract(full)


@dataclass(frozen=True)
class StagedLoops:
    """Loop trees of a contraction whose A panel (rows ``m0 .. m0+TM``, ``operand`` "a")
    or B panel (columns ``n0 .. n0+TN``, "b") is staged through local memory.

    ``panels`` visits the panels, ``Panel(x0)``, and ``chunks`` the K chunks of depth
    ``depth`` of a panel, ``Chunk(k0)``; both are the same for every work-item (barriers
    go between them).  ``copy`` deals the chunk's elements ``Copy(p, kk)`` (``p`` the row
    or column within the panel) to the work-items ``lid``, ``kk`` fastest for A and ``p``
    for B (the operand's contiguous mode when it is transposed: coalesced), bounded
    exactly by the sizes.  ``full`` / ``edge`` visit the work-item's blocks in the panel,
    ``Full(y0)`` / ``Edge(y0)`` (``y0`` the other origin); the intra-block loops are
    those of :class:`ContractionLoops`.
    """

    panels: Node
    chunks: Node
    copy: Node
    full: Node
    edge: Node
    intra: ContractionLoops


@lru_cache(maxsize=1024)
def staged_loops(shape: TileShape, m: str, n: str, k: str, operand: str,
                 depth: int, transposed: bool = True, copied: bool = True) -> StagedLoops:
    """isl-generated loops of a contraction over ``m x n x k`` with ``operand`` staged in
    panels ``depth`` deep along k; the copy runs fastest along the operand's contiguous
    mode (k for a transposed A or an untransposed B, the panel's rows or columns
    otherwise).  Not ``copied``: the same panels and chunks with the operand read in
    place (``copy`` is an empty block)."""
    x0, y0, tx, ext = ("m0", "n0", shape.tm, m) if operand == "a" else ("n0", "m0", shape.tn, n)
    panel = [f"{x0} mod {tx} = 0", f"0 <= {x0} < {ext}"]
    chunk = [f"k0 mod {depth} = 0", f"0 <= k0 < {k}"]
    sizes = [f"{m} >= 0", f"{n} >= 0", f"{k} >= 0"]
    panels = generate(space.map_(f"Panel[{x0}] -> [{x0}]", space.set_(f"Panel[{x0}]", panel)),
                      space.context(sizes), (x0,))
    chunks = generate(space.map_("Chunk[k0] -> [k0]", space.set_("Chunk[k0]", chunk)),
                      space.context([*sizes, *panel]), ("k0",))
    fast = "kk" if (operand == "a") == transposed else "p"
    within = [f"0 <= p < {tx}", f"{x0} + p < {ext}", f"0 <= kk < {depth}", f"k0 + kk < {k}"]
    copy = _copy_loops(shape, within, [*sizes, *panel, *chunk], fast) if copied else Block(())
    ctx = _work_item_context(shape, [*sizes, *panel])
    full, edge = block_domains(shape, m, n, f"Blk[{y0}]")
    trees = [_rename(generate(space.map_(f"Blk[{y0}] -> [{y0}]", d), ctx, (y0,)), name)
             for d, name in ((full, "Full"), (edge, "Edge"))]
    return StagedLoops(panels, chunks, copy, trees[0], trees[1],
                       contraction_loops(shape, m, n))


def _copy_loops(shape: TileShape, within: list[str], known: list[str], fast: str) -> Node:
    """``Copy(p, kk)`` over the chunk ``within``, dealt to the work-items ``lid`` along
    ``fast`` (``p`` or ``kk``, which runs fastest)."""
    items = shape.wg[0] * shape.wg[1]
    lid_ctx = []
    if items > 1:
        within = [*within, f"exists (q: {fast} = lid + {items}q)"]
        lid_ctx = [f"0 <= lid < {items}"]
    order = ("p", "kk") if fast == "kk" else ("kk", "p")
    return generate(space.map_(f"Copy[p, kk] -> [{', '.join(order)}]",
                               space.set_("Copy[p, kk]", within)),
                    space.context([*known, *lid_ctx]), order)


def _intra(shape: TileShape, m: str | None, n: str | None) -> tuple[Node, Node, Node]:
    rows = [f"0 <= r < {shape.rm}"] + ([f"mb + {shape.row_offset('r')} < {m}"] if m else [])
    cols = [f"0 <= c < {shape.rn}"] + ([f"nb + {shape.col_offset('c')} < {n}"] if n else [])
    known = ["mb >= 0", "nb >= 0"] + ([f"mb < {m}", f"nb < {n}"] if m and n else [])
    ctx = space.context(known)
    return (generate(space.map_("Row[r] -> [r]", space.set_("Row[r]", rows)), ctx, ("r",)),
            generate(space.map_("Col[c] -> [c]", space.set_("Col[c]", cols)), ctx, ("c",)),
            generate(space.map_("Cell[c, r] -> [c, r]", space.set_("Cell[c, r]", rows + cols)),
                     ctx, ("c", "r")))


@lru_cache(maxsize=1024)
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


def _work_item_context(shape: TileShape, extra: list[str]) -> isl.Set:
    return space.context([*_work_item_bounds(shape), *extra])


def _rename(tree: Node, name: str) -> Node:
    """Statement ``Blk`` renamed to ``name`` (the same domain serves two callers)."""
    from dataclasses import replace

    from tensorlang.schedule.loops import Call, For, If

    if isinstance(tree, Call):
        return replace(tree, name=name)
    if isinstance(tree, For):
        return replace(tree, body=_rename(tree.body, name))
    if isinstance(tree, If):
        orelse = None if tree.orelse is None else _rename(tree.orelse, name)
        return replace(tree, then=_rename(tree.then, name), orelse=orelse)
    assert isinstance(tree, Block)
    return Block(tuple(_rename(t, name) for t in tree.items))
