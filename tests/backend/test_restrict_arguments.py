"""``restrict`` buffer arguments of StableHLO kernels (docs/codegen.md): which kernels of a
plan get them, the OpenCL C that declares them, and results that stay right when the
caller passes one array for several parameters."""

from __future__ import annotations

import numpy as np

import backend_opencl
from backend_opencl.api import compiler
from tensorlang.plan import Buffer, Launch, Plan, While, distinct_argument_kernels

GRU_LIKE = """
func.func public @main(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>)
    -> tensor<16x64xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<16x64xf32>
  %2 = stablehlo.add %0, %1 : tensor<16x64xf32>
  %3 = stablehlo.logistic %2 : tensor<16x64xf32>
  %4 = stablehlo.multiply %3, %x : tensor<16x64xf32>
  %5 = stablehlo.tanh %4 : tensor<16x64xf32>
  return %5 : tensor<16x64xf32>
}
"""


def _plan(*steps: Launch | While) -> Plan:
    buffers = tuple(Buffer(i, "f32", (4,)) for i in range(4))
    return Plan(buffers, (0, 1), (3,), steps)


def test_kernels_launched_with_distinct_buffers_qualify() -> None:
    plan = _plan(Launch("k", (0, 2), 1), Launch("k", (1, 3), 1))
    assert distinct_argument_kernels(plan, {"k"}) == {"k"}


def test_one_buffer_passed_twice_disqualifies_the_kernel() -> None:
    plan = _plan(Launch("k", (2, 3), 1), While((), 2, (Launch("k", (3, 3), 1),)))
    assert distinct_argument_kernels(plan, {"k", "j"}) == {"j"}


def test_a_kernel_writing_a_parameter_qualifies() -> None:
    """A parameter the plan writes is bound to a copy of its own by every runtime."""
    plan = _plan(Launch("k", (1, 2), 1))  # buffer 1 is a parameter
    assert distinct_argument_kernels(plan, {"k"}) == {"k"}


def test_stablehlo_kernels_declare_restrict_and_tensor_language_ones_do_not() -> None:
    import frontend

    cl = compiler.emit(frontend.parse(GRU_LIKE), "cl")
    assert "restrict" in cl
    kernel = """func @axpy(%a: f32, %x: memref<f32x64>, %y: memref<f32x64>) {
  axpby.n %a, %x, 1.0, %y : f32, memref<f32x64>, f32, memref<f32x64>
}"""
    assert "restrict" not in compiler.emit(kernel, "cl")


def test_one_array_for_several_parameters() -> None:
    """``x`` and ``w`` the same array: every kernel reads it through two pointers."""
    text = GRU_LIKE.replace("tensor<16x64xf32>, %w: tensor<64x64xf32>",
                            "tensor<64x64xf32>, %w: tensor<64x64xf32>").replace(
        "tensor<16x64xf32>", "tensor<64x64xf32>")
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((64, 64)) * 0.2).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    (got,) = backend_opencl.compile_stablehlo(text)(a, a, b)
    want = np.tanh(a * (1 / (1 + np.exp(-(a.astype(np.float64) @ a + b)))))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


LOOP_WRITING_X = """
func.func public @main(%x: tensor<16x8xf32>, %y: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<16x8xf32>
   cond {
    %lim = stablehlo.constant dense<7> : tensor<i32>
    %p = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
   } do {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%acc init: %z) applies stablehlo.add across dimensions = [1]
        : (tensor<16x8xf32>, tensor<f32>) -> tensor<16xf32>
    %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<16xf32>) -> tensor<16x8xf32>
    %h = stablehlo.constant dense<0.125> : tensor<16x8xf32>
    %m = stablehlo.multiply %b, %h : tensor<16x8xf32>
    %n = stablehlo.add %m, %y : tensor<16x8xf32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %n : tensor<i32>, tensor<16x8xf32>
   }
  return %r#1 : tensor<16x8xf32>
}
"""


def _loop_writing_x(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    acc = x.astype(np.float64)
    for _ in range(7):
        acc = acc.sum(axis=1, keepdims=True) * 0.125 + y
    return acc


def test_a_loop_writing_its_parameter_declares_restrict() -> None:
    """The loop kernel carries ``x`` in the parameter's own buffer."""
    import frontend

    cl = compiler.emit(frontend.parse(LOOP_WRITING_X), "cl")
    assert "while" in cl and "restrict" in cl and " b0," in cl


def test_one_array_for_a_written_and_a_read_parameter() -> None:
    """``x`` (which the loop kernel writes) and ``y`` the same array: the caller's array is
    unchanged and the kernel reads ``y`` as it was, through numpy, pyopencl and tlc's own
    device arrays."""
    import pyopencl.array as cl_array

    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    kept = a.copy()
    want = _loop_writing_x(a, a)
    exe = backend_opencl.compile_stablehlo(LOOP_WRITING_X)
    (got,) = exe(a, a)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(a, kept)
    on_device = cl_array.to_device(exe.device.queue, a)
    (got,) = exe(on_device, on_device)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(on_device.get(), kept)
    (first,) = exe.dispatch(a, a)  # a tlc device array
    (got,) = exe(first, first)
    np.testing.assert_allclose(got, _loop_writing_x(want, want), rtol=1e-4, atol=1e-4)
