"""The user-facing documents stand on their own: README.md and docs/*.md do not send a
reader to ``../shared`` (the conformance suites, specifications and notes beside the
development checkout, which a clone does not have). Only docs/contributing.md, for
developers, may name it; README links the language reference and the contributor's
guide."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEVELOPER_ONLY = {"contributing.md"}
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w./-])shared/(spec|conformance|hooks|[A-Z]+\.md)")
"""``../shared`` itself, or one of its folders and notes named without the ``../``."""


def user_documents() -> list[Path]:
    """README.md and every docs/*.md but the developer-only ones."""
    docs = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in DEVELOPER_ONLY)
    return [ROOT / "README.md", *docs]


def test_no_user_document_refers_to_shared() -> None:
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in user_documents()
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if OUTSIDE.search(line)]
    assert not found, "user documents refer outside the repository:\n" + "\n".join(found)


def test_pattern_catches_the_spellings() -> None:
    for text in ("../shared/conformance/run.py", "see `shared/DEVICES.md`", "(../shared)"):
        assert OUTSIDE.search(text), text
    for text in ("tensorlang/shared.py", "shared memory", "USM shared/device/host"):
        assert not OUTSIDE.search(text), text


def test_readme_links_the_guides() -> None:
    readme = (ROOT / "README.md").read_text()
    for name in ("docs/language.md", "docs/contributing.md"):
        assert name in readme, name
        assert (ROOT / name).is_file(), name
