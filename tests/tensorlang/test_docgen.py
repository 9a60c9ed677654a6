"""docs/language.md's instruction index is generated from the op table and kept current."""

from __future__ import annotations

from pathlib import Path

from tensorlang.ir.docgen import instruction_index, render_into
from tensorlang.ir.ops import OPS

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"


def test_index_lists_every_instruction() -> None:
    index = instruction_index()
    for name in OPS:
        assert f"| `{name}` |" in index


def test_language_doc_index_is_current() -> None:
    text = DOC.read_text()
    assert render_into(text) == text, "run: python -m tensorlang.ir.docgen docs/language.md"
