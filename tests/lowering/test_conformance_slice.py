"""A fixed, fast slice of the StableHLO conformance suite: one case for every op family.

The families are those of ``../shared/conformance/run.py --by-op``; each is represented
by its smallest enabled case (by file size, then name), so the slice is deterministic
and covers every op the suite has. Cases are compared exactly as run.py compares them.
Known gaps are strict xfails: fixing one makes its test fail until it leaves the list.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

SUITE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
TESTDATA = SUITE / "stablehlo" / "testdata"

KNOWN_FAILING: dict[str, str] = {}
"""Family -> why its representative case fails today."""


@cache
def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_run", SUITE / "run.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _rows() -> dict[str, dict]:
    if not TESTDATA.is_dir():
        return {}
    lines = (TESTDATA / "index.jsonl").read_text().splitlines()
    return {row["name"]: row for row in map(json.loads, filter(str.strip, lines))}


def representatives() -> dict[str, str]:
    """Family -> the name of its smallest enabled case."""
    if not TESTDATA.is_dir():
        return {}
    chosen: dict[str, tuple[int, str]] = {}
    for name, row in _rows().items():
        if row.get("disabled"):
            continue
        key = (TESTDATA.joinpath(name + ".mlir").stat().st_size, name)
        family = _runner().op_of(name)
        chosen[family] = min(chosen.get(family, key), key)
    return {family: name for family, (_, name) in sorted(chosen.items())}


def _params() -> list[object]:
    params = []
    for family, name in representatives().items():
        marks = ()
        if family in KNOWN_FAILING:
            marks = (pytest.mark.xfail(reason=KNOWN_FAILING[family], strict=True),)
        params.append(pytest.param(name, id=family, marks=marks))
    return params


@pytest.mark.skipif(not TESTDATA.is_dir(), reason="../shared/conformance is absent")
@pytest.mark.parametrize("name", _params())
def test_case(name: str) -> None:
    result = _runner().run_one(str(TESTDATA), _rows()[name])
    assert result["result"] == "pass", result.get("why")
