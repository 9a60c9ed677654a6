"""The side-by-side benchmark (benchmarks/stablehlo_models.py): its program set exports, a
few programs run in tlc and match XLA, wrong results become FAIL rows. No timing checks."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import frontend

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import stablehlo_models as bench  # noqa: E402

RNG = np.random.default_rng(11)


def test_compare_accepts_close_and_rejects_wrong() -> None:
    want = (RNG.standard_normal((4, 5)).astype(np.float32), np.arange(1, 7, dtype=np.int32))
    close = (want[0] + np.float32(1e-6), want[1].copy())
    assert bench.compare(close, want, None)[1] is None
    off = (want[0].copy(), want[1].copy())
    off[1][3] += 1
    assert "output 1" in (bench.compare(off, want, None)[1] or "")
    assert bench.compare(want[:1], want, None)[1] == "1 outputs, expected 2"
    wrong_type = (want[0].astype(np.float64), want[1])
    assert "expected float32" in (bench.compare(wrong_type, want, None)[1] or "")


def test_compare_nans_and_infinities_must_match() -> None:
    want = RNG.standard_normal(8).astype(np.float32)
    want[[2, 5]] = np.nan, np.inf
    assert bench.compare((want.copy(),), (want,), None)[1] is None
    for bad in (np.float32(1), np.float32(-np.inf)):
        got = want.copy()
        got[5] = bad
        assert "infinities differ" in (bench.compare((got,), (want,), None)[1] or "")


def test_wrong_result_is_a_fail_row_and_not_timed() -> None:
    (case,) = [c for c in bench.numpy_cases() if c.name == "ex_mlp"]
    bad = bench.Case(case.name, case.text, case.args, want=(case.want[0] + 1,))
    row = bench.measure(bad, bench.Tlc(), [], budget=0.0, max_rounds=1)
    assert row.status == "FAIL" and "tlc" not in row.times
    assert row.notes[0].startswith("tlc wrong: output 0")


def test_tlc_error_is_an_error_row_and_peers_still_run() -> None:
    (case,) = [c for c in bench.numpy_cases() if c.name == "ex_mlp"]
    broken = bench.Case(case.name, case.text.replace("stablehlo.maximum", "stablehlo.nope"),
                        case.args, fn=case.fn, want=case.want)
    row = bench.measure(broken, bench.Tlc(), [bench.Numpy()], budget=0.0, max_rounds=1)
    assert row.status == "ERROR" and row.notes[0].startswith("tlc: ")
    assert set(row.times) == {"numpy"}


def test_numpy_mode_runs_without_jax(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--numpy", "--quick", "--filter", "^ex_mlp$"]) == 0
    out = capsys.readouterr().out
    assert "| ex_mlp | ok" in out and "geometric mean tlc/best" in out


def test_program_set_exports_and_parses() -> None:
    pytest.importorskip("jax")
    import programs

    assert len(programs.PROGRAMS) >= 30
    for prog in programs.PROGRAMS:
        args = prog.inputs()
        assert all(np.any(a != 0) for a in args), prog.name
        frontend.parse(prog.text(args), filename=f"{prog.name}.mlir")


@pytest.mark.parametrize("name", ["softmax", "int_bitwise", "sort_key_value"])
def test_program_matches_xla(name: str) -> None:
    pytest.importorskip("jax")
    import programs

    (prog,) = [p for p in programs.PROGRAMS if p.name == name]
    args = prog.inputs()
    case = bench.Case(name, prog.text(args), args, prog.tol, prog.fn)
    row = bench.measure(case, bench.Tlc(), [bench.Xla()], budget=0.0, max_rounds=1)
    assert row.status == "ok", row.notes
    assert set(row.times) == {"tlc", "xla"}
