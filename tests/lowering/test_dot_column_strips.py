"""A large product whose row tiles are fewer than ``MIN_GROUPS`` work-groups (a dense layer
at a small batch) is split into strips of result columns, one work-group each: the tile
shapes, the launch's work-groups, and numbers against numpy on poisoned buffers with a
partial last strip, an epilogue on each strip, a weight read transposed (``x @ w.T``,
as equinox and PyTorch lay weights out) and a batch."""

from __future__ import annotations

import numpy as np
import pytest

from backend_opencl.api.compiler import _kernels_program, lower
from backend_opencl.emit import Target
from frontend import parse
from frontend.lower import lower_function
from frontend.lower.families.dot.general import MIN_GROUPS, STRIP_MULTIPLE, TILE_M, tile_shape
from tensorlang.plan import launches
from tests.lowering.conftest import module, rand, run


def test_tile_shape() -> None:
    assert TILE_M == 64 and MIN_GROUPS == 8
    assert tile_shape(1, (32, 784, 256), "f32", False) == (TILE_M, 32)  # 8 strips
    assert tile_shape(1, (32, 784, 256), "f32", True) == (TILE_M, 32)   # read transposed
    assert tile_shape(1, (32, 784, 100), "f32", False) == (TILE_M, 32)  # 32, 32, 32, 4
    assert tile_shape(1, (64, 784, 512), "f32", False) == (TILE_M, 64)  # 1 tile x 8
    assert tile_shape(2, (32, 784, 256), "f32", False) == (TILE_M, 64)  # 2 batches x 4
    assert tile_shape(1, (32, 256, 10), "f32", False) == (TILE_M, 10)   # small: one group
    assert tile_shape(1, (16, 32, 32), "f32", False) == (TILE_M, 32)
    assert tile_shape(1, (128, 784, 256), "f32", False) == (TILE_M, 64)  # 2 tiles x 4
    assert tile_shape(1, (512, 784, 256), "f32", False) == (TILE_M, 256)  # 8 row tiles
    assert tile_shape(1, (32, 4096, 40), "f32", False) == (TILE_M, STRIP_MULTIPLE)


def _ty(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def _program(a: tuple[int, ...], b: tuple[int, ...], dims: str, out: tuple[int, ...]) -> str:
    body = (f"  %0 = stablehlo.dot_general %a, %b, {dims} : ({_ty(a)}, {_ty(b)}) -> "
            f"{_ty(out)}\n  %1 = stablehlo.tanh %0 : {_ty(out)}\n")
    return module(f"(%a: {_ty(a)}, %b: {_ty(b)}) -> {_ty(out)}",
                  f"{body}  return %1 : {_ty(out)}")


CASES = {
    # name: (lhs, rhs, dims, result, reference)
    "dense": ((32, 784), (784, 256), "contracting_dims = [1] x [0]", (32, 256),
              lambda x, y: x @ y),
    "partial_strip": ((32, 784), (784, 100), "contracting_dims = [1] x [0]", (32, 100),
                      lambda x, y: x @ y),
    "weight_transposed": ((32, 784), (100, 784), "contracting_dims = [1] x [1]", (32, 100),
                          lambda x, y: x @ y.T),
    # a tile of 64 batch rows stages each of its 8 strips of the weight
    # (emit/costmodel.py), in K chunks with a partial last one (784 = 6 x 128 + 16)
    "staged_weight": ((64, 784), (784, 512), "contracting_dims = [1] x [0]", (64, 512),
                      lambda x, y: x @ y),
    "batched": ((2, 24, 600), (2, 600, 200),
                "batching_dims = [0] x [0], contracting_dims = [2] x [1]", (2, 24, 200),
                lambda x, y: x @ y),
}


@pytest.mark.parametrize("name", CASES)
def test_strips_against_numpy(name: str) -> None:
    a, b, dims, out, ref = CASES[name]
    text = _program(a, b, dims, out)
    groups = [s.num_groups for s in launches(lower_function(parse(text)).plan.steps)]
    strips = -(-out[-1] // STRIP_MULTIPLE)  # as many as whole register blocks allow
    assert max(groups) >= min(MIN_GROUPS, strips), groups  # not one per batch element
    x, y = rand(a), rand(b)
    want = np.tanh(ref(x.astype(np.float64), y.astype(np.float64)))
    np.testing.assert_allclose(run(text, x, y)[0], want, rtol=1e-4, atol=1e-4)


def test_a_wide_tile_stages_its_weight_strip() -> None:
    """The ``staged_weight`` case's gemm copies its strip of the weight into local memory
    (the numbers are checked above)."""
    a, b, dims, out, _ = CASES["staged_weight"]
    kernels = _kernels_program(lower_function(parse(_program(a, b, dims, out))))
    assert "local float* L)" in lower(kernels, Target(kind="cpu")).source
