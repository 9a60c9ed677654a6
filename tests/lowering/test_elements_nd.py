"""Kernels over multi-dimensional index spaces (``KernelBuilder.elements_nd``): partial
work-groups, broadcasts, transposes and im2col against numpy, on poisoned buffers."""

from __future__ import annotations

import itertools
from math import prod

import numpy as np
import pytest

from frontend.lower.core.builder import CHUNK, groups_nd, split_nd
from tests.lowering.conftest import module, rand, run


@pytest.mark.parametrize("shape", [(1,), (7,), (CHUNK,), (CHUNK + 3,), (3 * CHUNK - 1,),
                                   (5, 1, 700), (3, 2 * CHUNK + 1), (2, 3, 4, 5, 6),
                                   (CHUNK, 1), (1500, 1), (0, 4)])
def test_split_covers_every_index_once(shape: tuple[int, ...]) -> None:
    """The groups' blocks tile the index space: every index once, about CHUNK per group."""
    mode, block = split_nd(shape)
    seen: list[tuple[int, ...]] = []
    blocks = -(-shape[mode] // block) if shape[mode] else 0
    for g in range(groups_nd(shape) if prod(shape) else 0):
        *lead, b = np.unravel_index(g, (*shape[:mode], blocks)) if blocks else (0,)
        ranges = [range(b * block, min(b * block + block, shape[mode])),
                  *(range(n) for n in shape[mode + 1:])]
        pts = list(itertools.product(*ranges))
        assert len(pts) <= max(CHUNK, block * prod(shape[mode + 1:]))
        seen += [(*map(int, lead), *p) for p in pts]
    assert sorted(seen) == sorted(itertools.product(*(range(n) for n in shape)))


@pytest.mark.parametrize("m, n", [(3, 700), (5, 1023), (2, 2500), (1, 1), (37, 129)])
def test_broadcast_add_exp_partial_groups(m: int, n: int) -> None:
    """exp(x - b) with b broadcast along rows; sizes not multiples of a work-group's share."""
    t, r = f"tensor<{m}x{n}xf32>", f"tensor<{n}xf32>"
    text = module(f"(%x: {t}, %b: {r}) -> {t}", f"""
  %0 = stablehlo.broadcast_in_dim %b, dims = [1] : ({r}) -> {t}
  %1 = stablehlo.subtract %x, %0 : {t}
  %2 = stablehlo.exponential %1 : {t}
  return %2 : {t}""")
    x, b = rand((m, n)), rand((n,))
    (out,) = run(text, x, b)
    np.testing.assert_allclose(out, np.exp(x - b), rtol=2e-6)


def test_row_broadcast_divide_and_transpose() -> None:
    """A column vector broadcast along a row-major row, and a transpose of odd sizes."""
    text = module("(%x: tensor<9x1100xf32>, %s: tensor<9xf32>) -> "
                  "(tensor<9x1100xf32>, tensor<1100x9xf32>)", """
  %0 = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<9xf32>) -> tensor<9x1100xf32>
  %1 = stablehlo.divide %x, %0 : tensor<9x1100xf32>
  %2 = stablehlo.transpose %x, dims = [1, 0] : (tensor<9x1100xf32>) -> tensor<1100x9xf32>
  return %1, %2 : tensor<9x1100xf32>, tensor<1100x9xf32>""")
    x, s = rand((9, 1100)), rand((9,)) + 3
    r1, r2 = run(text, x, s)
    np.testing.assert_allclose(r1, x / s[:, None], rtol=1e-6)
    np.testing.assert_array_equal(r2, x.T)


def test_scalar_and_rank4_copy() -> None:
    """A 0-d result and a rank-4 permutation whose split mode is not the first."""
    text = module("(%a: tensor<f32>, %x: tensor<3x5x17x40xi32>) -> "
                  "(tensor<f32>, tensor<40x5x3x17xi32>)", """
  %0 = stablehlo.negate %a : tensor<f32>
  %1 = stablehlo.transpose %x, dims = [3, 1, 0, 2]
      : (tensor<3x5x17x40xi32>) -> tensor<40x5x3x17xi32>
  return %0, %1 : tensor<f32>, tensor<40x5x3x17xi32>""")
    a, x = rand(()), rand((3, 5, 17, 40), np.int32)
    r0, r1 = run(text, a, x)
    np.testing.assert_array_equal(r0, -a)
    np.testing.assert_array_equal(r1, x.transpose(3, 1, 0, 2))


def test_im2col_convolution_odd_sizes() -> None:
    """A 3x3 NHWC convolution with padding and stride over odd spatial sizes (im2col walks
    [batch, out spatial, window, features] with partial work-groups)."""
    text = module("(%x: tensor<2x13x11x5xf32>, %w: tensor<3x3x5x6xf32>) -> tensor<2x7x6x6xf32>",
                  """
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<2x13x11x5xf32>, tensor<3x3x5x6xf32>) -> tensor<2x7x6x6xf32>
  return %0 : tensor<2x7x6x6xf32>""")
    x, w = rand((2, 13, 11, 5)), rand((3, 3, 5, 6))
    (out,) = run(text, x, w)
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ref = np.zeros((2, 7, 6, 6), np.float64)
    for i, j in itertools.product(range(7), range(6)):
        patch = xp[:, 2 * i:2 * i + 3, 2 * j:2 * j + 3, :]
        ref[:, i, j, :] = np.einsum("bhwc,hwco->bo", patch, w)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
