"""The one-kernel convolution of frontend/lower/families/conv/gemm.py (im2col tile in local memory,
then gemm) against numpy: NHWC x HWIO and other `[b, 0.., f]` results with padding,
strides, lhs/rhs dilation, reversal, a partial last tile, rows longer than a tile, 1-d and
3-d windows, f16 and integer types, the bias/ReLU epilogue, and the fallback to the im2col
buffer when a tile would not fit in local memory.  Outputs are poisoned (conftest)."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from frontend.lower.families.conv import convolution as conv
from frontend.lower.families.conv import gemm as conv_gemm
from tests.lowering.conftest import module, rand, run
from tests.lowering.test_conv import CASES as NCHW_CASES
from tests.lowering.test_conv import _text, _window, conv_ref

NHWC = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"


@pytest.fixture(autouse=True)
def gemm_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every convolution here takes a gemm (no direct kernel)."""
    monkeypatch.setattr(conv, "DIRECT_K", 0)


def kernels(text: str) -> list[str]:
    """The kernel names ``text`` lowers to."""
    lowered = lower_function(frontend.parse(text))
    return [line.split("(")[0][len("func @"):] for line in lowered.kernels.splitlines()
            if line.startswith("func @")]


def _nhwc(x: np.ndarray, w: np.ndarray, strides: list[int], pad: list[tuple[int, int]],
          ldil: list[int], rdil: list[int]) -> np.ndarray:
    """conv_ref for NHWC x HWIO -> NHWC operands."""
    out = conv_ref(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), strides, pad, ldil, rdil)
    return out.transpose(0, 2, 3, 1)


def _size(n: int, win: int, stride: int, pad: tuple[int, int], ld: int, rd: int) -> int:
    return ((n - 1) * ld + 1 + sum(pad) - ((win - 1) * rd + 1)) // stride + 1


CASES = [  # lhs NHWC, window HWIO, strides, pad, lhs dilation, rhs dilation
    ((2, 9, 7, 3), (3, 3, 3, 8), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]),
    ((3, 5, 5, 4), (3, 3, 4, 5), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]),
    ((1, 11, 10, 6), (3, 2, 6, 16), [2, 3], [(2, 0), (-1, 3)], [1, 1], [2, 1]),
    ((2, 5, 6, 8), (2, 3, 8, 4), [1, 2], [(1, 2), (2, 1)], [2, 3], [1, 2]),
    ((1, 3, 40, 2), (3, 3, 2, 8), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]),
]


@pytest.mark.parametrize("case", CASES)
def test_nhwc(case: tuple) -> None:
    ls, ws, strides, pad, ldil, rdil = case
    x, w = rand(ls), rand(ws)
    os_ = (ls[0], *(_size(ls[1 + s], ws[s], strides[s], pad[s], ldil[s], rdil[s])
                    for s in range(2)), ws[3])
    text = _text(ls, ws, os_, "f32", _window(strides, pad, ldil, rdil), 1, 1, NHWC)
    assert kernels(text) == ["k0_conv"]
    want = _nhwc(x, w, strides, pad, ldil, rdil)
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)


def test_reversed_int_and_oihw_weights() -> None:
    x, w = rand((2, 6, 5, 3), np.int32), rand((4, 3, 3, 2), np.int32)
    dims = "[b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]"
    text = _text((2, 6, 5, 3), (4, 3, 3, 2), (2, 6, 6, 4), "i32",
                 "pad = [[1, 1], [1, 1]], reverse = [true, false]", 1, 1, dims)
    assert kernels(text) == ["k0_weights", "k1_conv"]
    ref = conv_ref(x.transpose(0, 3, 1, 2), w[:, :, ::-1], [1, 1], [(1, 1), (1, 1)],
                   [1, 1], [1, 1])
    np.testing.assert_array_equal(run(text, x, w)[0], ref.transpose(0, 2, 3, 1).astype(np.int32))


def test_one_and_three_spatial_dims() -> None:
    x, w = rand((3, 20, 5)), rand((4, 5, 6))
    text = module("(%x: tensor<3x20x5xf32>, %w: tensor<4x5x6xf32>) -> tensor<3x9x6xf32>", """
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f],
      window = {stride = [2], pad = [[1, 0]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<3x20x5xf32>, tensor<4x5x6xf32>) -> tensor<3x9x6xf32>
  return %0 : tensor<3x9x6xf32>""")
    ref = conv_ref(x.transpose(0, 2, 1), w.transpose(2, 1, 0), [2], [(1, 0)], [1], [1])
    np.testing.assert_allclose(run(text, x, w)[0], ref.transpose(0, 2, 1), rtol=1e-4,
                               atol=1e-4)
    x3, w3 = rand((2, 4, 5, 3, 2)), rand((2, 3, 2, 2, 8))
    text = module("(%x: tensor<2x4x5x3x2xf32>, %w: tensor<2x3x2x2x8xf32>) -> "
                  "tensor<2x4x5x3x8xf32>", """
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f],
      window = {pad = [[1, 0], [1, 1], [0, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<2x4x5x3x2xf32>, tensor<2x3x2x2x8xf32>) -> tensor<2x4x5x3x8xf32>
  return %0 : tensor<2x4x5x3x8xf32>""")
    ref = conv_ref(x3.transpose(0, 4, 1, 2, 3), w3.transpose(4, 3, 0, 1, 2), [1, 1, 1],
                   [(1, 0), (1, 1), (0, 1)], [1, 1, 1], [1, 1, 1])
    np.testing.assert_allclose(run(text, x3, w3)[0], ref.transpose(0, 2, 3, 4, 1),
                               rtol=1e-4, atol=1e-4)


def test_f16_converts_in_the_kernel() -> None:
    x, w = rand((2, 6, 6, 4), np.float16), rand((3, 3, 4, 8), np.float16)
    text = _text((2, 6, 6, 4), (3, 3, 4, 8), (2, 6, 6, 8), "f16", "pad = [[1, 1], [1, 1]]",
                 1, 1, NHWC)
    assert kernels(text) == ["k0_weights", "k1_conv"]  # f32 weights, one conv
    want = _nhwc(x.astype(np.float32), w.astype(np.float32), [1, 1], [(1, 1), (1, 1)],
                 [1, 1], [1, 1])
    got = run(text, x, w)[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=2e-2)


BIAS_RELU = """
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<3x7x9x5xf32>, tensor<3x3x5x12xf32>) -> tensor<3x7x9x12xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<12xf32>) -> tensor<3x7x9x12xf32>
  %2 = stablehlo.add %0, %1 : tensor<3x7x9x12xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<3x7x9x12xf32>
  %3 = stablehlo.maximum %2, %zb : tensor<3x7x9x12xf32>
  return %3 : tensor<3x7x9x12xf32>"""


def test_bias_and_relu_in_the_conv_kernel() -> None:
    text = module("(%x: tensor<3x7x9x5xf32>, %k: tensor<3x3x5x12xf32>, %b: tensor<12xf32>)"
                  " -> tensor<3x7x9x12xf32>", BIAS_RELU)
    assert kernels(text) == ["k0_conv_maximum"]
    x, k, b = rand((3, 7, 9, 5)), rand((3, 3, 5, 12)), rand((12,))
    want = np.maximum(_nhwc(x, k, [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]) + b, 0)
    np.testing.assert_allclose(run(text, x, k, b)[0], want, rtol=1e-4, atol=1e-4)


def test_tile_too_big_for_local_memory_keeps_im2col(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conv_gemm, "LOCAL_BYTES", 256)
    x, w = rand((2, 6, 6, 4)), rand((3, 3, 4, 8))
    text = _text((2, 6, 6, 4), (3, 3, 4, 8), (2, 6, 6, 8), "f32", "pad = [[1, 1], [1, 1]]",
                 1, 1, NHWC)
    assert kernels(text) == ["k0_im2col", "k1_dot"]
    want = _nhwc(x, w, [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1])
    np.testing.assert_allclose(run(text + " ", x, w)[0], want, rtol=1e-4, atol=1e-4)


def test_tile_rows() -> None:
    assert conv_gemm.tile_rows(72, [8, 8], 4) == 4
    assert conv_gemm.tile_rows(144, [32, 32], 4) == 1
    assert conv_gemm.tile_rows(100, [7, 50], 4) == 1
    assert conv_gemm.tile_rows(9000, [4, 4], 4) == 0


def _pool_text(ls: tuple[int, ...], ws: tuple[int, ...], t: str, win: tuple[int, int],
               strides: tuple[int, int], body: str, init: str, relu_also_returned: bool = False
               ) -> str:
    """conv (SAME) -> + bias -> relu -> reduce_window(``body``) over ``win`` windows."""
    b, h, w, _ = ls
    o = ws[3]
    ph, pw = (h - win[0]) // strides[0] + 1, (w - win[1]) // strides[1] + 1

    def ty(*s: int) -> str:
        return "tensor<" + "".join(f"{n}x" for n in s) + f"{t}>"
    full, pooled = ty(b, h, w, o), ty(b, ph, pw, o)
    results = f"{pooled}, {full}" if relu_also_returned else pooled
    ret = f"%p, %r : {pooled}, {full}" if relu_also_returned else f"%p : {pooled}"
    return module(f"(%x: {ty(*ls)}, %k: {ty(*ws)}, %bias: {ty(o)}) -> ({results})", f"""
  %c = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {{stride = [1, 1], pad = [[1, 1], [1, 1]]}}
      {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
      : ({ty(*ls)}, {ty(*ws)}) -> {full}
  %bb = stablehlo.broadcast_in_dim %bias, dims = [3] : ({ty(o)}) -> {full}
  %a = stablehlo.add %c, %bb : {full}
  %z = stablehlo.constant dense<0.0> : {full}
  %r = stablehlo.maximum %a, %z : {full}
  %i = stablehlo.constant dense<{init}> : {ty()}
  %p = "stablehlo.reduce_window"(%r, %i) <{{
      window_dimensions = array<i64: 1, {win[0]}, {win[1]}, 1>,
      window_strides = array<i64: 1, {strides[0]}, {strides[1]}, 1>}}> ({{
    ^bb0(%u: {ty()}, %v: {ty()}):
      %m = stablehlo.{body} %u, %v : {ty()}
      stablehlo.return %m : {ty()}
  }}) : ({full}, {ty()}) -> {pooled}
  return {ret}""")


def _pool_ref(x: np.ndarray, k: np.ndarray, bias: np.ndarray, win: tuple[int, int],
              strides: tuple[int, int], fold: str, init: float) -> tuple[np.ndarray, ...]:
    r = np.maximum(_nhwc(x.astype(np.float64), k.astype(np.float64), [1, 1],
                         [(1, 1), (1, 1)], [1, 1], [1, 1]) + bias, 0)
    b, h, w, o = r.shape
    ph, pw = (h - win[0]) // strides[0] + 1, (w - win[1]) // strides[1] + 1
    out = np.full((b, ph, pw, o), init, np.float64)
    for i in range(ph):
        for j in range(pw):
            patch = r[:, i * strides[0]:i * strides[0] + win[0],
                      j * strides[1]:j * strides[1] + win[1]]
            part = patch.max(axis=(1, 2)) if fold == "maximum" else patch.sum(axis=(1, 2))
            out[:, i, j] = np.maximum(out[:, i, j], part) if fold == "maximum" else \
                out[:, i, j] + part
    return out, r


POOLS = [  # lhs, weights, window, body, init
    ((4, 16, 16, 3), (3, 3, 3, 8), (2, 2), "maximum", "0xFF800000"),
    ((5, 2, 5, 4), (3, 3, 4, 6), (2, 1), "maximum", "0xFF800000"),
    ((2, 6, 8, 5), (3, 3, 5, 4), (3, 2), "add", "1.5"),
]


@pytest.mark.parametrize("case", POOLS)
def test_pooling_runs_in_the_conv_kernel(case: tuple) -> None:
    ls, ws, win, body, init = case
    text = _pool_text(ls, ws, "f32", win, win, body, init)
    assert kernels(text) == ["k0_conv_reduce_window"]
    x, k, bias = rand(ls), rand(ws), rand((ws[3],))
    want, _ = _pool_ref(x, k, bias, win, win, body, -np.inf if init[0] == "0" else 1.5)
    np.testing.assert_allclose(run(text, x, k, bias)[0], want, rtol=1e-4, atol=1e-4)


def test_pooling_stays_separate_when_windows_overlap_or_values_escape() -> None:
    ls, ws = (2, 9, 9, 3), (3, 3, 3, 4)
    x, k, bias = rand(ls), rand(ws), rand((4,))
    text = _pool_text(ls, ws, "f32", (3, 3), (2, 2), "maximum", "0xFF800000")
    assert kernels(text) == ["k0_conv_maximum", "k1_reduce_window"]
    want, _ = _pool_ref(x, k, bias, (3, 3), (2, 2), "maximum", -np.inf)
    np.testing.assert_allclose(run(text, x, k, bias)[0], want, rtol=1e-4, atol=1e-4)
    ls = (2, 8, 8, 3)
    x = rand(ls)
    text = _pool_text(ls, ws, "f32", (2, 2), (2, 2), "maximum", "0xFF800000", True)
    assert kernels(text) == ["k0_conv_maximum", "k1_reduce_window"]
    want, relu = _pool_ref(x, k, bias, (2, 2), (2, 2), "maximum", -np.inf)
    got = run(text, x, k, bias)
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], relu, rtol=1e-4, atol=1e-4)


def test_f16_pooling_in_the_conv_kernel() -> None:
    ls, ws = (2, 6, 6, 4), (3, 3, 4, 8)
    text = _pool_text(ls, ws, "f16", (2, 2), (2, 2), "maximum", "0xFC00")
    assert kernels(text)[-1] == "k1_conv_reduce_window"  # after the f32 weights
    x, k, bias = rand(ls, np.float16), rand(ws, np.float16), rand((8,), np.float16)
    want, _ = _pool_ref(x, k, bias, (2, 2), (2, 2), "maximum", -np.inf)
    got = run(text, x, k, bias)[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=3e-2)


NCHW_BIAS = """
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {stride = [2, 1], pad = [[1, 1], [0, 2]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<3x4x9x7xf32>, tensor<6x4x3x3xf32>) -> tensor<3x6x5x7xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<6xf32>) -> tensor<3x6x5x7xf32>
  %2 = stablehlo.add %0, %1 : tensor<3x6x5x7xf32>
  %3 = stablehlo.tanh %2 : tensor<3x6x5x7xf32>
  return %3 : tensor<3x6x5x7xf32>"""


def test_nchw_result_with_epilogue_is_one_kernel_after_the_weights() -> None:
    text = module("(%x: tensor<3x4x9x7xf32>, %k: tensor<6x4x3x3xf32>, %b: tensor<6xf32>)"
                  " -> tensor<3x6x5x7xf32>", NCHW_BIAS)
    assert kernels(text) == ["k0_weights", "k1_conv_tanh"]
    x, k, b = rand((3, 4, 9, 7)), rand((6, 4, 3, 3)), rand((6,))
    want = np.tanh(conv_ref(x, k, [2, 1], [(1, 1), (0, 2)], [1, 1], [1, 1])
                   + b[None, :, None, None])
    np.testing.assert_allclose(run(text, x, k, b)[0], want, rtol=1e-4, atol=1e-4)


def test_odd_result_layout_and_a_partial_tile() -> None:
    x, w = rand((5, 3, 6, 4)), rand((4, 3, 2, 3))
    dims = "[b, f, 0, 1]x[o, i, 0, 1]->[1, f, b, 0]"
    text = _text((5, 3, 6, 4), (4, 3, 2, 3), (4, 4, 5, 6), "f32",
                 "pad = [[1, 0], [1, 1]]", 1, 1, dims)
    assert kernels(text) == ["k0_weights", "k1_conv"]
    ref = conv_ref(x, w, [1, 1], [(1, 0), (1, 1)], [1, 1], [1, 1])
    np.testing.assert_allclose(run(text, x, w)[0], ref.transpose(3, 1, 0, 2), rtol=1e-4,
                               atol=1e-4)


GROUPED = """
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 2], pad = [[1, 1], [2, 0]]}
      {batch_group_count = 1 : i64, feature_group_count = 4 : i64}
      : (tensor<2x7x9x12xf32>, tensor<3x3x3x20xf32>) -> tensor<2x7x5x20xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<20xf32>) -> tensor<2x7x5x20xf32>
  %2 = stablehlo.add %0, %1 : tensor<2x7x5x20xf32>
  return %2 : tensor<2x7x5x20xf32>"""


def test_feature_groups_are_one_kernel_per_group_and_tile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = module("(%x: tensor<2x7x9x12xf32>, %k: tensor<3x3x3x20xf32>, %b: tensor<20xf32>)"
                  " -> tensor<2x7x5x20xf32>", GROUPED)
    assert kernels(text) == ["k0_im2col", "k1_weights", "k2_dot", "k3_conv_out", "k4_add"]
    monkeypatch.setattr(conv, "GROUP_O", 5)  # 5 output features per group
    text += " "
    assert kernels(text) == ["k0_weights", "k1_conv_add"]
    x, k, b = rand((2, 7, 9, 12)), rand((3, 3, 3, 20)), rand((20,))
    want = conv_ref(x.transpose(0, 3, 1, 2), k.transpose(3, 2, 0, 1), [1, 2],
                    [(1, 1), (2, 0)], [1, 1], [1, 1], 4).transpose(0, 2, 3, 1) + b
    np.testing.assert_allclose(run(text, x, k, b)[0], want, rtol=1e-4, atol=1e-4)


def test_batch_groups_nhwc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conv, "GROUP_O", 1)
    x, w = rand((6, 5, 4, 4)), rand((3, 2, 4, 9))
    text = _text((6, 5, 4, 4), (3, 2, 4, 9), (2, 5, 5, 9), "f32", "pad = [[1, 1], [1, 1]]",
                 1, 3, NHWC)
    assert kernels(text) == ["k0_weights", "k1_conv"]
    want = conv_ref(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), [1, 1],
                    [(1, 1), (1, 1)], [1, 1], [1, 1], 1, 3).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", NCHW_CASES)
def test_grouped_nchw_cases_in_one_kernel(case: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """test_conv's NCHW cases (groups, batch groups, dilations) on the one-kernel path."""
    monkeypatch.setattr(conv, "GROUP_O", 1)
    ls, rs, strides, pad, ldil, rdil, fg, bg = case
    x, w = rand(ls), rand(rs)
    want = conv_ref(x, w, strides, pad, ldil, rdil, fg, bg)
    text = _text(ls, rs, want.shape, "f32", _window(strides, pad, ldil, rdil), fg, bg) + "  "
    assert kernels(text)[-1] == "k1_conv"
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)
