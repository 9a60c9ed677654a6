"""Parsing of MLIR types, plus the small token helpers every parser layer uses."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TypeVar

from frontend.ir.quant import Problem, element_problem, tensor_problem
from frontend.ir.types import (
    FLOAT_NAMES,
    ComplexType,
    ElementType,
    FloatType,
    FunctionType,
    IndexType,
    IntegerType,
    QuantizedType,
    TensorType,
    TokenType,
    TupleType,
    Type,
)
from frontend.syntax.lexer import Cursor, nested

_DIMS = re.compile(r"(?:(?:\d+|\?)x)+")
_INT_TYPE = re.compile(r"(u|s)?i(\d{1,5})\Z")
_QUANT_UNSIGNED = re.compile(r"u(2|4|8|16|32)\Z")  # the quant dialect's ``u8``
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
T = TypeVar("T")
MAX_ELEMENTS = 1 << 62  # element counts and byte sizes stay within int64
_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}


def int_value(text: str) -> int:
    """The value of an INT or HEX token (leading zeros allowed, as MLIR does).

    A literal of more than 40 significant digits, beyond every integer type (and
    beyond what ``int()`` converts), reads as 2^168 so that range checks report it.
    """
    body = text.lstrip("+-")
    hexa = body.startswith("0x")
    digits = (body[2:] if hexa else body).lstrip("0") or "0"
    value = 1 << 168 if len(digits) > 40 else int(digits, 16 if hexa else 10)
    return -value if text.startswith("-") else value


def short(text: str) -> str:
    """``text`` cut to at most 40 characters for a diagnostic."""
    return text if len(text) <= 40 else f"{text[:20]}...{text[-8:]} ({len(text)} characters)"


class TypeParser(Cursor):
    """Types and shared helpers; :class:`AttrParser` builds on this."""

    type_aliases: dict[str, Type]

    # -- types ---------------------------------------------------------------------------
    @nested()
    def parse_type(self) -> Type:
        """Any type."""
        start, kind, text = self.start, self.kind, self.text
        if kind == "(":
            return self.parse_function_type()
        if kind == "BARE":
            if text == "tensor":
                return self.parse_tensor_type()
            if text == "tuple":
                self.advance()
                return TupleType(tuple(self._angle_list(self.parse_type)))
            return self.parse_element_type()
        if kind == "BANG":
            if text == "!stablehlo.token":
                self.advance()
                return TokenType()
            if text in self.type_aliases:
                self.advance()
                return self.type_aliases[text]
            if text == "!quant.uniform":
                return self.parse_element_type()
            self.error(f"unknown type '{text}'", start, self.end)
        self.fail("a type")

    def parse_function_type(self) -> FunctionType:
        """``(T, ...) -> T`` or ``(T, ...) -> (T, ...)``."""
        inputs = self.paren_list(self.parse_type)
        self.expect("->")
        return FunctionType(tuple(inputs), tuple(self.parse_result_types()))

    def parse_result_types(self) -> list[Type]:
        """``T`` or ``(T, ...)`` after an arrow."""
        if self.at("("):
            return self.paren_list(self.parse_type)
        return [self.parse_type()]

    def parse_tensor_type(self) -> TensorType:
        """``tensor<2x?xf32>`` with an optional bounds encoding."""
        start = self.start
        self.advance()
        self.expect("<")
        dims_start = self.start
        dims = self.scan(_DIMS) or ""
        shape = tuple(None if d == "?" else int_value(d) for d in dims.split("x")[:-1])
        if math.prod(d for d in shape if d is not None) > MAX_ELEMENTS:
            self.error("tensor type has more than 2^62 elements", dims_start, self.prev_end)
        if self.at("*"):
            self.error("unranked tensors are not StableHLO")
        element = self.parse_element_type()
        bounds = None
        if self.accept(","):
            bounds = self._parse_bounds(len(shape))
        self.expect(">", "'>' to close the tensor type")
        t = TensorType(shape, element, bounds)
        self._quant_rule(tensor_problem(t), start)
        return t

    def _parse_bounds(self, rank: int) -> tuple[int | None, ...]:
        start, name = self.start, self.text
        if name == "#stablehlo.bounds":
            self.advance()
            bounds = self._angle_list(self._bound)
        elif name == "#stablehlo.type_extensions":
            self.advance()
            self.expect("<")
            self.expect("bounds")
            self.expect("=")
            bounds = self.bracket_list(self._bound)
            self.expect(">")
        else:
            self.fail("a #stablehlo.bounds<...> encoding")
        if len(bounds) != rank:
            self.error(f"bounds encoding has {len(bounds)} entries for rank {rank}",
                       start, self.prev_end)
        return tuple(bounds)

    def _bound(self) -> int | None:
        if self.accept("?"):
            return None
        return self.parse_int()

    @nested()
    def parse_element_type(self) -> ElementType:
        """``f32``, ``i8``, ``ui4``, ``complex<f64>``, ``index``, ``!quant.uniform<...>``."""
        text, start = self.text, self.start
        if self.kind == "BANG" and text == "!quant.uniform":
            self.advance()
            return self._parse_quant(start)
        if self.kind != "BARE":
            self.fail("an element type")
        self.advance()
        if text in FLOAT_NAMES:
            return FloatType(text)
        m = _INT_TYPE.match(text)
        if m:
            width = int(m.group(2))
            if width not in (1, 2, 4, 8, 16, 32, 64) or (m.group(1) == "u" and width == 1):
                self.error(f"unsupported integer type '{text}'", start, self.prev_end)
            return IntegerType(width, m.group(1) == "u")
        if text == "complex":
            self.expect("<")
            inner = self.parse_element_type()
            if not (isinstance(inner, FloatType) and inner.name in ("f32", "f64")):
                self.error(f"complex element type must be f32 or f64, got {inner}", start)
            self.expect(">")
            return ComplexType(inner)
        if text == "index":
            return IndexType()
        self.error(f"unknown element type '{text}'", start, self.prev_end)

    def _quant_rule(self, problem: Problem, start: int) -> None:
        """Report a broken quantized-type rule over the type's text."""
        if problem is not None:
            rule, message = problem
            self.error(f"'!quant.uniform' ({rule}): {message}", start, self.prev_end)

    def _parse_quant(self, start: int) -> QuantizedType:
        self.expect("<")
        short = _QUANT_UNSIGNED.match(self.text) if self.kind == "BARE" else None
        if short:
            self.advance()
            storage: Type = IntegerType(int(short.group(1)), unsigned=True)
        else:
            storage = self.parse_element_type()
        if not isinstance(storage, IntegerType):
            self.error("quantized storage type must be an integer type")
        lo = hi = None
        if self.accept("<"):
            lo = self.parse_int()
            self.expect(":")
            hi = self.parse_int()
            self.expect(">")
        self.expect(":")
        expressed = self.parse_element_type()
        if not isinstance(expressed, FloatType):
            self.error("quantized expressed type must be a float type")
        axis = None
        if self.accept(":"):
            axis = self.parse_int()
        self.expect(",")
        if axis is not None:
            self.expect("{")
            pairs = [self._quant_pair()]
            while self.accept(","):
                pairs.append(self._quant_pair())
            self.expect("}")
        else:
            pairs = [self._quant_pair()]
        self.expect(">")
        scales = tuple(p[0] for p in pairs)
        zps = tuple(p[1] for p in pairs)
        q = QuantizedType(storage, expressed, scales, zps, axis, lo, hi)
        self._quant_rule(element_problem(q), start)
        return q

    def _quant_pair(self) -> tuple[float, int]:
        if self.kind not in ("FLOAT", "INT"):
            self.fail("a quantization scale")
        scale = float(self.advance())
        zp = self.parse_int() if self.accept(":") else 0
        return scale, zp

    # -- small pieces --------------------------------------------------------------------
    def parse_int(self, lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> int:
        """A (possibly negative) integer literal in ``[lo, hi]`` (default: i64's range)."""
        if self.kind not in ("INT", "HEX"):
            self.fail("an integer")
        start = self.start
        value = int_value(self.advance())
        if not lo <= value <= hi:
            self.error(f"integer {short(self.src[start:self.prev_end])} is out of range "
                       f"[{lo}, {hi}]", start, self.prev_end)
        return value

    def paren_list(self, item: Callable[[], T]) -> list[T]:
        """``( item, ... )`` possibly empty."""
        return self._delimited("(", ")", item)

    def bracket_list(self, item: Callable[[], T]) -> list[T]:
        """``[ item, ... ]`` possibly empty."""
        return self._delimited("[", "]", item)

    def _angle_list(self, item: Callable[[], T]) -> list[T]:
        return self._delimited("<", ">", item)

    def _delimited(self, open_: str, close: str, item: Callable[[], T]) -> list[T]:
        self.expect(open_)
        out: list[T] = []
        if not self.accept(close):
            out.append(item())
            while self.accept(","):
                out.append(item())
            self.expect(close, f"',' or '{close}'")
        return out

    def int_list(self) -> list[int]:
        """``[1, 2, 3]``."""
        return self.bracket_list(self.parse_int)

    def balanced(self) -> str:
        """Raw text of a balanced ``<...>``/``(...)`` group starting at the current token."""
        start = self.start
        stack = []
        i = start
        src = self.src
        while i < self.stop:
            c = src[i]
            if c == '"':
                m = _STRING.match(src, i)
                i = m.end() if m else i + 1
                continue
            if c in _OPEN:
                stack.append(_OPEN[c])
            elif stack and c == stack[-1] and not (c == ">" and src[i - 1] == "-"):
                stack.pop()
                if not stack:
                    self.reset(i + 1)
                    return src[start:i + 1]
            i += 1
        self.error("unbalanced brackets", start, start + 1)
