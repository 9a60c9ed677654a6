"""A product whose rhs is larger than ``WIDE_RHS_BYTES`` takes square tiles of
``WIDE_TILE`` result rows and columns (a strip of the rhs per work-group): the tile shapes,
the kernel's gemm on a 256 x 256 view, and numbers against numpy on poisoned buffers with
partial tiles and strips, batches, an epilogue on the tile, a transposed lhs and a
result written in a transposed layout."""

from __future__ import annotations

import numpy as np
import pytest

from frontend import parse
from frontend.lower import lower_function
from frontend.lower.families.dot.general import TILE_M, WIDE_TILE, tile_shape
from tests.lowering.conftest import module, rand, run


def test_tile_shape() -> None:
    assert tile_shape(1, (512, 512, 512), "f32", False) == (TILE_M, 512)     # 1 MB rhs
    assert tile_shape(1, (1024, 1024, 1024), "f32", False) == (WIDE_TILE, WIDE_TILE)
    assert tile_shape(1, (40, 1024, 1024), "f32", False) == (40, WIDE_TILE)
    assert tile_shape(1, (1024, 4096, 100), "f64", False) == (WIDE_TILE, 100)
    assert tile_shape(1, (512, 1024, 1024), "f16", False) == (TILE_M, 1024)  # 2 MB
    assert tile_shape(8, (128, 1024, 1024), "f32", True)[1] == 1024          # staged rhs


def _ty(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def _program(a: tuple[int, ...], b: tuple[int, ...], dims: str, out: tuple[int, ...],
             tail: str) -> str:
    body = (f"  %0 = stablehlo.dot_general %a, %b, {dims} : ({_ty(a)}, {_ty(b)}) -> "
            f"{_ty(out)}\n")
    if tail == "tanh":
        body += f"  %1 = stablehlo.tanh %0 : {_ty(out)}\n"
    elif tail == "heads":  # [B, M, N] -> [M, B, N]: the gemm writes that layout itself
        heads = (out[1], out[0], out[2])
        body += (f"  %1 = stablehlo.transpose %0, dims = [1, 0, 2] : ({_ty(out)}) -> "
                 f"{_ty(heads)}\n")
        out = heads
    elif tail == "double":
        body += f"  %1 = stablehlo.add %0, %0 : {_ty(out)}\n"
    result = "%1" if tail else "%0"
    return module(f"(%a: {_ty(a)}, %b: {_ty(b)}) -> {_ty(out)}",
                  f"{body}  return {result} : {_ty(out)}")


PLAIN = "contracting_dims = [1] x [0]"
CASES = {
    # name: (lhs, rhs, dims, result, tail, reference)
    "strips_and_partial_tiles_tanh": ((300, 600), (600, 1000), PLAIN, (300, 1000), "tanh",
                                      lambda x, y: np.tanh(x @ y)),
    "batched_double": ((2, 40, 520), (2, 520, 1100),
                       "batching_dims = [0] x [0], contracting_dims = [2] x [1]",
                       (2, 40, 1100), "double", lambda x, y: 2 * (x @ y)),
    "transposed_lhs": ((600, 270), (600, 1030), "contracting_dims = [0] x [0]", (270, 1030),
                       "", lambda x, y: x.T @ y),
    "heads_layout": ((2, 40, 520), (2, 520, 1100),
                     "batching_dims = [0] x [0], contracting_dims = [2] x [1]",
                     (2, 40, 1100), "heads", lambda x, y: (x @ y).transpose(1, 0, 2)),
}


@pytest.mark.parametrize("name", CASES)
def test_wide_tiles_against_numpy(name: str) -> None:
    a, b, dims, out, tail, ref = CASES[name]
    text = _program(a, b, dims, out, tail)
    x, y = rand(a), rand(b)
    want = ref(x.astype(np.float64), y.astype(np.float64))
    k = a[-1] if "[1]" in dims.split("contracting_dims")[1] else a[0]
    np.testing.assert_allclose(run(text, x, y)[0], want, rtol=1e-4, atol=2e-5 * k)


def test_the_gemm_computes_a_square_tile() -> None:
    """1024 x 1024 x 1024: 16 work-groups, each a 256 x 256 view of C."""
    text = _program((1024, 1024), (1024, 1024), PLAIN, (1024, 1024), "")
    kernels = lower_function(parse(text)).kernels
    gemms = [line for line in kernels.splitlines() if "gemm." in line]
    assert len(gemms) == 1
    assert gemms[0].split(", ")[-1].startswith(f"memref<f32x{WIDE_TILE}x{WIDE_TILE},")
