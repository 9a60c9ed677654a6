"""Numeric literals of the tensor language: integers, decimal and hex floats, complex.

Integers must lie in ``-2^63+1 .. 2^63-1`` (the reference's range); floating point
constants are C (``strtod``) syntax and must be finite doubles, with the extension
that ``inf``, ``-inf`` and ``nan`` (which ``strtod`` also reads) name the special
values so that every double can be printed and read back.
"""

from __future__ import annotations

import math
import re

from tensorlang.diagnostics import CompileError, Loc

INT_MIN = -(2**63) + 1
"""The smallest integer constant the reference allows."""
INT_MAX = 2**63 - 1
"""The largest integer constant the reference allows."""

_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str, loc: Loc) -> int:
    """The integer written as ``text``; raise at ``loc`` when it is out of range."""
    digits = text.lstrip("+-").lstrip("0") or "0"
    value = int(digits, 10) if len(digits) <= 19 else INT_MAX + 1  # int() caps digits
    if text.startswith("-"):
        value = -value
    if not INT_MIN <= value <= INT_MAX:
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        raise CompileError.at(loc, f"integer constant {shown} is out of range "
                              f"(it must lie in -2^63+1..2^63-1)")
    return value


def parse_number(text: str, loc: Loc) -> int | float:
    """An integer or floating point constant written as ``text`` (NUMBER token)."""
    if _DECIMAL_INT.fullmatch(text):
        return parse_int(text, loc)
    body = text.lstrip("+-").lower()
    if body in ("inf", "nan"):
        return float(text)
    if body.startswith("0x"):
        return _hex_float(text, loc)
    value = float(text)
    if math.isinf(value):
        raise CompileError.at(loc, f"floating constant {text} is out of the range of double "
                              "precision numbers")
    return value


def _hex_float(text: str, loc: Loc) -> float:
    lowered = text.lower()
    if "." not in lowered and "p" not in lowered:
        raise CompileError.at(loc, f"invalid constant {text}: hexadecimal integers are not "
                              "supported (a hexadecimal float needs '.' or an exponent 'p')")
    try:
        return float.fromhex(text)
    except OverflowError:
        raise CompileError.at(loc, f"floating constant {text} is out of the range of double "
                              "precision numbers") from None


def float_text(value: float) -> str:
    """``value`` spelled so that :func:`parse_number` reads back exactly the same double."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


def literal_text(value: bool | int | float | complex) -> str:
    """The canonical spelling of a constant's value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, complex):
        return f"[{float_text(value.real)}, {float_text(value.imag)}]"
    return float_text(value)
