"""The work-group tensor language: IR, parser, printer, verifier, passes and scheduling.

Public API::

    prog = tensorlang.parse(text, filename="k.tl")   # verified Program
    print(prog)                                      # canonical tensor-language text
    tensorlang.verify_program(prog)                  # re-check a program built or rewritten in code
"""

from __future__ import annotations

from tensorlang.diagnostics import (
    BoundsError,
    CallbackError,
    CompileError,
    LaunchError,
    Loc,
    TlcError,
)
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.syntax import printer as _printer  # noqa: F401  (str(program) prints with it)

__all__ = [
    "BoundsError", "CallbackError", "CompileError", "Function", "Instruction", "LaunchError",
    "Loc", "Program", "Region", "TlcError", "Value", "parse", "verify_program",
]


def parse(text: str, filename: str = "<string>", *, check: bool = True) -> Program:
    """Parse tensor-language ``text`` into a :class:`Program`, verified unless ``check=False``.

    Raises :class:`CompileError` with ``file:line:col`` diagnostics on any mistake.
    """
    from tensorlang.syntax.parser import parse_program

    program = parse_program(text, filename)
    if check:
        verify_program(program)
    return program


def verify_program(program: Program) -> None:
    """Check every rule of the reference on ``program``; raise :class:`CompileError` if broken."""
    from tensorlang.verify import verify_program as run_verifier

    run_verifier(program)
