"""triangular_solve and cholesky against numpy, and the interpret suite's file."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.lowering.conftest import RNG, module, run
from tests.lowering.interpret_files import interpret_failures

_TYPES = {np.float32: "f32", np.float64: "f64", np.complex128: "complex<f64>"}


def _tensor(shape: tuple[int, ...], dtype: type) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{_TYPES[dtype]}>"


def _random(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    x = RNG.standard_normal(shape)
    if dtype is np.complex128:
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _solve_program(a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: type,
                   left: bool, lower: bool, unit: bool, trans: str) -> str:
    ta, tb = _tensor(a_shape, dtype), _tensor(b_shape, dtype)
    flags = (f"left_side = {str(left).lower()}, lower = {str(lower).lower()}, "
             f"unit_diagonal = {str(unit).lower()}, "
             f"transpose_a = #stablehlo<transpose {trans}>")
    return module(f"(%a: {ta}, %b: {tb}) -> {tb}", f"""
  %0 = "stablehlo.triangular_solve"(%a, %b) {{{flags}}} : ({ta}, {tb}) -> {tb}
  return %0 : {tb}""")


def _reference(a: np.ndarray, b: np.ndarray, left: bool, lower: bool, unit: bool,
               trans: str) -> np.ndarray:
    tri = np.tril(a) if lower else np.triu(a)
    if unit:
        n = a.shape[-1]
        tri = tri - tri * np.eye(n) + np.eye(n)
    op = {"NO_TRANSPOSE": tri, "TRANSPOSE": np.swapaxes(tri, -1, -2),
          "ADJOINT": np.conj(np.swapaxes(tri, -1, -2))}[trans]
    if left:
        return np.linalg.solve(op, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)),
                       -1, -2)


@pytest.mark.parametrize("left,lower,unit,trans", [
    (left, lower, unit, trans) for left, lower, unit in itertools.product((True, False),
                                                                           repeat=3)
    for trans in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")])
def test_triangular_solve_variants(left: bool, lower: bool, unit: bool, trans: str) -> None:
    dtype = np.complex128 if trans == "ADJOINT" else np.float64
    m, n = 5, 3
    a_shape = (2, m, m) if left else (2, n, n)
    a = _random(a_shape, dtype) + 4 * np.eye(a_shape[-1])  # well conditioned
    b = _random((2, m, n), dtype)
    got = run(_solve_program(a.shape, b.shape, dtype, left, lower, unit, trans), a, b)[0]
    want = _reference(a, b, left, lower, unit, trans)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_triangular_solve_f32_ignores_other_triangle() -> None:
    a = _random((4, 4), np.float32) + 3 * np.eye(4, dtype=np.float32)
    a[np.triu_indices(4, 1)] = np.nan
    b = _random((4, 6), np.float32)
    got = run(_solve_program(a.shape, b.shape, np.float32, True, True, False,
                             "NO_TRANSPOSE"), a, b)[0]
    want = np.linalg.solve(np.tril(np.nan_to_num(a)).astype(np.float64), b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _cholesky_program(shape: tuple[int, ...], dtype: type, lower: bool) -> str:
    t = _tensor(shape, dtype)
    return module(f"(%a: {t}) -> {t}", f"""
  %0 = "stablehlo.cholesky"(%a) {{lower = {str(lower).lower()}}} : ({t}) -> {t}
  return %0 : {t}""")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky(dtype: type, lower: bool) -> None:
    x = _random((3, 5, 5), dtype)
    a = (x @ np.conj(np.swapaxes(x, -1, -2)) + 5 * np.eye(5)).astype(dtype)
    got = run(_cholesky_program(a.shape, dtype, lower), a)[0]
    want = np.linalg.cholesky(a.astype(np.complex128 if dtype is np.complex128 else
                                       np.float64))
    if not lower:
        want = np.conj(np.swapaxes(want, -1, -2))
    mask = np.tril(np.ones((5, 5), bool)) if lower else np.triu(np.ones((5, 5), bool))
    tol = 1e-4 if dtype is np.float32 else 1e-10
    np.testing.assert_allclose(got[..., mask], want[..., mask], rtol=tol, atol=tol)


def test_interpret_triangular_solve() -> None:
    assert interpret_failures("triangular_solve") == {}
