"""Shared pieces of the hand-written pretty syntaxes."""

from __future__ import annotations

from collections.abc import Iterable

from frontend.ir.core import Op
from frontend.ir.ops import OpDef
from frontend.ir.types import format_results
from frontend.syntax.formats import parse_type_suffix
from frontend.syntax.interface import OpParser
from tensorlang.diagnostics import Loc

FUNC = OpDef("", (), types="func")


def finish(p: OpParser, opdef: OpDef, loc: Loc, operands, attrs, regions=()) -> Op:
    """Optional attribute dictionary, type suffix, then build the op."""
    if p.at("{"):
        attrs.update(p.parse_attr_dict())
    results = parse_type_suffix(p, opdef if opdef.types != "same" else FUNC, operands, loc)
    return p.make_op(opdef.name, operands, results, attrs, list(regions), loc)


def ftype(op: Op) -> str:
    """``: (operand types) -> result types``."""
    ins = ", ".join(str(v.type) for v in op.operands)
    return f": ({ins}) -> {format_results(op.result_types)}"


def ints(values: Iterable[object]) -> str:
    """``[1, 2, 3]``."""
    return "[" + ", ".join(map(str, values)) + "]"
