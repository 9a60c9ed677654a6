"""Launch arguments the host can tell are wrong raise a clear LaunchError before anything
runs: big-endian arrays, Python numbers that overflow the scalar type, pyopencl arrays
of another context and buffers larger than the device allows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import backend_opencl
from backend_opencl.runtime import get_device
from backend_opencl.runtime.opencl.kernels import max_allocation
from tensorlang.diagnostics import LaunchError

SOURCE = """
func @scale(%alpha: f32, %x: memref<f32x?>, %y: memref<f32x?>) {
  %zero = constant 0.0 : f32
  axpby.n %alpha, %x, %zero, %y : f32, memref<f32x?>, f32, memref<f32x?>
}

func @scale_half(%alpha: f16, %x: memref<f32x?>) {
  %a = cast %alpha : f16 -> f32
  %zero = constant 0.0 : f32
  axpby.n %a, %x, %zero, %x : f32, memref<f32x?>, f32, memref<f32x?>
}

func @wide(%x: memref<f32x?x?>) {
  %one = constant 1.0 : f32
  axpby.n %one, %x, %one, %x : f32, memref<f32x?x?>, f32, memref<f32x?x?>
}
"""


@pytest.fixture(scope="module")
def module() -> Any:
    return backend_opencl.compile(SOURCE)


def test_big_endian_array_is_named(module, h, rng) -> None:
    x = h.rand(rng, (8,), "f32").astype(">f4")
    y = h.poison((8,), "f32")
    with pytest.raises(LaunchError, match=r"argument 2 .* big-endian \(>f4\).*native-order"):
        module.scale(1.0, x, y)
    assert np.isnan(y).all()


def test_native_copy_of_a_big_endian_array_runs(module, h, rng) -> None:
    x = h.rand(rng, (8,), "f32").astype(">f4")
    y = h.poison((8,), "f32")
    module.scale(2.0, x.astype(x.dtype.newbyteorder("=")), y)
    h.close(y, 2 * x.astype(np.float32), "f32")


@pytest.mark.parametrize("alpha", [1e39, -1e39, 10**400])
def test_python_number_that_overflows_f32(module, h, rng, alpha: object) -> None:
    x, y = h.rand(rng, (8,), "f32"), h.poison((8,), "f32")
    with pytest.raises(LaunchError, match=r"argument 1 \(%alpha: f32\): .* overflows f32"):
        module.scale(alpha, x, y)
    assert np.isnan(y).all()


def test_largest_f32_and_infinity_are_accepted(module, h, rng) -> None:
    x, y = np.full(4, 0.5, np.float32), h.poison((4,), "f32")
    module.scale(float(np.finfo(np.float32).max), x, y)
    h.close(y, np.full(4, np.finfo(np.float32).max / 2, np.float32), "f32")
    module.scale(float("inf"), x, y)
    assert np.isposinf(y).all()


def test_python_number_that_overflows_f16(module, h, rng) -> None:
    x = h.rand(rng, (8,), "f32")
    with pytest.raises(LaunchError, match="70000.0 overflows f16 .* 65504"):
        module.scale_half(70000.0, x)
    want = 65504 * x
    module.scale_half(65504.0, x)
    h.close(x, want, "f32")


def test_pyopencl_array_of_another_context(module, h, rng) -> None:
    device = get_device()
    other = cl.Context(devices=[device.cl_device])
    x = cla.to_device(cl.CommandQueue(other), h.rand(rng, (8,), "f32"))
    y = h.poison((8,), "f32")
    with pytest.raises(LaunchError, match="argument 2 .* another OpenCL context"):
        module.scale(1.0, x, y)
    assert np.isnan(y).all()


def test_buffer_larger_than_the_device_allows(module) -> None:
    limit = max_allocation(get_device())
    if not limit:
        pytest.skip("the device does not report its largest allocation")
    base = np.zeros(4, np.float32)
    column = (limit // 4 + 16) * 4  # bytes between columns: the span passes the limit
    x = np.lib.stride_tricks.as_strided(base, shape=(2, 2), strides=(4, column))
    with pytest.raises(LaunchError, match=f"spans .* bytes but the device's largest buffer "
                                          f"is {limit} bytes"):
        module.wide(x)


def test_executable_converts_big_endian_inputs(h, rng) -> None:
    """Executables only read their inputs: another byte order is converted, not refused."""
    t = "tensor<4x3xf32>"
    exe = backend_opencl.compile_stablehlo(
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
        f"  %0 = stablehlo.multiply %x, %y : {t}\n  return %0 : {t}\n}}\n")
    x = rng.standard_normal((4, 3)).astype(">f4")
    y = rng.standard_normal((4, 3)).astype(np.float32)
    (out,) = exe(x, y)
    np.testing.assert_allclose(out, x.astype(np.float32) * y, rtol=1e-6)
    with pytest.raises(LaunchError, match="argument 0 must have dtype float32, got float64"):
        exe(x.astype(">f8"), y)


def test_executable_buffer_larger_than_the_device_allows() -> None:
    """A plan buffer beyond the device's largest allocation: LaunchError before any
    allocation (was a LogicError from clCreateBuffer)."""
    limit = max_allocation(get_device())
    if not limit:
        pytest.skip("the device does not report its largest allocation")
    n = limit // 4 + 1024
    t = f"tensor<{n}xf32>"
    exe = backend_opencl.compile_stablehlo(
        f"func.func @main(%x: tensor<f32>) -> {t} {{\n"
        f"  %0 = stablehlo.iota dim = 0 : {t}\n  return %0 : {t}\n}}\n")
    with pytest.raises(LaunchError, match=f"@main: a {n} f32 buffer needs {4 * n} bytes but "
                                          f"the device's largest buffer is {limit} bytes"):
        exe(np.array(1.0, np.float32))
