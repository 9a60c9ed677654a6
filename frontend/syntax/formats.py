"""Table-driven pretty syntax: parse and print ops from their :class:`OpDef` format.

A format is a space-separated string of ``$name`` (an operand group or an attribute,
as the op table says), literal words/punctuation, and optional groups ``( ... )?``.
After the format comes an optional attribute dictionary and the type suffix chosen
by ``OpDef.types``.
"""

from __future__ import annotations

from collections.abc import Callable

from frontend.ir import attrs as A
from frontend.ir.core import Op, Value
from frontend.ir.ops import ATTR_KINDS, ENUM_NAMES, OpDef
from frontend.ir.types import IntegerType, Type, format_results
from frontend.syntax.interface import OpParser
from tensorlang.diagnostics import CompileError, Loc

I64 = IntegerType(64)
I32 = IntegerType(32)


def _tokens(syntax: str, opdef: OpDef) -> list[str]:
    if syntax == "same":
        return [f"${opdef.operands[0]}"] if opdef.operands else []
    return syntax.split()


def _operand_names(opdef: OpDef) -> dict[str, bool]:
    return {n.rstrip("*"): n.endswith("*") for n in opdef.operands}


def parse_pretty(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the rest of a pretty op whose name was just consumed."""
    attrs: dict[str, A.Attr] = {}
    if opdef.syntax == "same":
        operands = p.use_list() if _operand_ahead(p) else []
    else:
        operands = _parse_format(p, opdef, _tokens(opdef.syntax, opdef), attrs)
    if p.at("{"):
        attrs.update(p.parse_attr_dict())
    results = parse_type_suffix(p, opdef, operands, loc)
    return p.make_op(opdef.name, operands, results, attrs, [], loc)


def _parse_format(p: OpParser, opdef: OpDef, toks: list[str],
                  attrs: dict[str, A.Attr]) -> list[Value]:
    operands: list[Value] = []
    names = _operand_names(opdef)
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok == "(":
            end = toks.index(")?", i)
            group = toks[i + 1:end]
            if p.at(group[0]) and p.peek_kind() != "VALUE":
                operands += _parse_format(p, opdef, group, attrs)
            i = end + 1
            continue
        if tok.startswith("$"):
            name = tok[1:]
            if name in names:
                if names[name]:
                    operands += p.use_list() if _operand_ahead(p) else []
                else:
                    operands.append(p.use())
            else:
                attrs[name] = parse_attr_value(p, name)
        else:
            p.expect(tok)
        i += 1
    return operands


def _operand_ahead(p: OpParser) -> bool:
    """At a value that is used here, not the result name of the next operation."""
    if p.kind != "VALUE":
        return False
    first, second = p.peek_kinds(2)
    return not (first == "=" or (first == ":" and second == "INT"))


def parse_attr_value(p: OpParser, name: str) -> A.Attr:
    """A bare attribute value in pretty syntax, by the attribute's kind."""
    kind = ATTR_KINDS.get(name, "attr")
    if kind == "i64s":
        return A.DenseArrayAttr("i64", tuple(p.int_list()))
    if kind == "i1s":
        return A.DenseArrayAttr("i1", tuple(p.bracket_list(lambda: _bool(p))))
    if kind in ("i64", "i32"):
        return A.IntAttr(p.parse_int(), I64 if kind == "i64" else I32)
    if kind == "enum":
        return A.EnumAttr(ENUM_NAMES.get(name, name), p.expect_kind("BARE", "an enum value"))
    if kind == "bool":
        return A.BoolAttr(_bool(p))
    if kind == "precision":
        return A.ListAttr(tuple(p.bracket_list(
            lambda: A.EnumAttr("precision", p.expect_kind("BARE", "a precision")))))
    return p.parse_attr()


def _bool(p: OpParser) -> bool:
    if p.text not in ("true", "false"):
        p.fail("true or false")
    return p.advance() == "true"


def parse_type_suffix(p: OpParser, opdef: OpDef, operands: list[Value], loc: Loc) -> list[Type]:
    """The ``: ...`` part: result types (operand types are checked against the values)."""
    style = opdef.types
    if style == "types" and not p.at(":"):
        if operands:
            p.fail("':' and the operand types")
        return []
    p.expect(":", "':' and the op's type")
    tstart = p.start
    if p.at("(") and style != "types":
        ftype = p.parse_function_type()
        p.check_types(operands, ftype.inputs, p.loc(tstart, p.prev_end))
        return list(ftype.results)
    types = [p.parse_type()]
    while p.accept(","):
        types.append(p.parse_type())
    tloc = p.loc(tstart, p.prev_end)
    if p.accept("->"):
        results = p.parse_result_types()
        p.check_types(operands, types, tloc)
        return results
    return _results_from_types(p, opdef, operands, types, tloc)


def _results_from_types(p: OpParser, opdef: OpDef, operands: list[Value], types: list[Type],
                        tloc: Loc) -> list[Type]:
    style = opdef.types
    if style == "types":
        p.check_types(operands, types, tloc)
        return types if opdef.results != 0 else []
    if style == "result":
        return types
    if style == "select":
        if len(types) != 2:
            raise CompileError.at(tloc, "expected 'pred_type, result_type'")
        p.check_types(operands, [types[0], types[1], types[1]], tloc)
        return [types[1]]
    if len(types) != 1:
        raise CompileError.at(tloc, f"expected one type for '{opdef.name}', or a function "
                                    f"type")
    if opdef.name != "stablehlo.complex":
        p.check_types(operands, types * len(operands), tloc)
    return types


# -- printing --------------------------------------------------------------------------
Namer = Callable[[Value], str]


def print_pretty(op: Op, opdef: OpDef, name: Namer) -> str:
    """The text after the op name for a table-formatted op."""
    used: set[str] = set()
    if opdef.syntax == "same":
        body = ", ".join(map(name, op.operands))
    else:
        body = _print_format(op, opdef, _tokens(opdef.syntax, opdef), name, used)
    return _join(body, attr_dict(op, used), type_suffix(op, opdef))


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _print_format(op: Op, opdef: OpDef, toks: list[str], name: Namer, used: set[str]) -> str:
    out: list[str] = []
    groups = op.operand_group
    names = _operand_names(opdef)
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok == "(":
            end = toks.index(")?", i)
            group = toks[i + 1:end]
            attr = next(t[1:] for t in group if t.startswith("$"))
            if attr in op.attrs:
                out.append(_print_format(op, opdef, group, name, used))
            i = end + 1
            continue
        if tok.startswith("$"):
            key = tok[1:]
            if key in names:
                out.append(", ".join(map(name, groups(key))))
            else:
                used.add(key)
                out.append(print_attr_value(key, op.attrs[key]))
        else:
            out.append(tok)
        i += 1
    return glue(out)


def glue(parts: list[str]) -> str:
    """Join syntax pieces with spaces, except around ``,``, ``[`` and ``]`` literals."""
    text = ""
    for piece in parts:
        if not piece:
            continue
        if piece in ("]", "[") or piece.startswith(",") or text.endswith("["):
            text += piece
        else:
            text += (" " if text else "") + piece
    return text


def print_attr_value(name: str, a: A.Attr) -> str:
    """A pretty-syntax attribute value (``[1, 2]``, ``LT``, ``true``, ...)."""
    kind = ATTR_KINDS.get(name, "attr")
    if kind in ("i64s", "i1s") and isinstance(a, A.DenseArrayAttr):
        return "[" + ", ".join(str(v).lower() for v in a.values) + "]"
    if kind in ("i64", "i32") and isinstance(a, A.IntAttr):
        return str(a.value)
    if kind == "enum" and isinstance(a, A.EnumAttr):
        return a.value
    if kind == "precision" and isinstance(a, A.ListAttr):
        return "[" + ", ".join(str(x.py) for x in a.items) + "]"
    return str(a)


def attr_dict(op: Op, used: set[str]) -> str:
    """``{k = v, ...}`` for attributes not printed by the syntax ('' if none)."""
    rest = [(k, v) for k, v in op.attrs.items() if k not in used]
    if not rest:
        return ""
    return "{" + ", ".join(A.entry_text(k, v) for k, v in rest) + "}"


def type_suffix(op: Op, opdef: OpDef) -> str:
    """``: T`` / ``: (Ts) -> R`` / ``: Rs`` according to the table's type style."""
    style = opdef.types
    ins = [v.type for v in op.operands]
    outs = op.result_types
    if style == "types":
        return ": " + ", ".join(map(str, ins)) if ins else ""
    if style == "result":
        return ": " + ", ".join(map(str, outs))
    if style == "same" and len(outs) == 1 and all(t == outs[0] for t in ins):
        return f": {outs[0]}"
    if style == "select" and len(outs) == 1 and ins[1] == ins[2] == outs[0]:
        return f": {ins[0]}, {outs[0]}"
    if style == "chlo":
        return f": {', '.join(map(str, ins))} -> {format_results(outs)}"
    return f": ({', '.join(map(str, ins))}) -> {format_results(outs)}"
