"""A fixed, fast slice of the StableHLO conformance suite, compared like run.py does."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
TESTDATA = SUITE / "stablehlo" / "testdata"
CASES = [
    "add_float32_1_20_float32_20_20", "transpose_float32_2_3_4", "reduce_sum_float32_2_3",
    "reduce_max_int32_2_3", "concatenate_int32_2_3_int32_2_3", "broadcast_in_dim_float32_1_2",
    "rev_float32_3_4_5",
]


def _runner():  # noqa: ANN202 - the shared run.py module
    spec = importlib.util.spec_from_file_location("conformance_run", SUITE / "run.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows() -> dict[str, dict]:
    if not TESTDATA.is_dir():
        return {}
    rows = (json.loads(line) for line in (TESTDATA / "index.jsonl").read_text().splitlines()
            if line.strip())
    return {r["name"]: r for r in rows}


@pytest.mark.skipif(not TESTDATA.is_dir(), reason="../shared/conformance is absent")
@pytest.mark.parametrize("name", CASES)
def test_case(name: str) -> None:
    rows = _rows()
    if name not in rows:
        pytest.skip(f"{name} is not in this suite")
    result = _runner().run_one(str(TESTDATA), rows[name])
    assert result["result"] == "pass", result.get("why")
