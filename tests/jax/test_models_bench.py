"""The real-model benchmark (benchmarks/jax_models.py): its checks, rows, table and summary,
and one small model end to end. No timing checks.

The comparison and summary need jax only; the model tests skip without the ``models``
extra (flax, dm-haiku, equinox, optax, keras, diffrax).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import jax_models as bench  # noqa: E402

LIBRARIES = ("flax", "haiku", "equinox", "optax", "keras", "diffrax")
RNG = np.random.default_rng(20)


def _needs_models() -> None:
    for name in LIBRARIES:
        pytest.importorskip(name)


def test_relative_error_is_relative_to_the_largest_magnitude() -> None:
    want = {"a": RNG.standard_normal((4, 5)).astype(np.float32) * 1e-3,
            "n": np.arange(6, dtype=np.int32)}
    got = {"a": want["a"] + np.float32(1e-9), "n": want["n"].copy()}
    assert 0 < bench.relative_error(got, want) < 1e-5
    got["n"][2] += 1
    assert bench.relative_error(got, want) == math.inf


def test_relative_error_rejects_other_structures_and_non_finite_places() -> None:
    want = (np.array([1.0, np.nan, np.inf], np.float32),)
    assert bench.relative_error((want[0].copy(),), want) == 0.0
    assert bench.relative_error([want[0].copy()], want) == math.inf
    assert bench.relative_error((np.array([1.0, 2.0, np.inf], np.float32),), want) == math.inf
    assert bench.relative_error((want[0].astype(np.float64),), want) == math.inf


def _row(name: str, tlc: float, xla: float, cold: float | str = 1.0) -> bench.Row:
    return bench.Row(name, "lib", times={"tlc": tlc, "xla": xla, "tlc jax": tlc,
                                         "xla jax": xla},
                     first={"cold tlc": cold, "cold xla": 0.5, "warm tlc": 0.05})


def test_table_and_summary() -> None:
    rows = [_row("fast", 1e-4, 2e-4), _row("slow", 4e-4, 1e-4, cold=8.0),
            _row("broken_first_call", 1e-4, 1e-4, cold="exit 1: boom"),
            bench.Row("bad", "lib", status="ERROR", reason="JaxCompileError: no")]
    rows[1].warm_missed = True
    rows[0].warm_trace, rows[1].warm_trace = 0.04, 0.03
    assert all(len(bench.line(r).split(" | ")) == len(bench.HEADER) for r in rows)
    assert "| bad | lib | **ERROR** |" in bench.line(rows[3])
    assert bench.line(rows[1]).endswith("| 8.00 | 0.50 | 0.05* | 0.02 |")
    assert bench.line(rows[2]).endswith("| 0.05 | - |")  # no trace measured
    text = "\n".join(bench.summary(rows))
    assert f"per call (numpy in): **{(0.5 * 4 * 1) ** (1 / 3):.2f}** over 3 models" in text
    assert "worst per call: slow 4.00x" in text
    assert "over 1.25x XLA per call: 1 (slow 4.00x)" in text
    assert "cold tlc first call over 5 s: 1 (slow 8.00 s)" in text
    assert "warm tlc first call past jax's trace over 0.1 s: 0" in text
    assert "failures: 1 of 4 models (bad ERROR)" in text
    assert "- bad: JaxCompileError: no" in text
    assert "broken_first_call: cold tlc first call: exit 1: boom" in text
    assert "missed tlc's disk cache (*; tlc's sources changed between the processes): slow" \
        in text


def test_every_model_is_named_once_with_its_inputs() -> None:
    _needs_models()
    from models import MODELS

    names = [m.name for m in MODELS]
    assert len(names) == len(set(names)) >= 20
    assert {m.library for m in MODELS} >= {"flax.linen", "flax.nnx", "haiku", "equinox",
                                           "keras", "diffrax", "jax"}
    assert all(m.inputs and m.what for m in MODELS)


def test_a_model_runs_and_matches_xla() -> None:
    _needs_models()
    model = bench._model("mlp_nnx")
    row = bench.measure(model, budget=0.01, max_rounds=5, timeout=600)
    assert row.status == "ok", row.reason
    assert row.error is not None and row.error <= model.tol
    assert set(row.times) == set(bench.COLUMNS)


def test_failures_are_rows() -> None:
    _needs_models()
    from models.common import Model, normal

    def broken(key: object, inputs: tuple[np.ndarray, ...]) -> tuple[object, object]:
        raise ValueError("cannot build\nsecond line")

    row = bench.measure(Model("broken", "jax", broken, (normal(2),)), 0.01, 5, 600)
    assert (row.status, row.reason) == ("ERROR", "ValueError: cannot build")
    strict = Model("strict", "jax", bench._model("special_functions").build, (normal(4, 8),),
                   tol=-1.0)
    row = bench.measure(strict, 0.01, 5, 600)
    assert row.status == "WRONG" and not row.times


def test_first_calls_in_fresh_processes() -> None:
    _needs_models()
    row = bench.Row("special_functions", "jax")
    bench.first_calls(row, timeout=600)
    assert all(isinstance(row.seconds(k), float) for k in bench.FIRST_CALLS), row.first
