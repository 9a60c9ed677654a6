"""A gemm reading its rhs transposed (q k^T, x w^T: staged through local memory on CPUs)
takes tiles of up to 128 result rows while at least two work-groups remain: the tile
sizes, and numbers against numpy on poisoned buffers with partial tiles and an epilogue."""

from __future__ import annotations

import numpy as np
import pytest

from frontend.lower.families.dot.general import TILE_M, tile_rows
from tests.lowering.conftest import module, rand, run


def test_tile_rows() -> None:
    assert tile_rows(8, 128, True) == 128
    assert tile_rows(1, 128, True) == 64      # 128 would leave one work-group
    assert tile_rows(1, 64, True) == TILE_M   # so would 64
    assert tile_rows(3, 20, True) == TILE_M   # one tile covers it
    assert tile_rows(8, 512, False) == TILE_M


def _ty(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


@pytest.mark.parametrize(("a", "b"), [
    ((2, 150, 16), (2, 70, 16)),   # tiles of 128: 150 = 128 + 22
    ((1, 100, 24), (1, 9, 24)),    # tiles of 64: 100 = 64 + 36
])
def test_transposed_rhs_with_large_tiles(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    out = (a[0], a[1], b[1])
    text = module(f"(%a: {_ty(a)}, %b: {_ty(b)}) -> {_ty(out)}",
                  f"  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], "
                  f"contracting_dims = [2] x [2] : ({_ty(a)}, {_ty(b)}) -> {_ty(out)}\n"
                  f"  %1 = stablehlo.tanh %0 : {_ty(out)}\n"
                  f"  return %1 : {_ty(out)}")
    x, y = rand(a), rand(b)
    want = np.tanh(x.astype(np.float64) @ y.astype(np.float64).transpose(0, 2, 1))
    np.testing.assert_allclose(run(text, x, y)[0], want, rtol=1e-5, atol=1e-5)
