"""The Oclgrind slice: generated kernels run on Oclgrind (an OpenCL simulator that reports
every invalid memory access and, with ``OCLGRIND_DATA_RACES=1``, every data race), and
any report fails the test.  Skipped when Debian's ``oclgrind`` is not installed (``make
setup`` installs it as root; docs/devices.md).

Oclgrind runs in child processes: it is selected as an OpenCL platform through a folder
holding ``oclgrind.icd`` (``OCL_ICD_VENDORS``) and ``TLC_DEVICE=Oclgrind``, which must be
set before OpenCL is loaded.  Its exit code stays 0, so the tests read its log
(``OCLGRIND_LOG``).  It simulates about 1 MFLOP/s: samples only, at tiny sizes (about a
minute in all):

- a sample of the back end's own test modules, each instruction family: BLAS
  collectives (gemm, gemv, ger, axpby, sum, hadamard_product, transposed and atomic
  forms), foreach and foreach_nd, SPMD regions, subviews, groups, local memory and
  barriers, atomics, control flow, launch checks and bounds guards; Oclgrind is a GPU
  target to tlc, so these run GPU-style plans (rows interleaved across work-items,
  local-memory staging, work-group reductions), and test_gpu_plan adds the GPU tilings'
  edge cases;
- a sample of StableHLO conformance cases (one small case per op family);
- a canary: the issue-12 out-of-bounds launch, run without launch checks, must be
  reported (so a silent Oclgrind cannot pass the slice).

Run it alone: ``.venv/bin/python -m pytest tests/backend/test_oclgrind.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ICD = Path("/usr/lib/oclgrind/liboclgrind-rt-icd.so")
ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT.parent / "shared" / "conformance" / "stablehlo" / "testdata"
RUNNER = SUITE.parents[1] / "run.py"

pytestmark = pytest.mark.skipif(not ICD.exists(),
                                reason="Oclgrind not installed (apt-get install oclgrind)")

TEST_MODULES = ("tests/backend/test_blas.py", "tests/backend/test_atomic.py",
                "tests/backend/test_memory.py", "tests/backend/test_foreach_nd.py",
                "tests/backend/test_scalar.py", "tests/backend/test_gemm.py",
                "tests/runtime/test_launch_checks.py", "tests/backend/test_gpu_plan.py")
"""Back-end test modules whose kernels run under Oclgrind (each builds one program)."""

CONFORMANCE = (
    "add_float32_1_20_float32_20_20", "tanh_float32_20_20", "select_n_bool_2_3_float32_2_3_"
    "float32_2_3", "concatenate_float32_2_3_float32_2_3", "pad_float32_2_3_float32",
    "slice_float32_3", "rev_float32_4_5", "transpose_float32_2_3", "reshape_float32_2_3",
    "dynamic_slice_float32_3_int64_1", "dynamic_update_slice_float32_3_float32_1_int64_1",
    "gather_float32_1_2_int64_1_2", "scatter_add_float32_1_1_1_float32_1_1",
    "reduce_sum_float32_2_3", "reduce_max_float32_2_3", "reduce_window_add_float32_4_6",
    "cumsum_float32_8_9", "argmax_float32_1", "sort_float32_5_7", "top_k_int32_6_chlo",
    "dot_general_float32_4_3_float64_3_6", "conv_general_dilated_float32_2_3_10_float32_3_3_5",
    "select_and_scatter_add_float32_1_2_2_float32_2_4_6",
    "tridiagonal_solve_float32_3_float32_3_float32_3_float32_3_1",
)
"""One small conformance case per op family (names in the suite's index.jsonl)."""

CANARY = """
import numpy as np
from backend_opencl.api.compiler import compile_program
mod = compile_program(open("examples/fused_kernel.tl").read(), launch_checks=False)
ones = lambda *s: np.asfortranarray(np.ones(s, np.float32))
mod.fused_kernel(1.0, [ones(16, 8)] * 3, ones(8, 8), ones(8, 16), ones(16, 16, 2),
                 num_groups=3)
"""

CASES = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("conformance_run", sys.argv[1])
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)
rows = {r["name"]: r for r in map(json.loads, open(sys.argv[2] + "/index.jsonl"))}
results = {name: run.run_one(sys.argv[2], rows[name]) for name in sys.argv[3:]}
print("RESULTS " + json.dumps({n: [r["result"], r.get("why", "")] for n, r in results.items()}))
"""


def _under_oclgrind(tmp_path: Path, args: list[str], name: str) -> tuple[str, str]:
    """Run ``python args`` with Oclgrind as the OpenCL platform; (output, Oclgrind log)."""
    vendors = tmp_path / "vendors"
    vendors.mkdir(exist_ok=True)
    (vendors / "oclgrind.icd").write_text(f"{ICD}\n")
    log = tmp_path / f"{name}.log"
    env = dict(os.environ, OCL_ICD_VENDORS=str(vendors), TLC_DEVICE="Oclgrind",
               OCLGRIND_LOG=str(log), OCLGRIND_DATA_RACES="1", TLC_CACHE_DIR="off",
               PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    return output, log.read_text() if log.exists() else ""


def _assert_clean(report: str) -> None:
    """No invalid access, race or other error in an Oclgrind log."""
    bad = [line for line in report.splitlines()
           if "Invalid" in line or "race" in line.lower() or "error" in line.lower()]
    assert not bad, report[:4000]


def test_oclgrind_reports_the_canary(tmp_path: Path) -> None:
    _, report = _under_oclgrind(tmp_path, ["-c", CANARY], "canary")
    assert "Invalid write" in report and "fused_kernel" in report, report[:2000]


@pytest.mark.parametrize("module", TEST_MODULES, ids=lambda p: Path(p).stem)
def test_generated_kernels_are_clean(tmp_path: Path, module: str) -> None:
    output, report = _under_oclgrind(
        tmp_path, ["-m", "pytest", module, "-q", "-p", "no:cacheprovider", "-x"], "kernels")
    assert "." in output and "no tests ran" not in output, output[-2000:]
    _assert_clean(report)


@pytest.mark.skipif(not (SUITE / "index.jsonl").exists(),
                    reason="the conformance suite (../shared/conformance) is absent")
def test_conformance_sample_is_clean(tmp_path: Path) -> None:
    output, report = _under_oclgrind(
        tmp_path, ["-c", CASES, str(RUNNER), str(SUITE), *CONFORMANCE], "conformance")
    line = next(x for x in output.splitlines() if x.startswith("RESULTS "))
    results = json.loads(line.removeprefix("RESULTS "))
    assert set(results) == set(CONFORMANCE)
    failed = {name: why for name, (result, why) in results.items() if result != "pass"}
    assert not failed, failed
    _assert_clean(report)
