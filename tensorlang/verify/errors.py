"""Building the verifier's diagnostics: rule-citing messages with "value defined here" notes."""

from __future__ import annotations

from tensorlang.diagnostics import CompileError, Diagnostic, Loc, note
from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.types import Dim, dim_str


def value_name(value: Value) -> str:
    """``%name`` of ``value`` (``%?`` when it has no name hint)."""
    return f"%{value.name or '?'}"


def defined_here(*values: Value | None) -> tuple[Diagnostic, ...]:
    """One "value defined here" note per value that has a known location."""
    notes: list[Diagnostic] = []
    for value in values:
        if value is not None and value.loc.line > 0:
            notes.append(note(value.loc, "value defined here"))
    return tuple(notes)


def fail(where: Instruction | Loc, rule: str, message: str, *values: Value | None,
         extra: tuple[Diagnostic, ...] = ()) -> CompileError:
    """``<op> (<rule>): message`` at the instruction (or ``where``), noting ``values``.

    ``extra`` notes follow the "value defined here" ones.
    """
    if isinstance(where, Instruction):
        text = f"{where.name} ({rule}): {message}"
        loc = where.loc
    else:
        text = f"{rule}: {message}" if rule else message
        loc = where
    return CompileError.at(loc, text, *defined_here(*values), *extra)


def shape_str(shape: tuple[Dim, ...]) -> str:
    """``16x8``, ``?x4``; ``scalar`` for order 0."""
    return "x".join(dim_str(s) for s in shape) if shape else "scalar"


def dims_agree(a: Dim, b: Dim) -> bool:
    """Static sizes must be equal; a dynamic size agrees with anything."""
    return a is None or b is None or a == b

