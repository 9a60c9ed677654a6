"""``tlc interpret``: a line per function and the exit status, check ops, printing,
probes (files and index), infeed/outfeed options, one-process interpreter.run_parallel
and the "needs MPI" error for several processes without the MPI package."""

from __future__ import annotations

import csv
import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from backend_opencl.tools.cli import main

PASSING = """func.func @adds() {
  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %b = stablehlo.add %a, %a : tensor<3xi32>
  check.expect_eq_const %b, dense<[2, 4, 6]> : tensor<3xi32>
  func.return
}
"""
FAILING = """func.func @wrong() {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.multiply %a, %a : tensor<2xf32>
  check.expect_almost_eq_const %b, dense<[1.0, 5.0]> : tensor<2xf32>
  func.return
}
"""


def _tlc(tmp_path: Path, text: str, *options: str) -> tuple[int, str, str]:
    path = tmp_path / "t.mlir"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["interpret", str(path), "--probe-dir", str(tmp_path / "probe"),
                     *options])
    return code, out.getvalue(), err.getvalue()


def test_one_line_per_function_and_the_exit_status(tmp_path: Path) -> None:
    code, out, _ = _tlc(tmp_path, PASSING + "\n// -----\n\n" + FAILING)
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "PASS adds"
    assert lines[1].startswith("FAIL wrong: check 0: 1 of 2 elements differ")
    assert lines[-1] == "1 passed, 1 failed"
    code, out, _ = _tlc(tmp_path, PASSING)
    assert code == 0 and out.splitlines() == ["PASS adds", "1 passed, 0 failed"]


def test_print_shows_the_tensor(tmp_path: Path) -> None:
    text = """func.func @p() {
  %a = stablehlo.iota dim = 1 : tensor<2x3xi16>
  interpreter.print %a : tensor<2x3xi16>
  %s = stablehlo.constant dense<2.5> : tensor<f32>
  interpreter.print %s : tensor<f32>
  func.return
}
"""
    code, out, _ = _tlc(tmp_path, text)
    assert code == 0
    assert out.startswith("tensor<2x3xi16> {\n  [\n    [0, 1, 2],\n    [0, 1, 2]\n  ]\n}\n"
                          "tensor<f32> {2.500000e+00}\n")


def test_probes_are_saved_per_iteration_with_an_index(tmp_path: Path) -> None:
    text = """func.func @loop() {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %three = stablehlo.constant dense<3> : tensor<i64>
  %v = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %r:2 = stablehlo.while(%i = %zero, %x = %v) : tensor<i64>, tensor<2xf32>
  cond {
    %c = stablehlo.compare LT, %i, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %y = stablehlo.add %x, %x : tensor<2xf32>
    %p = interpreter.probe %y, probe_id = "loop/x" : tensor<2xf32>
    %j = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %j, %p : tensor<i64>, tensor<2xf32>
  }
  %w = stablehlo.constant dense<[6.0, -8.0]> : tensor<2xf32>
  check.expect_serialized_eq %w, probe_id = "loop/x", iter = 1 : tensor<2xf32>
  func.return
}
"""
    code, out, _ = _tlc(tmp_path, text)
    assert code == 0, out
    probe = tmp_path / "probe"
    with (probe / "index.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["probe_id"], r["iteration"]) for r in rows] == [("loop/x", "0"), ("loop/x", "1"),
                                                               ("loop/x", "2")]
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(np.load(probe / row["file"]),
                                      np.array([1.5, -2.0], np.float32) * 2 ** (i + 1))
    assert rows[0]["file"] == "loop_x_0.npy"


def test_serialized_check_of_a_missing_iteration_fails(tmp_path: Path) -> None:
    text = """func.func @once() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %p = interpreter.probe %a, probe_id = "a" : tensor<2xi32>
  check.expect_serialized_eq %p, probe_id = "a", iter = 3 : tensor<2xi32>
  func.return
}
"""
    code, out, _ = _tlc(tmp_path, text)
    assert code == 1 and "probe 'a' has no iteration 3 (recorded: 1)" in out


def test_infeed_and_outfeed_options(tmp_path: Path) -> None:
    text = """func.func @feeds() {
  %t = stablehlo.after_all : !stablehlo.token
  %r:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2x2xi32>, !stablehlo.token)
  %d = stablehlo.add %r#0, %r#0 : tensor<2x2xi32>
  %u = "stablehlo.outfeed"(%d, %r#1) : (tensor<2x2xi32>, !stablehlo.token) -> !stablehlo.token
  func.return
}
"""
    feed = np.array([[1, -2], [3, 40]], np.int32)
    np.savez(tmp_path / "in.npz", in0=feed)
    code, out, _ = _tlc(tmp_path, text, "--infeed", str(tmp_path / "in.npz"), "--outfeed",
                        str(tmp_path / "out.npz"))
    assert code == 0, out
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["out0"], 2 * feed)
    code, out, _ = _tlc(tmp_path, text)
    assert code == 1 and "'stablehlo.infeed' has no data left" in out


RUN_PARALLEL = """module @m {
  func.func @twice(%x: tensor<3xf32>, %t: !stablehlo.token) -> (tensor<3xf32>, !stablehlo.token) {
    %y = stablehlo.add %x, %x : tensor<3xf32>
    func.return %y, %t : tensor<3xf32>, !stablehlo.token
  }
  func.func @main() {
    %x = stablehlo.constant dense<[1.0, 2.0, -3.0]> : tensor<3xf32>
    %t = stablehlo.after_all : !stablehlo.token
    %r:2 = "interpreter.run_parallel"(%x, %t) {programs = [[@twice]]}
        : (tensor<3xf32>, !stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)
    check.expect_eq_const %r#0, dense<[2.0, 4.0, -6.0]> : tensor<3xf32>
    func.return
  }
}
"""


def test_run_parallel_of_one_process_runs_here(tmp_path: Path) -> None:
    code, out, _ = _tlc(tmp_path, RUN_PARALLEL)
    assert code == 0, out
    assert "PASS main" in out.splitlines()


def test_several_processes_without_mpi_say_so(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "backend_opencl.distributed", None)
    text = RUN_PARALLEL.replace("[[@twice]]", "[[@twice], [@twice]]").replace(
        "(%x, %t)", "(%x, %t, %x, %t)").replace(
        ": (tensor<3xf32>, !stablehlo.token) -> (tensor<3xf32>, !stablehlo.token)\n    check",
        ": (tensor<3xf32>, !stablehlo.token, tensor<3xf32>, !stablehlo.token) -> "
        "(tensor<3xf32>, !stablehlo.token, tensor<3xf32>, !stablehlo.token)\n    check").replace(
        "%r:2", "%r:4")
    code, out, _ = _tlc(tmp_path, text)
    assert code == 1
    assert "FAIL main: TlcError: needs MPI: interpreter.run_parallel of 2 replica(s) x 1 " \
           "partition(s) runs 2 processes" in out


def test_user_mistakes_are_diagnostics(tmp_path: Path) -> None:
    code, _, err = _tlc(tmp_path, "func.func @f() {\n  %a = stablehlo.nope\n}\n")
    assert code == 1 and "t.mlir:2:8: error: unknown operation 'stablehlo.nope'" in err
    out, errs = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(errs):
        code = main(["interpret", str(tmp_path / "absent.mlir")])
    assert code == 1 and "cannot read file" in errs.getvalue()
    (tmp_path / "bad.npz").write_text("not an npz")
    code, _, err = _tlc(tmp_path, PASSING, "--infeed", str(tmp_path / "bad.npz"))
    assert code == 1 and "cannot read the infeed arrays" in err


@pytest.mark.parametrize("name", ["probe", "infeed", "outfeed"])
def test_interpret_suite_files(name: str) -> None:
    """The suite's single-process files of the interpreter's own ops."""
    from tests.lowering.interpret_files import interpret_failures

    assert interpret_failures(name) == {}
