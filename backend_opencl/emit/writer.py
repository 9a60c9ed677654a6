"""An indenting code writer and a namer that turns IR value names into C identifiers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from backend_opencl.emit.cnames import C_KEYWORDS


class Writer:
    """Collects lines of C with the current indentation."""

    def __init__(self, indent: int = 0) -> None:
        self.lines: list[str] = []
        self.level = indent

    def line(self, text: str = "") -> None:
        """Append one line (blank lines carry no indentation)."""
        self.lines.append("    " * self.level + text if text else "")

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        """``head {`` ... ``}`` with the body indented."""
        self.line(head + " {")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")

    @contextmanager
    def else_block(self) -> Iterator[None]:
        """``} else {`` after a just-closed block."""
        assert self.lines and self.lines[-1].strip() == "}"
        self.lines[-1] += " else {"
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.line("}")

    def text(self) -> str:
        """All lines joined, ending with a newline."""
        return "\n".join(self.lines) + "\n"


_BUILTIN_PREFIXES = ("get_", "tlc_", "as_", "convert_", "atomic_", "atom_", "vload", "vstore")
"""IR names that could shadow OpenCL builtins or tlc helpers get a ``u_`` prefix."""


class Namer:
    """Hands out unique C identifiers derived from IR names."""

    def __init__(self) -> None:
        self.used: set[str] = set(C_KEYWORDS)

    def fresh(self, hint: str) -> str:
        """A new identifier like ``hint`` (sanitised, never a keyword or reused)."""
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        if base.startswith(_BUILTIN_PREFIXES):
            base = "u_" + base
        name, count = base, 1
        while name in self.used:
            name = f"{base}_{count}"
            count += 1
        self.used.add(name)
        return name
