"""``tlc.jax.jit(f).lower(*args)`` and ``.compile()``: jax's StableHLO, compiled by tlc
(texts in every dialect, a summary, calls like the jitted function); donation accepted.

Skipped when jax is not installed (``pip install 'tlc[jax]'``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")


def _random(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def layer(x: Any, w: Any, *, scale: float) -> Any:
    return {"y": jnp.tanh(x @ w) * scale, "norm": jnp.linalg.norm(x, axis=1)}


X, W = _random(4, 3, seed=1), _random(3, 5, seed=2)
LAYER = tlc_jax.jit(layer, static_argnames="scale")
COMPILED = LAYER.lower(X, W, scale=2.0).compile()


def test_lowered_text_is_jaxs_stablehlo() -> None:
    want = jax.jit(layer, static_argnames="scale", keep_unused=True).lower(X, W, scale=2.0)
    lowered = LAYER.lower(X, W, scale=2.0)
    assert lowered.as_text() == want.as_text()
    assert lowered.as_text(debug_info=True) == want.as_text(debug_info=True)
    assert lowered.out_tree == want.out_tree  # the rest is jax's Lowered


def test_compiled_runs_on_tlc_like_the_jitted_function() -> None:
    got = COMPILED(X, W)  # the static argument was given to lower
    want = jax.jit(layer, static_argnames="scale")(X, W, scale=2.0)
    assert got.keys() == want.keys()
    for name in want:
        assert isinstance(got[name], np.ndarray)
        np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=2e-6)
    np.testing.assert_array_equal(LAYER(X, W, scale=2.0)["y"], got["y"])


def test_compiled_shares_the_signature_cache() -> None:
    f = tlc_jax.jit(lambda x: x * 2)
    compiled = f.lower(jax.ShapeDtypeStruct((3,), jnp.float32)).compile()
    np.testing.assert_array_equal(f(np.arange(3, dtype=np.float32)), [0, 2, 4])
    assert f.signatures == 1
    np.testing.assert_array_equal(compiled(np.ones(3, np.float32)), [2, 2, 2])


def test_compiled_texts() -> None:
    stablehlo = COMPILED.as_text("stablehlo")
    assert stablehlo == LAYER.lower(X, W, scale=2.0).as_text()
    tl = COMPILED.as_text("tl")
    assert tl.startswith("func @") and "memref<f32x" in tl
    opencl = COMPILED.as_text("opencl")
    assert opencl == COMPILED.as_text() and "kernel " in opencl
    for kernel in COMPILED.summary().kernels:
        assert f"func @{kernel}(" in tl and f"void {kernel}(" in opencl
    with pytest.raises(ValueError, match="unknown dialect 'hlo' .use stablehlo, tl, opencl"):
        COMPILED.as_text("hlo")


def test_summary() -> None:
    summary = COMPILED.summary()
    assert summary.kernels and summary.launches >= len(summary.kernels)
    assert summary.buffer_bytes >= 4 * (X.size + W.size + 4 * 5 + 4)
    assert summary.parameters == (((4, 3), np.float32), ((3, 5), np.float32))
    assert summary.results == (((4,), np.float32), ((4, 5), np.float32))  # norm, y
    text = str(summary)
    assert f"{len(summary.kernels)} kernels (" in text
    assert "parameters: float32[4,3], float32[3,5]\nresults: float32[4], float32[4,5]" in text


def test_compiled_rejects_other_arguments() -> None:
    with pytest.raises(TypeError, match=r"compiled for float32\[4,3\] at argument leaf 0, "
                                        r"called with float32\[2,3\]"):
        COMPILED(X[:2], W)
    with pytest.raises(TypeError, match="was compiled for arguments"):
        COMPILED(X, W, W)


@pytest.mark.parametrize("donate", [{"donate_argnums": 0}, {"donate_argnames": "a"}])
def test_donation_is_accepted_as_a_hint(donate: dict[str, Any]) -> None:
    """The lowering marks the donated parameter as jax's does; tlc's results are right
    and the other input is not touched."""
    def update(a: Any, b: Any) -> Any:
        return a + b, a * b

    f = tlc_jax.jit(update, **donate)
    a, b = _random(2, 3, seed=3), _random(2, 3, seed=4)
    b_before = b.copy()
    assert f.lower(a, b).as_text() == \
        jax.jit(update, keep_unused=True, **donate).lower(a, b).as_text()
    assert "tf.aliasing_output" in f.lower(a, b).as_text()
    total, product = f(a.copy(), b)
    np.testing.assert_allclose(total, a + b, rtol=1e-6)
    np.testing.assert_allclose(product, a * b, rtol=1e-6)
    np.testing.assert_array_equal(b, b_before)
