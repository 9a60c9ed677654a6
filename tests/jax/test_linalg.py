"""``jnp.linalg`` and ``jax.scipy.linalg`` through ``tlc.jax.jit``, whose StableHLO holds
jax's LAPACK custom calls on CPU (Cholesky, LU, triangular solves, QR), against the same
functions under ``jax.jit``: single and batched, f32, f64 and complex, gradients through
a solve, a matrix that is not positive definite (NaNs where jax gives them) and a
singular one (a zero determinant).

Skipped when jax is not installed (``pip install 'tlc[jax]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jsl = pytest.importorskip("jax.scipy.linalg")
tlc_jax = pytest.importorskip("tlc.jax")

from tests.jax.test_transforms import _close  # noqa: E402 -- after the skips

RNG = np.random.default_rng(29)


def _random(*shape: int, dtype: type = np.float32) -> np.ndarray:
    x = RNG.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _pd(*shape: int, dtype: type = np.float32) -> np.ndarray:
    x = _random(*shape, dtype=dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _same(f: Callable[..., Any], *args: Any, rtol: float = 1e-4) -> None:
    """``tlc.jax.jit(f)`` gives ``jax.jit(f)``'s leaves: structure, shapes, dtypes, NaNs
    and values, to ``rtol`` of the largest finite magnitude."""
    got, want = tlc_jax.jit(f)(*args), jax.jit(f)(*args)
    leaves = [np.asarray(w) for w in jax.tree_util.tree_leaves(want)]
    scale = max((float(np.nanmax(np.abs(w[np.isfinite(w)]))) for w in leaves
                 if np.any(np.isfinite(w))), default=1.0)
    _close(got, want, rtol=rtol, atol=rtol * scale)


A, B = _random(6, 6), _random(6, 3)


@pytest.mark.parametrize("name,f,args", [
    ("cholesky", jnp.linalg.cholesky, (_pd(6, 6),)),
    ("solve", jnp.linalg.solve, (A, B)),
    ("inv", jnp.linalg.inv, (A,)),
    ("det", jnp.linalg.det, (A,)),
    ("slogdet", jnp.linalg.slogdet, (A,)),
    ("lu", jsl.lu, (_random(5, 7),)),
    ("lu_factor", jsl.lu_factor, (_random(7, 7),)),
    ("solve_triangular", lambda a, b: jsl.solve_triangular(a, b, lower=True, trans=1),
     (A + 6 * np.eye(6, dtype=np.float32), B)),
    ("cho_solve", lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b), (_pd(6, 6), B)),
    ("batched_solve", jnp.linalg.solve, (_random(3, 4, 4), _random(3, 4, 2))),
    ("vmapped_cholesky", jax.vmap(jnp.linalg.cholesky), (_pd(3, 5, 5),)),
    ("complex_solve", jnp.linalg.solve,
     (_random(4, 4, dtype=np.complex64), _random(4, 2, dtype=np.complex64))),
    ("complex_cholesky", jnp.linalg.cholesky, (_pd(4, 4, dtype=np.complex64),)),
    ("expm", jsl.expm, (0.3 * A,)),
    ("qr", jnp.linalg.qr, (_random(5, 3),)),
    ("qr_complete", lambda a: jnp.linalg.qr(a, mode="complete"), (_random(5, 3),)),
    ("qr_wide_batched", jnp.linalg.qr, (_random(2, 3, 6),)),
])
def test_linalg_matches_jax(name: str, f: Callable[..., Any], args: tuple[Any, ...]) -> None:
    _same(f, *args)


def test_f64_solve_and_det() -> None:
    with jax.enable_x64(True):
        a, b = _random(5, 5, dtype=np.float64), _random(5, 2, dtype=np.float64)
        _same(jnp.linalg.solve, a, b, rtol=1e-10)
        _same(jnp.linalg.det, a, rtol=1e-10)


def test_gradient_through_a_solve() -> None:
    def loss(a: Any, b: Any) -> Any:
        return jnp.sum(jnp.linalg.solve(a, b) ** 2)

    _same(jax.grad(loss, argnums=(0, 1)), A + 3 * np.eye(6, dtype=np.float32), B,
          rtol=2e-4)


def test_not_positive_definite_and_singular() -> None:
    not_pd = _pd(5, 5)
    not_pd[2, 2] = -1.0
    got = np.asarray(tlc_jax.jit(jnp.linalg.cholesky)(not_pd))
    assert np.all(np.isnan(got[np.tril_indices(5)]))  # jax's answer for a failure
    _same(jnp.linalg.cholesky, not_pd)
    singular = _random(4, 4)
    singular[:, 1] = 0.0
    assert float(tlc_jax.jit(jnp.linalg.det)(singular)) == 0.0
    _same(jnp.linalg.det, singular)


def test_complex_qr_is_not_supported_yet() -> None:
    with pytest.raises(tlc_jax.JaxCompileError, match="@lapack_cgeqrf_ffi is not supported"):
        tlc_jax.jit(jnp.linalg.qr)(_random(4, 3, dtype=np.complex64))
