"""tlc on a SYCL queue (``pip install -e '.[sycl]'``: dpctl and Intel's runtimes).

1. A tensor-language kernel, ``z := a*x + b*y``, compiled for a ``dpctl.SyclQueue`` and
   called with USM shared memory (``dpctl.memory.MemoryUSMShared``) and numpy arrays.
2. The JAX-exported MLP of ``examples/mlp.mlir`` through ``compile_stablehlo(...,
   device=queue)``, checked against numpy.

Exit status 0 when both match.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import backend_opencl
from backend_opencl.runtime.sycl import queue as sycl

HERE = Path(__file__).resolve().parent
N = 1000
AXPBY = f"""
func @axpby(%a: f32, %x: memref<f32x{N}>, %b: f32, %y: memref<f32x{N}>,
            %z: memref<f32x{N}>) work_group_size(64, 1) {{
  %zero = constant 0 : index
  %n = constant {N} : index
  foreach %i = %zero, %n {{
    %u = load %x[%i] : memref<f32x{N}>
    %v = load %y[%i] : memref<f32x{N}>
    %au = arith.mul %a, %u : f32
    %bv = arith.mul %b, %v : f32
    %s = arith.add %au, %bv : f32
    store %s, %z[%i] : memref<f32x{N}>
  }}
}}
"""


def usm_shared(queue: object, host: np.ndarray) -> object:
    """USM shared memory of ``queue`` holding a copy of ``host``."""
    import dpctl.memory

    mem = dpctl.memory.MemoryUSMShared(host.nbytes, queue=queue)
    mem.copy_from_host(np.ascontiguousarray(host).view(np.uint8))
    return mem


def run_kernel(queue: object) -> bool:
    """``axpby`` on USM memory, then on numpy arrays; True when both match numpy."""
    mod = backend_opencl.compile(AXPBY, device=queue)
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    want = 2 * x.astype(np.float64) - 0.5 * y
    z = usm_shared(queue, np.full(N, np.nan, np.float32))
    mod.axpby(2.0, usm_shared(queue, x), -0.5, usm_shared(queue, y), z)
    on_usm = np.frombuffer(z.copy_to_host(), np.float32)  # type: ignore[attr-defined]
    z_host = np.full(N, np.nan, np.float32)
    mod.axpby(2.0, x, -0.5, y, z_host)  # numpy arrays: copied in, results copied back
    ok = all(np.allclose(got, want, rtol=1e-5, atol=1e-6) for got in (on_usm, z_host))
    print(f"axpby on {mod.device.name}: {'ok' if ok else 'MISMATCH'}")
    return ok


def run_mlp(queue: object) -> bool:
    """The MLP through ``compile_stablehlo(..., device=queue)``; True when it matches."""
    sys.path.insert(0, str(HERE))
    from demo import mlp_reference

    data = np.load(HERE / "mlp.npz")
    inputs = [data[f"in{i}"] for i in range(7)]
    exe = backend_opencl.compile_stablehlo((HERE / "mlp.mlir").read_text(), device=queue,
                                           filename="mlp.mlir")
    (probs,) = exe(*inputs)
    err = float(np.abs(probs - mlp_reference(*inputs)).max())
    print(f"mlp on the SYCL queue: max abs error {err:.2e}")
    return err < 1e-5


def main() -> int:
    """Run both parts on an in-order queue of the first OpenCL CPU device."""
    queue = sycl.queue("opencl:cpu")  # tlc's OpenCL drivers visible to dpctl, in order
    return 0 if run_kernel(queue) and run_mlp(queue) else 1


if __name__ == "__main__":
    sys.exit(main())
