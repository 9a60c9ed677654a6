"""Static checks in the compile pipeline: ``check-bounds`` rejects an access isl proves
out of bounds in programs users write; programs lowered from StableHLO skip the proof
unless ``TLC_VERIFY=1`` (set for the whole test suite, tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import backend_opencl
import tensorlang
from backend_opencl.api import compiler
from tensorlang.diagnostics import CompileError
from tensorlang.passes import check_bounds as check_bounds_pass

ROOT = Path(__file__).resolve().parents[2]

OUT_OF_BOUNDS = """func @f(%A: memref<f32x16>) {
  %c16 = constant 16 : index
  %v = load %A[%c16] : memref<f32x16>
  store %v, %A[%c16] : memref<f32x16>
}"""


def test_users_programs_are_checked() -> None:
    with pytest.raises(CompileError, match="out of bounds"):
        compiler.lower(tensorlang.parse(OUT_OF_BOUNDS))


def test_without_static_checks_the_proof_is_skipped() -> None:
    source = compiler.lower(tensorlang.parse(OUT_OF_BOUNDS), static_checks=False).source
    assert "void f(" in source


@pytest.mark.parametrize(("value", "verify"), [("1", True), ("0", False), (None, False)])
def test_verify_lowered_reads_the_variable(monkeypatch: pytest.MonkeyPatch,
                                           value: str | None, verify: bool) -> None:
    if value is None:
        monkeypatch.delenv(compiler.VERIFY_ENV, raising=False)
    else:
        monkeypatch.setenv(compiler.VERIFY_ENV, value)
    assert compiler.verify_lowered() is verify


@pytest.mark.parametrize("verify", [True, False])
def test_lowered_programs_are_checked_only_when_asked(monkeypatch: pytest.MonkeyPatch,
                                                      verify: bool) -> None:
    asked = []
    monkeypatch.setattr(check_bounds_pass, "check_bounds", lambda func: asked.append(func))
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")
    monkeypatch.setenv(compiler.VERIFY_ENV, "1" if verify else "0")
    backend_opencl.compile_stablehlo((ROOT / "examples" / "mlp.mlir").read_text())
    assert bool(asked) is verify
