"""batch_norm_inference, batch_norm_training and batch_norm_grad against numpy
(the spec's decompositions)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import module, rand, run

EPS = 1e-3


def _t(shape: tuple[int, ...], e: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{e}>"


def _bcast(v: np.ndarray, fi: int, rank: int) -> np.ndarray:
    shape = [1] * rank
    shape[fi] = v.size
    return v.reshape(shape)


@pytest.mark.parametrize("fi", [1, 2])
def test_batch_norm_inference(fi: int) -> None:
    shape = (2, 3, 4)
    c = shape[fi]
    tx, tc = _t(shape), _t((c,))
    text = module(f"(%x: {tx}, %s: {tc}, %o: {tc}, %m: {tc}, %v: {tc}) -> {tx}", f"""
  %0 = "stablehlo.batch_norm_inference"(%x, %s, %o, %m, %v) {{epsilon = {EPS} : f32,
      feature_index = {fi} : i64}} : ({tx}, {tc}, {tc}, {tc}, {tc}) -> {tx}
  return %0 : {tx}""")
    x, s, o, m = rand(shape), rand((c,)), rand((c,)), rand((c,))
    v = np.abs(rand((c,))) + 0.5
    b = [_bcast(a, fi, 3) for a in (s, o, m, v)]
    want = b[0] * (x - b[2]) / np.sqrt(b[3] + EPS) + b[1]
    np.testing.assert_allclose(run(text, x, s, o, m, v)[0], want, rtol=1e-5, atol=1e-5)


def test_batch_norm_training() -> None:
    shape, fi = (4, 3, 5), 1
    tx, tc = _t(shape), _t((3,))
    text = module(f"(%x: {tx}, %s: {tc}, %o: {tc}) -> ({tx}, {tc}, {tc})", f"""
  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {{epsilon = {EPS} : f32,
      feature_index = {fi} : i64}} : ({tx}, {tc}, {tc}) -> ({tx}, {tc}, {tc})
  return %0#0, %0#1, %0#2 : {tx}, {tc}, {tc}""")
    x, s, o = rand(shape) + 2, rand((3,)), rand((3,))
    out, mean, var = run(text, x, s, o)
    want_m, want_v = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    np.testing.assert_allclose(mean, want_m, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(var, want_v, rtol=1e-5, atol=1e-5)
    b = [_bcast(a, fi, 3) for a in (s, o, want_m, want_v)]
    want = b[0] * (x - b[2]) / np.sqrt(b[3] + EPS) + b[1]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_batch_norm_grad() -> None:
    shape, fi = (3, 4, 2), 2
    tx, tc = _t(shape, "f64"), _t((2,), "f64")
    text = module(f"(%x: {tx}, %s: {tc}, %m: {tc}, %v: {tc}, %g: {tx}) -> ({tx}, {tc}, {tc})",
                  f"""
  %0:3 = "stablehlo.batch_norm_grad"(%x, %s, %m, %v, %g) {{epsilon = {EPS} : f32,
      feature_index = {fi} : i64}} : ({tx}, {tc}, {tc}, {tc}, {tx}) -> ({tx}, {tc}, {tc})
  return %0#0, %0#1, %0#2 : {tx}, {tc}, {tc}""")
    x, s, m, g = rand(shape, np.float64), rand((2,), np.float64), rand((2,), np.float64), \
        rand(shape, np.float64)
    v = np.abs(rand((2,), np.float64)) + 0.5
    eps = float(np.float32(EPS))
    axes = (0, 1)
    n = x.size / 2
    sb, mb, vb = (_bcast(a, fi, 3) for a in (s, m, v))
    centered = x - mb
    stddev = np.sqrt(vb + eps)
    i6 = g * n - g.sum(axes, keepdims=True) \
        - (g * centered).sum(axes, keepdims=True) * centered / (vb + eps)
    want = (sb / stddev / n * i6, (g * centered / stddev).sum(axes), g.sum(axes))
    for got, w in zip(run(text, x, s, m, v, g), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12)
