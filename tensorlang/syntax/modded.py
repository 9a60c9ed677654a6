"""Instructions written ``keyword.mod.mod operands : types``: BLAS-like ones, arith, cmp.

The grammar reads the modifiers and the operand and type lists generically; this
module checks them per instruction (transpose modifiers, ``.atomic``, the arithmetic
operation or comparison, the operand and type counts).  The comma the reference's
ABNF puts after the modifiers of ``gemm``, ``gemv`` and ``sum`` is optional (its own
examples omit it); other instructions take none.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark import Token, Tree

from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import ALIASES, ArithOp, CmpCond, Transpose
from tensorlang.ir.types import Type
from tensorlang.syntax.builder import Builder
from tensorlang.syntax.extensions import build_math
from tensorlang.syntax.scope import as_token, as_tokens
from tensorlang.syntax.typeparse import expect_scalar


@dataclass(frozen=True)
class _Blas:
    transposes: int
    operands: tuple[str, ...]
    comma: bool


_FIVE = ("alpha", "A", "B", "beta", "C")
_FOUR = ("alpha", "A", "beta", "B")
_BLAS = {
    "axpby": _Blas(1, _FOUR, False),
    "gemm": _Blas(2, _FIVE, True),
    "gemv": _Blas(1, _FIVE, True),
    "ger": _Blas(0, _FIVE, False),
    "hadamard_product": _Blas(0, _FIVE, False),
    "sum": _Blas(1, _FOUR, True),
}


_NAMES = {enum: frozenset(e.value for e in enum) for enum in (ArithOp, CmpCond)}


def build_modded(b: Builder, node: Tree) -> Instruction:
    """gemm, gemv, ger, hadamard_product, axpby, sum, arith, cmp or math."""
    keyword_node, *mod_nodes, comma, operands, types = node.children
    keyword, mods = as_token(keyword_node), as_tokens(mod_nodes)
    name = ALIASES.get(str(keyword), str(keyword))
    if comma is not None and not (name in _BLAS and _BLAS[name].comma):
        raise CompileError.at(b.loc(comma), f"unexpected ',' after '{_spelled(keyword, mods)}'")
    if name in _BLAS:
        return _blas(b, node, name, mods, operands.children, types.children)
    if name == "math":
        return build_math(b, node, mods, operands.children, types.children)
    return _scalar(b, node, name, mods, operands.children, types.children)


def _spelled(keyword: Token, mods: list[Token]) -> str:
    return str(keyword) + "".join(str(m) for m in mods)


def _blas(b: Builder, node: Tree, name: str, mods: list[Token], operands: list[Tree | Token],
          type_nodes: list[Tree]) -> Instruction:
    spec = _BLAS[name]
    attrs = _blas_mods(b, node, name, spec.transposes, mods)
    _count(b, node, name, "operands", len(operands), len(spec.operands))
    _count(b, node, name, "types after ':'", len(type_nodes), len(spec.operands))
    types = [b.type(t) for t in type_nodes]
    values = _values(b, name, operands, types, type_nodes, spec.operands)
    return b.make(name, node, dict(zip(spec.operands, values, strict=True)), attrs)


def _values(b: Builder, name: str, operands: list[Tree | Token], types: list[Type],
            type_nodes: list[Tree], slots: tuple[str, ...]) -> list[Value]:
    values = [b.value(o, t, f"operand '{slot}' of {name}")
              for o, t, slot in zip(operands, types, slots, strict=True)]
    for value, t, type_node in zip(values, types, type_nodes, strict=True):
        b.annotated(value, t, type_node)
    return values


def _blas_mods(b: Builder, node: Tree, name: str, transposes: int,
               mods: list[Token]) -> dict[str, object]:
    attrs: dict[str, object] = {"atomic": False}
    given = [m for m in mods[:transposes] if str(m) in (".n", ".t")]
    if len(given) < transposes:
        where = mods[len(given)] if len(given) < len(mods) else node
        raise CompileError.at(b.loc(where), f"{name} needs {transposes} transpose "
                              f"modifier{'s' * (transposes > 1)} ('.n' or '.t') after "
                              f"'{name}'")
    for key, mod in zip(("trans_a", "trans_b"), given, strict=False):
        attrs[key] = Transpose(str(mod)[1:])
    allowed = "may follow the transpose modifiers" if transposes else "is allowed"
    for mod in mods[transposes:]:
        if str(mod) != ".atomic" or attrs["atomic"]:
            problem = "repeated" if str(mod) == ".atomic" else "unknown"
            raise CompileError.at(b.loc(mod), f"{problem} modifier '{mod}' for {name} "
                                  f"(only '.atomic' {allowed})")
        attrs["atomic"] = True
    return attrs


def _count(b: Builder, node: Tree, name: str, what: str, given: int, wanted: int) -> None:
    if given != wanted:
        raise CompileError.at(b.loc(node), f"{name} takes {wanted} {what}, {given} given")


def _scalar(b: Builder, node: Tree, name: str, mods: list[Token], operands: list[Tree | Token],
            type_nodes: list[Tree]) -> Instruction:
    enum = ArithOp if name == "arith" else CmpCond
    if len(mods) != 1 or str(mods[0])[1:] not in _NAMES[enum]:
        where = mods[1] if len(mods) > 1 else (mods[0] if mods else node)
        choices = ", ".join("." + e.value for e in enum)
        raise CompileError.at(b.loc(where), f"{name} needs one operation out of {choices}")
    kind = enum(str(mods[0])[1:])
    wanted = 1 if isinstance(kind, ArithOp) and kind.unary else 2
    _count(b, node, f"{name}.{kind.value}", "operands", len(operands), wanted)
    _count(b, node, f"{name}.{kind.value}", "type after ':'", len(type_nodes), 1)
    t = expect_scalar(b.type(type_nodes[0]), type_nodes[0], b.source)
    slots = ("a", "b")[:wanted]
    values = _values(b, name, operands, [t] * wanted, type_nodes * wanted, slots)
    found = dict(zip(slots, values, strict=True))
    if name == "arith":
        return b.make(name, node, {"a": found["a"], "b": found.get("b")},
                      {"op": kind, "type": t})
    return b.make(name, node, found, {"cond": kind, "type": t})
