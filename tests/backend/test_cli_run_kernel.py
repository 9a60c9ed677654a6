"""``tlc run FILE.tl``: a tensor-language kernel run from the command line (``--entry``,
``--inputs`` with numbers for scalars and stacked groups, ``--num-groups``, results
named after the arguments the kernel writes, the argument listing)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from backend_opencl.tools.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fused_kernel.tl"

KERNELS = """\
func @scale(%alpha: f32, %A: memref<f32x4x3>, %B: memref<f32x4x3,strided<1,5>>) {
  %zero = constant 0.0 : f32
  axpby.n %alpha, %A, %zero, %B : f32, memref<f32x4x3>, f32, memref<f32x4x3,strided<1,5>>
}

func @batch(%A: group<memref<f32x4>>, %out: memref<f32x4x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>>
  %o = subview %out[:, %g] : memref<f32x4x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %a, %zero, %o : f32, memref<f32x4>, f32, memref<f32x4>
}
"""


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture()
def kernels(tmp_path: Path) -> Path:
    path = tmp_path / "kernels.tl"
    path.write_text(KERNELS)
    return path


def _fused_inputs(tmp_path: Path, rng: np.random.Generator, groups: int
                  ) -> tuple[list[np.ndarray], np.ndarray]:
    """fused_kernel's inputs (C-ordered, as users save them) and D after one run."""
    alpha = np.float32(rng.uniform(0.5, 2))
    a = rng.standard_normal((groups, 16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    c = rng.standard_normal((8, 16)).astype(np.float32)
    d = rng.standard_normal((16, 16, groups)).astype(np.float32)
    want = d.astype(np.float64)
    for g in range(groups):
        want[:, :, g] += alpha * (a[g].astype(np.float64) @ b.T @ c)
    return [np.array(alpha), a, b, c, d], want


def test_fused_kernel_from_an_npz(tmp_path: Path, h, rng) -> None:
    """The group's members from the first mode, the scalar from a 0-d array, D (column-
    major in the kernel) saved as a plain C-ordered array; num_groups from the group."""
    inputs, want = _fused_inputs(tmp_path, rng, groups=3)
    np.savez(tmp_path / "in.npz", *inputs)
    code, _, err = _run("run", str(EXAMPLE), "--inputs", str(tmp_path / "in.npz"),
                        "-o", str(tmp_path / "out.npz"))
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as got:
        assert got.files == ["D"]
        h.close(got["D"], want, "f32")


def test_numbers_for_scalars_and_repeats_start_afresh(tmp_path: Path, h, rng) -> None:
    """``--inputs 0.75,A.npy,...``; ``--repeat 3`` runs on fresh copies each time (the
    kernel accumulates into D), so the result is one run's."""
    inputs, _ = _fused_inputs(tmp_path, rng, groups=2)
    files = []
    for name, value in zip("ABCD", inputs[1:], strict=True):
        np.save(tmp_path / f"{name}.npy", value)
        files.append(str(tmp_path / f"{name}.npy"))
    a, b, c, d = inputs[1:]
    want = d + 0.75 * np.einsum("gij,kj,kl->ilg", a, b, c)
    code, _, err = _run("run", str(EXAMPLE), "--inputs", ",".join(["0.75", *files]),
                        "--repeat", "3", "--num-groups", "2", "-o", str(tmp_path / "out.npz"))
    assert code == 0, err
    h.close(np.load(tmp_path / "out.npz")["D"], want, "f32")


def test_entry_strided_layout_and_poisoned_output(tmp_path: Path, kernels: Path, h,
                                                  rng) -> None:
    """--entry picks the kernel; B has a padded leading dimension (strided<1,5>) and is poisoned."""
    a = rng.standard_normal((4, 3)).astype(np.float32)
    np.savez(tmp_path / "in.npz", np.float64(-1.5), a, np.full((4, 3), np.nan, np.float32))
    code, out, err = _run("run", str(kernels), "--entry", "scale", "--inputs",
                          str(tmp_path / "in.npz"), "--output-format", "text")
    assert code == 0, err
    head, *rows = out.strip().splitlines()
    assert head == "B: 4x3 float32"
    got = np.array([float(v) for row in rows for v in row.strip("[] ").split()], np.float32)
    h.close(got.reshape(4, 3), -1.5 * a, "f32")


@pytest.mark.parametrize("num_groups", [None, 3, 2])
def test_num_groups(tmp_path: Path, kernels: Path, rng, num_groups: int | None) -> None:
    """Omitted: as many work-groups as the group has members; fewer leave the rest of
    the poisoned output unwritten."""
    a = rng.standard_normal((3, 4)).astype(np.float32)
    np.savez(tmp_path / "in.npz", a, np.full((4, 3), np.nan, np.float32))
    extra = [] if num_groups is None else ["--num-groups", str(num_groups)]
    code, _, err = _run("run", str(kernels), "--entry", "batch", "--inputs",
                        str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"), *extra)
    assert code == 0, err
    got = np.load(tmp_path / "out.npz")["out"]
    ran = num_groups or 3
    np.testing.assert_array_equal(got[:, :ran], a.T[:, :ran])
    assert np.isnan(got[:, ran:]).all()


def test_without_inputs_the_arguments_are_listed(kernels: Path) -> None:
    code, out, err = _run("run", str(kernels), "--entry", "batch")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"{kernels}: error: no --inputs given; @batch takes 2 arguments:"
    assert lines[1].split() == ["%A", "group<memref<f32x4>>", "shape", "(members,", "4)",
                                "dtype", "float32"]
    assert lines[2].split() == ["%out", "memref<f32x4x?>", "shape", "(4,", "?)", "dtype",
                                "float32,", "written", "(a", "result)"]
    assert f"tlc run {kernels} --inputs in.npz" in err
    assert "the results are the arguments the kernel writes (%out)" in err
    code, _, err = _run("run", str(EXAMPLE))
    assert code == 2 and "%alpha  f32  " in err and "a number (float32)" in err


def test_wrong_count_lists_the_arguments(tmp_path: Path, kernels: Path) -> None:
    np.save(tmp_path / "a.npy", np.ones((3, 4), np.float32))
    code, _, err = _run("run", str(kernels), "--entry", "batch", "--inputs",
                        str(tmp_path / "a.npy"))
    assert code == 2
    assert err.startswith(f"{kernels}: error: --inputs gave 1 arrays; @batch takes 2 "
                          "arguments:")


def test_several_kernels_need_entry(kernels: Path) -> None:
    code, _, err = _run("run", str(kernels))
    assert code == 1
    assert err == (f"{kernels}: error: the file defines 2 functions (@scale, @batch); pick "
                   "one with --entry NAME\n")
    code, _, err = _run("run", str(kernels), "--entry", "main")
    assert code == 1 and "no function @main (--entry; the file defines @scale, @batch)" in err


def test_mistakes_in_inputs_are_diagnostics(tmp_path: Path, kernels: Path) -> None:
    np.save(tmp_path / "a.npy", np.ones((4, 3), np.float64))
    np.save(tmp_path / "b.npy", np.ones((4, 3), np.float32))
    code, _, err = _run("run", str(kernels), "--entry", "scale", "--inputs",
                        f"2,{tmp_path / 'a.npy'},{tmp_path / 'b.npy'}")
    assert code == 1 and "argument 2 (%A: memref<f32x4x3>): expected dtype float32" in err
    code, _, err = _run("run", str(kernels), "--entry", "batch", "--inputs",
                        f"{tmp_path / 'b.npy'},1.5")
    assert code == 1 and "argument 1 (%A: group<memref<f32x4>>), member 0: mode 0 must " \
                         "have size 4, got shape (3,)" in err
    np.save(tmp_path / "c.npy", np.ones((2, 4, 3), np.float32))
    code, _, err = _run("run", str(kernels), "--entry", "batch", "--inputs",
                        f"{tmp_path / 'c.npy'},{tmp_path / 'b.npy'}")
    assert code == 1 and "%A (group<memref<f32x4>>) takes an array of 2 modes, the first " \
                         "indexing the group's members; got shape (2, 4, 3)" in err


def test_verbose_phases(tmp_path: Path, kernels: Path) -> None:
    np.savez(tmp_path / "in.npz", np.ones((2, 4), np.float32), np.zeros((4, 2), np.float32))
    code, _, err = _run("-v", "run", str(kernels), "--entry", "batch", "--inputs",
                        str(tmp_path / "in.npz"))
    assert code == 0, err
    phases = [line.split()[1] for line in err.splitlines() if line.startswith("tlc: ")]
    assert phases == ["read", "parse", "load", "compile", "run", "write", "total"]
