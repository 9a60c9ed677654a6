"""docs/environment.md names every ``TLC_*`` environment variable tlc reads, and only
those: the variable names in the library's sources (and the test helpers' own) against
the table's first column."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("frontend", "tensorlang", "backend_opencl", "tlc")
NAME = re.compile(r"""["'](TLC_[A-Z0-9_]+)["']""")


def read_by_code() -> set[str]:
    """The ``TLC_*`` names that appear as string literals in the library and in
    tests/mutation.py (the fuzzers' knobs)."""
    files = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    files.append(ROOT / "tests" / "mutation.py")
    return {m for path in files for m in NAME.findall(path.read_text())}


def documented() -> set[str]:
    """The variables in the first column of docs/environment.md's table."""
    text = (ROOT / "docs" / "environment.md").read_text()
    return set(re.findall(r"^\| `(TLC_[A-Z0-9_]+)` \|", text, re.MULTILINE))


def test_every_variable_is_documented_and_every_documented_one_is_read() -> None:
    code, docs = read_by_code(), documented()
    assert code - docs == set(), "read but not in docs/environment.md"
    assert docs - code == set(), "in docs/environment.md but read nowhere"
    assert len(docs) >= 15


def test_readme_links_the_table() -> None:
    assert "docs/environment.md" in (ROOT / "README.md").read_text()
