"""The tensor-language verifier: every rule of the reference, checked on the IR.

:func:`verify_program` walks each function and dispatches each instruction to the
checks of its rule family; the first broken rule raises a
:class:`~tensorlang.diagnostics.CompileError` located at the instruction (or the
offending operand) with a "value defined here" note for the value involved.  The
rules are numbered in ``docs/language-constraints.md`` and messages cite them.
"""

from __future__ import annotations

from tensorlang.ir.core import Program
from tensorlang.verify.types import check_type

__all__ = ["check_type", "verify_program"]


def verify_program(program: Program) -> None:
    """Check every rule of the reference on ``program``; raise CompileError on the first."""
    from tensorlang.verify.function import verify_program_functions

    verify_program_functions(program)
