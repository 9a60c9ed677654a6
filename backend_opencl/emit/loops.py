"""Printing the scheduler's loop trees (:mod:`tensorlang.schedule.loops`) as OpenCL C.

Each statement of a tree is written by a callback that receives the statement's
coordinates as C expressions.  Loops named in ``unroll`` with a small constant trip count
(register blocks) get ``int`` variables and ``#pragma unroll``; loops named in ``narrow``
(the caller proved their values fit 32 bits) get ``int`` variables; the others ``long``.
With ``vectorize`` (CPU element loops), an innermost loop of at least that many (or an
unknown number of) iterations gets ``#pragma clang loop vectorize_width(vectorize)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from backend_opencl.emit.writer import Writer
from tensorlang.schedule.loops import Block, Call, For, If, Node

Statement = Callable[[Writer, tuple[str, ...]], None]
"""(writer, coordinates) -> writes the statement's C lines."""

UNROLL_LIMIT = 64
"""Constant-trip loops up to this many iterations are unrolled."""

VECTORIZE_WIDTH = 16
"""The vectorisation factor asked of CPU element loops (``foreach`` innermost loops).

LLVM's cost model on PoCL picks the factor from the widest type in the body: a float
loop whose helpers work in double (``emit/floatfns.py``) gets 4 lanes, half the
registers idle.  Asking for 16 (one 512-bit or two 256-bit registers of 32-bit lanes)
measured on the AVX-512 VM, 512x1024 f32: tanh 0.70 -> 0.35 ms, logistic 0.33 -> 0.17 ms.
"""


def write_loops(w: Writer, node: Node, statements: Mapping[str, Statement],
                unroll: tuple[str, ...] = (), narrow: frozenset[str] = frozenset(),
                vectorize: int = 0) -> None:
    """Write ``node`` with ``statements[name]`` for each statement instance."""
    if isinstance(node, Block):
        for item in node.items:
            write_loops(w, item, statements, unroll, narrow, vectorize)
    elif isinstance(node, For):
        _for(w, node, statements, unroll, narrow, vectorize)
    elif isinstance(node, If):
        with w.block(f"if ({node.cond})"):
            write_loops(w, node.then, statements, unroll, narrow, vectorize)
        if node.orelse is not None:
            with w.else_block():
                write_loops(w, node.orelse, statements, unroll, narrow, vectorize)
    else:
        assert isinstance(node, Call)
        statements[node.name](w, node.args)


def _for(w: Writer, node: For, statements: Mapping[str, Statement],
         unroll: tuple[str, ...], narrow: frozenset[str], vectorize: int) -> None:
    trips = node.trip_count
    small = node.var in unroll and trips is not None and trips <= UNROLL_LIMIT
    if small:
        w.line("#pragma unroll")
    elif vectorize and (trips is None or trips >= vectorize) and not _has_loop(node.body):
        w.line(f"#pragma clang loop vectorize_width({vectorize})")
    ctype = "int" if small or node.var in narrow else "long"
    inc = f"++{node.var}" if node.step == 1 else f"{node.var} += {node.step}"
    with w.block(f"for ({ctype} {node.var} = {node.lower}; {node.var} <= {node.upper}; {inc})"):
        write_loops(w, node.body, statements, unroll, narrow, vectorize)


def _has_loop(node: Node | None) -> bool:
    if isinstance(node, Block):
        return any(_has_loop(item) for item in node.items)
    if isinstance(node, If):
        return _has_loop(node.then) or _has_loop(node.orelse)
    return isinstance(node, For)
