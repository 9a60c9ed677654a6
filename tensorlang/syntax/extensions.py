"""Syntax of the extension instructions (docs/language.md, "Extensions").

``math.<fn> %a[, %b] : T``, ``select %c, %a, %b : T``, ``bitcast %x : T1 -> T2``,
``complex %re, %im : C`` and the multi-dimensional
``foreach (%i, %j) = (%a, %b), (%c, %d) [: T] { ... }``.
"""

from __future__ import annotations

from lark import Token, Tree

from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import MATH_FNS
from tensorlang.ir.types import I1, ScalarType, complex_part
from tensorlang.syntax.builder import Builder, InstructionBuilder
from tensorlang.syntax.typeparse import expect_scalar


def build_math(b: Builder, node: Tree, mods: list[Token], operands: list[Tree | Token],
               type_nodes: list[Tree]) -> Instruction:
    """``math.<fn> %a[, %b] : T`` (called by the modded-instruction builder)."""
    fn = MATH_FNS.get(str(mods[0])[1:]) if len(mods) == 1 else None
    if fn is None:
        where = mods[1] if len(mods) > 1 else (mods[0] if mods else node)
        raise CompileError.at(b.loc(where), "math needs one function out of "
                              + ", ".join("." + name for name in sorted(MATH_FNS)))
    if len(operands) != fn.arity:
        raise CompileError.at(b.loc(node), f"math.{fn.name} takes {fn.arity} operand"
                              f"{'s' * (fn.arity > 1)}, {len(operands)} given")
    if len(type_nodes) != 1:
        raise CompileError.at(b.loc(node), f"math.{fn.name} takes 1 type after ':', "
                              f"{len(type_nodes)} given")
    t = expect_scalar(b.type(type_nodes[0]), type_nodes[0], b.source)
    values = [_typed(b, o, t, type_nodes[0], f"operand of math.{fn.name}") for o in operands]
    return b.make("math", node, {"a": values[0], "b": values[1] if fn.arity == 2 else None},
                  {"fn": fn.name, "type": t})


def _typed(b: Builder, node: Tree | Token, t: ScalarType, type_node: Tree, what: str) -> Value:
    value = b.value(node, t, what)
    b.annotated(value, t, type_node)
    return value


def _select(b: Builder, node: Tree) -> Instruction:
    cond_node, a_node, b_node, type_node = node.children
    t = expect_scalar(b.type(type_node), type_node, b.source)
    cond = b.value(cond_node, I1, "the condition of select")
    if cond.type != I1:
        raise CompileError.at(b.loc(cond_node), f"type mismatch: the condition "
                              f"'%{cond.name}' of select has type {cond.type}, expected i1")
    values = [_typed(b, n, t, type_node, "operand of select") for n in (a_node, b_node)]
    return b.make("select", node, {"cond": cond, "a": values[0], "b": values[1]}, {"type": t})


def _bitcast(b: Builder, node: Tree) -> Instruction:
    operand, from_node, to_node = node.children
    from_type = expect_scalar(b.type(from_node), from_node, b.source)
    to_type = expect_scalar(b.type(to_node), to_node, b.source)
    value = _typed(b, operand, from_type, from_node, "the operand of bitcast")
    return b.make("bitcast", node, {"a": value}, {"from_type": from_type, "to_type": to_type})


def _complex(b: Builder, node: Tree) -> Instruction:
    re_node, im_node, type_node = node.children
    t = expect_scalar(b.type(type_node), type_node, b.source)
    if not t.is_complex:
        raise CompileError.at(b.loc(type_node), f"complex builds a complex type (c32 or "
                              f"c64), found {t}")
    part = complex_part(t)
    values = [b.value(n, part, "a part of complex") for n in (re_node, im_node)]
    for value, n in zip(values, (re_node, im_node), strict=True):
        if value.type != part:
            raise CompileError.at(b.loc(n), f"type mismatch: '%{value.name}' has type "
                                  f"{value.type}, but the parts of {t} have type {part}")
    return b.make("complex", node, {"re": values[0], "im": values[1]}, {"type": t})


def _foreach_nd(b: Builder, node: Tree) -> Instruction:
    vars_node, lows, highs, type_node, body = node.children
    names = list(vars_node.children)
    t = b.loop_type(type_node)
    for what, bounds in (("lower", lows), ("upper", highs)):
        if len(bounds.children) != len(names):
            raise CompileError.at(b.loc(bounds), f"foreach over {len(names)} modes needs "
                                  f"{len(names)} {what} bounds, {len(bounds.children)} given")
    operands = {"from": [b.bound(n, t, type_node, "a lower bound") for n in lows.children],
                "to": [b.bound(n, t, type_node, "an upper bound") for n in highs.children]}
    region = b.region_of(body, [b.new_value(v, t) for v in names])
    return b.make("foreach_nd", node, operands, {"loop_type": t}, [region])


BUILDERS: dict[str, InstructionBuilder] = {
    "select": _select, "bitcast": _bitcast, "complex": _complex, "foreach_nd": _foreach_nd}
"""Builders of the extension rules of the grammar."""
