"""``make demo``: compile the reference's sample ``fused_kernel`` and run it on a batch.

D[:, :, g] := alpha * A[g] @ B.T @ C + D[:, :, g] for 1,000 work-groups, checked
against numpy (relative error below 1e-5 in f32).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import backend_opencl

HERE = Path(__file__).resolve().parent
GROUPS = 1000


def reference(alpha: float, A: list[np.ndarray], B: np.ndarray, C: np.ndarray,
              D: np.ndarray) -> np.ndarray:
    """What the kernel computes, in float64 numpy."""
    a = np.stack(A, axis=2).astype(np.float64)
    bc = B.T.astype(np.float64) @ C.astype(np.float64)
    return D + alpha * np.einsum("ikg,kj->ijg", a, bc)


def main() -> int:
    """Compile, run, check and report timings."""
    text = (HERE / "fused_kernel.tl").read_text()
    start = time.perf_counter()
    mod = backend_opencl.compile(text)
    compile_s = time.perf_counter() - start
    rng = np.random.default_rng(2024)
    alpha = np.float32(0.75)
    A = [np.asfortranarray(rng.standard_normal((16, 8), dtype=np.float32))
         for _ in range(GROUPS)]
    B = np.asfortranarray(rng.standard_normal((8, 8), dtype=np.float32))
    C = np.asfortranarray(rng.standard_normal((8, 16), dtype=np.float32))
    D = np.asfortranarray(rng.standard_normal((16, 16, GROUPS), dtype=np.float32))
    expected = reference(float(alpha), A, B, C, D)
    times = []
    for _ in range(3):
        out = D.copy(order="F")
        start = time.perf_counter()
        mod.fused_kernel(alpha, A, B, C, out, num_groups=GROUPS)
        times.append(time.perf_counter() - start)
    error = float(np.max(np.abs(out - expected)) / np.max(np.abs(expected)))
    print(f"device:  {mod.device.label}")
    print(f"compile: {compile_s:.3f} s (build cached after the first run)")
    print(f"run:     {min(times) * 1e3:.2f} ms for {GROUPS} work-groups (best of 3, "
          "including transfers)")
    print(f"max relative error vs numpy: {error:.2e}")
    ok = error < 1e-5
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
