"""Run the JAX-exported example models with tlc and compare with JAX's results.

Each ``examples/NAME.mlir`` was written by ``export_jax.py`` beside ``NAME.npz`` (its
inputs and JAX's outputs). Exit status 0 when every model matches to 2e-4 relative to
the largest output.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import backend_opencl

HERE = Path(__file__).resolve().parent
TOLERANCE = 2e-4


def run(name: str) -> bool:
    """Compile and run one model; print its error against JAX; True when it matches."""
    data = np.load(HERE / f"{name}.npz")
    ins = [data[f"in{i}"] for i in range(sum(k.startswith("in") for k in data.files))]
    want = [data[f"out{i}"] for i in range(sum(k.startswith("out") for k in data.files))]
    start = time.perf_counter()
    exe = backend_opencl.compile_stablehlo((HERE / f"{name}.mlir").read_text(),
                                           filename=f"{name}.mlir")
    compiled = time.perf_counter() - start
    start = time.perf_counter()
    got = exe(*ins)  # the first call builds the OpenCL program (cached on disk)
    first = time.perf_counter() - start
    start = time.perf_counter()
    exe(*ins)
    warm = time.perf_counter() - start
    error = max(float(np.max(np.abs(g - w))) / max(1.0, float(np.max(np.abs(w))))
                for g, w in zip(got, want, strict=True))
    ok = error <= TOLERANCE
    print(f"{name:18s} compile {compiled:5.2f} s  first run {first * 1e3:7.1f} ms  "
          f"warm run {warm * 1e3:6.1f} ms  "
          f"max rel. error vs JAX {error:.2e}  {'PASS' if ok else 'FAIL'}")
    return ok


def main(names: list[str]) -> int:
    """Run the named models (all when none are named)."""
    exported = (p.stem for p in HERE.glob("*.mlir") if (HERE / f"{p.stem}.npz").exists())
    names = names or sorted(exported)
    results = [run(name) for name in names]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
