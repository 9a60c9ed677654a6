"""Hand-written pretty syntaxes (``OpDef.syntax`` ending in ``!``): parsers and printers.

Each syntax has a parser ``(parser, opdef, loc) -> Op`` in :data:`PARSERS` and a printer
``(op, printer) -> str`` (the text after the op name) in :data:`PRINTERS`.
"""

from __future__ import annotations

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.ir.ops import OPS, OpDef
from frontend.ir.types import format_results
from frontend.syntax import formats
from frontend.syntax.custom_base import finish, ftype, ints
from frontend.syntax.formats import I32, I64, attr_dict, glue
from frontend.syntax.interface import OpParser, OpPrinter
from frontend.syntax.interpreter_ops import parse_probe, print_probe
from frontend.syntax.regions import (
    parse_convolution,
    parse_reduce,
    parse_scan,
    parse_while,
    print_convolution,
    print_reduce,
    print_scan,
    print_while,
)
from frontend.syntax.typeparse import int_value
from tensorlang.diagnostics import Loc


# -- constant, reduce_precision, call, composite, custom_call, top_k ---------------------
def parse_constant(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``constant`` syntax after the op name."""
    attrs = dict(p.parse_attr_dict()) if p.at("{") else {}
    start = p.start
    value = p.parse_attr()
    if not isinstance(value, (A.DenseElementsAttr, A.DenseResourceAttr)):
        p.error("expected a dense<...> : tensor<...> constant value", start, p.prev_end)
    attrs["value"] = value
    return p.make_op(opdef.name, [], [value.type], attrs, [], loc)


def print_constant(op: Op, pr: OpPrinter) -> str:
    """The pretty ``constant`` syntax after the op name."""
    return glue([attr_dict(op, {"value"}), str(op.attrs["value"])])


def parse_reduce_precision(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``reduce_precision`` syntax after the op name."""
    operands = [p.use()]
    p.expect(",")
    p.expect("format")
    p.expect("=")
    start = p.start
    fmt = p.expect_kind("BARE", "a format like e5m10")
    e, _, m = fmt[1:].partition("m")
    if not (fmt.startswith("e") and e.isdigit() and m.isdigit() and len(e + m) < 12):
        p.error(f"expected a format like e5m10, got '{fmt}'", start, p.prev_end)
    attrs: dict[str, A.Attr] = {"exponent_bits": A.IntAttr(int(e), I32),
                                "mantissa_bits": A.IntAttr(int(m), I32)}
    return finish(p, opdef, loc, operands, attrs)


def print_reduce_precision(op: Op, pr: OpPrinter) -> str:
    """The pretty ``reduce_precision`` syntax after the op name."""
    fmt = f"e{op.attr('exponent_bits')}m{op.attr('mantissa_bits')}"
    used = {"exponent_bits", "mantissa_bits"}
    opdef = op.opdef
    assert opdef is not None
    return glue([pr.name(op.operands[0]), ",", "format", "=", fmt, attr_dict(op, used),
                 formats.type_suffix(op, opdef)])


def parse_call(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``call`` syntax after the op name."""
    callee = p.expect_kind("SYMBOL", "a function name")[1:]
    operands = p.paren_list(p.use)
    return finish(p, opdef, loc, operands, {"callee": A.SymbolRefAttr(callee)})


def print_call(op: Op, pr: OpPrinter) -> str:
    """The pretty ``call`` syntax after the op name."""
    args = ", ".join(map(pr.name, op.operands))
    return glue([f"{op.attrs['callee']}({args})", attr_dict(op, {"callee"}), ftype(op)])


def parse_composite(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``composite`` syntax after the op name."""
    name = p.expect_kind("STRING", "the composite's name")
    operands = p.use_list() if p.kind == "VALUE" else []
    return finish(p, opdef, loc, operands, {"name": A.StrAttr(name[1:-1])})


def print_composite(op: Op, pr: OpPrinter) -> str:
    """The pretty ``composite`` syntax after the op name."""
    return glue([str(op.attrs["name"]), ", ".join(map(pr.name, op.operands)),
                 attr_dict(op, {"name"}), ftype(op)])


def parse_custom_call(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``custom_call`` syntax after the op name."""
    target = p.expect_kind("SYMBOL", "a call target like @foo")[1:]
    operands = p.paren_list(p.use)
    return finish(p, opdef, loc, operands, {"call_target_name": A.StrAttr(target.strip('"'))})


def print_custom_call(op: Op, pr: OpPrinter) -> str:
    """The pretty ``custom_call`` syntax after the op name."""
    target = op.str_attr("call_target_name")
    args = ", ".join(map(pr.name, op.operands))
    sym = target if target.replace("_", "a").replace(".", "a").isalnum() else f'"{target}"'
    return glue([f"@{sym}({args})", attr_dict(op, {"call_target_name"}), ftype(op)])


def parse_top_k(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``top_k`` syntax after the op name."""
    p.expect("(")
    operands = [p.use()]
    p.expect(",")
    p.expect("k")
    p.expect("=")
    attrs: dict[str, A.Attr] = {"k": A.IntAttr(p.parse_int(), I64)}
    p.expect(")")
    return finish(p, OPS["chlo.top_k"], loc, operands, attrs)


def print_top_k(op: Op, pr: OpPrinter) -> str:
    """The pretty ``top_k`` syntax after the op name."""
    head = f"({pr.name(op.operands[0])}, k = {op.attr('k')})"
    return glue([head, attr_dict(op, {"k"}),
                 f": {op.operands[0].type} -> {format_results(op.result_types)}"])


# -- check dialect (interpreter tests) ---------------------------------------------------
def parse_check(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``check`` syntax after the op name."""
    operands = p.use_list()
    attrs: dict[str, A.Attr] = {}
    while p.accept(","):
        if p.at("dense"):
            attrs["expected"] = p.parse_dense()
            if p.at("{"):
                attrs.update(p.parse_attr_dict())
            return p.make_op(opdef.name, operands, [], attrs, [], loc)
        key = p.expect_kind("BARE", "an attribute name")
        p.expect("=")
        if p.kind in ("INT", "FLOAT"):
            kind, text = p.kind, p.advance()
            attrs[key] = A.FloatAttr(float(text)) if kind == "FLOAT" else \
                A.IntAttr(int_value(text))
        elif p.kind == "STRING":  # not parse_attr: it reads ': type' as the string's type
            attrs[key] = A.StrAttr(p.advance()[1:-1])
        else:
            attrs[key] = p.parse_attr()
    p.expect(":")
    p.parse_type()
    while p.accept(","):
        p.parse_type()
    return p.make_op(opdef.name, operands, [], attrs, [], loc)


def print_check(op: Op, pr: OpPrinter) -> str:
    """The pretty ``check`` syntax after the op name."""
    parts = [", ".join(map(pr.name, op.operands))]
    if "expected" in op.attrs:
        return glue([*parts, ",", str(op.attrs["expected"]), attr_dict(op, {"expected"})])
    for k, v in op.attrs.items():
        parts += [",", f"{k} = {v}"]
    return glue([*parts, ": " + ", ".join(str(v.type) for v in op.operands)])


# -- slice, dot_general ------------------------------------------------------------------
def parse_slice(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``slice`` syntax after the op name."""
    operands = [p.use()]
    triples = p.bracket_list(lambda: _slice_range(p))
    attrs: dict[str, A.Attr] = {
        key: A.DenseArrayAttr("i64", tuple(t[i] for t in triples))
        for i, key in enumerate(("start_indices", "limit_indices", "strides"))}
    return finish(p, opdef, loc, operands, attrs)


def _slice_range(p: OpParser) -> tuple[int, int, int]:
    start = p.parse_int()
    p.expect(":")
    limit = p.parse_int()
    stride = p.parse_int() if p.accept(":") else 1
    return start, limit, stride


def print_slice(op: Op, pr: OpPrinter) -> str:
    """The pretty ``slice`` syntax after the op name."""
    keys = ("start_indices", "limit_indices", "strides")
    cols = [op.attr(k, []) for k in keys]
    ranges = [f"{a}:{b}" + ("" if s == 1 else f":{s}") for a, b, s in zip(*cols, strict=False)]
    return glue([pr.name(op.operands[0]), f"[{', '.join(ranges)}]", attr_dict(op, set(keys)),
                 ftype(op)])


_DOT_FIELDS = ("lhs_batching_dimensions", "rhs_batching_dimensions",
               "lhs_contracting_dimensions", "rhs_contracting_dimensions")


def parse_dot_general(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse the pretty ``dot_general`` syntax after the op name."""
    operands = [p.use()]
    p.expect(",")
    operands.append(p.use())
    dims: dict[str, list[int]] = {}
    attrs: dict[str, A.Attr] = {}
    while p.accept(","):
        key = p.expect_kind("BARE", "batching_dims, contracting_dims, precision or algorithm")
        p.expect("=")
        if key in ("batching_dims", "contracting_dims"):
            kind = key.split("_")[0]
            dims[f"lhs_{kind}_dimensions"] = p.int_list()
            p.expect("x")
            dims[f"rhs_{kind}_dimensions"] = p.int_list()
        elif key == "precision":
            attrs["precision_config"] = formats.parse_attr_value(p, "precision_config")
        elif key == "algorithm":
            attrs["algorithm"] = _struct_body(p, "stablehlo.dot_algorithm")
        else:
            p.error(f"unknown dot_general keyword '{key}'")
    attrs = {"dot_dimension_numbers": dot_dims(dims), **attrs}
    return finish(p, opdef, loc, operands, attrs)


def dot_dims(dims: dict[str, list[int]]) -> A.StructAttr:
    """A ``#stablehlo.dot<...>`` attribute (empty fields left out, as MLIR prints it)."""
    fields = tuple((k, A.ListAttr(tuple(A.IntAttr(i) for i in dims[k])))
                   for k in _DOT_FIELDS if dims.get(k))
    return A.StructAttr("stablehlo.dot", fields)


def _struct_body(p: OpParser, name: str) -> A.StructAttr:
    p.expect("<")
    fields = []
    while not p.accept(">"):
        key = p.expect_kind("BARE", "a field name")
        p.expect("=")
        fields.append((key, p.parse_attr()))
        if not p.at(">"):
            p.expect(",", "',' or '>'")
    return A.StructAttr(name, tuple(fields))


def print_dot_general(op: Op, pr: OpPrinter) -> str:
    """The pretty ``dot_general`` syntax after the op name."""
    dn = op.attrs["dot_dimension_numbers"]

    def get(name: str) -> list[int]:
        return A.as_ints(dn.get(name, [])) if isinstance(dn, A.StructAttr) else []

    parts = [pr.name(op.operands[0]), ",", pr.name(op.operands[1])]
    for kind in ("batching", "contracting"):
        lhs, rhs = get(f"lhs_{kind}_dimensions"), get(f"rhs_{kind}_dimensions")
        if lhs or rhs or kind == "contracting":
            parts += [",", f"{kind}_dims = {ints(lhs)} x {ints(rhs)}"]
    used = {"dot_dimension_numbers"}
    if "precision_config" in op.attrs:
        used.add("precision_config")
        parts += [",", "precision = " +
                  formats.print_attr_value("precision_config", op.attrs["precision_config"])]
    if isinstance(op.attrs.get("algorithm"), A.StructAttr):
        used.add("algorithm")
        alg = op.attr_of("algorithm", A.StructAttr)
        parts += [",", "algorithm = <" + ", ".join(f"{k} = {v}" for k, v in alg.fields) + ">"]
    return glue([*parts, attr_dict(op, used), ftype(op)])


PARSERS = {
    "constant!": parse_constant, "reduce_precision!": parse_reduce_precision,
    "call!": parse_call, "composite!": parse_composite, "custom_call!": parse_custom_call,
    "top_k!": parse_top_k, "check!": parse_check, "slice!": parse_slice,
    "dot_general!": parse_dot_general, "convolution!": parse_convolution,
    "reduce!": parse_reduce, "while!": parse_while, "scan!": parse_scan,
    "probe!": parse_probe,
}
PRINTERS = {
    "constant!": print_constant, "reduce_precision!": print_reduce_precision,
    "call!": print_call, "composite!": print_composite, "custom_call!": print_custom_call,
    "top_k!": print_top_k, "check!": print_check, "slice!": print_slice,
    "dot_general!": print_dot_general, "convolution!": print_convolution,
    "reduce!": print_reduce, "while!": print_while, "scan!": print_scan,
    "probe!": print_probe,
}
