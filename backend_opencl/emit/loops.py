"""Printing the scheduler's loop trees (:mod:`tensorlang.schedule.loops`) as OpenCL C.

Each statement of a tree is written by a callback that receives the statement's
coordinates as C expressions.  Loops named in ``unroll`` with a small constant trip count
(register blocks) get ``int`` variables and ``#pragma unroll``; loops named in ``narrow``
(the caller proved their values fit 32 bits) get ``int`` variables; the others ``long``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from backend_opencl.emit.writer import Writer
from tensorlang.schedule.loops import Block, Call, For, If, Node

Statement = Callable[[Writer, tuple[str, ...]], None]
"""(writer, coordinates) -> writes the statement's C lines."""

UNROLL_LIMIT = 64
"""Constant-trip loops up to this many iterations are unrolled."""


def write_loops(w: Writer, node: Node, statements: Mapping[str, Statement],
                unroll: tuple[str, ...] = (), narrow: frozenset[str] = frozenset()) -> None:
    """Write ``node`` with ``statements[name]`` for each statement instance."""
    if isinstance(node, Block):
        for item in node.items:
            write_loops(w, item, statements, unroll, narrow)
    elif isinstance(node, For):
        _for(w, node, statements, unroll, narrow)
    elif isinstance(node, If):
        with w.block(f"if ({node.cond})"):
            write_loops(w, node.then, statements, unroll, narrow)
        if node.orelse is not None:
            with w.else_block():
                write_loops(w, node.orelse, statements, unroll, narrow)
    else:
        assert isinstance(node, Call)
        statements[node.name](w, node.args)


def _for(w: Writer, node: For, statements: Mapping[str, Statement],
         unroll: tuple[str, ...], narrow: frozenset[str]) -> None:
    trips = node.trip_count
    small = node.var in unroll and trips is not None and trips <= UNROLL_LIMIT
    if small:
        w.line("#pragma unroll")
    ctype = "int" if small or node.var in narrow else "long"
    inc = f"++{node.var}" if node.step == 1 else f"{node.var} += {node.step}"
    with w.block(f"for ({ctype} {node.var} = {node.lower}; {node.var} <= {node.upper}; {inc})"):
        write_loops(w, node.body, statements, unroll, narrow)
