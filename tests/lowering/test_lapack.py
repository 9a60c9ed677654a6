"""jax's LAPACK custom calls (``lapack_?potrf_ffi``, ``lapack_?getrf_ffi``,
``lapack_?trsm_ffi``, ``lapack_?geqrf_ffi``, ``lapack_?orgqr_ffi``) against numpy (whose
``qr(mode="raw")`` is LAPACK's ``geqrf``) and an unblocked ``getf2`` in numpy: factors,
pivots, reflectors and status on random matrices (batched, wide, tall, complex),
matrices that are not positive definite or are singular, and malformed calls as compile
errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tensorlang.diagnostics import CompileError
from tests.lowering.conftest import RNG, module, run
from tests.lowering.test_linalg import _reference

_PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
_ELEM = {np.float32: "f32", np.float64: "f64", np.complex64: "complex<f32>",
         np.complex128: "complex<f64>"}
_TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}
_CHARS = {"L": 76, "U": 85, "N": 78, "T": 84, "C": 67, "R": 82}


def _t(shape: tuple[int, ...], elem: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{elem}>"


def _random(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    x = RNG.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _config(**chars: str) -> str:
    if not chars:
        return "mhlo.backend_config = {}"
    return "mhlo.backend_config = {" + ", ".join(
        f"{name} = {_CHARS[c]} : ui8" for name, c in chars.items()) + "}"


def _call(target: str, operands: list[tuple[str, tuple[int, ...], str]],
          results: list[tuple[tuple[int, ...], str]], config: str) -> str:
    """A module calling ``target`` as jax prints it (column-major layouts)."""
    params = ", ".join(f"%{name}: {_t(shape, e)}" for name, shape, e in operands)
    result_types = [_t(shape, e) for shape, e in results]
    layouts = ", ".join("dense<[0, 1]> : tensor<2xindex>" for _ in operands)
    sig = f"({', '.join(_t(s, e) for _, s, e in operands)}) -> ({', '.join(result_types)})"
    names = ", ".join(f"%{name}" for name, _, _ in operands)
    outs = ", ".join(f"%0#{i}" for i in range(len(results))) if len(results) > 1 else "%0"
    count = f":{len(results)}" if len(results) > 1 else ""
    return module(f"({params}) -> ({', '.join(result_types)})", f"""
  %0{count} = stablehlo.custom_call @{target}({names}) {{backend_config = "", {config}, \
mhlo.frontend_attributes = {{num_batch_dims = "0"}}, operand_layouts = [{layouts}]}} : {sig}
  return {outs} : {', '.join(result_types)}""")


# -- potrf --------------------------------------------------------------------------------


def _potrf(a: np.ndarray, uplo: str) -> tuple[np.ndarray, np.ndarray]:
    dtype = a.dtype.type
    shape, batch = a.shape, a.shape[:-2]
    text = _call(f"lapack_{_PREFIX[dtype]}potrf_ffi", [("a", shape, _ELEM[dtype])],
                 [(shape, _ELEM[dtype]), (batch, "i32")], _config(uplo=uplo))
    factor, info = run(text, a)
    return factor, info


def _hermitian_pd(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    x = _random(shape, dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype,uplo", list(itertools.product(_PREFIX, "LU")))
def test_potrf_factors_and_keeps_the_other_triangle(dtype: type, uplo: str) -> None:
    a = _hermitian_pd((3, 5, 5), dtype)
    factor, info = _potrf(a, uplo)
    want = np.linalg.cholesky(a.astype(np.complex128))
    if uplo == "U":
        want = np.conj(np.swapaxes(want, -1, -2))
    mask = np.tril(np.ones((5, 5), bool)) if uplo == "L" else np.triu(np.ones((5, 5), bool))
    tol = _TOL[dtype]
    np.testing.assert_allclose(factor[..., mask], want[..., mask], rtol=tol, atol=tol)
    np.testing.assert_array_equal(factor[..., ~mask], a[..., ~mask])  # LAPACK's untouched
    np.testing.assert_array_equal(info, np.zeros(3, np.int32))


def test_potrf_info_is_the_order_of_the_first_minor_not_positive_definite() -> None:
    a = _hermitian_pd((4, 6, 6), np.float64)
    for b, order in ((1, 3), (2, 1), (3, 6)):  # matrix 0 stays positive definite
        a[b, order - 1, order - 1] = -50.0
    a[2, 4, 4] = np.nan  # after its first failure: not reported
    _, info = _potrf(a, "L")
    np.testing.assert_array_equal(info, [0, 3, 1, 6])
    nan = a.copy()
    nan[0, 2, 2] = np.nan
    np.testing.assert_array_equal(_potrf(nan[:1], "U")[1], [3])


# -- getrf --------------------------------------------------------------------------------


def _getf2(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """LAPACK's unblocked LU with partial pivoting of one matrix, in numpy."""
    a = a.copy()
    m, n = a.shape
    ipiv, info = np.zeros(min(m, n), np.int32), 0
    for j in range(min(m, n)):
        mags = np.abs(a[j:, j].real) + np.abs(a[j:, j].imag)
        p = j + int(np.argmax(mags))
        ipiv[j] = p + 1
        a[[j, p]] = a[[p, j]]
        if mags.max() != 0:
            a[j + 1:, j] /= a[j, j]
        elif info == 0:
            info = j + 1
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, ipiv, info


def _getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dtype = a.dtype.type
    shape, batch = a.shape, a.shape[:-2]
    steps = min(shape[-2:])
    text = _call(f"lapack_{_PREFIX[dtype]}getrf_ffi", [("a", shape, _ELEM[dtype])],
                 [(shape, _ELEM[dtype]), ((*batch, steps), "i32"), (batch, "i32")],
                 _config())
    return run(text, a)


def _permuted(a: np.ndarray, ipiv: np.ndarray) -> np.ndarray:
    """``a``'s rows interchanged as ``ipiv`` says, in order."""
    a = a.copy()
    for j, p in enumerate(ipiv - 1):
        a[[j, p]] = a[[p, j]]
    return a


@pytest.mark.parametrize("dtype,shape", [
    (np.float64, (2, 6, 6)), (np.float32, (5, 8)), (np.float64, (8, 5)),
    (np.complex128, (3, 4, 4)), (np.complex64, (2, 3, 5))])
def test_getrf_matches_getf2_and_reconstructs(dtype: type, shape: tuple[int, ...]) -> None:
    a = _random(shape, dtype)
    lu, ipiv, info = _getrf(a)
    m, n = shape[-2:]
    steps, tol = min(m, n), _TOL[dtype]
    for b in np.ndindex(*shape[:-2]):
        want_lu, want_ipiv, want_info = _getf2(a[b].astype(np.complex128))
        np.testing.assert_array_equal(ipiv[b], want_ipiv)
        assert info[b] == want_info == 0
        np.testing.assert_allclose(lu[b], want_lu, rtol=tol, atol=tol)
        lower = np.tril(lu[b], -1)[:, :steps] + np.eye(m, steps)
        upper = np.triu(lu[b])[:steps]
        # partial pivoting's bound: |l| <= cabs1(a) / |pivot| <= cabs1(pivot) / |pivot|
        bound = np.sqrt(2) if np.iscomplexobj(a) else 1.0
        assert np.all(np.abs(lower) <= bound + tol)
        np.testing.assert_allclose(lower @ upper, _permuted(a[b], ipiv[b]), rtol=tol,
                                   atol=10 * tol)


def test_getrf_info_names_the_first_zero_pivot() -> None:
    a = _random((3, 5, 5), np.float64)
    a[1, :, 2] = 0.0  # a zero column: its pivot is zero, and nothing is divided by it
    a[2, :, 0] = 0.0
    a[2, :, 3] = 0.0
    lu, ipiv, info = _getrf(a)
    np.testing.assert_array_equal(info, [0, 3, 1])
    for b in range(3):
        want_lu, want_ipiv, _ = _getf2(a[b])
        np.testing.assert_array_equal(ipiv[b], want_ipiv)
        np.testing.assert_allclose(lu[b], want_lu, rtol=1e-10, atol=1e-10)
    assert np.all(np.isfinite(lu))


# -- trsm ---------------------------------------------------------------------------------


@pytest.mark.parametrize("side,uplo,trans,diag",
                         list(itertools.product("LR", "LU", "NTC", "UN")))
def test_trsm_variants(side: str, uplo: str, trans: str, diag: str) -> None:
    dtype = np.complex128 if trans == "C" else np.float64
    m, n = 5, 3
    order = m if side == "L" else n
    a = _random((2, order, order), dtype) + 4 * np.eye(order)
    b = _random((2, m, n), dtype)
    e = _ELEM[dtype]
    text = _call(f"lapack_{_PREFIX[dtype]}trsm_ffi",
                 [("a", a.shape, e), ("b", b.shape, e)], [(b.shape, e)],
                 _config(side=side, uplo=uplo, trans_x=trans, diag=diag))
    got = run(text, a, b)[0]
    want = _reference(a, b, side == "L", uplo == "L", diag == "U",
                      {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[trans])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


# -- geqrf, orgqr ---------------------------------------------------------------------------


def _geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dtype = a.dtype.type
    shape, batch = a.shape, a.shape[:-2]
    text = _call(f"lapack_{_PREFIX[dtype]}geqrf_ffi", [("a", shape, _ELEM[dtype])],
                 [(shape, _ELEM[dtype]), ((*batch, min(shape[-2:])), _ELEM[dtype])],
                 _config())
    return run(text, a)


@pytest.mark.parametrize("dtype,shape", [(np.float64, (6, 4)), (np.float64, (3, 5)),
                                         (np.float32, (2, 5, 5))])
def test_geqrf_matches_lapack_through_numpy(dtype: type, shape: tuple[int, ...]) -> None:
    a = _random(shape, dtype)
    qr, tau = _geqrf(a)
    tol = _TOL[dtype]
    for b in np.ndindex(*shape[:-2]):
        h, want_tau = np.linalg.qr(a[b].astype(np.float64), mode="raw")  # LAPACK's geqrf
        np.testing.assert_allclose(qr[b], h.T, rtol=tol, atol=tol)
        np.testing.assert_allclose(tau[b], want_tau, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,shape", [(np.float64, (6, 4)), (np.float32, (3, 4, 4))])
def test_orgqr_forms_q(dtype: type, shape: tuple[int, ...]) -> None:
    a = _random(shape, dtype)
    qr, tau = _geqrf(a)
    e = _ELEM[dtype]
    text = _call(f"lapack_{_PREFIX[dtype]}orgqr_ffi", [("a", shape, e), ("tau", tau.shape, e)],
                 [(shape, e)], _config())
    q = run(text, qr, tau)[0]
    tol = _TOL[dtype]
    for b in np.ndindex(*shape[:-2]):
        want_q, want_r = np.linalg.qr(a[b].astype(np.float64))
        np.testing.assert_allclose(q[b], want_q, rtol=tol, atol=tol)
        np.testing.assert_allclose(q[b] @ np.triu(qr[b])[:shape[-1]], a[b], rtol=tol,
                                   atol=10 * tol)


def test_geqrf_of_large_values_does_not_overflow() -> None:
    """The column norms of f32 values near 1e25 (squares past f32's range) stay finite,
    as LAPACK's ``snrm2`` keeps them."""
    a = _random((5, 3), np.float32) * np.float32(1e25)
    qr, tau = _geqrf(a)
    h, want_tau = np.linalg.qr(a.astype(np.float64), mode="raw")
    np.testing.assert_allclose(qr, h.T, rtol=2e-4, atol=2e-4 * np.abs(h).max())
    np.testing.assert_allclose(tau, want_tau, rtol=2e-4, atol=2e-4)


def test_a_zero_column_is_left_as_it_is() -> None:
    a = _random((5, 3), np.float64)
    a[1:, 0] = 0.0  # nothing to zero below R[0][0]: H(0) = I
    qr, tau = _geqrf(a)
    assert tau[0] == 0.0 and qr[0, 0] == a[0, 0]
    h, want_tau = np.linalg.qr(a, mode="raw")
    np.testing.assert_allclose(qr, h.T, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tau, want_tau, rtol=1e-10, atol=1e-10)


# -- malformed calls ------------------------------------------------------------------------


@pytest.mark.parametrize("text,message", [
    (_call("lapack_spotrf_ffi", [("a", (4, 4), "f32")], [((4, 4), "f32")],
           _config(uplo="L")), "takes 1 operand.* and gives 2 result"),
    (_call("lapack_dpotrf_ffi", [("a", (4, 4), "f32")], [((4, 4), "f32"), ((), "i32")],
           _config(uplo="L")), r"takes a matrix of f64 \(rank 2 or more\) first"),
    (_call("lapack_spotrf_ffi", [("a", (4, 4), "f32")], [((4, 4), "f32"), ((), "i32")],
           _config()), "needs uplo as one of L, U"),
    (_call("lapack_spotrf_ffi", [("a", (3, 4), "f32")], [((3, 4), "f32"), ((), "i32")],
           _config(uplo="L")), "takes square matrices, not 3x4"),
    (_call("lapack_sgetrf_ffi", [("a", (3, 4), "f32")],
           [((3, 4), "f32"), ((4,), "i32"), ((), "i32")], _config()),
     r"its results here must be \[3, 4\] f32, \[3\] i32, \[\] i32"),
    (_call("lapack_strsm_ffi", [("a", (3, 3), "f32"), ("b", (4, 2), "f32")],
           [((4, 2), "f32")], _config(side="L", uplo="L", trans_x="N", diag="N")),
     "right-hand sides of its order"),
])
def test_malformed_calls_are_compile_errors(text: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        run(text, np.ones((4, 4), np.float32))
