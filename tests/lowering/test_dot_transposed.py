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


LOOKED_THROUGH = [
    # x @ w.T as JAX prints it: a transpose feeding the dot
    ((8, 16), (4, 16), "%t = stablehlo.transpose %b, dims = [1, 0] : (T_B) -> T_BT",
     (16, 4), (8, 4), "%a, %t, contracting_dims = [1] x [0]", lambda a, b: a @ b.T),
    # a.T @ w
    ((16, 40), (16, 5), "%t = stablehlo.transpose %a, dims = [1, 0] : (T_A) -> T_AT",
     (40, 16), (40, 5), "%t, %b, contracting_dims = [1] x [0]", lambda a, b: a.T @ b),
    # q @ k^T with batch: transpose of the keys' last two dims
    ((2, 33, 8), (2, 33, 8), "%t = stablehlo.transpose %b, dims = [0, 2, 1] : (T_B) -> T_BT",
     (2, 8, 33), (2, 33, 33),
     "%a, %t, batching_dims = [0] x [0], contracting_dims = [2] x [1]",
     lambda a, b: a @ b.transpose(0, 2, 1)),
]


@pytest.mark.parametrize(("a", "b", "tr", "tshape", "out", "dims", "ref"), LOOKED_THROUGH)
def test_transpose_feeding_a_dot_is_looked_through(a: tuple[int, ...], b: tuple[int, ...],
                                                   tr: str, tshape: tuple[int, ...],
                                                   out: tuple[int, ...], dims: str,
                                                   ref: object) -> None:
    lhs_t, rhs_t = (_ty(tshape), _ty(b)) if "transpose %a" in tr else (_ty(a), _ty(tshape))
    tr = tr.replace("T_AT", _ty(tshape)).replace("T_BT", _ty(tshape))
    tr = tr.replace("T_A", _ty(a)).replace("T_B", _ty(b))
    text = module(f"(%a: {_ty(a)}, %b: {_ty(b)}) -> {_ty(out)}",
                  f"  {tr}\n  %0 = stablehlo.dot_general {dims} : ({lhs_t}, {rhs_t}) -> "
                  f"{_ty(out)}\n  return %0 : {_ty(out)}")
    assert len(kernels(text)) == 1
    x, y = rand(a), rand(b)
    want = ref(x.astype(np.float64), y.astype(np.float64))  # type: ignore[operator]
    np.testing.assert_allclose(run(text, x, y)[0], want, rtol=1e-5, atol=1e-5)


def test_transpose_also_returned_is_stored_once() -> None:
    text = module("(%a: tensor<6x9xf32>, %b: tensor<5x9xf32>) -> "
                  "(tensor<6x5xf32>, tensor<9x5xf32>)", """
  %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<5x9xf32>) -> tensor<9x5xf32>
  %0 = stablehlo.dot_general %a, %t, contracting_dims = [1] x [0]
      : (tensor<6x9xf32>, tensor<9x5xf32>) -> tensor<6x5xf32>
  return %0, %t : tensor<6x5xf32>, tensor<9x5xf32>""")
    x, y = rand((6, 9)), rand((5, 9))
    got, t = run(text, x, y)
    np.testing.assert_allclose(got, x @ y.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(t, y.T)


def test_flattened_operand_is_read_in_place() -> None:
    text = module("(%a: tensor<2x3x4x5xf32>, %w: tensor<60x7xf32>) -> tensor<2x7xf32>", """
  %f = stablehlo.reshape %a : (tensor<2x3x4x5xf32>) -> tensor<2x60xf32>
  %0 = stablehlo.dot_general %f, %w, contracting_dims = [1] x [0]
      : (tensor<2x60xf32>, tensor<60x7xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>""")
    assert len(kernels(text)) == 1
    x, w = rand((2, 3, 4, 5)), rand((60, 7))
    np.testing.assert_allclose(run(text, x, w)[0], x.reshape(2, 60) @ w, rtol=1e-5,
                               atol=1e-5)
