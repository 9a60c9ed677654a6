"""Intel's OpenCL CPU runtime installed by pip (``pip install -e '.[intel]'``): found without
ICD files or environment variables, listed, ranked, and usable beside a PoCL in one process.

Each test runs a fresh Python process, since the OpenCL loader reads its vendor folder once.
Skipped when ``intel-opencl-rt`` is not installed in this environment.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from backend_opencl.runtime import icd

pytestmark = pytest.mark.skipif(icd.pip_intel_library() is None,
                                reason="Intel's OpenCL CPU runtime (intel-opencl-rt) not installed")

BOTH = """
import numpy as np
import backend_opencl
from backend_opencl.runtime import list_devices

TEXT = '''
func @axpy(%a: f32, %x: memref<f32x?>, %y: memref<f32x?>) work_group_size(16, 1) {
  %zero = constant 0 : index
  %n = size %x[0] : memref<f32x?>
  foreach %i = %zero, %n {
    %u = load %x[%i] : memref<f32x?>
    %v = load %y[%i] : memref<f32x?>
    %w = arith.mul %a, %u : f32
    %s = arith.add %w, %v : f32
    store %s, %y[%i] : memref<f32x?>
  }
}
'''
labels = [d.label for d in list_devices()]
intel = next(i for i, d in enumerate(list_devices())
             if d.platform_name.startswith("Intel(R) OpenCL"))
others = [i for i, d in enumerate(list_devices()) if i != intel and d.kind == "cpu"]
rng = np.random.default_rng(3)
x = rng.standard_normal(1000).astype(np.float32)
y0 = rng.standard_normal(1000).astype(np.float32)
for _ in range(2):  # alternate: both contexts stay alive
    for index in [intel] + others:
        mod = backend_opencl.compile(TEXT, device=index)
        y = y0.copy()
        mod.axpy(np.float32(1.5), x, y)
        np.testing.assert_allclose(y, 1.5 * x + y0, rtol=1e-6)
print(len(labels), list_devices()[intel].subgroup_sizes)
"""


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("TLC_DEVICE", "OCL_ICD_VENDORS")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**clean, **env})


def test_listed_without_icd_files_or_variables() -> None:
    done = _run("from backend_opencl.runtime import describe_devices; print(describe_devices())")
    assert done.returncode == 0, done.stderr
    assert "Intel(R) OpenCL" in done.stdout
    chosen = _run("from backend_opencl.runtime import describe_devices as d; print(d('intel'))")
    assert chosen.returncode == 0, chosen.stderr
    marked = [line for line in chosen.stdout.splitlines() if line.startswith("*")]
    assert len(marked) == 1 and "Intel(R) OpenCL" in marked[0], chosen.stdout


def test_intel_and_a_pocl_compute_in_one_process() -> None:
    done = _run(BOTH)
    assert done.returncode == 0, done.stderr
    count, sizes = done.stdout.split(" ", 1)
    assert int(count) >= 1
    assert "8" in sizes and "16" in sizes


def test_pypi_spec_still_loads_pypis_pocl_alone() -> None:
    done = _run("from backend_opencl.runtime import list_devices as l; "
                "print([d.platform_name for d in l()])", TLC_DEVICE="pypi")
    assert done.returncode == 0, done.stderr
    assert "Intel" not in done.stdout
