"""stablehlo.convolution (im2col + gemm, and the direct loop for tiny contractions) against a
numpy reference: layouts, strides, padding, dilations, reversal, feature and batch groups,
integer and f16 types."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from frontend.lower.families.conv import convolution as conv
from tests.lowering.conftest import module, rand, run


def _dilate(x: np.ndarray, axis: int, d: int) -> np.ndarray:
    if d == 1 or x.shape[axis] == 0:
        return x
    shape = list(x.shape)
    shape[axis] = (shape[axis] - 1) * d + 1
    out = np.zeros(shape, x.dtype)
    index = [slice(None)] * x.ndim
    index[axis] = slice(None, None, d)
    out[tuple(index)] = x
    return out


def _pad(x: np.ndarray, axis: int, lo: int, hi: int) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    widths[axis] = (max(lo, 0), max(hi, 0))
    x = np.pad(x, widths)
    index = [slice(None)] * x.ndim
    index[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
    return x[tuple(index)]


def conv_ref(lhs: np.ndarray, rhs: np.ndarray, strides: list[int], pad: list[tuple[int, int]],
             ldil: list[int], rdil: list[int], fg: int = 1, bg: int = 1) -> np.ndarray:
    """NCHW x OIHW -> NCHW convolution following the spec's definition."""
    nsp = lhs.ndim - 2
    for s in range(nsp):
        lhs = _pad(_dilate(lhs, 2 + s, ldil[s]), 2 + s, *pad[s])
        rhs = _dilate(rhs, 2 + s, rdil[s])
    b, o = lhs.shape[0] // bg, rhs.shape[0]
    out_sp = [(lhs.shape[2 + s] - rhs.shape[2 + s]) // strides[s] + 1 for s in range(nsp)]
    out = np.zeros((b, o, *out_sp), np.float64)
    groups, og = fg * bg, o // (fg * bg)
    ii = rhs.shape[1]
    for g in range(groups):
        xs = lhs[:, g * ii:(g + 1) * ii] if fg > 1 else lhs[g * b:(g + 1) * b]
        ws = rhs[g * og:(g + 1) * og].astype(np.float64)
        for pos in itertools.product(*(range(n) for n in out_sp)):
            win = tuple(slice(p * st, p * st + rhs.shape[2 + s])
                        for s, (p, st) in enumerate(zip(pos, strides, strict=True)))
            patch = xs[(slice(None), slice(None), *win)].astype(np.float64)
            out[(slice(None), slice(g * og, (g + 1) * og), *pos)] = np.tensordot(
                patch, ws, axes=(list(range(1, patch.ndim)), list(range(1, ws.ndim))))
    return out


def _text(ls: tuple[int, ...], rs: tuple[int, ...], os_: tuple[int, ...], t: str,
          window: str, fg: int, bg: int, dims: str = "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]"
          ) -> str:
    def ty(s: tuple[int, ...]) -> str:
        return "tensor<" + "x".join(map(str, s)) + f"x{t}>"
    return module(f"(%x: {ty(ls)}, %w: {ty(rs)}) -> {ty(os_)}", f"""
  %0 = stablehlo.convolution(%x, %w) dim_numbers = {dims},
      window = {{{window}}} {{batch_group_count = {bg} : i64,
      feature_group_count = {fg} : i64}} : ({ty(ls)}, {ty(rs)}) -> {ty(os_)}
  return %0 : {ty(os_)}""")


CASES = [  # lhs NCHW, rhs OIHW, strides, pad, lhs_dilate, rhs_dilate, fg, bg
    ((2, 3, 7, 6), (5, 3, 3, 2), [1, 1], [(1, 1), (0, 1)], [1, 1], [1, 1], 1, 1),
    ((1, 4, 9, 8), (6, 2, 3, 3), [2, 3], [(2, 0), (1, 2)], [1, 1], [2, 1], 2, 1),
    ((4, 2, 5, 5), (6, 2, 2, 3), [1, 2], [(0, 0), (1, 1)], [2, 1], [1, 2], 1, 2),
    ((3, 5, 6, 7), (4, 5, 3, 1), [2, 1], [(-1, 1), (0, 0)], [1, 2], [1, 1], 1, 1),
]


def _window(strides: list[int], pad: list[tuple[int, int]], ldil: list[int],
            rdil: list[int]) -> str:
    return (f"stride = {strides}, pad = {[list(p) for p in pad]}, lhs_dilate = {ldil}, "
            f"rhs_dilate = {rdil}")


@pytest.fixture(params=["gemm", "direct"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Force the im2col + gemm lowering or the direct loop (texts differ per path, so the
    executable cache does not mix them)."""
    monkeypatch.setattr(conv, "DIRECT_K", 0 if request.param == "gemm" else 1 << 30)
    return " " * (request.param == "direct")


@pytest.mark.parametrize("case", CASES)
def test_conv_nchw_groups_dilations(case: tuple, path: str) -> None:
    ls, rs, strides, pad, ldil, rdil, fg, bg = case
    x, w = rand(ls), rand(rs)
    want = conv_ref(x, w, strides, pad, ldil, rdil, fg, bg)
    text = _text(ls, rs, want.shape, "f32", _window(strides, pad, ldil, rdil), fg, bg) + path
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)


def test_conv_nhwc_int_and_reversal(path: str) -> None:
    x, w = rand((2, 6, 5, 3), np.int32), rand((3, 2, 3, 4), np.int32)
    dims = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"
    text = _text((2, 6, 5, 3), (3, 2, 3, 4), (2, 4, 6, 4), "i32",
                 "pad = [[0, 0], [1, 1]], reverse = [true, false]", 1, 1, dims) + path
    ref = conv_ref(x.transpose(0, 3, 1, 2), w[::-1].transpose(3, 2, 0, 1), [1, 1],
                   [(0, 0), (1, 1)], [1, 1], [1, 1])
    np.testing.assert_array_equal(run(text, x, w)[0], ref.transpose(0, 2, 3, 1).astype(np.int32))


def test_conv_f16_odd_output_layout(path: str) -> None:
    x, w = rand((2, 3, 5, 4), np.float16), rand((4, 3, 2, 2), np.float16)
    dims = "[b, f, 0, 1]x[o, i, 0, 1]->[f, 1, b, 0]"
    text = _text((2, 3, 5, 4), (4, 3, 2, 2), (4, 3, 2, 4), "f16", "stride = [1, 1]", 1, 1,
                 dims) + path
    ref = conv_ref(x, w, [1, 1], [(0, 0), (0, 0)], [1, 1], [1, 1])
    got = run(text, x, w)[0].astype(np.float64)
    np.testing.assert_allclose(got, ref.transpose(1, 3, 0, 2), rtol=1e-2, atol=1e-2)
