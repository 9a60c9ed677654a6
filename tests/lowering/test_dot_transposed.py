"""dot_general operands already laid out transposed (attention's keys, x^T @ w) are read
by the gemm's transposed variants, without a layout copy: kernel counts and numbers
against numpy on poisoned buffers, including partial row tiles."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import module, rand, run
from tests.lowering.test_fusion import kernels


def _ty(shape: tuple[int, ...], t: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{t}>"


def _dot(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...], dims: str,
         epilogue: bool = False) -> str:
    body = (f"  %0 = stablehlo.dot_general %a, %b, {dims} : ({_ty(a)}, {_ty(b)}) -> "
            f"{_ty(out)}\n")
    res = "%0"
    if epilogue:
        body += f"  %1 = stablehlo.tanh %0 : {_ty(out)}\n"
        res = "%1"
    return module(f"(%a: {_ty(a)}, %b: {_ty(b)}) -> {_ty(out)}",
                  body + f"  return {res} : {_ty(out)}")


CASES = [
    # q k^T: rhs [B, N, K]
    ((3, 45, 16), (3, 37, 16), (3, 45, 37),
     "batching_dims = [0] x [0], contracting_dims = [2] x [2]",
     lambda a, b: a @ b.transpose(0, 2, 1)),
    # x^T w: lhs [B, K, M] (45 rows: a partial row tile)
    ((2, 16, 45), (2, 16, 7), (2, 45, 7),
     "batching_dims = [0] x [0], contracting_dims = [1] x [1]",
     lambda a, b: a.transpose(0, 2, 1) @ b),
    # both transposed, no batch
    ((24, 70), (9, 24), (70, 9), "contracting_dims = [0] x [1]",
     lambda a, b: a.T @ b.T),
    # free dims of several modes on the transposed side
    ((5, 8), (3, 4, 8), (5, 3, 4), "contracting_dims = [1] x [2]",
     lambda a, b: np.einsum("mk,xyk->mxy", a, b)),
]


@pytest.mark.parametrize("epilogue", [False, True])
@pytest.mark.parametrize(("a", "b", "out", "dims", "ref"), CASES)
def test_transposed_operands_need_no_copy(a: tuple[int, ...], b: tuple[int, ...],
                                          out: tuple[int, ...], dims: str, ref: object,
                                          epilogue: bool) -> None:
    text = _dot(a, b, out, dims, epilogue)
    assert len(kernels(text)) == 1
    x, y = rand(a), rand(b)
    want = ref(x.astype(np.float64), y.astype(np.float64))  # type: ignore[operator]
    if epilogue:
        want = np.tanh(want)
    np.testing.assert_allclose(run(text, x, y)[0], want, rtol=1e-5, atol=1e-5)


def test_half_precision_transposed_operand_still_converts() -> None:
    a, b = (4, 8), (6, 8)
    text = module(f"(%a: {_ty(a, 'f16')}, %b: {_ty(b, 'f16')}) -> {_ty((4, 6), 'f16')}",
                  f"  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [1] : "
                  f"({_ty(a, 'f16')}, {_ty(b, 'f16')}) -> {_ty((4, 6), 'f16')}\n"
                  f"  return %0 : {_ty((4, 6), 'f16')}")
    x, y = rand(a, np.float16), rand(b, np.float16)
    want = x.astype(np.float32) @ y.astype(np.float32).T
    np.testing.assert_allclose(run(text, x, y)[0].astype(np.float32), want, rtol=2e-3,
                               atol=2e-3)
