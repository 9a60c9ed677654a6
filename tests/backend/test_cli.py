"""``tlc compile`` to OpenCL C (file and stdout), ``tlc devices`` and error reporting."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from backend_opencl.cli import main

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
    assert "void fused_kernel(" in text and "barrier(CLK_LOCAL_MEM_FENCE);" in text


def test_emit_cl_to_stdout() -> None:
    code, out, err = _run("compile", str(SAMPLE), "--emit", "cl")
    assert code == 0, err
    assert "void fused_kernel(" in out


def test_emit_tl_and_schedule() -> None:
    code, out, _ = _run("compile", str(SAMPLE), "--emit", "tl")
    assert code == 0 and out.startswith("func @fused_kernel(")
    code, out, err = _run("compile", str(SAMPLE), "--emit", "schedule")
    assert code == 0, err
    assert "kernel @fused_kernel" in out and "full blocks:" in out and "barrier.local" in out


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
