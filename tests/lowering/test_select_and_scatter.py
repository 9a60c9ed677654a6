"""select_and_scatter: per-result-element (gathered) and sequential paths against a
numpy transcription of the spec (windows over the padded operand, first GE wins)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.lowering.conftest import module, run


def reference(x: np.ndarray, src: np.ndarray, window: list[int], strides: list[int],
              pad: list[tuple[int, int]], init: int) -> np.ndarray:
    out = np.full(x.shape, init, x.dtype)
    for s in itertools.product(*(range(n) for n in src.shape)):
        best = None
        for w in itertools.product(*(range(n) for n in window)):
            pos = tuple(si * st - p[0] + wi
                        for si, st, p, wi in zip(s, strides, pad, w, strict=True))
            if all(0 <= q < n for q, n in zip(pos, x.shape, strict=True)):
                if best is None or x[pos] > x[best]:  # select(best, x) = best >= x
                    best = pos
        if best is not None:
            out[best] += src[s]
    return out


def _text(shape: tuple[int, int], sshape: tuple[int, int], window: list[int],
          strides: list[int], pad: list[tuple[int, int]]) -> str:
    ty = f"tensor<{shape[0]}x{shape[1]}xi32>"
    sty = f"tensor<{sshape[0]}x{sshape[1]}xi32>"
    return module(f"(%x: {ty}, %s: {sty}) -> {ty}", f"""
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0 = "stablehlo.select_and_scatter"(%x, %s, %z) <{{
      window_dimensions = array<i64: {window[0]}, {window[1]}>,
      window_strides = array<i64: {strides[0]}, {strides[1]}>,
      padding = dense<{[list(p) for p in pad]}> : tensor<2x2xi64>}}> ({{
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %ge = stablehlo.compare GE, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }}, {{
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %sum = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %sum : tensor<i32>
  }}) : ({ty}, {sty}, tensor<i32>) -> {ty}
  return %0 : {ty}""")


@pytest.mark.parametrize(("shape", "window", "strides", "pad"), [
    ((9, 13), [2, 2], [2, 2], [(0, 1), (0, 1)]),   # one window per element
    ((10, 11), [3, 3], [2, 2], [(1, 1), (1, 1)]),  # overlapping, gathered (2x2 candidates)
    ((7, 8), [3, 3], [1, 1], [(1, 1), (1, 1)]),    # 9 windows per element: sequential
])
def test_select_and_scatter(shape: tuple[int, int], window: list[int], strides: list[int],
                            pad: list[tuple[int, int]]) -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(0, 5, size=shape).astype(np.int32)  # many ties
    sshape = tuple((n + p[0] + p[1] - w) // st + 1
                   for n, p, w, st in zip(shape, pad, window, strides, strict=True))
    src = rng.integers(-9, 9, size=sshape).astype(np.int32)
    got = run(_text(shape, sshape, window, strides, pad), x, src)[0]
    np.testing.assert_array_equal(got, reference(x, src, window, strides, pad, 0))
