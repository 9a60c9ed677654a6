"""Mutation fuzzing of the tensor-language parser: only located CompileErrors escape.

Seeds are the examples' .tl files and the test inputs; ``TLC_FUZZ_CASES`` scales the
budget (docs/design.md, "Parser fuzzing").
"""

from __future__ import annotations

from pathlib import Path

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
