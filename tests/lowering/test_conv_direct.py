"""The direct (unrolled) convolution kernel of frontend/lower/families/conv/direct.py against numpy:
depthwise and grouped convolutions in NHWC and NCHW, padding (also taps outside the input
for every output position), strides, lhs/rhs dilation, reversal, channel multipliers on
both sides of ``SPLIT``, batch groups, integer, f16 and complex types, and elementwise
consumers fused into the kernel.  Outputs are poisoned (conftest), so an element the
kernel does not write fails."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from frontend.lower.families.conv import convolution as conv
from frontend.lower.families.conv import direct as conv_direct
from tests.lowering.conftest import module, rand, run
from tests.lowering.test_conv import _text, _window, conv_ref

NHWC = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"


@pytest.fixture(autouse=True)
def direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every convolution here takes the direct kernel."""
    monkeypatch.setattr(conv, "DIRECT_K", 1 << 30)


def _nhwc(x: np.ndarray, w: np.ndarray, strides: list[int], pad: list[tuple[int, int]],
          ldil: list[int], rdil: list[int], fg: int = 1, bg: int = 1) -> np.ndarray:
    """conv_ref for NHWC x HWIO -> NHWC operands."""
    out = conv_ref(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), strides, pad, ldil,
                   rdil, fg, bg)
    return out.transpose(0, 2, 3, 1)


NHWC_CASES = [  # lhs NHWC, channel multiplier, window, strides, pad, lhs dilation, rhs dilation
    ((2, 9, 8, 32), 1, (3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]),
    ((2, 9, 8, 32), 1, (3, 3), [2, 2], [(1, 1), (1, 1)], [1, 1], [1, 1]),
    ((1, 7, 9, 24), 1, (3, 2), [1, 2], [(2, 0), (-1, 3)], [1, 1], [2, 1]),
    ((2, 5, 6, 8), 1, (3, 3), [1, 1], [(1, 2), (2, 1)], [2, 3], [1, 1]),
    ((2, 6, 7, 6), 2, (3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]),
    ((1, 6, 5, 4), 16, (2, 3), [1, 2], [(0, 1), (1, 1)], [1, 1], [1, 2]),
    ((3, 1, 1, 5), 1, (3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]),
    ((1, 4, 4, 3), 1, (3, 3), [1, 1], [(-1, -1), (0, 0)], [1, 1], [1, 1]),
]


def _out_size(n: int, win: int, stride: int, pad: tuple[int, int], ld: int, rd: int) -> int:
    return ((n - 1) * ld + 1 + sum(pad) - ((win - 1) * rd + 1)) // stride + 1


@pytest.mark.parametrize("case", NHWC_CASES)
def test_depthwise_nhwc(case: tuple) -> None:
    ls, mult, win, strides, pad, ldil, rdil = case
    c = ls[3]
    x, w = rand(ls), rand((*win, 1, c * mult))
    os_ = (ls[0], *(_out_size(ls[1 + s], win[s], strides[s], pad[s], ldil[s], rdil[s])
                    for s in range(2)), c * mult)
    text = _text(ls, w.shape, os_, "f32", _window(strides, pad, ldil, rdil), c, 1, NHWC)
    want = _nhwc(x, w, strides, pad, ldil, rdil, c)
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-5, atol=1e-5)


def test_grouped_nchw_reversed_int() -> None:
    x, w = rand((2, 6, 7, 5), np.int32), rand((9, 2, 2, 3), np.int32)
    text = _text((2, 6, 7, 5), (9, 2, 2, 3), (2, 9, 7, 5), "i32",
                 "pad = [[1, 0], [1, 1]], reverse = [true, false]", 3, 1)
    want = conv_ref(x, w[:, :, ::-1], [1, 1], [(1, 0), (1, 1)], [1, 1], [1, 1], 3)
    np.testing.assert_array_equal(run(text, x, w)[0], want.astype(np.int32))


def test_batch_groups_nhwc() -> None:
    x, w = rand((4, 5, 6, 3)), rand((2, 2, 3, 16))
    text = _text((4, 5, 6, 3), (2, 2, 3, 16), (2, 5, 5, 16), "f32",
                 "pad = [[1, 0], [0, 0]]", 1, 2, NHWC)
    want = _nhwc(x, w, [1, 1], [(1, 0), (0, 0)], [1, 1], [1, 1], 1, 2)
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-5, atol=1e-5)


def test_depthwise_f16_and_complex() -> None:
    x, w = rand((2, 5, 5, 16), np.float16), rand((3, 3, 1, 16), np.float16)
    text = _text((2, 5, 5, 16), (3, 3, 1, 16), (2, 5, 5, 16), "f16",
                 "pad = [[1, 1], [1, 1]]", 16, 1, NHWC)
    want = _nhwc(x, w, [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], 16)
    np.testing.assert_allclose(run(text, x, w)[0].astype(np.float64), want, rtol=1e-2,
                               atol=1e-2)
    xc = (rand((1, 4, 4, 2)) + 1j * rand((1, 4, 4, 2))).astype(np.complex64)
    wc = (rand((2, 2, 1, 2)) + 1j * rand((2, 2, 1, 2))).astype(np.complex64)
    text = _text((1, 4, 4, 2), (2, 2, 1, 2), (1, 4, 4, 2), "complex<f32>",
                 "pad = [[0, 1], [1, 0]]", 2, 1, NHWC)
    got = run(text, xc, wc)[0]

    def part(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _nhwc(a, b, [1, 1], [(0, 1), (1, 0)], [1, 1], [1, 1], 2)
    want = (part(xc.real, wc.real) - part(xc.imag, wc.imag)
            + 1j * (part(xc.real, wc.imag) + part(xc.imag, wc.real)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


BIAS_RELU = """
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 32 : i64}
      : (tensor<2x6x5x32xf32>, tensor<3x3x1x32xf32>) -> tensor<2x6x5x32xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<32xf32>) -> tensor<2x6x5x32xf32>
  %2 = stablehlo.add %0, %1 : tensor<2x6x5x32xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x6x5x32xf32>
  %3 = stablehlo.maximum %2, %zb : tensor<2x6x5x32xf32>
  return %3 : tensor<2x6x5x32xf32>"""


def test_bias_and_relu_fuse_into_the_direct_kernel() -> None:
    text = module("(%x: tensor<2x6x5x32xf32>, %k: tensor<3x3x1x32xf32>, %b: tensor<32xf32>)"
                  " -> tensor<2x6x5x32xf32>", BIAS_RELU)
    lowered = lower_function(frontend.parse(text))
    names = [line.split("(")[0] for line in lowered.kernels.splitlines()
             if line.startswith("func @")]
    assert names == ["func @k0_conv_maximum"]
    x, k, b = rand((2, 6, 5, 32)), rand((3, 3, 1, 32)), rand((32,))
    want = np.maximum(_nhwc(x, k, [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], 32) + b, 0)
    np.testing.assert_allclose(run(text, x, k, b)[0], want, rtol=1e-5, atol=1e-5)


def test_interior_taps_have_no_condition() -> None:
    """A VALID window never reads padding: the kernel has no select at all."""
    text = _text((1, 6, 6, 8), (3, 3, 1, 8), (1, 4, 4, 8), "f32", "stride = [1, 1]", 8, 1,
                 NHWC)
    kernels = lower_function(frontend.parse(text)).kernels
    assert "select" not in kernels and " div" not in kernels and " rem " not in kernels
    assert conv_direct.SPLIT > 1


def test_empty_result() -> None:
    text = _text((0, 4, 4, 8), (3, 3, 1, 8), (0, 4, 4, 8), "f32", "pad = [[1, 1], [1, 1]]",
                 8, 1, NHWC)
    assert run(text, rand((0, 4, 4, 8)), rand((3, 3, 1, 8)))[0].shape == (0, 4, 4, 8)


def test_empty_input_window_reads_only_padding() -> None:
    text = _text((1, 0, 3, 4), (1, 1, 1, 4), (1, 2, 3, 4), "f32",
                 "pad = [[1, 1], [0, 0]]", 4, 1, NHWC)
    got = run(text, rand((1, 0, 3, 4)), rand((1, 1, 1, 4)))[0]
    np.testing.assert_array_equal(got, np.zeros((1, 2, 3, 4), np.float32))


@pytest.mark.parametrize(("window", "names"), [((5, 5), ["k0_conv"]),
                                               ((9, 9), ["k0_im2col", "k1_weights", "k2_dot",
                                                         "k3_conv_out"])])
def test_depthwise_windows_up_to_depthwise_k_are_direct(
        window: tuple[int, int], names: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conv, "DIRECT_K", 16)
    ls, ws = (2, 10, 9, 8), (*window, 1, 16)
    pad = [(window[0] // 2,) * 2, (window[1] // 2,) * 2]
    text = _text(ls, ws, (2, 10, 9, 16), "f32", _window([1, 1], pad, [1, 1], [1, 1]), 8, 1,
                 NHWC)
    lowered = lower_function(frontend.parse(text))
    assert [line.split("(")[0][len("func @"):] for line in lowered.kernels.splitlines()
            if line.startswith("func @")] == names
    x, w = rand(ls), rand(ws)
    want = _nhwc(x, w, [1, 1], pad, [1, 1], [1, 1], 8)
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)
