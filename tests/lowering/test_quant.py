"""Quantized element types: storage integers in buffers, dequantize -> op -> quantize."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from tensorlang.diagnostics import CompileError
from tests.lowering.conftest import RNG, module, run


def np_dequantize(q: np.ndarray, scales: list[float], zeros: list[int], axis: int | None,
                  dtype: type = np.float32) -> np.ndarray:
    """The spec's dequantize in the expressed ``dtype`` (per-axis along ``axis``)."""
    scale, zero = _params(q.ndim, scales, zeros, axis)
    return (q.astype(np.int64) - zero).astype(dtype) * scale.astype(dtype)


def np_quantize(x: np.ndarray, scales: list[float], zeros: list[int], axis: int | None,
                bounds: tuple[int, int], storage: type) -> np.ndarray:
    """The spec's quantize: x / scale + zero_point, clamp, round half to even."""
    scale, zero = _params(x.ndim, scales, zeros, axis)
    y = x / scale.astype(x.dtype) + zero.astype(x.dtype)
    y = np.clip(y, x.dtype.type(bounds[0]), x.dtype.type(bounds[1]))
    return np.rint(y).astype(storage)


def _params(ndim: int, scales: list[float], zeros: list[int],
            axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    shape = [1] * ndim
    if axis is not None:
        shape[axis] = len(scales)
    return (np.asarray(scales, np.float64).reshape(shape),
            np.asarray(zeros, np.int64).reshape(shape))


def qtype(storage: str, scales: list[float], zeros: list[int], axis: int | None = None,
          expressed: str = "f32") -> str:
    """A ``!quant.uniform`` element type."""
    pairs = [f"{s!r}:{z}" for s, z in zip(scales, zeros, strict=True)]
    if axis is None:
        return f"!quant.uniform<{storage}:{expressed}, {pairs[0]}>"
    return f"!quant.uniform<{storage}:{expressed}:{axis}, {{{', '.join(pairs)}}}>"


def wide(shape: tuple[int, ...], spread: float = 40.0) -> np.ndarray:
    """Random f32 values, many beyond an 8-bit storage range after scaling."""
    return (RNG.standard_normal(shape) * spread).astype(np.float32)


def test_quantize_per_tensor_clamps_at_storage_min_max() -> None:
    q = qtype("i8<-100:90>", [0.25], [-7])
    text = module(f"(%x: tensor<6x50xf32>) -> tensor<6x50x{q}>", f"""
  %0 = stablehlo.uniform_quantize %x : (tensor<6x50xf32>) -> tensor<6x50x{q}>
  return %0 : tensor<6x50x{q}>""")
    x = wide((6, 50))
    x[0, :3] = [np.inf, -np.inf, 1e30]
    (got,) = run(text, x)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np_quantize(x, [0.25], [-7], None, (-100, 90), np.int8))
    assert (got == -100).sum() > 5 and (got == 90).sum() > 5
    assert ((got > -100) & (got < 90)).sum() > 100


def test_round_half_to_even() -> None:
    q = qtype("i8", [0.5], [0])
    text = module(f"(%x: tensor<8xf32>) -> tensor<8x{q}>", f"""
  %0 = stablehlo.uniform_quantize %x : (tensor<8xf32>) -> tensor<8x{q}>
  return %0 : tensor<8x{q}>""")
    x = np.array([0.25, 0.75, 1.25, -0.25, -0.75, 1.75, 2.25, -1.25], np.float32)
    np.testing.assert_array_equal(run(text, x)[0], [0, 2, 2, 0, -2, 4, 4, -2])


@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_and_dequantize_per_axis(axis: int) -> None:
    shape = (5, 7)
    n = shape[axis]
    scales = [float(s) for s in RNG.uniform(0.05, 2.0, n).astype(np.float32)]
    zeros = [int(z) for z in RNG.integers(-20, 20, n)]
    q = qtype("i8", scales, zeros, axis)
    text = module(f"(%x: tensor<5x7xf32>, %s: tensor<5x7xi8>) -> "
                  f"(tensor<5x7x{q}>, tensor<5x7xf32>)", f"""
  %0 = stablehlo.uniform_quantize %x : (tensor<5x7xf32>) -> tensor<5x7x{q}>
  %1 = stablehlo.bitcast_convert %s : (tensor<5x7xi8>) -> tensor<5x7x{q}>
  %2 = stablehlo.uniform_dequantize %1 : (tensor<5x7x{q}>) -> tensor<5x7xf32>
  return %0, %2 : tensor<5x7x{q}>, tensor<5x7xf32>""")
    x = wide(shape, 30.0)
    s = RNG.integers(-128, 128, shape).astype(np.int8)
    got_q, got_f = run(text, x, s)
    np.testing.assert_array_equal(got_q, np_quantize(x, scales, zeros, axis, (-128, 127),
                                                     np.int8))
    np.testing.assert_array_equal(got_f, np_dequantize(s, scales, zeros, axis))


def test_requantize_to_other_scales_and_zero_points() -> None:
    src = qtype("i8", [0.3, 0.05, 1.5], [4, -60, 0], 1)
    dst = qtype("u8", [0.2], [128])
    text = module(f"(%s: tensor<4x3xi8>) -> tensor<4x3x{dst}>", f"""
  %0 = stablehlo.bitcast_convert %s : (tensor<4x3xi8>) -> tensor<4x3x{src}>
  %1 = stablehlo.uniform_quantize %0 : (tensor<4x3x{src}>) -> tensor<4x3x{dst}>
  return %1 : tensor<4x3x{dst}>""")
    s = RNG.integers(-128, 128, (4, 3)).astype(np.int8)
    (got,) = run(text, s)
    assert got.dtype == np.uint8
    x = np_dequantize(s, [0.3, 0.05, 1.5], [4, -60, 0], 1)
    np.testing.assert_array_equal(got, np_quantize(x, [0.2], [128], None, (0, 255), np.uint8))


def test_quantized_multiply_and_tanh_fuse_into_one_kernel() -> None:
    qa, qb = qtype("i8", [0.1], [3]), qtype("i8", [0.04], [-10])
    qr = qtype("i16", [0.002], [100])
    qt = qtype("i8", [1 / 127], [0])
    text = module(f"(%a: tensor<300xi8>, %b: tensor<300xi8>) -> tensor<300x{qt}>", f"""
  %0 = stablehlo.bitcast_convert %a : (tensor<300xi8>) -> tensor<300x{qa}>
  %1 = stablehlo.bitcast_convert %b : (tensor<300xi8>) -> tensor<300x{qb}>
  %2 = stablehlo.multiply %0, %1 : (tensor<300x{qa}>, tensor<300x{qb}>) -> tensor<300x{qr}>
  %3 = stablehlo.tanh %2 : (tensor<300x{qr}>) -> tensor<300x{qt}>
  return %3 : tensor<300x{qt}>""")
    assert lower_function(frontend.parse(text)).kernels.count("func @") == 1
    a, b = (RNG.integers(-128, 128, 300).astype(np.int8) for _ in range(2))
    (got,) = run(text, a, b)
    prod = np_dequantize(a, [0.1], [3], None) * np_dequantize(b, [0.04], [-10], None)
    mid = np_quantize(prod, [0.002], [100], None, (-2**15, 2**15 - 1), np.int16)
    want = np_quantize(np.tanh(np_dequantize(mid, [0.002], [100], None)), [1 / 127], [0],
                       None, (-128, 127), np.int8)
    assert np.abs(got.astype(int) - want).max() <= 1  # tanh may differ by an ulp
    assert (got == want).mean() > 0.95


def test_quantized_compare_select_and_transpose() -> None:
    qa, qb = qtype("i8", [0.5], [2]), qtype("i8", [0.125], [-1])
    text = module(f"(%a: tensor<4x6xi8>, %b: tensor<4x6xi8>) -> "
                  f"(tensor<4x6xi1>, tensor<6x4x{qa}>)", f"""
  %0 = stablehlo.bitcast_convert %a : (tensor<4x6xi8>) -> tensor<4x6x{qa}>
  %1 = stablehlo.bitcast_convert %b : (tensor<4x6xi8>) -> tensor<4x6x{qb}>
  %2 = stablehlo.compare GT, %0, %1 : (tensor<4x6x{qa}>, tensor<4x6x{qb}>) -> tensor<4x6xi1>
  %3 = stablehlo.uniform_quantize %1 : (tensor<4x6x{qb}>) -> tensor<4x6x{qa}>
  %4 = stablehlo.select %2, %0, %3 : tensor<4x6xi1>, tensor<4x6x{qa}>
  %5 = stablehlo.transpose %4, dims = [1, 0] : (tensor<4x6x{qa}>) -> tensor<6x4x{qa}>
  return %2, %5 : tensor<4x6xi1>, tensor<6x4x{qa}>""")
    a, b = (RNG.integers(-40, 40, (4, 6)).astype(np.int8) for _ in range(2))
    gt, got = run(text, a, b)
    fa, fb = np_dequantize(a, [0.5], [2], None), np_dequantize(b, [0.125], [-1], None)
    np.testing.assert_array_equal(gt, fa > fb)
    b_as_a = np_quantize(fb, [0.5], [2], None, (-128, 127), np.int8)
    np.testing.assert_array_equal(got, np.where(fa > fb, a, b_as_a).T)


def test_quantized_dot_general_with_per_axis_rhs() -> None:
    m, k, n = 5, 16, 3
    rhs_scales = [0.02, 0.05, 0.01]
    ql, qr = qtype("i8", [0.1], [5]), qtype("i8", rhs_scales, [0, 0, 0], 1)
    qo = qtype("i32", [0.001], [0])
    text = module(f"(%a: tensor<{m}x{k}xi8>, %b: tensor<{k}x{n}xi8>) -> tensor<{m}x{n}x{qo}>",
                  f"""
  %0 = stablehlo.bitcast_convert %a : (tensor<{m}x{k}xi8>) -> tensor<{m}x{k}x{ql}>
  %1 = stablehlo.bitcast_convert %b : (tensor<{k}x{n}xi8>) -> tensor<{k}x{n}x{qr}>
  %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] :
       (tensor<{m}x{k}x{ql}>, tensor<{k}x{n}x{qr}>) -> tensor<{m}x{n}x{qo}>
  return %2 : tensor<{m}x{n}x{qo}>""")
    a = RNG.integers(-128, 128, (m, k)).astype(np.int8)
    b = RNG.integers(-128, 128, (k, n)).astype(np.int8)
    (got,) = run(text, a, b)
    fa = np_dequantize(a, [0.1], [5], None)
    fb = np_dequantize(b, rhs_scales, [0, 0, 0], 1)
    want = np_quantize(fa @ fb, [0.001], [0], None, (-2**31, 2**31 - 1), np.int32)
    assert got.dtype == np.int32
    assert np.abs(got.astype(np.int64) - want).max() <= 1  # summation order
    assert np.abs(want).max() > 1000


def test_f16_expressed_and_i4_storage() -> None:
    q = qtype("i4", [0.5], [1], expressed="f16")
    text = module(f"(%x: tensor<64xf16>) -> (tensor<64x{q}>, tensor<64xf16>)", f"""
  %0 = stablehlo.uniform_quantize %x : (tensor<64xf16>) -> tensor<64x{q}>
  %1 = stablehlo.uniform_dequantize %0 : (tensor<64x{q}>) -> tensor<64xf16>
  return %0, %1 : tensor<64x{q}>, tensor<64xf16>""")
    x = (RNG.standard_normal(64) * 4).astype(np.float16)
    got_q, got_f = run(text, x)
    want = np_quantize(x, [0.5], [1], None, (-8, 7), np.int8)
    np.testing.assert_array_equal(got_q, want)
    assert (want == -8).any() and (want == 7).any()
    np.testing.assert_array_equal(got_f, np_dequantize(want, [0.5], [1], None, np.float16))


def test_quantized_reduce_is_not_supported_yet() -> None:
    q = qtype("i8", [0.5], [0])
    text = module(f"(%x: tensor<4x{q}>) -> tensor<{q}>", f"""
  %z = stablehlo.constant dense<0> : tensor<{q}>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] :
       (tensor<4x{q}>, tensor<{q}>) -> tensor<{q}>
  return %0 : tensor<{q}>""")
    with pytest.raises(CompileError, match=r"q.mlir:4:8: error: 'stablehlo.reduce' on quantized "
                                           r"tensors is not supported yet"):
        lower_function(frontend.parse(text, filename="q.mlir"))


def test_hybrid_dot_general_float_lhs() -> None:
    q = qtype("i8", [0.05, 0.2], [0, 0], 1)
    text = module("(%a: tensor<3x8xf32>, %b: tensor<8x2xi8>) -> tensor<3x2xf32>", f"""
  %0 = stablehlo.bitcast_convert %b : (tensor<8x2xi8>) -> tensor<8x2x{q}>
  %1 = stablehlo.dot_general %a, %0, contracting_dims = [1] x [0] :
       (tensor<3x8xf32>, tensor<8x2x{q}>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>""")
    a = RNG.standard_normal((3, 8)).astype(np.float32)
    b = RNG.integers(-128, 128, (8, 2)).astype(np.int8)
    (got,) = run(text, a, b)
    np.testing.assert_allclose(got, a @ np_dequantize(b, [0.05, 0.2], [0, 0], 1), rtol=1e-5,
                               atol=1e-5)


def test_quantized_convolution() -> None:
    qi, qw = qtype("i8", [0.1], [-4]), qtype("i8", [0.02], [0])
    qo = qtype("i16", [0.01], [7])
    text = module(f"(%x: tensor<1x6x6x2xi8>, %w: tensor<3x3x2x4xi8>) -> "
                  f"tensor<1x4x4x4x{qo}>", f"""
  %0 = stablehlo.bitcast_convert %x : (tensor<1x6x6x2xi8>) -> tensor<1x6x6x2x{qi}>
  %1 = stablehlo.bitcast_convert %w : (tensor<3x3x2x4xi8>) -> tensor<3x3x2x4x{qw}>
  %2 = stablehlo.convolution(%0, %1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {{}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} :
       (tensor<1x6x6x2x{qi}>, tensor<3x3x2x4x{qw}>) -> tensor<1x4x4x4x{qo}>
  return %2 : tensor<1x4x4x4x{qo}>""")
    x = RNG.integers(-128, 128, (1, 6, 6, 2)).astype(np.int8)
    w = RNG.integers(-128, 128, (3, 3, 2, 4)).astype(np.int8)
    (got,) = run(text, x, w)
    fx, fw = np_dequantize(x, [0.1], [-4], None), np_dequantize(w, [0.02], [0], None)
    conv = np.zeros((1, 4, 4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            conv[0, i, j] = np.einsum("abc,abcd->d", fx[0, i:i + 3, j:j + 3], fw)
    want = np_quantize(conv, [0.01], [7], None, (-2**15, 2**15 - 1), np.int16)
    assert np.abs(got.astype(int) - want).max() <= 1  # summation order
    assert np.abs(want).max() > 500
