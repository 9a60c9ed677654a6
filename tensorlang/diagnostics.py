"""Source locations and compiler diagnostics shared by every front end of tlc.

A diagnostic renders like a compiler's::

    kernel.tl:4:11: error: gemm (C3): C must have shape 16x16, got 16x8
        gemm.n.n %one, %a, %b, %zero, %c : f32, ...
                  ^~~~
    kernel.tl:2:3: note: value defined here
      %a = load %A[%0] : group<memref<f32x16x8>>
      ^~

User mistakes raise :class:`CompileError` (a :class:`TlcError`); ``assert`` is kept
for compiler bugs only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tensorlang.shared import Shared


@dataclass(frozen=True, eq=False)
class Source(Shared):
    """A named source text; diagnostics quote lines from it."""

    name: str
    text: str

    def line(self, number: int) -> str:
        """The 1-based line ``number`` without its newline ('' past the end)."""
        lines = self.text.split("\n")  # only \n: the parsers count lines the same way
        return lines[number - 1].rstrip("\r") if 1 <= number <= len(lines) else ""


@dataclass(frozen=True)
class Loc(Shared):
    """A 1-based source range; ``source`` (when known) lets diagnostics quote the line."""

    file: str
    line: int
    col: int
    end_line: int = 0
    end_col: int = 0
    source: Source | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


class Severity(Enum):
    """How serious a diagnostic is."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Diagnostic:
    """One message about a source location, with optional notes (e.g. 'value defined here')."""

    severity: Severity
    loc: Loc | None
    message: str
    notes: tuple[Diagnostic, ...] = ()

    def render(self) -> str:
        """Text in the ``file:line:col: severity: message`` form with source line and caret."""
        parts = [_render_one(self)]
        parts += [_render_one(note) for note in self.notes]
        return "\n".join(parts)


def _render_one(diag: Diagnostic) -> str:
    loc = diag.loc
    if loc is None or loc.line <= 0:
        where = f"{loc.file}: " if loc is not None else ""
        return f"{where}{diag.severity.value}: {diag.message}"
    head = f"{loc}: {diag.severity.value}: {diag.message}"
    if loc.source is None:
        return head
    text = loc.source.line(loc.line)
    if not text:
        return head
    width = 1
    if loc.end_line == loc.line and loc.end_col > loc.col:
        width = loc.end_col - loc.col
    caret = " " * (loc.col - 1) + "^" + "~" * (width - 1)
    return f"{head}\n{text}\n{caret}"


def note(loc: Loc | None, message: str) -> Diagnostic:
    """A note diagnostic, to attach to an error."""
    return Diagnostic(Severity.NOTE, loc, message)


class TlcError(Exception):
    """Base class of every error tlc reports to a user (never a compiler bug)."""


class CompileError(TlcError):
    """A program was rejected: carries one or more rendered diagnostics."""

    def __init__(self, diagnostics: Diagnostic | list[Diagnostic]) -> None:
        self.diagnostics = [diagnostics] if isinstance(diagnostics, Diagnostic) else diagnostics
        super().__init__("\n".join(d.render() for d in self.diagnostics))

    @classmethod
    def at(cls, loc: Loc | None, message: str, *notes: Diagnostic) -> CompileError:
        """An error at ``loc`` with ``message`` and optional notes."""
        return cls(Diagnostic(Severity.ERROR, loc, message, tuple(notes)))

    @property
    def first(self) -> Diagnostic:
        """The first diagnostic (tests assert on its location and message)."""
        return self.diagnostics[0]


class LaunchError(TlcError):
    """A kernel or executable was called with wrong arguments; raised before anything runs."""


class CallbackError(TlcError):
    """A host callback of a running program returned what the program does not take: another
    number of results, or a result of another shape or dtype (the executable waited for its
    commands before raising this)."""


class BoundsError(TlcError):
    """A kernel compiled with ``--check-bounds`` hit an out-of-bounds access at run time.

    The run-time guard skipped the access (no out-of-bounds load or store happened); the
    host raises this after the launch with the first violation, rendered like a compile
    error at the access (``k.tl:12:8: error: out-of-bounds load: index 17 not in [0, 16)``).
    """

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic
        super().__init__(diagnostic.render())

    @classmethod
    def at(cls, loc: Loc | None, message: str, *notes: Diagnostic) -> BoundsError:
        """A bounds error at ``loc`` with ``message`` and optional notes."""
        return cls(Diagnostic(Severity.ERROR, loc, message, tuple(notes)))
