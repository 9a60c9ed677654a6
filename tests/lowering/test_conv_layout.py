"""Channels-first convolutions rewritten channels-last (frontend/lower/families/conv/layout.py):
NCHW/OIHW convolutions whose results are transposed back to channels-last (as equinox's
layers under ``vmap`` are), with strides, padding, dilations, groups, small channel counts
and a batch, and the pooling between them, against numpy.  Outputs are poisoned
(conftest)."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.ir.core import walk
from frontend.lower.core.driver import lower_function
from frontend.lower.core.inline import inline_calls
from frontend.lower.families.conv.layout import channels_last
from tests.lowering.conftest import module, rand, run
from tests.lowering.test_conv import _window, conv_ref

NCHW = "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]"


def ty(*shape: int, t: str = "f32") -> str:
    """``tensor<AxBx..xt>``."""
    return "tensor<" + "".join(f"{n}x" for n in shape) + f"{t}>"


def kernels(text: str) -> list[str]:
    """The kernel names ``text`` lowers to."""
    lowered = lower_function(frontend.parse(text))
    return [line.split("(")[0][len("func @"):] for line in lowered.kernels.splitlines()
            if line.startswith("func @")]


def rewritten(text: str) -> list[str]:
    """The ops of @main after :func:`channels_last`, as ``name`` or ``name dims`` for
    convolutions."""
    m = frontend.parse(text)
    f = m.func("main")
    assert f is not None
    body = channels_last(inline_calls(m, f))
    return [f"{op.name} {op.attrs['dimension_numbers'].pretty()}"  # type: ignore[attr-defined]
            if op.name == "stablehlo.convolution" else op.name for op in walk(body)]


def _conv_back_text(ls: tuple[int, ...], rs: tuple[int, ...], os_: tuple[int, ...],
                    window: str, fg: int) -> str:
    """NCHW conv -> + bias -> relu -> transpose to channels-last, returned."""
    nsp = len(ls) - 2
    to_last = [0, *range(2, 2 + nsp), 1]
    back = tuple(os_[p] for p in to_last)
    labels = ", ".join(str(i) for i in range(nsp))
    dims = f"[b, f, {labels}]x[o, i, {labels}]->[b, f, {labels}]"
    return module(f"(%x: {ty(*ls)}, %w: {ty(*rs)}, %bias: {ty(os_[1])}) -> {ty(*back)}", f"""
  %0 = stablehlo.convolution(%x, %w) dim_numbers = {dims}, window = {{{window}}}
      {{batch_group_count = 1 : i64, feature_group_count = {fg} : i64}}
      : ({ty(*ls)}, {ty(*rs)}) -> {ty(*os_)}
  %1 = stablehlo.broadcast_in_dim %bias, dims = [1] : ({ty(os_[1])}) -> {ty(*os_)}
  %2 = stablehlo.add %0, %1 : {ty(*os_)}
  %z = stablehlo.constant dense<0.0> : {ty()}
  %zs = stablehlo.broadcast_in_dim %z, dims = [] : ({ty()}) -> {ty(*os_)}
  %3 = stablehlo.maximum %2, %zs : {ty(*os_)}
  %4 = stablehlo.transpose %3, dims = {to_last} : ({ty(*os_)}) -> {ty(*back)}
  return %4 : {ty(*back)}""")


CASES = [  # lhs NCHW, rhs OIHW, strides, pad, lhs_dilate, rhs_dilate, fg
    ((2, 3, 9, 8), (16, 3, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], 1),  # 3 features
    ((5, 2, 7, 9), (8, 2, 3, 3), [2, 1], [(1, 0), (0, 2)], [1, 1], [1, 1], 1),  # 2 features
    ((3, 16, 8, 20), (24, 16, 3, 3), [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], 1),  # rows
    ((2, 8, 11, 10), (12, 8, 3, 2), [2, 3], [(2, 1), (0, 1)], [1, 1], [2, 1], 1),  # dilated
    ((2, 4, 5, 6), (6, 4, 2, 3), [1, 1], [(1, 1), (1, 1)], [2, 1], [1, 1], 1),  # lhs dilated
    ((2, 32, 6, 5), (32, 16, 3, 3), [1, 2], [(1, 1), (1, 1)], [1, 1], [1, 1], 2),  # groups
    ((2, 8, 9, 9), (8, 1, 3, 3), [2, 2], [(1, 1), (1, 1)], [1, 1], [1, 1], 8),  # depthwise
]


@pytest.mark.parametrize("case", CASES)
def test_nchw_conv_transposed_back(case: tuple) -> None:
    ls, rs, strides, pad, ldil, rdil, fg = case
    x, w, bias = rand(ls), rand(rs), rand((rs[0],))
    want = np.maximum(conv_ref(x, w, strides, pad, ldil, rdil, fg)
                      + bias[:, None, None], 0).transpose(0, 2, 3, 1)
    nchw = (want.shape[0], want.shape[3], *want.shape[1:3])
    text = _conv_back_text(ls, rs, nchw, _window(strides, pad, ldil, rdil), fg)
    ops = rewritten(text)
    depthwise = rs[1] == 1 and fg == ls[1]
    conv = next(op for op in ops if op.startswith("stablehlo.convolution"))
    if depthwise:  # the direct kernel walks any layout: left as it is
        assert conv.endswith("->[b, f, 0, 1]")
    else:
        assert conv == "stablehlo.convolution [b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]"
        assert "stablehlo.transpose" not in ops[ops.index(conv):]  # they cancelled
    np.testing.assert_allclose(run(text, x, w, bias)[0], want, rtol=1e-4, atol=1e-4)


def test_one_and_three_spatial_dims() -> None:
    for ls, rs, strides, pad in [((3, 4, 20), (16, 4, 5), [2], [(2, 2)]),
                                 ((2, 3, 5, 6, 4), (8, 3, 2, 3, 2), [1, 2, 1],
                                  [(1, 0), (1, 1), (0, 1)])]:
        nsp = len(ls) - 2
        x, w, bias = rand(ls), rand(rs), rand((rs[0],))
        ref = conv_ref(x, w, strides, pad, [1] * nsp, [1] * nsp)
        ref = np.maximum(ref + bias.reshape(-1, *[1] * nsp), 0)
        want = ref.transpose(0, *range(2, 2 + nsp), 1)
        text = _conv_back_text(ls, rs, ref.shape, _window(strides, pad, [1] * nsp,
                                                          [1] * nsp), 1)
        assert any(op.startswith("stablehlo.convolution [b, 0") for op in rewritten(text))
        np.testing.assert_allclose(run(text, x, w, bias)[0], want, rtol=1e-4, atol=1e-4)


def test_nchw_result_not_transposed_back_is_left_alone() -> None:
    ls, rs = (2, 4, 6, 5), (8, 4, 3, 3)
    text = module(f"(%x: {ty(*ls)}, %w: {ty(*rs)}) -> {ty(2, 8, 6, 5)}", f"""
  %0 = stablehlo.convolution(%x, %w) dim_numbers = {NCHW},
      window = {{pad = [[1, 1], [1, 1]]}}
      {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
      : ({ty(*ls)}, {ty(*rs)}) -> {ty(2, 8, 6, 5)}
  %1 = stablehlo.tanh %0 : {ty(2, 8, 6, 5)}
  return %1 : {ty(2, 8, 6, 5)}""")
    assert rewritten(text) == [f"stablehlo.convolution {NCHW}", "stablehlo.tanh",
                               "func.return"]
    x, w = rand(ls), rand(rs)
    want = np.tanh(conv_ref(x, w, [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1]))
    np.testing.assert_allclose(run(text, x, w)[0], want, rtol=1e-4, atol=1e-4)


def _pool_nchw(x: np.ndarray, win: int) -> np.ndarray:
    b, c, h, w = x.shape
    return x.reshape(b, c, h // win, win, w // win, win).max(axis=(3, 5))


def _equinox_text(b: int, c: tuple[int, int, int], hw: int) -> str:
    """equinox's vmapped layers: unit broadcasts and reshapes around NCHW convolutions,
    bias + ReLU, max pooling 2x2 through a transpose to channels-last and back."""
    c0, c1, c2 = c
    h1, h2 = hw // 2, hw // 4

    def layer(i: int, src: str, cin: int, cout: int, h: int) -> str:
        x4, x5 = ty(b, cin, h, h), ty(b, 1, cin, h, h)
        o4, o5, t4 = ty(b, cout, h, h), ty(b, 1, h, h, cout), ty(b, h, h, cout)
        p5, p4, pt = ty(b, 1, h // 2, h // 2, cout), ty(b, h // 2, h // 2, cout), \
            ty(b, cout, h // 2, h // 2)
        return f"""
  %u{i} = stablehlo.broadcast_in_dim {src}, dims = [0, 2, 3, 4] : ({x4}) -> {x5}
  %v{i} = stablehlo.reshape %u{i} : ({x5}) -> {x4}
  %c{i} = stablehlo.convolution(%v{i}, %w{i}) dim_numbers = {NCHW},
      window = {{stride = [1, 1], pad = [[1, 1], [1, 1]]}}
      {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
      : ({x4}, {ty(cout, cin, 3, 3)}) -> {o4}
  %r{i} = stablehlo.reshape %c{i} : ({o4}) -> {ty(b, 1, cout, h, h)}
  %s{i} = stablehlo.reshape %r{i} : ({ty(b, 1, cout, h, h)}) -> {o4}
  %bb{i} = stablehlo.broadcast_in_dim %bias{i}, dims = [1, 2, 3]
      : ({ty(cout, 1, 1)}) -> {ty(1, cout, 1, 1)}
  %bc{i} = stablehlo.broadcast_in_dim %bb{i}, dims = [0, 1, 2, 3]
      : ({ty(1, cout, 1, 1)}) -> {o4}
  %a{i} = stablehlo.add %s{i}, %bc{i} : {o4}
  %m{i} = stablehlo.maximum %a{i}, %zero{i} : {o4}
  %t{i} = stablehlo.transpose %m{i}, dims = [0, 2, 3, 1] : ({o4}) -> {t4}
  %e{i} = stablehlo.broadcast_in_dim %t{i}, dims = [0, 2, 3, 4] : ({t4}) -> {o5}
  %p{i} = "stablehlo.reduce_window"(%e{i}, %ninf) <{{
      window_dimensions = array<i64: 1, 1, 2, 2, 1>,
      window_strides = array<i64: 1, 1, 2, 2, 1>}}> ({{
    ^bb0(%l: {ty()}, %q: {ty()}):
      %mx = stablehlo.maximum %l, %q : {ty()}
      stablehlo.return %mx : {ty()}
  }}) : ({o5}, {ty()}) -> {p5}
  %f{i} = stablehlo.reshape %p{i} : ({p5}) -> {p4}
  %g{i} = stablehlo.transpose %f{i}, dims = [0, 3, 1, 2] : ({p4}) -> {pt}"""

    zeros = "\n".join(f"  %zero{i} = stablehlo.broadcast_in_dim %z, dims = [] : ({ty()}) -> "
                      f"{ty(b, co, h, h)}" for i, co, h in ((0, c1, hw), (1, c2, h1)))
    sig = (f"(%x: {ty(b, c0, hw, hw)}, %w0: {ty(c1, c0, 3, 3)}, %bias0: {ty(c1, 1, 1)}, "
           f"%w1: {ty(c2, c1, 3, 3)}, %bias1: {ty(c2, 1, 1)}) -> {ty(b, c2, h2, h2)}")
    return module(sig, f"""
  %z = stablehlo.constant dense<0.0> : {ty()}
  %ninf = stablehlo.constant dense<0xFF800000> : {ty()}
{zeros}{layer(0, "%x", c0, c1, hw)}{layer(1, "%g0", c1, c2, h1)}
  return %g1 : {ty(b, c2, h2, h2)}""")


def test_equinox_style_cnn() -> None:
    b, (c0, c1, c2), hw = 4, (3, 16, 24), 16
    text = _equinox_text(b, (c0, c1, c2), hw)
    ops = rewritten(text)
    convs = [op for op in ops if op.startswith("stablehlo.convolution")]
    assert convs == ["stablehlo.convolution [b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]"] * 2
    assert ops.count("stablehlo.transpose") == 2  # the input's and the returned result's
    names = kernels(text)
    assert "k1_conv_reduce_window" in names  # the first pooling runs in the conv kernel
    assert not any("layout" in n or "copy" in n for n in names)
    x = rand((b, c0, hw, hw))
    w0, bias0 = rand((c1, c0, 3, 3)), rand((c1, 1, 1))
    w1, bias1 = rand((c2, c1, 3, 3)), rand((c2, 1, 1))
    same = ([1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1])
    h = _pool_nchw(np.maximum(conv_ref(x, w0, *same) + bias0, 0), 2)
    want = _pool_nchw(np.maximum(conv_ref(h, w1, *same) + bias1, 0), 2)
    np.testing.assert_allclose(run(text, x, w0, bias0, w1, bias1)[0], want, rtol=1e-4,
                               atol=1e-4)


def test_pooling_over_unit_broadcast_with_padding() -> None:
    """reduce_window(broadcast with a unit dimension) = reshape(reduce_window) also with
    padding, strides and overlapping windows on the real dimensions."""
    shape, out = (2, 7, 6, 5), (2, 1, 4, 3, 5)
    text = module(f"(%x: {ty(*shape)}) -> {ty(*out)}", f"""
  %i = stablehlo.constant dense<0.0> : {ty()}
  %e = stablehlo.broadcast_in_dim %x, dims = [0, 2, 3, 4] : ({ty(*shape)}) -> {ty(2, 1, 7, 6, 5)}
  %p = "stablehlo.reduce_window"(%e, %i) <{{
      window_dimensions = array<i64: 1, 1, 3, 3, 1>,
      window_strides = array<i64: 1, 1, 2, 2, 1>,
      padding = dense<[[0, 0], [0, 0], [1, 1], [1, 0], [0, 0]]> : tensor<5x2xi64>}}> ({{
    ^bb0(%l: {ty()}, %q: {ty()}):
      %s = stablehlo.add %l, %q : {ty()}
      stablehlo.return %s : {ty()}
  }}) : ({ty(2, 1, 7, 6, 5)}, {ty()}) -> {ty(*out)}
  return %p : {ty(*out)}""")
    assert rewritten(text) == ["stablehlo.constant", "stablehlo.reduce_window",
                               "stablehlo.add", "stablehlo.return", "stablehlo.reshape",
                               "func.return"]
    x = rand(shape)
    padded = np.pad(x, [(0, 0), (1, 1), (1, 0), (0, 0)])
    want = np.zeros((2, 4, 3, 5), np.float32)
    for i in range(4):
        for j in range(3):
            want[:, i, j] = padded[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(1, 2))
    np.testing.assert_allclose(run(text, x)[0], want[:, None], rtol=1e-5, atol=1e-5)
