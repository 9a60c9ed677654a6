"""``make demo``: a StableHLO program and a tensor-language kernel on the default device.

1. ``examples/mlp.mlir``, a three-layer perceptron exported from JAX, compiled with
   ``compile_stablehlo`` and checked against the same network in numpy.
2. The reference's sample ``fused_kernel``: D[:, :, g] := alpha * A[g] @ B.T @ C +
   D[:, :, g] for 1,000 work-groups, checked against numpy (relative error below 1e-5).
3. When jax is installed (``make jax``): the same MLP as a JAX function through
   ``tlc.jax.jit``, checked against ``jax.jit``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import backend_opencl
from backend_opencl.runtime import device_reason, get_device

HERE = Path(__file__).resolve().parent
GROUPS = 1000


def reference(alpha: float, A: list[np.ndarray], B: np.ndarray, C: np.ndarray,
              D: np.ndarray) -> np.ndarray:
    """What the kernel computes, in float64 numpy."""
    a = np.stack(A, axis=2).astype(np.float64)
    bc = B.T.astype(np.float64) @ C.astype(np.float64)
    return D + alpha * np.einsum("ikg,kj->ijg", a, bc)


def mlp_reference(x: np.ndarray, *params: np.ndarray) -> np.ndarray:
    """The MLP of examples/export_jax.py in float64 numpy: two ReLU layers, softmax."""
    w1, b1, w2, b2, w3, b3 = (p.astype(np.float64) for p in params)
    h = np.maximum(x @ w1 + b1, 0.0)
    h = np.maximum(h @ w2 + b2, 0.0)
    logits = h @ w3 + b3
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run_stablehlo() -> bool:
    """Compile and run the JAX-exported MLP; compare with numpy."""
    data = np.load(HERE / "mlp.npz")
    inputs = [data[f"in{i}"] for i in range(7)]
    start = time.perf_counter()
    exe = backend_opencl.compile_stablehlo((HERE / "mlp.mlir").read_text(), filename="mlp.mlir")
    compile_s = time.perf_counter() - start
    (out,) = exe(*inputs)
    expected = mlp_reference(*inputs)
    error = float(np.max(np.abs(out - expected)))
    print(f"StableHLO mlp.mlir (32x64 -> 128 -> 128 -> 10, softmax): compile {compile_s:.3f} s, "
          f"max abs error vs numpy {error:.2e}")
    return error < 1e-5


def main() -> int:
    """Run both parts, check them and report timings."""
    print(f"device: {get_device().label} ({device_reason()})")
    ok = run_stablehlo()
    ok = run_fused_kernel() and ok
    ok = run_jax() and ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def run_fused_kernel() -> bool:
    """Compile the sample fused_kernel, run it on 1,000 groups, compare with numpy."""
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
    print(f"tensor language fused_kernel: compile {compile_s:.3f} s, "
          f"run {min(times) * 1e3:.2f} ms for {GROUPS} work-groups (best of 3, with transfers), "
          f"max relative error vs numpy {error:.2e}")
    return error < 1e-5


def run_jax() -> bool:
    """The MLP of export_jax.py through tlc.jax.jit, against jax.jit (skipped without jax)."""
    try:
        import jax
    except ImportError:
        print("tlc.jax.jit: skipped (jax is not installed; `make jax` adds it)")
        return True
    import tlc.jax

    sys.path.insert(0, str(HERE))
    from export_jax import MODELS

    fn, shapes = MODELS["mlp"]
    rng = np.random.default_rng(7)
    args = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]
    start = time.perf_counter()
    out = tlc.jax.jit(fn)(*args)
    first_s = time.perf_counter() - start
    error = float(np.max(np.abs(out - np.asarray(jax.jit(fn)(*args)))))
    print(f"tlc.jax.jit(mlp): first call (jax lowering, tlc compile, run) {first_s:.3f} s, "
          f"max abs error vs jax.jit {error:.2e}")
    return error < 1e-5


if __name__ == "__main__":
    sys.exit(main())
