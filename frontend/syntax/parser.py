"""Recursive-descent parser for StableHLO's MLIR text, producing :mod:`frontend.ir.core`.

Reads modules or bare functions, ``func.func`` with argument/result attributes, both
op syntaxes (pretty forms from the op table, generic ``"dialect.op"(...)`` form),
regions with ``^bb`` block arguments, multi-result values and ``loc(...)``.
"""

from __future__ import annotations

import re
from typing import NoReturn

from frontend.ir import attrs as A
from frontend.ir.core import Block, Decl, Func, Module, Op, Region, Value, walk
from frontend.ir.ops import ALIASES, ATTR_KINDS, OPS
from frontend.ir.types import FunctionType, Type
from frontend.syntax import custom, formats, literals, shardy
from frontend.syntax.interface import OpParser
from frontend.syntax.lexer import nested
from tensorlang.diagnostics import CompileError, Loc, Source, note

KNOWN_DIALECTS = ("stablehlo.", "chlo.", "func.", "check.", "interpreter.")
_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d{1,9}):(\d{1,9})\b')
_RESOURCE = re.compile(r'([\w.$\-]+)\s*:\s*"(0x[0-9a-fA-F]*)"')
_LOC_REF = re.compile(r"#[A-Za-z_][\w$.\-]*")


def resolve_origin(text: str, aliases: dict[str, str]) -> Loc | None:
    """The first ``"file":line:col`` inside a location, following ``#loc`` aliases."""
    for _ in range(16):
        m = _FILE_LOC.search(text)
        if m:
            return Loc(m.group(1), int(m.group(2)), int(m.group(3)))
        expanded = _LOC_REF.sub(lambda r: aliases.get(r.group(), ""), text)
        if expanded == text:
            return None
        text = expanded
    return None


class Parser(OpParser):
    """Parses one module (one ``// -----`` chunk) of a file."""

    def __init__(self, text: str, filename: str, begin: int = 0, stop: int | None = None,
                 source: Source | None = None) -> None:
        self.type_aliases = {}
        self.attr_aliases = {}
        self.resource_uses = []
        self.resources: dict[str, str] = {}
        self.scopes: list[dict[str, Value]] = []
        super().__init__(text, filename, begin, stop, source)

    # -- module level --------------------------------------------------------------------
    def parse_top(self) -> Module:
        """A whole chunk: one ``module`` or a list of functions, plus aliases."""
        loc = self.loc()
        module: Module | None = None
        funcs: list[Func] = []
        while self.kind != "EOF":
            if self.kind in ("HASH", "BANG") and self.peek_kind() == "=":
                self._parse_alias()
            elif self.kind == "META":
                self.resources.update(_RESOURCE.findall(self.advance()))
            elif self.at("module") and module is None and not funcs:
                module = self.parse_module()
            elif self.at("func.func") and module is None:
                funcs.append(self.parse_func())
            else:
                self.fail("'module' or 'func.func'")
        if module is None:
            module = Module(None, {}, funcs, loc, explicit=False)
        self._resolve_origins(module)
        self._resolve_resources(module)
        module.loc_aliases = {k: v for k, v in self.attr_aliases.items()
                              if str(v).startswith("loc(")}
        return module

    def _resolve_resources(self, module: Module) -> None:
        """Replace ``dense_resource`` constants whose bytes the file carries."""
        blobs: dict[int, A.Attr] = {}
        for attr, start, end in self.resource_uses:
            hexdata = self.resources.get(attr.name)
            if hexdata is None:
                continue
            try:  # the first 4 bytes of a resource blob are its alignment
                arr = literals.from_blob(f'"0x{hexdata[10:]}"', attr.type)
            except literals.LiteralError as err:
                self.error(f"resource '{attr.name}': {err}", start, end)
            blobs[id(attr)] = A.DenseElementsAttr(attr.type, arr)
        if not blobs:
            return
        for f in module.funcs:
            for op in walk(f.body) if f.body else []:
                for key, a in op.attrs.items():
                    if id(a) in blobs:
                        op.attrs[key] = blobs[id(a)]

    def _resolve_origins(self, module: Module) -> None:
        """Give ops whose ``loc(...)`` names a source position an ``origin`` Loc."""
        aliases = {k: str(v) for k, v in self.attr_aliases.items()}
        for f in module.funcs:
            for op in walk(f.body) if f.body else []:
                if op.src_loc is not None:
                    op.origin = resolve_origin(str(op.src_loc), aliases)

    def _parse_alias(self) -> None:
        name = self.advance()
        self.expect("=")
        if name.startswith("!"):
            self.type_aliases[name] = self.parse_type()
        else:
            self.attr_aliases[name] = self.parse_attr()

    def parse_module(self) -> Module:
        """``module [@name] [attributes {...}] { func... }``."""
        loc = self.loc()
        self.advance()
        name = self.advance()[1:] if self.kind == "SYMBOL" else None
        attrs = dict(self.parse_attr_dict()) if self.accept("attributes") else {}
        self.expect("{")
        funcs: list[Func] = []
        decls: list[Decl] = []
        while not self.accept("}"):
            if self.at("sdy.mesh"):
                decls.append(shardy.parse_mesh(self))
            elif self.at("func.func"):
                funcs.append(self.parse_func())
            else:
                self.fail("'func.func', 'sdy.mesh' or '}'")
        module = Module(name, attrs, funcs, loc, decls=decls)
        module.src_loc = self.parse_trailing_loc()
        return module

    def parse_func(self) -> Func:
        """``func.func [public|private] @name(args) [-> results] [attributes] {body}``."""
        loc = self.loc()
        self.advance()
        visibility = ""
        if self.text in ("public", "private", "nested"):
            visibility = self.advance()
        name = self.expect_kind("SYMBOL", "a function name")[1:]
        self.scopes.append({})
        entry = Block()
        args = self.paren_list(lambda: self._func_arg(entry))  # (type, attrs, loc)
        results: list[tuple[Type, A.DictAttr | None]] = []
        if self.accept("->"):
            if self.at("("):
                results = self.paren_list(self._func_result)
            else:  # a trailing loc(...) here is the function's own
                results = [self._func_result(with_loc=False)]
        attrs = dict(self.parse_attr_dict()) if self.accept("attributes") else {}
        body = None
        if self.at("{"):
            if len(entry.args) != len(args):
                self.error("a function with a body needs named arguments (%arg0: type)")
            body = self.parse_region(entry_block=entry)
        self.scopes.pop()
        src_loc = self.parse_trailing_loc()
        return Func(name, visibility, [a[0] for a in args], [a[1] for a in args],
                    [r[0] for r in results], [r[1] for r in results], attrs, body, loc,
                    [a[2] for a in args], src_loc)

    def _func_arg(self, block: Block) -> tuple[Type, A.DictAttr | None, A.Attr | None]:
        start = self.start
        if self.kind in ("BARE", "BANG", "("):  # a declaration lists types only
            t, attrs = self._func_result(with_loc=False)
            return t, attrs, self.parse_trailing_loc()
        name = self.expect_kind("VALUE", "an argument name like %arg0")
        self.expect(":")
        t = self.parse_type()
        attrs = A.DictAttr(tuple(self.parse_attr_dict())) if self.at("{") else None
        src_loc = self.parse_trailing_loc()
        self.define(name, Value(t, block, len(block.args), name[1:], self.loc(start)))
        block.args.append(self.scopes[-1][name])
        return t, attrs, src_loc

    def _func_result(self, with_loc: bool = True) -> tuple[Type, A.DictAttr | None]:
        """A result type with its attributes (a ``loc(...)`` in a list is skipped)."""
        t = self.parse_type()
        attrs = None
        if self.at("{") and self._attr_dict_ahead():
            attrs = A.DictAttr(tuple(self.parse_attr_dict()))
        if with_loc:
            self.parse_trailing_loc()
        return t, attrs

    def _attr_dict_ahead(self) -> bool:
        """At ``{``: True for an attribute dictionary, False for a function body."""
        first, second = self.peek_kinds(2)
        return first == "}" or (first in ("BARE", "STRING") and second in ("=", ",", "}"))

    # -- regions and blocks --------------------------------------------------------------
    @nested(3)
    def parse_region(self, entry_block: Block | None = None,
                     implicit_args: list[tuple[str, Type, Loc]] | None = None) -> Region:
        """``{ [^bb0(args):] ops ... }``; ``implicit_args`` name the entry block's args."""
        self.expect("{")
        self.scopes.append({})
        region = Region()
        block = entry_block or Block()
        for name, t, loc in implicit_args or []:
            self._block_arg(block, name, t, loc)
        if self.kind == "LABEL":
            self._block_header(block)
        region.blocks.append(block)
        while not self.accept("}"):
            if self.kind == "EOF":
                self.fail("'}' to close the region")
            if self.kind == "LABEL":
                block = Block()
                self._block_header(block)
                region.blocks.append(block)
                continue
            op = self.parse_op()
            if op is not None:
                block.ops.append(op)
        self.scopes.pop()
        return region

    def _block_header(self, block: Block) -> None:
        block.label = self.advance()
        if self.accept("("):
            while not self.accept(")"):
                start = self.start
                name = self.expect_kind("VALUE", "a block argument")
                self.expect(":")
                t = self.parse_type()
                self.parse_trailing_loc()
                self._block_arg(block, name, t, self.loc(start, start + len(name)))
                if not self.at(")"):
                    self.expect(",", "',' or ')'")
        self.expect(":", "':' after the block label")

    def _block_arg(self, block: Block, name: str, t: Type, loc: Loc) -> None:
        v = Value(t, block, len(block.args), name[1:], loc)
        block.args.append(v)
        self.define(name, v)

    # -- values --------------------------------------------------------------------------
    def define(self, name: str, value: Value, loc: Loc | None = None) -> None:
        """Bind ``name`` (written at ``loc``, default the value's) in the innermost
        scope; redefinitions are errors."""
        for scope in self.scopes:
            if name in scope:
                raise CompileError.at(loc or value.loc, f"redefinition of SSA value '{name}'",
                                      note(scope[name].loc, "previously defined here"))
        self.scopes[-1][name] = value

    def use(self) -> Value:
        """Consume a ``%value`` use and return the value it names."""
        if self.kind != "VALUE":
            self.fail("an SSA value like %0")
        name = self.text
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                self.advance()
                return v
        self.error(f"use of undefined value '{name}'")

    def use_list(self) -> list[Value]:
        """``%a, %b, ...`` (stops before a ``,`` not followed by a value)."""
        out = [self.use()]
        while self.at(",") and self.peek_kind() == "VALUE":
            self.advance()
            out.append(self.use())
        return out

    def check_types(self, values: list[Value], types: list[Type] | tuple[Type, ...],
                    loc: Loc) -> None:
        """Report a mismatch between operands' types and the types written for them."""
        if len(values) != len(types):
            raise CompileError.at(loc, f"{len(types)} operand types given for "
                                       f"{len(values)} operands")
        for v, t in zip(values, types, strict=False):
            if v.type != t:
                raise CompileError.at(loc, f"use of value '%{v.name}' expects different type "
                                           f"than prior uses: '{t}' vs '{v.type}'")

    # -- operations ----------------------------------------------------------------------
    def parse_op(self) -> Op | None:
        """One operation with its result bindings and trailing location; None for a
        Shardy annotation, whose results are bound to its operands instead."""
        names: list[tuple[str, int, int]] = []
        if self.kind == "VALUE":
            names = self._result_names()
        start = self.start
        spelled = self.text.strip('"') if self.kind in ("STRING", "BARE") else ""
        if spelled in shardy.ANNOTATIONS:
            values = shardy.parse_annotation(self, spelled)
            self.parse_trailing_loc()
            self._bind_results(spelled, values, names, self.loc(start, self.prev_end),
                               own=False)
            return None
        if self.kind == "STRING":
            op = self.parse_generic()
        elif self.kind == "BARE":
            name = ALIASES.get(self.text, self.text)
            opdef = OPS.get(name)
            if opdef is None or opdef.syntax == "generic":
                self._unknown_op(name)
            self.advance()
            loc = self.loc(start, self.prev_end)
            if opdef.syntax.endswith("!"):
                op = custom.PARSERS[opdef.syntax](self, opdef, loc)
            else:
                op = formats.parse_pretty(self, opdef, loc)
        else:
            self.fail("an operation")
        op.src_loc = self.parse_trailing_loc()
        self._bind_results(op.name, op.results, names, op.loc)
        return op

    def _unknown_op(self, name: str) -> NoReturn:
        if name in OPS:
            self.error(f"'{name}' has no pretty form here; use the generic form")
        if name.startswith("sdy."):
            self.error(f"'{name}' is not supported (of Shardy's ops only the sharding "
                       f"annotations are read, as the identity: "
                       f"{', '.join(sorted(shardy.ANNOTATIONS))})")
        if not name.startswith(KNOWN_DIALECTS):
            self.error(f"unknown operation '{name}' (only stablehlo, chlo, func, check "
                       f"and interpreter ops are supported)")
        self.error(f"unknown operation '{name}'")

    def _result_names(self) -> list[tuple[str, int, int]]:
        names = []
        while True:
            start = self.start
            name = self.expect_kind("VALUE", "a result name")
            count = self.parse_int() if self.accept(":") else 1
            names.append((name, count, start))
            if not self.accept(","):
                break
        self.expect("=")
        return names

    def _bind_results(self, op_name: str, results: list[Value],
                      names: list[tuple[str, int, int]], loc: Loc, own: bool = True) -> None:
        """Bind the result ``names`` to ``results``; ``own``: they are the op's new
        values (named and located here), else values defined before (an annotation's
        operands)."""
        total = sum(n[1] for n in names)
        if total != len(results):
            raise CompileError.at(loc, f"'{op_name}' has {len(results)} results but "
                                       f"{total} names are bound")
        i = 0
        for name, count, start in names:
            where = self.loc(start, start + len(name))
            for k in range(count):
                v = results[i]
                if own:
                    v.name = name[1:] if count == 1 else f"{name[1:]}#{k}"
                    v.loc = where
                self.define(f"{name}#{k}" if count > 1 else name, v, where)
                if k == 0 and count > 1:
                    self.define(name, v, where)
                i += 1

    def parse_generic(self) -> Op:
        """``"dialect.op"(operands) <{props}> ({regions}) {attrs} : (types) -> types``."""
        name = self.text[1:-1]
        if name not in OPS:
            self._unknown_op(name)
        loc = self.loc(self.start, self.end)
        operands, attrs, regions, ftype = self.generic_parts()
        return self.make_op(name, operands, list(ftype.results), attrs, regions, loc)

    def generic_parts(self) -> tuple[list[Value], dict[str, A.Attr], list[Region],
                                     FunctionType]:
        """What follows the name (at it) of an op in the generic form: operands,
        properties and attributes, regions and the op's function type (checked against
        the operands)."""
        self.advance()
        operands = self.paren_list(self.use)
        attrs: dict[str, A.Attr] = {}
        if self.accept("<"):
            attrs.update(self.parse_attr_dict())
            self.expect(">")
        regions = []
        if self.at("(") and self.peek_kind() == "{":
            regions = self.paren_list(self.parse_region)
        if self.at("{"):
            attrs.update(self.parse_attr_dict())
        self.expect(":", "':' and the op's function type")
        tstart = self.start
        ftype = self.parse_type()
        if not isinstance(ftype, FunctionType):
            self.error("expected a function type like (T) -> T", tstart, self.prev_end)
        self.check_types(operands, ftype.inputs, self.loc(tstart, self.prev_end))
        return operands, attrs, regions, ftype

    def make_op(self, name: str, operands: list[Value], result_types: list[Type],
                attrs: dict[str, A.Attr], regions: list[Region], loc: Loc) -> Op:
        """Build an op (normalising array-like attributes) and its result values."""
        opdef = OPS.get(name)
        for key, a in attrs.items():
            kind = ATTR_KINDS.get(key)
            problem = attr_kind_problem(kind, a) if opdef and key in opdef.attrs else None
            if problem:
                raise CompileError.at(loc, f"'{name}': attribute '{key}' must be {problem}, "
                                           f"got {str(a)[:60]}")
            problem = _dims_problem(key, a) if opdef and key in opdef.attrs else None
            if problem:
                raise CompileError.at(loc, f"'{name}': attribute '{key}' {problem}")
            if isinstance(a, A.DenseElementsAttr) and kind in ("i64s", "i1s"):
                elem = "i1" if a.type.element.__str__() == "i1" else "i64"
                attrs[key] = A.DenseArrayAttr(elem, tuple(a.array.reshape(-1).tolist()))
        op = Op(name, operands, result_types, attrs, regions, loc)
        op.results = [Value(t, op, i, "", loc) for i, t in enumerate(result_types)]
        return op

    def parse_trailing_loc(self) -> A.Attr | None:
        """An optional ``loc(...)``."""
        if self.at("loc") and self.peek_kind() == "(":
            self.advance()
            return A.OpaqueAttr("loc" + self.balanced())
        return None


_ARRAY_FORMS = {"i64s": "an array<i64: ...>", "i1s": "an array<i1: ...>"}
_MAX_ARRAY = 1 << 16  # entries in a dimension-like attribute (one per tensor dimension)


def attr_kind_problem(kind: str | None, a: A.Attr) -> str | None:
    """What attribute ``a`` should have been for its ``kind`` in the op table, or None.

    Checked while parsing (the verifier checks the attribute classes; an array of the
    wrong element kind, such as ``array<f32: 1.0>`` for a permutation, stops here)."""
    if kind in _ARRAY_FORMS:
        values = _array_values(a)
        want_bool = kind == "i1s"
        if values is None or not all(isinstance(v, bool) == want_bool
                                     and isinstance(v, int) for v in values):
            return _ARRAY_FORMS[kind]
        return None
    if kind in ("i64", "i32"):
        ok = isinstance(a, A.IntAttr) and not isinstance(a.value, bool)
        return None if ok else "an integer"
    if kind == "bool" and not isinstance(a, A.BoolAttr):
        return "true or false"
    return None


def _array_values(a: A.Attr) -> list[object] | None:
    """The entries of an array-like attribute (None when it is not one, or too long)."""
    if isinstance(a, A.DenseArrayAttr):
        values: list[object] = list(a.values)
    elif isinstance(a, A.ListAttr):
        values = [x.value if isinstance(x, (A.IntAttr, A.BoolAttr)) else x for x in a.items]
    elif isinstance(a, A.DenseElementsAttr) and a.array.dtype.kind in "biu":
        if a.array.size > _MAX_ARRAY:
            return None
        values = a.array.reshape(-1).tolist()
    else:
        return None
    return values if len(values) <= _MAX_ARRAY else None


_DIM_STRUCTS = {"dot_dimension_numbers": "stablehlo.dot",
                "scatter_dimension_numbers": "stablehlo.scatter",
                "dimension_numbers": "stablehlo.gather"}  # convolution's is ConvDimsAttr


def _dims_problem(key: str, a: A.Attr) -> str | None:
    """What is wrong with a dimension-numbers struct (named ``key``), or None."""
    want = _DIM_STRUCTS.get(key)
    if want is None or (key == "dimension_numbers" and not isinstance(a, A.StructAttr)):
        return None
    if not isinstance(a, A.StructAttr) or a.name != want:
        return f"must be a #{want}<...> attribute, got {str(a)[:60]}"
    for field, v in a.fields:
        items = v.items if isinstance(v, A.ListAttr) else (v,)
        if not all(isinstance(x, A.IntAttr) for x in items):
            return f"field '{field}' must hold integers, got {str(v)[:60]}"
    return None
