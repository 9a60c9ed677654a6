"""``tlc compile --emit schedule``: each kernel's statements, domains, accesses and loops."""

from __future__ import annotations

from collections.abc import Callable

from tensorlang.ir.core import Function, Instruction
from tensorlang.schedule.affine import Symbols
from tensorlang.schedule.domains import Statement, statement
from tensorlang.schedule.foreach import Distribution, depth, foreach_loops
from tensorlang.schedule.loops import Node, render
from tensorlang.schedule.tiling import TileShape, contraction_loops, distributed

ShapeOf = Callable[[Instruction, Statement], TileShape | None]
"""The back end's tiling of a contraction (None: not a contraction)."""
DistributionOf = Callable[[Instruction], Distribution]
"""The back end's distribution of a foreach's points over the work-items."""


def show_function(func: Function, wg: tuple[int, int], shape_of: ShapeOf,
                  foreach: DistributionOf | None = None) -> str:
    """The schedule of ``func`` (after its passes) as text; ``foreach`` is how the back
    end deals a foreach's points to work-items (default: cyclically over the work-group)."""
    syms = Symbols()
    lines = [f"kernel @{func.name} work_group_size({wg[0]}, {wg[1]})"]
    for inst in func.walk():
        if inst.name == "barrier":
            fences = [f for f in ("local", "global") if inst.attr(f"fence_{f}")]
            lines.append(f"  barrier{''.join('.' + f for f in fences)}"
                         f"   (line {inst.loc.line}: a dependence isl could not rule out)")
            continue
        if not inst.op.blas and inst.name not in ("foreach", "foreach_nd"):
            continue
        stmt = statement(inst, syms)
        assert stmt is not None
        dist = foreach(inst) if foreach else Distribution(wg[0] * wg[1])
        lines += _statement(inst, stmt, wg, shape_of(inst, stmt), dist)
    return "\n".join(lines) + "\n"


def _statement(inst: Instruction, stmt: Statement, wg: tuple[int, int],
               shape: TileShape | None, dist: Distribution) -> list[str]:
    names = {v: f"%{v.name}" for v in {a.root for a in stmt.accesses}}
    out = [f"  {inst.name}   (line {inst.loc.line})", f"    domain: {stmt.domain()}"]
    for acc in stmt.accesses:
        kind = "write" if acc.write else "read "
        rel = stmt.access_map(acc, f"{names[acc.root][1:]}")
        out.append(f"    {kind} {names[acc.root]}: {rel}")
    if shape is not None:
        two = len(stmt.dims) > 2 or stmt.name == "ger"
        m, n = _extent(stmt, 0), (_extent(stmt, 1) if two else "1")
        order = "blocked" if shape.blocked else "interleaved"
        out.append(f"    tiling: {shape.rm}x{shape.rn} register blocks per work-item, "
                   f"{order} rows, tiles of {shape.tm}x{shape.tn}")
        loops = contraction_loops(shape, m, n)
        out += _tree("full blocks", loops.full) + _tree("edge blocks", loops.edge)
        out += _tree("edge block cells", loops.edge_cells)
    elif stmt.name == "foreach":
        iterators = [f"c{d}" for d in range(depth(stmt, dist))]
        how = f"runs of {dist.block}" if dist.block > 1 else "cyclic"
        out += _tree(f"work-item loops ({how}, lid = linear local id)",
                     foreach_loops(stmt, dist, {}, iterators))
    elif stmt.dims:
        ext = tuple(_extent(stmt, d) for d in range(len(stmt.dims)))[:2]
        ids, counts = (("lx", "ly")[:len(ext)], wg[:len(ext)]) if len(ext) == 2 else \
            (("lid",), (wg[0] * wg[1],))
        out += _tree("work-item loops", distributed(ext, ids, counts))
    return out


def _extent(stmt: Statement, d: int) -> str:
    return stmt.constraints[d].split(" < ")[-1]


def _tree(title: str, tree: Node | None) -> list[str]:
    text = render(tree, 3).rstrip("\n")
    return [f"    {title}:", text or "      (none)"]
