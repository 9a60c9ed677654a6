"""Parsing of MLIR attributes as StableHLO producers print them."""

from __future__ import annotations

import re

from frontend.ir import attrs as A
from frontend.ir.types import FloatType, IntegerType, TensorType, Type
from frontend.syntax import literals
from frontend.syntax.lexer import nested
from frontend.syntax.typeparse import TypeParser, int_value, short

_DENSE_BODY = re.compile(r"dense<([^>]*)>")
_CONV_LABELS = {"b", "f", "i", "o"}
_INT_ELEMENT = re.compile(r"(u|s)?i(8|16|32|64)\Z")


class AttrParser(TypeParser):
    """Attributes; the op parser builds on this."""

    attr_aliases: dict[str, A.Attr]
    resource_uses: list[tuple[A.DenseResourceAttr, int, int]]

    # -- attributes ----------------------------------------------------------------------
    @nested()
    def parse_attr(self) -> A.Attr:
        """Any attribute value."""
        kind, text = self.kind, self.text
        if kind == "BARE":
            return self._bare_attr(text)
        if kind in ("INT", "HEX", "FLOAT"):
            return self._number_attr()
        if kind == "STRING":
            self.advance()
            if self.at(":") and self.peek_kind() in ("BARE", "BANG"):
                self.advance()
                self.parse_type()
            return A.StrAttr(text[1:-1])
        if kind == "[":
            return A.ListAttr(tuple(self.bracket_list(self.parse_attr)))
        if kind == "{":
            return A.DictAttr(tuple(self.parse_attr_dict()))
        if kind == "SYMBOL":
            self.advance()
            while self.at(":") and self.peek_kind() == ":":
                self.advance()
                self.advance()
                text += "::" + self.expect_kind("SYMBOL", "a symbol")
            return A.SymbolRefAttr(text[1:])
        if kind == "HASH":
            return self.parse_hash_attr()
        if kind in ("BANG", "("):
            return A.TypeAttr(self.parse_type())
        self.fail("an attribute value")

    def _bare_attr(self, text: str) -> A.Attr:
        if text in ("true", "false"):
            self.advance()
            return A.BoolAttr(text == "true")
        if text == "unit":
            self.advance()
            return A.UnitAttr()
        if text == "dense":
            return self.parse_dense()
        if text == "array":
            return self._parse_dense_array()
        if text == "dense_resource":
            return self._parse_dense_resource()
        if text in ("affine_map", "sparse", "opaque", "loc", "distinct"):
            self.advance()
            return A.OpaqueAttr(text + self.balanced())
        return A.TypeAttr(self.parse_type())

    def _number_attr(self) -> A.Attr:
        kind, text, start = self.kind, self.text, self.start
        self.advance()
        t: Type | None = None
        if self.at(":") and self.peek_kind() in ("BARE", "BANG"):
            self.advance()
            t = self.parse_type()
        if isinstance(t, FloatType) or kind == "FLOAT":
            if kind == "HEX" and isinstance(t, FloatType):
                try:
                    arr = literals.convert([text], t)
                except literals.LiteralError as err:
                    self.error(str(err), start, self.prev_end)
                return A.FloatAttr(float(arr[0]), t)
            return A.FloatAttr(float(text), t)
        value = int_value(text)
        width = t.width if isinstance(t, IntegerType) else 64
        if not -(1 << (width - 1)) <= value < 1 << width:
            self.error(f"integer {short(text)} does not fit in {t or 'i64'}", start,
                       start + len(text))
        return A.IntAttr(value, t)

    def parse_dense(self) -> A.DenseElementsAttr:
        """``dense<...> : tensor<...>``."""
        start = self.start
        m = _DENSE_BODY.match(self.src, start, self.stop)
        if m is None:
            self.fail("dense<...>")
        self.reset(m.end())
        body = m.group(1).strip()
        self.expect(":", "':' and the type of the dense literal")
        tstart = self.start
        t = self.parse_type()
        if not isinstance(t, TensorType):
            self.error(f"dense literal needs a tensor type, got {t}", tstart, self.prev_end)
        try:
            if body.startswith('"'):
                arr = literals.from_blob(body, t)
            else:
                arr = literals.to_array(*literals.parse_body(body), t)
        except (literals.LiteralError, ValueError, OverflowError) as err:
            self.error(str(err), start, m.end())
        return A.DenseElementsAttr(t, arr)

    def _parse_dense_resource(self) -> A.Attr:
        """``dense_resource<name> : T``; the bytes come from the file's ``{-# ... #-}``."""
        start = self.start
        self.advance()
        self.expect("<")
        if self.kind not in ("BARE", "STRING"):
            self.fail("a resource name")
        name = self.advance()
        self.expect(">")
        self.expect(":", "':' and the type of the resource")
        t = self.parse_type()
        if not isinstance(t, TensorType):
            self.error(f"dense_resource needs a tensor type, got {t}", start, self.prev_end)
        attr = A.DenseResourceAttr(name, t)
        self.resource_uses.append((attr, start, self.prev_end))
        return attr

    def _parse_dense_array(self) -> A.DenseArrayAttr:
        self.advance()
        self.expect("<")
        elem = self.expect_kind("BARE", "an element type")
        values: list[int | float | bool] = []
        if self.accept(":"):
            values.append(self._array_value(elem))
            while self.accept(","):
                values.append(self._array_value(elem))
        self.expect(">", "',' or '>'")
        return A.DenseArrayAttr(elem, tuple(values))

    def _array_value(self, elem: str) -> int | float | bool:
        if elem == "i1":
            if self.text not in ("true", "false"):
                self.fail("true or false")
            return self.advance() == "true"
        if elem.startswith(("f", "bf")):
            if self.kind not in ("INT", "FLOAT"):
                self.fail("a number")
            return float(self.advance())
        m = _INT_ELEMENT.match(elem)
        if m is None:
            self.error(f"unsupported dense array element type '{elem}'")
        width = int(m.group(2))
        if m.group(1) == "u":
            return self.parse_int(0, (1 << width) - 1)
        return self.parse_int(-(1 << (width - 1)), (1 << (width - 1)) - 1)

    def parse_attr_dict(self) -> list[tuple[str, A.Attr]]:
        """``{name = value, flag, ...}``."""
        self.expect("{")
        items: list[tuple[str, A.Attr]] = []
        if self.accept("}"):
            return items
        while True:
            if self.kind not in ("BARE", "STRING"):
                self.fail("an attribute name")
            name = self.advance()
            items.append((name, self.parse_attr() if self.accept("=") else A.UnitAttr()))
            if not self.accept(","):
                break
        self.expect("}", "',' or '}'")
        return items

    def parse_hash_attr(self) -> A.Attr:
        """``#stablehlo<kind V>``, ``#stablehlo.conv<...>``, structs, aliases, others."""
        start, name = self.start, self.text
        self.advance()
        if not self.at("<"):
            if name in self.attr_aliases:
                return self.attr_aliases[name]
            return A.OpaqueAttr(name)
        if name == "#stablehlo.conv":
            return self._conv_attr(start)
        dialect = name[1:]
        if "." not in dialect and self.peek_kind() == "BARE":
            self.advance()
            kind = self.expect_kind("BARE", "an enum kind")
            if self.kind == "BARE":
                value = self.advance()
                self.expect(">")
                return A.EnumAttr(kind, value, dialect)
            self.reset(start)
            self.advance()
        pos = self.start
        self.advance()
        if self.kind == "BARE" and self.peek_kind() == "=":
            fields: list[tuple[str, A.Attr]] = []
            while self.kind == "BARE" and self.peek_kind() == "=":
                key = self.advance()
                self.advance()
                fields.append((key, self.parse_attr()))
                if not self.accept(","):
                    break
            self.expect(">", "',' or '>'")
            return A.StructAttr(dialect, tuple(fields))
        self.reset(pos)
        return A.OpaqueAttr(name + self.balanced())

    def _conv_attr(self, start: int) -> A.ConvDimsAttr:
        self.expect("<")
        if self.at("raw"):
            self.error("the #stablehlo.conv<raw ...> form is not supported", start, self.end)
        dims = self.parse_conv_dims()
        self.expect(">")
        return dims

    def parse_conv_dims(self) -> A.ConvDimsAttr:
        """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``."""
        lhs = self.bracket_list(self._conv_label)
        self.expect("x")
        rhs = self.bracket_list(self._conv_label)
        self.expect("->")
        out = self.bracket_list(self._conv_label)
        return A.ConvDimsAttr(tuple(lhs), tuple(rhs), tuple(out))

    def _conv_label(self) -> str:
        if self.kind == "INT":
            value = int_value(self.text)
            if not 0 <= value < 1 << 31:
                self.error(f"spatial dimension label {short(self.text)} is out of range")
            self.advance()
            return str(value)  # canonical: no leading zeros
        if self.kind == "BARE" and self.text in _CONV_LABELS:
            return self.advance()
        self.fail("a dimension label (b, f, i, o or a spatial index)")
