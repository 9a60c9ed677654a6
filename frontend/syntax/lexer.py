"""On-demand MLIR tokenizer with source positions and located parse errors.

The parser pulls one token at a time; context-sensitive pieces (tensor shapes such
as ``2x?x3x``, ``dense<...>`` bodies) are scanned directly from the text with
:meth:`Cursor.scan`.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from typing import Concatenate, NoReturn, ParamSpec, TypeVar

from tensorlang.diagnostics import CompileError, Loc, Source

_SKIP = re.compile(r"(?:\s+|//[^\n]*)*")
_TOKEN = re.compile(
    r"(?P<META>\{-#.*?#-\})"
    r"|(?P<VALUE>%[\w$.\-]+(?:#\d+)?)"
    r'|(?P<SYMBOL>@(?:"(?:[^"\\\n]|\\.)*"|[\w$.\-]+))'
    r"|(?P<LABEL>\^[\w$.\-]+)"
    r"|(?P<HASH>#[A-Za-z_][\w$.\-]*)"
    r"|(?P<BANG>![A-Za-z_][\w$.\-]*)"
    r'|(?P<STRING>"(?:[^"\\\n]|\\.)*")'
    r"|(?P<HEX>0x[0-9a-fA-F]+)"
    r"|(?P<FLOAT>[-+]?\d+\.\d*(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+)"
    r"|(?P<INT>[-+]?\d+)"
    r"|(?P<BARE>[A-Za-z_][\w$.]*)"
    r"|(?P<ARROW>->)"
    r"|(?P<PUNCT>[(){}\[\]<>,=:*?+\-|])",
    re.DOTALL,
)
EOF_KIND = "EOF"
MAX_NESTING = 120  # levels of types, attributes and regions (3 per region) in each other
C = TypeVar("C", bound="Cursor")
P = ParamSpec("P")
R = TypeVar("R")


def nested(weight: int = 1) -> Callable[[Callable[Concatenate[C, P], R]],
                                        Callable[Concatenate[C, P], R]]:
    """Decorate a recursive parse method: past :data:`MAX_NESTING` levels it reports
    "nesting too deep" instead of exhausting Python's stack."""
    def wrap(method: Callable[Concatenate[C, P], R]) -> Callable[Concatenate[C, P], R]:
        @functools.wraps(method)
        def run(self: C, *args: P.args, **kwargs: P.kwargs) -> R:
            self.depth += weight
            try:
                if self.depth > MAX_NESTING:
                    self.error(f"nesting too deep (more than {MAX_NESTING} levels of types, "
                               f"attributes and regions)")
                return method(self, *args, **kwargs)
            finally:
                self.depth -= weight
        return run
    return wrap


def _skip(src: str, pos: int, stop: int) -> int:
    """The position after the white space and comments at ``pos`` (maybe none)."""
    m = _SKIP.match(src, pos, stop)
    assert m is not None, "_SKIP matches the empty string"
    return m.end()


class Cursor:
    """Token cursor over ``text[start:end]``: ``kind``, ``text``, ``start``, ``end``."""

    def __init__(self, text: str, filename: str, begin: int = 0, stop: int | None = None,
                 source: Source | None = None) -> None:
        self.src = text
        self.stop = len(text) if stop is None else stop
        self.source = source or Source(filename, text)
        self.filename = filename
        self._lines = [0] + [m.end() for m in re.finditer("\n", text)]
        self.kind = ""
        self.text = ""
        self.start = self.end = begin
        self.prev_end = begin
        self.depth = 0
        self.advance()

    # -- tokens -------------------------------------------------------------------------
    def advance(self) -> str:
        """Move to the next token; returns the text of the one left behind."""
        old = self.text
        self.prev_end = self.end
        pos = _skip(self.src, self.end, self.stop)
        self.start = pos
        if pos >= self.stop:
            self.kind, self.text, self.end = EOF_KIND, "", pos
            return old
        m = _TOKEN.match(self.src, pos, self.stop)
        if m is None:
            if self.src.startswith("{-#", pos):
                self.error("unterminated '{-#' metadata section", pos, pos + 3)
            self.error(f"unexpected character '{self.src[pos]}'", pos, pos + 1)
        kind = m.lastgroup or ""
        self.text = m.group()
        self.kind = self.text if kind == "PUNCT" else kind
        self.end = m.end()
        return old

    def reset(self, pos: int) -> None:
        """Re-lex from ``pos``."""
        self.end = pos
        self.advance()

    def scan(self, pattern: re.Pattern[str]) -> str | None:
        """Match ``pattern`` at the current token's start; on success consume the text."""
        m = pattern.match(self.src, self.start, self.stop)
        if m is None or m.end() == self.start:
            return None
        self.reset(m.end())
        return m.group()

    def at(self, text: str) -> bool:
        """True if the current token is punctuation or a keyword spelled ``text``."""
        return self.text == text and self.kind != "STRING"

    def accept(self, text: str) -> bool:
        """Consume the token spelled ``text`` if it is next."""
        if self.text == text and self.kind != "STRING":
            self.advance()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> None:
        """Consume ``text`` or report ``expected ...``."""
        if not self.accept(text):
            self.fail(what or f"'{text}'")

    def expect_kind(self, kind: str, what: str) -> str:
        """Consume a token of ``kind`` and return its text, or report ``expected what``."""
        if self.kind != kind:
            self.fail(what)
        return self.advance()

    def peek_kind(self) -> str:
        """Kind of the token after the current one (no consumption)."""
        return self.peek_kinds(1)[0]

    def peek_kinds(self, n: int) -> list[str]:
        """Kinds of the ``n`` tokens after the current one (no consumption)."""
        kinds = []
        pos = self.end
        for _ in range(n):
            pos = _skip(self.src, pos, self.stop)
            m = _TOKEN.match(self.src, pos, self.stop) if pos < self.stop else None
            if m is None:
                kinds.append(EOF_KIND if pos >= self.stop else "")
                break
            kinds.append(m.group() if m.lastgroup == "PUNCT" else (m.lastgroup or ""))
            pos = m.end()
        return kinds + [EOF_KIND] * (n - len(kinds))

    # -- locations and errors -----------------------------------------------------------
    def loc(self, start: int | None = None, end: int | None = None) -> Loc:
        """A :class:`Loc` for ``[start, end)`` (default: the current token)."""
        start = self.start if start is None else start
        end = self.end if end is None else end
        line = bisect.bisect_right(self._lines, start)
        col = start - self._lines[line - 1] + 1
        end_line = bisect.bisect_right(self._lines, max(end - 1, start))
        end_col = end - self._lines[end_line - 1] + 1
        return Loc(self.filename, line, col, end_line, end_col, self.source)

    def error(self, message: str, start: int | None = None, end: int | None = None) -> NoReturn:
        """Raise a located :class:`CompileError`."""
        raise CompileError.at(self.loc(start, end), message)

    def fail(self, what: str) -> NoReturn:
        """Report ``expected what, found ...`` at the current token."""
        found = "end of input" if self.kind == EOF_KIND else f"'{self.text[:40]}'"
        self.error(f"expected {what}, found {found}")
