"""A fixed slice of the StableHLO interpret suite (check.* ops as expected values)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lowering.interpret import run_file

SUITE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "stablehlo"
FILES = ["add", "and", "atan2", "broadcast_in_dim", "concatenate", "constant", "convert",
         "dot_general", "gather", "iota", "quantized_ops", "reduce", "reduce_precision",
         "reduce_window", "scatter", "select_and_scatter", "sort", "while"]


@pytest.mark.skipif(not (SUITE / "interpret").is_dir(), reason="../shared is absent")
@pytest.mark.parametrize("name", FILES)
def test_file(name: str) -> None:
    path = SUITE / "interpret" / f"{name}.mlir"
    if not path.is_file():
        pytest.skip(f"{name}.mlir is not in the suite")
    outcome = run_file(path.read_text(), str(path))
    failed = {f: why for f, why in outcome.items() if why}
    assert outcome and not failed
