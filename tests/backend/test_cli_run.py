"""``tlc run``'s inputs (.npz, .npy lists), the parameter listing without ``--inputs``,
``--output-format``, ``-v`` phases, and ``tlc --version``."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from backend_opencl.tools.cli import main, version

PROGRAM = """\
func.func @main(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3xi32>) -> tensor<2x3xf32> {
  %0 = stablehlo.convert %arg1 : (tensor<3xi32>) -> tensor<3xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %2 = stablehlo.add %arg0, %1 : tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}
"""


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture()
def program(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """The program, its two inputs as .npy files and in.npz, and the expected result."""
    path = tmp_path / "add.mlir"
    path.write_text(PROGRAM)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.integers(-5, 5, 3).astype(np.int32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "b.npy", b)
    np.savez(tmp_path / "in.npz", x, b)
    return path, (x + b).astype(np.float32)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"tlc {version()}"
    assert version()[0].isdigit()


def test_run_without_inputs_lists_the_parameters(program: tuple[Path, np.ndarray]) -> None:
    path, _ = program
    code, out, err = _run("run", str(path))
    assert code == 2 and out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert lines[0] == f"{path}: error: no --inputs given; @main takes 2 arguments:"
    assert lines[1].split() == ["%arg0", "(x)", "tensor<2x3xf32>", "shape", "(2,", "3)",
                                "dtype", "float32"]
    assert lines[2].split() == ["%arg1", "tensor<3xi32>", "shape", "(3,)", "dtype", "int32"]
    assert f"tlc run {path} --inputs in.npz" in err
    assert f"tlc run {path} --inputs a0.npy,a1.npy" in err


def test_wrong_number_of_inputs_lists_the_parameters(tmp_path: Path,
                                                     program: tuple[Path, np.ndarray]) -> None:
    path, _ = program
    code, _, err = _run("run", str(path), "--inputs", str(tmp_path / "x.npy"))
    assert code == 2
    assert err.startswith(f"{path}: error: --inputs gave 1 arrays; @main takes 2 arguments:")


@pytest.mark.parametrize("inputs", ["in.npz", "x.npy,b.npy", "x.npy, b.npy"])
def test_inputs_npz_or_npy_files_in_order(tmp_path: Path, program: tuple[Path, np.ndarray],
                                          inputs: str) -> None:
    path, want = program
    spec = ",".join(str(tmp_path / p.strip()) for p in inputs.split(","))
    code, _, err = _run("run", str(path), "--inputs", spec, "-o", str(tmp_path / "out.npz"))
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as got:
        assert got.files == ["result0"]
        np.testing.assert_array_equal(got["result0"], want)


def test_output_format_text_prints_every_value_exactly(tmp_path: Path,
                                                       program: tuple[Path, np.ndarray]) -> None:
    path, want = program
    code, out, err = _run("run", str(path), "--inputs", str(tmp_path / "in.npz"),
                          "--output-format", "text")
    assert code == 0, err
    head, *rows = out.strip().splitlines()
    assert head == "result0: 2x3 float32"
    values = [float(v) for row in rows for v in row.strip("[] ").split()]
    np.testing.assert_array_equal(np.array(values, np.float32).reshape(2, 3), want)


def test_output_format_npz_needs_a_file(tmp_path: Path, program: tuple[Path, np.ndarray]) -> None:
    path, _ = program
    code, _, err = _run("run", str(path), "--inputs", str(tmp_path / "in.npz"),
                        "--output-format", "npz")
    assert code == 2 and "--output-format npz needs -o FILE.npz" in err


def test_unreadable_inputs_are_a_clear_error(tmp_path: Path,
                                             program: tuple[Path, np.ndarray]) -> None:
    path, _ = program
    code, _, err = _run("run", str(path), "--inputs", str(tmp_path / "missing.npy"))
    assert code == 1 and "missing.npy: error: cannot read inputs" in err
    (tmp_path / "bad.npz").write_text("not an archive")
    code, _, err = _run("run", str(path), "--inputs", str(tmp_path / "bad.npz"))
    assert code == 1 and "bad.npz: error: cannot read inputs" in err and "Traceback" not in err


@pytest.mark.parametrize("before", [False, True])
def test_verbose_prints_the_phases(tmp_path: Path, program: tuple[Path, np.ndarray],
                                   before: bool) -> None:
    """``tlc run ... -v`` and ``tlc -v run ...`` alike."""
    path, _ = program
    run = ["run", str(path), "--inputs", str(tmp_path / "in.npz")]
    code, out, err = _run(*(["-v", *run] if before else [*run, "-v"]))
    assert code == 0, err
    assert out.startswith("result0 = [[")
    phases = [line.split()[1] for line in err.splitlines() if line.startswith("tlc: ")]
    assert phases == ["read", "load", "device", "parse", "lower", "generate", "build", "run",
                      "write", "total"]
    assert all(line.split()[3] == "ms" for line in err.splitlines() if line.startswith("tlc: "))


def test_quiet_without_verbose(tmp_path: Path, program: tuple[Path, np.ndarray]) -> None:
    path, _ = program
    code, _, err = _run("run", str(path), "--inputs", str(tmp_path / "in.npz"))
    assert code == 0 and err == ""
