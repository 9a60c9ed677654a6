"""Hand-written pretty syntaxes of convolution and of the ops with regions (reduce,
while, chlo.scan): parsers and printers registered in :mod:`frontend.syntax.custom`."""

from __future__ import annotations

import numpy as np

from frontend.ir import attrs as A
from frontend.ir.core import Block, Op, Region, Value
from frontend.ir.ops import OPS, OpDef
from frontend.ir.types import IntegerType, TensorType
from frontend.syntax import formats
from frontend.syntax.custom_base import FUNC, finish, ftype, ints
from frontend.syntax.formats import I64, attr_dict, glue, parse_type_suffix
from frontend.syntax.interface import OpParser, OpPrinter
from tensorlang.diagnostics import Loc

# -- convolution -------------------------------------------------------------------------
_WINDOW = {"stride": "window_strides", "pad": "padding", "lhs_dilate": "lhs_dilation",
           "rhs_dilate": "rhs_dilation", "reverse": "window_reversal"}


def parse_convolution(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``convolution`` syntax after the op name."""
    operands = p.paren_list(p.use)
    p.expect("dim_numbers")
    p.expect("=")
    attrs: dict[str, A.Attr] = {"dimension_numbers": p.parse_conv_dims()}
    p.expect(",")
    p.expect("window")
    p.expect("=")
    p.expect("{")
    while not p.accept("}"):
        key = p.expect_kind("BARE", "stride, pad, lhs_dilate, rhs_dilate or reverse")
        if key not in _WINDOW:
            p.error(f"unknown window field '{key}'", p.start - len(key) - 1)
        p.expect("=")
        attrs[_WINDOW[key]] = _window_value(p, key)
        if not p.at("}"):
            p.expect(",", "',' or '}'")
    return finish(p, opdef, loc, operands, attrs)


def _window_value(p: OpParser, key: str) -> A.Attr:
    if key == "pad":
        start = p.start
        rows = p.bracket_list(p.int_list)
        if any(len(r) != 2 for r in rows):
            p.error("each pad entry must be a [low, high] pair", start, p.prev_end)
        arr = np.array(rows, np.int64).reshape(len(rows), 2) if rows else \
            np.zeros((0, 2), np.int64)
        return A.DenseElementsAttr(TensorType((len(rows), 2), IntegerType(64)), arr)
    if key == "reverse":
        vals = p.bracket_list(lambda: p.advance() in ("true", "1"))
        return A.DenseArrayAttr("i1", tuple(vals))
    return A.DenseArrayAttr("i64", tuple(p.int_list()))


def print_convolution(op: Op, pr: OpPrinter) -> str:
    """The pretty ``convolution`` syntax after the op name."""
    dn = op.attrs.get("dimension_numbers")
    used = {"dimension_numbers"}
    window = []
    for key, name in _WINDOW.items():
        a = op.attrs.get(name)
        if a is None:
            continue
        used.add(name)
        if isinstance(a, A.DenseElementsAttr):
            text = "[" + ", ".join(ints(r) for r in a.array.reshape(-1, 2).tolist()) + "]"
        else:
            text = formats.print_attr_value(name, a)
        window.append(f"{key} = {text}")
    head = f"({', '.join(map(pr.name, op.operands))})"
    dims = dn.pretty() if isinstance(dn, A.ConvDimsAttr) else str(dn)
    return glue([head, f"dim_numbers = {dims},", f"window = {{{', '.join(window)}}}",
                 attr_dict(op, used), ftype(op)])


# -- reduce, while, scan (ops with regions) ----------------------------------------------
def parse_reduce(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``reduce`` syntax after the op name."""
    pairs = [_reduce_pair(p)]
    while p.accept(","):
        pairs.append(_reduce_pair(p))
    inputs, inits = [a for a, _ in pairs], [b for _, b in pairs]
    attrs: dict[str, A.Attr] = {}
    applies = None
    if p.accept("applies"):
        start = p.start
        applies = p.expect_kind("BARE", "an op name")
        if applies not in OPS or OPS[applies].operands != ("lhs", "rhs"):
            p.error(f"'{applies}' is not a binary op to reduce with", start, p.prev_end)
    p.expect("across")
    p.expect("dimensions")
    p.expect("=")
    attrs["dimensions"] = A.DenseArrayAttr("i64", tuple(p.int_list()))
    if p.at("{"):
        attrs.update(p.parse_attr_dict())
    results = parse_type_suffix(p, FUNC, inputs + inits, loc)
    if applies is not None:
        region = _applies_region(p, applies, inits, loc)
    else:
        region = _reducer_region(p, len(pairs))
    return p.make_op(opdef.name, inputs + inits, results, attrs, [region], loc)


def _reduce_pair(p: OpParser):
    p.expect("(")
    x = p.use()
    p.expect("init")
    p.expect(":")
    init = p.use()
    p.expect(")")
    return x, init


def _applies_region(p: OpParser, name: str, inits, loc: Loc) -> Region:
    block = Block()
    t = inits[0].type
    block.args = [Value(t, block, i, f"a{i}", loc) for i in range(2)]
    body = p.make_op(name, block.args, [t], {}, [], loc)
    ret = p.make_op("stablehlo.return", body.results, [], {}, [], loc)
    block.ops = [body, ret]
    return Region([block])


def _reducer_region(p: OpParser, n: int) -> Region:
    p.expect("reducer")
    pairs = []
    for _ in range(n):
        pairs.append(p.paren_list(lambda: _named_arg(p)))
        if len(pairs[-1]) != 2:
            p.error("each reducer argument group needs two arguments")
    args = [a[0] for a in pairs] + [a[1] for a in pairs]
    return p.parse_region(implicit_args=args)


def _named_arg(p: OpParser):
    start = p.start
    name = p.expect_kind("VALUE", "an argument name")
    p.expect(":")
    return name, p.parse_type(), p.loc(start, start + len(name))


def print_reduce(op: Op, pr: OpPrinter) -> str:
    """The pretty ``reduce`` syntax after the op name."""
    groups = op.operand_group
    inputs, inits = groups("inputs"), groups("init_values")
    pairs = ", ".join(f"({pr.name(a)} init: {pr.name(b)})"
                      for a, b in zip(inputs, inits, strict=True))
    head = [pairs]
    applies = _simple_reducer(op)
    if applies:
        head.append(f"applies {applies}")
    dims = ints(op.ints_attr("dimensions", []))
    text = glue([*head, f"across dimensions = {dims}", attr_dict(op, {"dimensions"}),
                 ftype(op)])
    if applies:
        return text
    block = op.regions[0].block
    n = len(inputs)
    groups_text = " ".join(
        f"({pr.decl(block.args[i])}, {pr.decl(block.args[i + n])})" for i in range(n))
    region = pr.region_body(op.regions[0], header=False)
    return f"{text}\n{pr.indent}  reducer{groups_text} {region}"


def _simple_reducer(op: Op) -> str | None:
    block = op.regions[0].block if op.regions and op.regions[0].blocks else None
    if block is None or len(block.ops) != 2 or len(block.args) != 2:
        return None
    body, ret = block.ops
    ok = (body.operands == block.args and not body.attrs and not body.regions
          and ret.operands == body.results and body.result_types == [block.args[0].type]
          and block.args[0].type == block.args[1].type == op.operands[1].type
          and OPS.get(body.name) is not None and OPS[body.name].operands == ("lhs", "rhs")
          and OPS[body.name].syntax == "same" and body.name.startswith("stablehlo."))
    return body.name if ok else None


def parse_while(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``while`` syntax after the op name."""
    p.expect("(")
    names, operands = [], []
    while not p.accept(")"):
        start = p.start
        names.append((p.expect_kind("VALUE", "an iteration argument"), start))
        p.expect("=")
        operands.append(p.use())
        if not p.at(")"):
            p.expect(",", "',' or ')'")
    types = []
    if p.accept(":"):
        types = [p.parse_type()]
        while p.accept(","):
            types.append(p.parse_type())
    p.check_types(operands, types, loc)
    attrs = dict(p.parse_attr_dict()) if p.accept("attributes") else {}
    args = [(n, t, p.loc(s, s + len(n))) for (n, s), t in zip(names, types, strict=False)]
    p.expect("cond")
    cond = p.parse_region(implicit_args=args)
    p.expect("do")
    body = p.parse_region(implicit_args=args)
    return p.make_op(opdef.name, operands, types, attrs, [cond, body], loc)


def print_while(op: Op, pr: OpPrinter) -> str:
    """The pretty ``while`` syntax after the op name."""
    cond, body = op.regions
    args = cond.block.args
    binds = ", ".join(f"{pr.name(a)} = {pr.name(v)}"
                      for a, v in zip(args, op.operands, strict=True))
    for a, b in zip(args, body.block.args, strict=False):
        pr.alias(b, a)
    types = ", ".join(str(v.type) for v in op.operands)
    attrs = f" attributes {attr_dict(op, set())}" if op.attrs else ""
    head = f"({binds})" + (f" : {types}" if types else "") + attrs
    return (f"{head}\n{pr.indent}cond {pr.region_body(cond, header=False)} "
            f"do {pr.region_body(body, header=False)}")


def parse_scan(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``scan`` syntax after the op name."""
    inputs = p.paren_list(p.use)
    p.expect("inits")
    inits = p.paren_list(p.use)
    attrs: dict[str, A.Attr] = {}
    while p.kind == "BARE" and p.peek_kind() == "=":
        key = p.advance()
        p.advance()
        attrs[key] = A.IntAttr(p.parse_int(), I64) if key == "dimension" else p.parse_attr()
    if p.accept("attributes"):
        attrs.update(p.parse_attr_dict())
    region = p.parse_region()
    results = parse_type_suffix(p, FUNC, inputs + inits, loc)
    return p.make_op(opdef.name, inputs + inits, results, attrs, [region], loc)


def print_scan(op: Op, pr: OpPrinter) -> str:
    """The pretty ``scan`` syntax after the op name."""
    inputs, inits = op.operand_group("inputs"), op.operand_group("inits")
    kw = [f"{k}={formats.print_attr_value(k, v)}" for k, v in op.attrs.items()
          if k in ("dimension", "is_reverse", "is_associative")]
    rest = {k: v for k, v in op.attrs.items() if k not in ("dimension", "is_reverse",
                                                              "is_associative")}
    attrs = " attributes {" + ", ".join(A.entry_text(k, v) for k, v in rest.items()) + "}" \
        if rest else ""
    return (f"({', '.join(map(pr.name, inputs))}) inits({', '.join(map(pr.name, inits))}) "
            f"{' '.join(kw)}{attrs} {pr.region_body(op.regions[0])} {ftype(op)}")


