"""Helpers shared by the verifier tests: wrap lines into a kernel, find the error."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError


def wrap(head: str, *body: str) -> str:
    """The program ``head`` (a function header ending in ``{``), ``body`` indented by two."""
    return "\n".join([head, *("  " + line for line in body), "}"]) + "\n"


def opcode_col(line: str) -> int:
    """The column of the opcode of ``line`` indented by two (after ``%r = ``)."""
    return 3 + (line.index("= ") + 2 if line.startswith("%") else 0)


def error_of(text: str) -> CompileError:
    """The CompileError that parsing and verifying ``text`` (as ``k.tl``) must raise."""
    with pytest.raises(CompileError) as info:
        tensorlang.parse(text, "k.tl")
    return info.value
