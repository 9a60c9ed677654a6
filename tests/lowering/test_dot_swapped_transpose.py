"""A dot_general whose only use is a transpose swapping its lhs and rhs dimensions (the
weight gradient ``(x^T @ dy)^T`` of a dense layer) is computed as the transposed product
with swapped operands: the gemm writes the transpose's layout and the consumers read it
in order.  Numbers against numpy on poisoned buffers, with batches, partial row tiles,
an elementwise consumer and a bf16 result (converted after the gemm)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from frontend import parse
from frontend.lower import lower_function
from tests.lowering.conftest import module, rand, run


def _ty(shape: tuple[int, ...], t: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{t}>"


def _program(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...], dims: str,
             perm: list[int], t: str = "f32") -> str:
    tout = tuple(out[p] for p in perm)
    body = (f"  %0 = stablehlo.dot_general %a, %b, {dims} : ({_ty(a, t)}, {_ty(b, t)}) -> "
            f"{_ty(out, t)}\n"
            f"  %1 = stablehlo.transpose %0, dims = {perm} : ({_ty(out, t)}) -> {_ty(tout, t)}\n"
            f"  %2 = stablehlo.tanh %1 : {_ty(tout, t)}\n")
    return module(f"(%a: {_ty(a, t)}, %b: {_ty(b, t)}) -> {_ty(tout, t)}",
                  body + f"  return %2 : {_ty(tout, t)}")


CASES = [
    # dW = (x^T dy)^T: x [128, 40], dy [128, 24] -> [40, 24] -> [24, 40]
    ((128, 40), (128, 24), (40, 24), "contracting_dims = [0] x [0]", [1, 0],
     lambda a, b: (a.T @ b).T),
    # batched, 45 rows of the transposed result: a partial row tile
    ((2, 16, 40), (2, 16, 45), (2, 40, 45),
     "batching_dims = [0] x [0], contracting_dims = [1] x [1]", [0, 2, 1],
     lambda a, b: (a.transpose(0, 2, 1) @ b).transpose(0, 2, 1)),
    # plain a @ b then transposed
    ((33, 20), (20, 50), (33, 50), "contracting_dims = [1] x [0]", [1, 0],
     lambda a, b: (a @ b).T),
    # 10 rows (a 10-class layer's gradient): not swapped, the gemm keeps its 64 rows
    ((128, 10), (128, 64), (10, 64), "contracting_dims = [0] x [0]", [1, 0],
     lambda a, b: (a.T @ b).T),
]


@pytest.mark.parametrize(("a", "b", "out", "dims", "perm", "ref"), CASES)
def test_transposed_product_with_swapped_operands(a: tuple[int, ...], b: tuple[int, ...],
                                                  out: tuple[int, ...], dims: str,
                                                  perm: list[int], ref: object) -> None:
    text = _program(a, b, out, dims, perm)
    x, y = rand(a), rand(b)
    want = np.tanh(ref(x.astype(np.float64), y.astype(np.float64)))  # type: ignore[operator]
    np.testing.assert_allclose(run(text, x, y)[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("case", "rows"), [(0, 40), (3, 64)])
def test_the_gemm_writes_the_transposed_layout_unless_it_has_few_rows(case: int,
                                                                      rows: int) -> None:
    """[40, 24]^T is [24, 40] row-major: the gemm's C is a 40-row memref view (unswapped
    it would have 24 rows); [10, 64] is not swapped: C keeps its 64 rows."""
    a, b, out, dims, perm, _ = CASES[case]
    kernels = lower_function(parse(_program(a, b, out, dims, perm))).kernels
    gemms = [line for line in kernels.splitlines() if "gemm." in line]
    assert len(gemms) == 1
    assert gemms[0].split(", ")[-1].startswith(f"memref<f32x{rows}x")


def test_bf16_result_is_converted_after_the_swapped_gemm() -> None:
    a, b, out, dims, perm, ref = CASES[0]
    text = _program(a, b, out, dims, perm, "bf16")
    x, y = (rand(s).astype(ml_dtypes.bfloat16) for s in (a, b))
    got = run(text, x, y)[0]
    want = np.tanh(ref(x.astype(np.float64), y.astype(np.float64)))  # type: ignore[operator]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-2, atol=2e-2)
