"""SYCL through dpctl: kernels and StableHLO executables on a ``dpctl.SyclQueue``.

Kernels are built through dpctl and take USM memory (plain ``dpctl.memory`` allocations,
USM arrays through ``__sycl_usm_array_interface__``) and numpy arrays, checked like
numpy arrays on the OpenCL route.  Skipped when dpctl is not installed (``.[sycl]``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tensorlang.diagnostics import LaunchError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("dpctl") is None,
                                reason="dpctl not installed (pip install -e '.[sycl]')")

ROOT = Path(__file__).resolve().parents[2]
N = 300

AXPBY = f"""
func @axpby(%a: f32, %x: memref<f32x{N}>, %b: f32, %y: memref<f32x{N}>,
            %z: memref<f32x{N}>) work_group_size(32, 1) {{
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

SCALE = """
func @scale(%a: f64, %x: memref<f64x?x?>, %z: memref<f64x?x?>) work_group_size(16, 1) {
  %zero = constant 0 : index
  %m = size %x[0] : memref<f64x?x?>
  %n = size %x[1] : memref<f64x?x?>
  foreach (%i, %j) = (%zero, %zero), (%m, %n) {
    %u = load %x[%i, %j] : memref<f64x?x?>
    %s = arith.mul %a, %u : f64
    store %s, %z[%i, %j] : memref<f64x?x?>
  }
}
"""


@pytest.fixture(scope="module")
def queue() -> Any:
    from backend_opencl.runtime.sycl import queue as sycl

    return sycl.queue("opencl:cpu")


class UsmArray:
    """A minimal USM array (``__sycl_usm_array_interface__`` over dpctl USM memory), as
    ``dpctl.tensor`` / dpnp arrays present themselves."""

    def __init__(self, queue: Any, host: np.ndarray, kind: str = "device",
                 order: str = "F") -> None:
        import dpctl.memory as dpm

        host = np.asarray(host, order=order)  # type: ignore[call-overload]
        cls = {"device": dpm.MemoryUSMDevice, "shared": dpm.MemoryUSMShared}[kind]
        self.mem = cls(max(host.nbytes, 1), queue=queue)
        self.mem.copy_from_host(host.ravel(order="K").view(np.uint8))
        self.shape, self.dtype, self.order, self.queue = host.shape, host.dtype, order, queue
        self.strides = tuple(s // host.itemsize for s in host.strides)

    @property
    def __sycl_usm_array_interface__(self) -> dict[str, Any]:
        ptr = self.mem.__sycl_usm_array_interface__["data"][0]
        return {"data": (ptr, False), "shape": self.shape, "strides": self.strides,
                "typestr": self.dtype.str, "version": 1, "syclobj": self.queue}

    def get(self) -> np.ndarray:
        """A numpy copy."""
        host = np.empty(self.shape, self.dtype, order=self.order)  # type: ignore[call-overload]
        self.mem.copy_to_host(host.ravel(order="K").view(np.uint8))
        return host


def usm(queue: Any, host: np.ndarray, kind: str = "shared") -> Any:
    """Plain USM memory (``dpctl.memory``) holding ``host``'s bytes."""
    import dpctl.memory as dpm

    cls = {"device": dpm.MemoryUSMDevice, "shared": dpm.MemoryUSMShared,
           "host": dpm.MemoryUSMHost}[kind]
    mem = cls(host.nbytes, queue=queue)
    mem.copy_from_host(np.ascontiguousarray(host).reshape(-1).view(np.uint8))
    return mem


def host_of(mem: Any, dtype: Any) -> np.ndarray:
    return np.frombuffer(mem.copy_to_host(), dtype)


def _vectors(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    return x, y, 1.5 * x.astype(np.float64) - 0.25 * y


@pytest.mark.parametrize("kind", ["shared", "device", "host"])
def test_foreach_on_plain_usm_memory(queue: Any, kind: str) -> None:
    import backend_opencl

    mod = backend_opencl.compile(AXPBY, device=queue)
    x, y, want = _vectors(1)
    z = usm(queue, np.full(N, np.nan, np.float32), kind)  # poisoned
    mod.axpby(1.5, usm(queue, x, kind), -0.25, usm(queue, y, kind), z)
    np.testing.assert_allclose(host_of(z, np.float32), want, rtol=1e-5, atol=1e-6)


def test_foreach_on_numpy_and_usm_arrays(queue: Any) -> None:
    import backend_opencl

    mod = backend_opencl.compile(AXPBY, device=queue)
    x, y, want = _vectors(2)
    z = np.full(N, np.nan, np.float32)
    mod.axpby(1.5, x, -0.25, UsmArray(queue, y), z)  # numpy in and out, USM mixed in
    np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-6)
    out = UsmArray(queue, np.full(N, np.nan, np.float32), "shared")
    mod.axpby(1.5, UsmArray(queue, x), -0.25, y, out)
    np.testing.assert_allclose(out.get(), want, rtol=1e-5, atol=1e-6)


def test_dynamic_sizes_and_strides_from_usm_arrays(queue: Any) -> None:
    import backend_opencl

    mod = backend_opencl.compile(SCALE, device=queue)
    x = np.random.default_rng(3).standard_normal((7, 5))
    out = UsmArray(queue, np.full((7, 5), np.nan))
    mod.scale(3.0, UsmArray(queue, x), out, num_groups=3)
    np.testing.assert_allclose(out.get(), 3.0 * x, rtol=1e-14)
    with pytest.raises(LaunchError, match="plain USM memory has no shape"):
        mod.scale(3.0, usm(queue, x), out)


MATMUL = """
func @matmul(%A: memref<f32x?x?>, %B: memref<f32x?x?>, %C: memref<f32x?x?>) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.n.n %one, %A, %B, %zero, %C : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?>
}
"""


@pytest.mark.parametrize("kind", ["shared", "device"])
def test_gemm_into_poisoned_usm_array(queue: Any, kind: str) -> None:
    import backend_opencl

    mod = backend_opencl.compile(MATMUL, device=queue)
    rng = np.random.default_rng(12)
    A, B = (np.asfortranarray(rng.standard_normal(s), np.float32) for s in ((37, 19), (19, 23)))
    C = UsmArray(queue, np.full((37, 23), np.nan, np.float32), kind)
    mod.matmul(UsmArray(queue, A, kind), UsmArray(queue, B, kind), C)
    np.testing.assert_allclose(C.get(), A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_gemm_with_groups_of_usm_arrays(queue: Any) -> None:
    import backend_opencl

    mod = backend_opencl.compile((ROOT / "examples" / "fused_kernel.tl").read_text(),
                                 device=queue)
    rng = np.random.default_rng(4)
    groups = 20
    A = [np.asfortranarray(rng.standard_normal((16, 8)), np.float32) for _ in range(groups)]
    B, C = (np.asfortranarray(rng.standard_normal(s), np.float32) for s in ((8, 8), (8, 16)))
    D = np.asfortranarray(rng.standard_normal((16, 16, groups)), np.float32)
    bc = B.T.astype(np.float64) @ C
    want = D + 0.5 * np.einsum("ikg,kj->ijg", np.stack(A, 2).astype(np.float64), bc)
    on_host = D.copy(order="F")
    mod.fused_kernel(0.5, A, B, C, on_host, num_groups=groups)
    np.testing.assert_allclose(on_host, want, rtol=1e-4, atol=1e-4)
    out = UsmArray(queue, D)
    mod.fused_kernel(0.5, [UsmArray(queue, a, "shared") for a in A], usm(queue, B.T),
                     UsmArray(queue, C), out, num_groups=groups)
    np.testing.assert_allclose(out.get(), want, rtol=1e-4, atol=1e-4)


def test_device_facts_from_dpctl_when_pyopencl_does_not_see_it(
        queue: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import dpctl

    import backend_opencl
    from backend_opencl.runtime.opencl import devices
    from backend_opencl.runtime.sycl import queue as sycl

    monkeypatch.setattr(devices, "list_devices", lambda: [])
    other = dpctl.SyclQueue(queue.sycl_context, queue.sycl_device, property="in_order")
    facts = sycl.sycl_device(other).facts
    assert facts.cl_device is None and facts.key.startswith("sycl|")
    assert facts.max_work_group_size == queue.sycl_device.max_work_group_size
    mod = backend_opencl.compile(AXPBY, device=other)
    x, y, want = _vectors(10)
    z = np.full(N, np.nan, np.float32)
    mod.axpby(1.5, x, -0.25, y, z)
    np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-6)


SCALARS = """
func @k(%a: c32, %h: f16, %b: i1, %m: i8, %x: memref<c32x8>, %y: memref<f16x8>)
    work_group_size(8, 1) {
  %zero = constant 0 : index
  %n = constant 8 : index
  %mf = cast %m : i8 -> f16
  foreach %i = %zero, %n {
    %u = load %x[%i] : memref<c32x8>
    %s = arith.mul %a, %u : c32
    store %s, %x[%i] : memref<c32x8>
    %v = load %y[%i] : memref<f16x8>
    %w = arith.add %h, %v : f16
    %p = arith.mul %mf, %w : f16
    %t = select %b, %p, %v : f16
    store %t, %y[%i] : memref<f16x8>
  }
}
"""


@pytest.mark.parametrize("flag", [True, False])
def test_scalar_kinds(queue: Any, flag: bool) -> None:
    import backend_opencl

    mod = backend_opencl.compile(SCALARS, device=queue)
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex64)
    y = rng.standard_normal(8).astype(np.float16)
    want_x = x * np.complex64(2 - 1j)
    want_y = (np.float16(-3) * (np.float16(0.5) + y)) if flag else y.copy()
    mod.k(2 - 1j, 0.5, flag, -3, x, y)
    np.testing.assert_allclose(x, want_x, rtol=1e-6)
    np.testing.assert_allclose(y, want_y, rtol=1e-3)


def test_out_of_order_queue(queue: Any) -> None:
    import dpctl

    import backend_opencl

    unordered = dpctl.SyclQueue(queue.sycl_context, queue.sycl_device)
    assert not unordered.is_in_order
    mod = backend_opencl.compile(AXPBY, device=unordered)
    x, y, want = _vectors(5)
    z = usm(unordered, np.full(N, np.nan, np.float32), "device")
    for _ in range(3):
        mod.axpby(1.5, usm(unordered, x), -0.25, usm(unordered, y), z)
    np.testing.assert_allclose(host_of(z, np.float32), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("wrong, message", [
    ("small", "the USM memory has 1196 bytes but the memref spans 1200 bytes"),
    ("dtype", "expected dtype float32, got float64"),
    ("shape", "mode 0 must have size 300"),
    ("numpy", "expected dtype float32, got int32"),
    ("type", "expected a numpy array or USM memory"),
])
def test_wrong_arguments_raise_before_any_kernel_runs(queue: Any, wrong: str,
                                                      message: str) -> None:
    import backend_opencl

    mod = backend_opencl.compile(AXPBY, device=queue)
    x, y, _ = _vectors(6)
    bad = {"small": usm(queue, y[:-1]), "dtype": UsmArray(queue, y.astype(np.float64)),
           "shape": UsmArray(queue, y[:-1]), "numpy": y.astype(np.int32),
           "type": [1.0] * N}[wrong]
    z = usm(queue, np.full(N, np.nan, np.float32))
    with pytest.raises(LaunchError, match=message) as err:
        mod.axpby(1.5, usm(queue, x), -0.25, bad, z)
    assert "argument 4 (%y: memref<f32x300>)" in str(err.value)
    assert np.isnan(host_of(z, np.float32)).all()  # nothing ran


def test_read_only_usm_array_refused_for_an_output(queue: Any) -> None:
    import backend_opencl

    class ReadOnly(UsmArray):
        @property
        def __sycl_usm_array_interface__(self) -> dict[str, Any]:
            info = super().__sycl_usm_array_interface__
            return {**info, "data": (info["data"][0], True)}

    mod = backend_opencl.compile(AXPBY, device=queue)
    x, y, _ = _vectors(7)
    with pytest.raises(LaunchError, match="argument 5 .* USM array is read-only"):
        mod.axpby(1.5, x, -0.25, y, ReadOnly(queue, np.zeros(N, np.float32)))


def _mlp() -> tuple[str, list[np.ndarray], np.ndarray]:
    sys.path.insert(0, str(ROOT / "examples"))
    from demo import mlp_reference

    data = np.load(ROOT / "examples" / "mlp.npz")
    inputs = [data[f"in{i}"] for i in range(7)]
    return (ROOT / "examples" / "mlp.mlir").read_text(), inputs, mlp_reference(*inputs)


def test_stablehlo_mlp_on_the_queue(queue: Any) -> None:
    import backend_opencl

    text, inputs, want = _mlp()
    exe = backend_opencl.compile_stablehlo(text, device=queue)
    for _ in range(2):  # the second call reuses pooled USM memory
        (got,) = exe(*inputs)
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    (got,) = exe(*[UsmArray(queue, a, order="C") for a in inputs])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_stablehlo_lowered_program_kept_on_disk(queue: Any, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import backend_opencl
    from backend_opencl.api import compiler

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    text, inputs, want = _mlp()
    backend_opencl.compile_stablehlo(text, device=queue)
    assert list((tmp_path / "lowered").glob("*.pickle"))

    def no_lowering(*args: Any) -> None:
        raise AssertionError("lowered again")

    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setattr(compiler, "_compile_stablehlo", no_lowering)
    (got,) = backend_opencl.compile_stablehlo(text, device=queue)(*inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_concurrent_calls_from_threads(queue: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import backend_opencl

    text, inputs, want = _mlp()
    exe = backend_opencl.compile_stablehlo(text, device=queue)
    mod = backend_opencl.compile(AXPBY, device=queue)

    def work(seed: int) -> None:
        x, y, expected = _vectors(seed)
        for _ in range(5):
            z = np.full(N, np.nan, np.float32)
            mod.axpby(1.5, x, -0.25, usm(queue, y), z)
            np.testing.assert_allclose(z, expected, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(exe(*inputs)[0], want, rtol=1e-5, atol=1e-7)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))


def test_stablehlo_arguments_checked(queue: Any) -> None:
    import backend_opencl

    text, inputs, _ = _mlp()
    exe = backend_opencl.compile_stablehlo(text, device=queue)
    with pytest.raises(LaunchError, match="argument 0 must have dtype float32"):
        exe(inputs[0].astype(np.float64), *inputs[1:])
    with pytest.raises(LaunchError, match="argument 1 must be a C-contiguous USM array"):
        exe(inputs[0], UsmArray(queue, inputs[1], order="F"), *inputs[2:])
    with pytest.raises(LaunchError, match="argument 0 is USM memory of 8188 bytes; the "
                       "32x64 float32 array it stands for needs 8192"):
        exe(usm(queue, inputs[0].reshape(-1)[:-1]), *inputs[1:])


def test_stablehlo_on_plain_usm_memory(queue: Any) -> None:
    import backend_opencl

    text, inputs, want = _mlp()
    exe = backend_opencl.compile_stablehlo(text, device=queue)
    kinds = ["device", "shared", "host"] * 3
    (got,) = exe(*[usm(queue, a, kind) for a, kind in zip(inputs, kinds[:7], strict=True)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


STABLEHLO_LOOP = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<5> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<4xf32>
    cond {
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %j = stablehlo.add %i, %c1 : tensor<i32>
      %a = stablehlo.add %acc, %acc : tensor<4xf32>
      stablehlo.return %j, %a : tensor<i32>, tensor<4xf32>
    }
  return %r#1 : tensor<4xf32>
}
"""


def test_stablehlo_loop_on_the_queue(queue: Any) -> None:
    import backend_opencl

    exe = backend_opencl.compile_stablehlo(STABLEHLO_LOOP, device=queue)
    x = np.random.default_rng(8).standard_normal(4).astype(np.float32)
    (got,) = exe(x)
    np.testing.assert_allclose(got, 32 * x, rtol=1e-6)


CASE = """func.func public @main(%i: tensor<i32>, %x: tensor<16xf32>) -> tensor<16xf32> {
  %r = "stablehlo.case"(%i) ({
    %a = stablehlo.cosine %x : tensor<16xf32>
    stablehlo.return %a : tensor<16xf32>
  }, {
    %a = stablehlo.negate %x : tensor<16xf32>
    stablehlo.return %a : tensor<16xf32>
  }, {
    %a = stablehlo.exponential %x : tensor<16xf32>
    stablehlo.return %a : tensor<16xf32>
  }) : (tensor<i32>) -> tensor<16xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%r init: %z) applies stablehlo.add across dimensions = [0]
       : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
  %p = stablehlo.compare GT, %s, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %out = "stablehlo.if"(%p) ({
    stablehlo.return %r : tensor<16xf32>
  }, {
    %a = stablehlo.abs %r : tensor<16xf32>
    stablehlo.return %a : tensor<16xf32>
  }) : (tensor<i1>) -> tensor<16xf32>
  return %out : tensor<16xf32>
}
"""


@pytest.mark.parametrize("index", [0, 1, 2, 7])
def test_stablehlo_case_and_if_on_the_queue(queue: Any, index: int) -> None:
    import backend_opencl

    exe = backend_opencl.compile_stablehlo(CASE, device=queue)
    x = np.random.default_rng(13).standard_normal(16).astype(np.float32)
    r = [np.cos(x), -x, np.exp(x)][min(index, 2)]
    want = r if r.sum() > 0 else np.abs(r)
    (got,) = exe(np.array(index, np.int32), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_queue_without_usm_refused() -> None:
    import dpctl

    from backend_opencl.runtime import DeviceError
    from backend_opencl.runtime.sycl import queue as sycl

    sycl.prepare()
    plain = [d for d in dpctl.get_devices() if not d.has_aspect_usm_device_allocations]
    if not plain:
        pytest.skip("every SYCL device here has USM device allocations")
    import backend_opencl

    with pytest.raises(DeviceError, match="no USM device allocations"):
        backend_opencl.compile(AXPBY, device=dpctl.SyclQueue(plain[0]))


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TLC_DEVICE", "OCL_ICD_VENDORS")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)


def test_example_runs() -> None:
    done = _python("import runpy, sys; sys.argv = ['sycl_queue.py']; "
                   "runpy.run_path('examples/sycl_queue.py', run_name='__main__')")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "axpby on" in done.stdout and "ok" in done.stdout


def test_tlc_devices_lists_sycl_devices() -> None:
    done = subprocess.run([sys.executable, "-m", "backend_opencl.tools.cli", "devices", "--sycl"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("SYCL devices", 1)[1]
    assert "opencl:cpu" in listed and "[OpenCL, USM]" in listed, done.stdout


def test_without_dpctl_the_opencl_route_is_unchanged() -> None:
    code = f"""
import sys
sys.modules["dpctl"] = None  # as if dpctl were not installed
import numpy as np
import backend_opencl
from backend_opencl.runtime import DeviceError
from backend_opencl.runtime.sycl import queue as sycl
assert not sycl.is_queue(object())
try:
    sycl.queue()
except DeviceError as err:
    assert "pip install 'tlc[sycl]'" in str(err), err
else:
    raise AssertionError("no error without dpctl")
assert sycl.describe().startswith("SYCL devices: none"), sycl.describe()
mod = backend_opencl.compile('''{AXPBY}''')
x = np.ones({N}, np.float32); z = np.zeros({N}, np.float32)
mod.axpby(2.0, x, 1.0, x, z)
assert (z == 3).all()
print("ok")
"""
    done = _python(code)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


GATHER = """
func @gather(%A: memref<f32x16>, %B: memref<i32x?>, %C: memref<f32x?>) {
  %c0 = constant 0 : index
  %n = size %C[0] : memref<f32x?>
  foreach %i = %c0, %n : index {
    %j32 = load %B[%i] : memref<i32x?>
    %j = cast %j32 : i32 -> index
    %v = load %A[%j] : memref<f32x16>
    store %v, %C[%i] : memref<f32x?>
  }
}
"""


def test_bounds_guards_on_the_queue(queue: Any) -> None:
    import backend_opencl
    from tensorlang.diagnostics import BoundsError

    mod = backend_opencl.compile(GATHER, device=queue, check_bounds=True)
    rng = np.random.default_rng(9)
    a = rng.standard_normal(16).astype(np.float32)
    idx = rng.integers(0, 16, size=37).astype(np.int32)
    c = UsmArray(queue, np.full(37, np.nan, np.float32))
    mod.gather(usm(queue, a), idx, c)
    np.testing.assert_array_equal(c.get(), a[idx])
    idx[4] = 17
    with pytest.raises(BoundsError, match="work-group 0"):
        mod.gather(a, idx, c)
