"""``tlc compile`` to OpenCL C (file and stdout), ``tlc devices`` and error reporting."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from backend_opencl.tools.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fused_kernel.tl"


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_compile_to_cl_file(tmp_path: Path) -> None:
    target = tmp_path / "fused_kernel.cl"
    code, _, err = _run("compile", str(SAMPLE), "-o", str(target))
    assert code == 0, err
    text = target.read_text()
    assert "kernel __attribute__((reqd_work_group_size(" in text
    assert "void fused_kernel(" in text and "tlc_gemm_f32_1(" in text


def test_emit_cl_to_stdout() -> None:
    code, out, err = _run("compile", str(SAMPLE), "--emit", "cl")
    assert code == 0, err
    assert "void fused_kernel(" in out


def test_emit_tl_and_schedule() -> None:
    code, out, _ = _run("compile", str(SAMPLE), "--emit", "tl")
    assert code == 0 and out.startswith("func @fused_kernel(")
    code, out, err = _run("compile", str(SAMPLE), "--emit", "schedule")
    assert code == 0, err
    assert "kernel @fused_kernel" in out and "full blocks:" in out


def test_devices_lists_the_chosen_device() -> None:
    code, out, err = _run("devices")
    assert code == 0, err
    assert out.strip()


def test_run_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text("")
    code, _, err = _run("run", str(path))
    assert code == 1 and "error" in err and "Traceback" not in err


def test_work_group_size_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.tl"
    path.write_text("func @big() work_group_size(4096, 64) {\n}\n")
    code, _, err = _run("compile", str(path), "--emit", "cl")
    assert code == 1 and "exceeds the device's maximum" in err


MLP = SAMPLE.with_name("mlp.mlir")


def test_opt_lowers_stablehlo_first() -> None:
    """``tlc opt FILE.mlir`` runs the passes on the kernels ``--emit tl`` prints."""
    code, kernels, err = _run("compile", str(MLP), "--emit", "tl")
    assert code == 0, err
    code, out, err = _run("opt", str(MLP))
    assert code == 0 and out == kernels, err
    code, out, err = _run("opt", str(MLP), "-p", "dce,insert-barrier")
    assert code == 0, err
    assert out.startswith("func @k0_") and "stablehlo" not in out


def test_emit_schedule_of_stablehlo() -> None:
    code, out, err = _run("compile", str(MLP), "--emit", "schedule")
    assert code == 0, err
    assert "kernel @k0_" in out and "full blocks:" in out


def test_tune_stablehlo_blocks_are_what_run_compiles(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``tlc tune FILE.mlir`` caches blocks under the keys compile_stablehlo_program's
    kernels look up."""
    from backend_opencl.api import compiler
    monkeypatch.setenv("TLC_TUNE_CACHE", str(tmp_path / "tune.json"))
    monkeypatch.setenv("TLC_CACHE_DIR", "off")  # the lowered program is compiled here
    code, out, err = _run("tune", str(MLP), "--top", "1", "--groups", "2")
    assert code == 0, err
    tuned = {name[1:]: tuple(int(n) for n in block.split(",")[0].split("x"))
             for name, block in (line.split(": ") for line in out.splitlines())}
    assert tuned  # a block per gemm kernel (the three layers' launches merged into one)
    targets = []

    def spy(*args: object) -> object:
        targets.append(real(*args))
        return targets[-1]

    real = compiler.cached_target
    monkeypatch.setattr(compiler, "cached_target", spy)
    compiler.compile_stablehlo_program(MLP.read_text(), filename=str(tmp_path / "mlp.mlir"))
    assert {name: (rm, rn) for name, rm, rn in targets[0].register_blocks} == tuned
