"""Lark's syntax errors turned into compiler diagnostics.

``k.tl:3:14: error: expected ',' but found '%x'``: terminal names become the text a
user writes (``'memref<'``, ``local identifier``), the instruction keywords collapse
into "an instruction" and the type keywords into "a type", and a word where an
instruction or a type is expected is reported as an unknown instruction or type.
"""

from __future__ import annotations

import re

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr, TerminalDef

from tensorlang.diagnostics import CompileError, Loc, Source

_INSTRUCTION_TERMINALS = {
    "MODDED", "NULLARY", "_ALLOCA", "_BARRIER", "_CAST", "_CONSTANT", "_EXPAND", "_FUSE",
    "_FOREACH", "_FOR", "_IF", "_LOAD", "_LIFETIME_STOP", "_PARALLEL", "_SIZE", "_STORE",
    "_SUBVIEW", "_YIELD",
}
_TYPE_TERMINALS = {"SCALAR", "_VOID", "_MEMREF_LT", "_GROUP_LT"}
_NAMES = {
    "LOCAL_ID": "a local identifier ('%name')", "GLOBAL_ID": "a global identifier ('@name')",
    "INT": "an integer", "NUMBER": "a number", "BOOL": "'true' or 'false'",
    "SCALAR": "a scalar type", "ADDRSPACE": "'global' or 'local'", "MOD": "a modifier",
    "QMARK": "'?'", "$END": "end of input", "MODDED": "an instruction", "NULLARY":
    "an instruction",
}
_TYPE_WORD = re.compile(r"[A-Za-z_]+[0-9]*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FOUND = re.compile(r"[%@.]?[A-Za-z0-9_]+(\.[0-9]+)?|->|\S")


def convert(error: UnexpectedInput, source: Source,
            terminals: dict[str, TerminalDef]) -> CompileError:
    """The diagnostic for lark's ``error`` while parsing ``source``."""
    pos = _position(error, source)
    line, col = _line_col(source.text, pos)
    found, length = _found(source.text, pos)
    message = _message(_expected(error), found, terminals)
    if message.startswith("unknown type"):  # 'f16' of 'memref<f16x4>'
        word = _TYPE_WORD.match(source.text, pos)
        if word:
            length = len(word.group(0))
            message = message.replace(found, f"'{word.group(0)}'", 1)
    loc = Loc(source.name, line, col, line, col + length, source)
    return CompileError.at(loc, message)


def _position(error: UnexpectedInput, source: Source) -> int:
    if isinstance(error, UnexpectedEOF):
        return len(source.text)
    if isinstance(error, UnexpectedToken) and error.token.type == "$END":
        return len(source.text)
    pos = error.pos_in_stream
    return len(source.text) if pos is None else pos


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _found(text: str, pos: int) -> tuple[str, int]:
    if pos >= len(text):
        return "end of input", 1
    match = _FOUND.match(text, pos)
    token = match.group(0) if match else text[pos]
    return f"'{token}'", len(token)


def _expected(error: UnexpectedInput) -> set[str]:
    interactive = getattr(error, "interactive_parser", None)
    if interactive is not None:  # exact: LALR lookaheads are merged across contexts
        try:
            return set(interactive.accepts())
        except Exception:  # noqa: BLE001 - fall back to lark's own (coarser) set
            pass
    if isinstance(error, UnexpectedToken):
        return set(error.expected)
    if isinstance(error, UnexpectedCharacters):
        return set(error.allowed or ())
    if isinstance(error, UnexpectedEOF):
        return set(error.expected)
    return set()


def _message(expected: set[str], found: str, terminals: dict[str, TerminalDef]) -> str:
    word = _WORD.fullmatch(found.strip("'")) is not None
    if expected & _INSTRUCTION_TERMINALS:
        if word:
            return f"unknown instruction {found}"
        expected = (expected - _INSTRUCTION_TERMINALS) | {"MODDED"}
    if expected & _TYPE_TERMINALS and len(expected & _TYPE_TERMINALS) > 1:
        if word and not expected & {"LOCAL_ID", "INT", "NUMBER"}:
            return f"unknown type {found}"
        expected = (expected - _TYPE_TERMINALS) | {"_TYPE"}
    elif "SCALAR" in expected and word:
        return f"unknown type {found} (expected a scalar type)"
    names = sorted({_friendly(name, terminals) for name in expected})
    return f"expected {_join(names)} but found {found}"


def _friendly(name: str, terminals: dict[str, TerminalDef]) -> str:
    if name == "_TYPE":
        return "a type"
    if name in _NAMES:
        return _NAMES[name]
    terminal = terminals.get(name)
    if terminal is not None and isinstance(terminal.pattern, PatternStr):
        return f"'{terminal.pattern.value}'"
    if name.startswith("_"):
        return f"'{name[1:].lower()}'"
    return name.lower()


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return names[0] if names else "something else"
    if len(names) > 6:
        return "one of " + ", ".join(names[:6]) + ", ..."
    return ", ".join(names[:-1]) + " or " + names[-1]
