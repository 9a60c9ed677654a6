"""Mutation fuzzing of the tensor-language parser: only located CompileErrors escape.

Seeds are the examples' .tl files and the test inputs; ``TLC_FUZZ_CASES`` scales the
budget (docs/design.md, "Parser fuzzing").
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tensorlang
from tensorlang import CompileError
from tests import mutation

_ROOT = Path(__file__).resolve().parents[2]
_SEEDS = sorted((_ROOT / "examples").glob("*.tl")) + sorted(
    (_ROOT / "tests" / "tensorlang" / "inputs").glob("*.tl"))


def _parse(text: str) -> None:
    str(tensorlang.parse(text, "fuzz.tl"))


def test_mutations_raise_only_compile_errors() -> None:
    """A few hundred seeded mutations: no traceback, no hang, every error located."""
    bad = mutation.escapes(_parse, CompileError, _SEEDS, mutation.budget(300),
                           mutation.base_seed())
    assert not bad, "\n".join(bad)


def test_integers_of_thousands_of_digits_are_out_of_range() -> None:
    """int() refuses over 4300 digits; the parser reports the range instead."""
    big = "9" * 5000
    for text in (f"func @k() {{\n  %x = constant {big} : i32\n}}\n",
                 f"func @k(%a: memref<f32x{big}>) {{\n}}\n",
                 f"func @k() work_group_size({big}, 1) {{\n}}\n"):
        with pytest.raises(CompileError, match=r"^fuzz.tl:\d+:\d+: error: integer constant "
                                               r"9{20}\.\.\. \(5000 characters\) is out of"):
            tensorlang.parse(text, "fuzz.tl")
    assert "%x = constant 1 -> i32" in str(tensorlang.parse(
        "func @k() {\n  %x = constant " + "0" * 5000 + "1 : i32\n}\n", "fuzz.tl"))
