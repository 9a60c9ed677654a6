"""Opt-in (``TLC_OCLGRIND=1``): run gemm and BLAS kernels under Oclgrind, which reports
every out-of-bounds access and data race.  Slow (an interpreter), so off by default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ICD = Path("/usr/lib/oclgrind/liboclgrind-rt-icd.so")
HERE = Path(__file__).parent

pytestmark = pytest.mark.skipif(
    os.environ.get("TLC_OCLGRIND") != "1" or not ICD.exists(),
    reason="set TLC_OCLGRIND=1 with Debian's oclgrind installed")

SCRIPT = """
import sys
sys.argv = ["pytest"]
import pytest
sys.exit(pytest.main([{tests!r}, "-q", "-p", "no:cacheprovider", "-k", {select!r}]))
"""


def test_kernels_under_oclgrind(tmp_path: Path) -> None:
    icd = tmp_path / "oclgrind.icd"
    icd.write_text(str(ICD) + "\n")
    log = tmp_path / "oclgrind.log"
    env = dict(os.environ, OCL_ICD_VENDORS=str(icd), OCLGRIND_LOG=str(log),
               OCLGRIND_DATA_RACES="1", TLC_CACHE_DIR="off", TLC_OCLGRIND="0",
               TLC_DEVICE="Oclgrind")  # else PyPI's PoCL (found without the ICD) wins
    tests = [str(HERE / name) for name in ("test_gemm.py", "test_blas.py",
                                           "test_gemm_staged.py")]
    code = SCRIPT.format(tests=tests[0], select="f32 or c32")
    for path in tests:
        script = code.replace(repr(tests[0]), repr(path))
        done = subprocess.run([sys.executable, "-c", script], env=env, cwd=HERE.parents[1],
                              capture_output=True, text=True, check=False, timeout=1800)
        assert done.returncode == 0, done.stdout + done.stderr
    report = log.read_text() if log.exists() else ""
    assert "Invalid" not in report and "race" not in report.lower(), report[:4000]
