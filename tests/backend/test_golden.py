"""Golden OpenCL tests: generated code checked with filecheck patterns (structure, not
every character).  Each ``golden/*.tl`` holds a program and its ``; CHECK`` lines for the
default target, and ``; NARROW`` lines (if any) for a target with 32-bit indices."""

from __future__ import annotations

from pathlib import Path

import pytest

import tensorlang
from backend_opencl.api.compiler import lower
from backend_opencl.emit import DEFAULT_TARGET, Target
from tests.filecheck import check_text

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.tl"))


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_golden(path: Path) -> None:
    program = tensorlang.parse(path.read_text(), filename=str(path))
    source = lower(program, DEFAULT_TARGET).source
    check_text(path, source)
    if "; NARROW" in path.read_text():
        check_text(path, lower(program, Target(narrow_index=True)).source, "NARROW")
