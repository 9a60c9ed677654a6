"""Run one file of the StableHLO interpret suite from a family's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lowering.interpret import run_file

INTERPRET = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / \
    "stablehlo" / "interpret"


def interpret_failures(name: str) -> dict[str, str]:
    """Function -> reason for every failing function of ``name.mlir`` (skips when the
    suite is absent; fails when the file has no functions)."""
    path = INTERPRET / f"{name}.mlir"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    outcome = run_file(path.read_text(), str(path))
    assert outcome, f"{name}.mlir has no functions to run"
    return {f: why for f, why in outcome.items() if why}
