"""Progress of long compiles on stderr (``backend_opencl.progress``): shown once a
compile has run for ``DELAY_S`` (0 here), with its phase and kernels done of total;
``TLC_PROGRESS=0`` silences it, and off a terminal it shows only with
``TLC_PROGRESS=1``."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import backend_opencl
from backend_opencl import progress
from backend_opencl.api import compiler

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No delay, quick redraws, no cached executables or disk cache."""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "REDRAW_S", 0.01)
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")


def _slow_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reported phase lasts long enough for a redraw."""
    report = progress.phase

    def slow(name: str, done: int = 0, total: int = 0) -> None:
        report(name, done, total)
        time.sleep(0.05)

    monkeypatch.setattr(progress, "phase", slow)


def test_phases_and_kernel_counts_show(fresh: None, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(progress.ENV, "1")
    _slow_phases(monkeypatch)
    text = (ROOT / "examples" / "mlp.mlir").read_text()
    backend_opencl.compile_stablehlo(text, filename="mlp.mlir")
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines and all(line.startswith("tlc: compiling mlp.mlir: ") for line in lines), err
    for phase in ("parse", "lower", "passes", "OpenCL build of"):
        assert any(f": {phase}" in line for line in lines), (phase, err)
    assert any(re.search(r": generate \d+/\d+ kernels, \d+\.\d s$", line) for line in lines)


def test_off_with_the_variable(fresh: None, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(progress.ENV, "0")
    _slow_phases(monkeypatch)
    backend_opencl.compile_stablehlo((ROOT / "examples" / "mlp.mlir").read_text())
    assert capsys.readouterr().err == ""


def test_off_a_terminal_unless_asked(fresh: None, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(progress.ENV, raising=False)
    _slow_phases(monkeypatch)
    backend_opencl.compile((ROOT / "examples" / "fused_kernel.tl").read_text())
    assert capsys.readouterr().err == ""


def test_quick_compiles_say_nothing(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(progress.ENV, "1")
    with progress.compiling("quick.mlir"):
        progress.phase("parse")
    time.sleep(2 * progress.REDRAW_S)
    assert capsys.readouterr().err == ""
