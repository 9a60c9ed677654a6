"""The shifted-gemm convolution of frontend/lower/families/conv/rows.py (padded input rows in local
memory, one gemm per window tap) against numpy: padding (also negative), strides and
lhs dilation of the leading dimension, rhs dilation, window reversal, 1-d and 3-d
windows, f16, the bias/ReLU epilogue, and the thresholds that keep the im2col tile.
Outputs are poisoned (conftest).  Most cases lower the thresholds so that small shapes
take the path (their texts end in a marker, so the executable cache does not mix them)."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from frontend.lower.families.conv import convolution as conv
from frontend.lower.families.conv import rows as conv_rows
from tests.lowering.conftest import module, rand, run
from tests.lowering.test_conv import _text, _window, conv_ref
from tests.lowering.test_conv_gemm import BIAS_RELU, NHWC, _nhwc, _size

MARK = "  "


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small shapes take the shifted gemms (and no direct kernel)."""
    monkeypatch.setattr(conv, "DIRECT_K", 0)
    monkeypatch.setattr(conv_rows, "MIN_FEATURES", 1)
    monkeypatch.setattr(conv_rows, "MIN_ROW", 1)


def gemms(text: str) -> int:
    """How many gemm instructions ``text`` lowers to (one kernel expected)."""
    lowered = lower_function(frontend.parse(text))
    assert sum(line.startswith("func @") for line in lowered.kernels.splitlines()) == 1
    return lowered.kernels.count("gemm.n.n")


CASES = [  # lhs NHWC, window HWIO, strides, pad, lhs dilation, rhs dilation
    ((2, 9, 7, 3), (3, 3, 3, 8), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]),
    ((3, 5, 5, 4), (3, 3, 4, 5), [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1]),
    ((1, 11, 10, 6), (3, 2, 6, 16), [2, 1], [(2, 0), (-1, 3)], [1, 1], [2, 2]),
    ((2, 5, 6, 8), (2, 3, 8, 4), [3, 1], [(1, 2), (2, 1)], [2, 1], [1, 2]),
    ((1, 3, 40, 2), (3, 5, 2, 8), [1, 1], [(4, 0), (0, 4)], [1, 1], [1, 1]),
]


@pytest.mark.parametrize("case", CASES)
def test_shifted_gemms_match_numpy(case: tuple, small: None) -> None:
    ls, ws, strides, pad, ldil, rdil = case
    x, w = rand(ls), rand(ws)
    os_ = (ls[0], *(_size(ls[1 + s], ws[s], strides[s], pad[s], ldil[s], rdil[s])
                    for s in range(2)), ws[3])
    text = _text(ls, ws, os_, "f32", _window(strides, pad, ldil, rdil), 1, 1, NHWC) + MARK
    assert gemms(text) == ws[0] * ws[1]
    want = _nhwc(x, w, strides, pad, ldil, rdil)
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)


def test_the_benchmark_shape_takes_the_path_unpatched() -> None:
    ls, ws = (2, 6, 20, 16), (3, 3, 16, 24)
    x, w = rand(ls), rand(ws)
    text = _text(ls, ws, (2, 6, 20, 24), "f32", "pad = [[1, 1], [1, 1]]", 1, 1, NHWC)
    assert gemms(text) == 9
    want = _nhwc(x, w, [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1])
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)


def test_reversed_window(small: None) -> None:
    x, w = rand((2, 6, 5, 3)), rand((3, 3, 3, 4))
    text = _text((2, 6, 5, 3), (3, 3, 3, 4), (2, 6, 5, 4), "f32",
                 "pad = [[1, 1], [1, 1]], reverse = [true, true]", 1, 1, NHWC) + MARK
    assert gemms(text) == 9
    want = _nhwc(x, w[::-1, ::-1].copy(), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1])
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)


def test_one_and_three_spatial_dims(small: None) -> None:
    x, w = rand((3, 20, 5)), rand((4, 5, 6))
    text = module("(%x: tensor<3x20x5xf32>, %w: tensor<4x5x6xf32>) -> tensor<3x18x6xf32>", """
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
      window = {pad = [[1, 0]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<3x20x5xf32>, tensor<4x5x6xf32>) -> tensor<3x18x6xf32>
  return %0 : tensor<3x18x6xf32>""") + MARK
    assert gemms(text) == 4
    ref = conv_ref(x.transpose(0, 2, 1), w.transpose(2, 1, 0), [1], [(1, 0)], [1], [1])
    np.testing.assert_allclose(run(text, x, w)[0], ref.transpose(0, 2, 1), rtol=1e-4,
                               atol=1e-4)
    x3, w3 = rand((2, 4, 5, 3, 2)), rand((2, 3, 2, 2, 8))
    text = module("(%x: tensor<2x4x5x3x2xf32>, %w: tensor<2x3x2x2x8xf32>) -> "
                  "tensor<2x4x5x3x8xf32>", """
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f],
      window = {pad = [[1, 0], [1, 1], [0, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<2x4x5x3x2xf32>, tensor<2x3x2x2x8xf32>) -> tensor<2x4x5x3x8xf32>
  return %0 : tensor<2x4x5x3x8xf32>""") + MARK
    assert gemms(text) == 12
    ref = conv_ref(x3.transpose(0, 4, 1, 2, 3), w3.transpose(4, 3, 0, 1, 2), [1, 1, 1],
                   [(1, 0), (1, 1), (0, 1)], [1, 1, 1], [1, 1, 1])
    np.testing.assert_allclose(run(text, x3, w3)[0], ref.transpose(0, 2, 3, 4, 1),
                               rtol=1e-4, atol=1e-4)


def test_f16(small: None) -> None:
    x, w = rand((2, 6, 6, 4), np.float16), rand((3, 3, 4, 8), np.float16)
    text = _text((2, 6, 6, 4), (3, 3, 4, 8), (2, 6, 6, 8), "f16", "pad = [[1, 1], [1, 1]]",
                 1, 1, NHWC) + MARK
    want = _nhwc(x.astype(np.float32), w.astype(np.float32), [1, 1], [(1, 1), (1, 1)],
                 [1, 1], [1, 1])
    got = run(text, x, w)[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=2e-2)


def test_bias_and_relu(small: None) -> None:
    text = module("(%x: tensor<3x7x9x5xf32>, %k: tensor<3x3x5x12xf32>, %b: tensor<12xf32>)"
                  " -> tensor<3x7x9x12xf32>", BIAS_RELU) + MARK
    assert gemms(text) == 9
    x, k, b = rand((3, 7, 9, 5)), rand((3, 3, 5, 12)), rand((12,))
    want = np.maximum(_nhwc(x, k, [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]) + b, 0)
    np.testing.assert_allclose(run(text, x, k, b)[0], want, rtol=1e-4, atol=1e-4)


def test_thresholds_keep_the_im2col_tile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conv, "DIRECT_K", 0)
    few = _text((2, 6, 20, 8), (3, 3, 8, 8), (2, 6, 20, 8), "f32", "pad = [[1, 1], [1, 1]]",
                1, 1, NHWC)
    short = _text((2, 6, 8, 16), (3, 3, 16, 8), (2, 6, 8, 8), "f32", "pad = [[1, 1], [1, 1]]",
                  1, 1, NHWC)
    strided = _text((2, 6, 40, 16), (3, 3, 16, 8), (2, 6, 20, 8), "f32",
                    "stride = [1, 2], pad = [[1, 1], [1, 1]]", 1, 1, NHWC)
    assert gemms(few) == gemms(short) == gemms(strided) == 1
    monkeypatch.setattr(conv_rows, "LOCAL_BYTES", 1024)
    assert gemms(_text((2, 6, 20, 16), (3, 3, 16, 8), (2, 6, 20, 8), "f32",
                       "pad = [[1, 1], [1, 1]]", 1, 1, NHWC)) == 1
