"""Typed PRNG keys (``jax.random.key``) as arguments and results of ``tlc.jax.jit``:
the program takes and gives the keys' data, the bridge converts.

Skipped when jax is not installed (``pip install 'tlc[jax]'``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
tlc_jax = pytest.importorskip("tlc.jax")

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")
# XLA's CPU runs rng_bit_generator's DEFAULT algorithm as Philox; tlc's lowering
# (frontend/lower/families/rng.py) takes Threefry for a state of two words and has Philox only for
# three, so bits drawn from rbg keys differ from jax's. Remove the mark when they agree.
RBG_BITS = pytest.mark.xfail(strict=True, reason="rng_bit_generator DEFAULT is Threefry "
                                                 "in tlc, Philox in XLA's CPU")


def _plain(tree: Any) -> list[tuple[str, np.ndarray]]:
    """Each leaf as (dtype name, numpy data): keys by their data."""
    out = []
    for leaf in jax.tree_util.tree_leaves(tree):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            out.append((str(leaf.dtype), np.asarray(jax.random.key_data(leaf))))
        else:
            out.append((str(leaf.dtype), np.asarray(leaf)))
    return out


def _same(fun: Any, *args: Any, jitted: Any = None) -> None:
    """tlc's results (of ``jitted``, default ``tlc.jax.jit(fun)``) are jax's: same
    structure, dtypes (keys of the same kind) and data."""
    got, want = (jitted or tlc_jax.jit(fun))(*args), jax.jit(fun)(*args)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for (g_dtype, g), (w_dtype, w) in zip(_plain(got), _plain(want), strict=True):
        assert g_dtype == w_dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


def _pass_through(key: Any, x: Any) -> Any:
    return {"key": key, "data": jax.random.key_data(key), "x": 2 * x}


def _split(key: Any, x: Any) -> Any:
    a, b = jax.random.split(key)
    return jax.random.key_data(a), b, x + 1


def _draw(key: Any, x: Any) -> Any:
    a, b = jax.random.split(key)
    return x + jax.random.normal(a, x.shape), jax.random.uniform(b, (4,)), b


@pytest.mark.parametrize("impl", IMPLS)
def test_keys_reach_the_program_and_come_back(impl: str) -> None:
    """A key argument's data is the parameter; a key result is a key of the same kind."""
    key = jax.random.key(7, impl=impl)
    _same(_pass_through, key, X)
    got = tlc_jax.jit(_pass_through)(key, X)["key"]
    assert got.dtype == key.dtype
    np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(key))


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg",
                                  pytest.param("unsafe_rbg", marks=RBG_BITS)])
def test_split_keys(impl: str) -> None:
    """Splitting (Threefry for threefry2x32 and rbg keys) gives jax's keys."""
    _same(_split, jax.random.key(1, impl=impl), X)


@pytest.mark.parametrize("impl", ["threefry2x32", pytest.param("rbg", marks=RBG_BITS),
                                  pytest.param("unsafe_rbg", marks=RBG_BITS)])
def test_draws_from_a_key(impl: str) -> None:
    _same(_draw, jax.random.key(2, impl=impl), X)


def test_keys_in_pytrees_and_batches_of_keys() -> None:
    """Keys as leaves of argument pytrees, arrays of keys, and one signature per key
    kind and shape."""

    def f(state: dict[str, Any], x: Any) -> Any:
        keys = jax.vmap(jax.random.split)(state["keys"])
        return keys[:, 0], x * jax.random.uniform(state["key"], x.shape)

    key = jax.random.key(3)
    keys = jax.random.split(jax.random.key(4), 5)
    jitted = tlc_jax.jit(f)
    for state in ({"key": key, "keys": keys}, {"key": jax.random.key(9), "keys": keys},
                  {"key": key, "keys": keys[:3]}):
        _same(f, state, X, jitted=jitted)
    assert jitted.signatures == 2
    rbg = {"key": jax.random.key(3, impl="rbg"), "keys": jax.random.split(key, 5)}
    jitted(rbg, X)
    assert jitted.signatures == 3


def test_legacy_uint32_keys_stay_arrays() -> None:
    """``jax.random.PRNGKey`` keys are plain uint32 arrays, and stay so."""
    _same(_split, jax.random.PRNGKey(5), X)


def test_an_argument_of_an_unknown_dtype_is_a_clear_error() -> None:
    from tensorlang.diagnostics import TlcError

    class Odd:
        shape = (2,)
        dtype = "not a dtype"

    with pytest.raises(TlcError, match="cannot take an argument of type Odd"):
        tlc_jax.jit(lambda x: x)(Odd())
