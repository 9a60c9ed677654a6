"""Loops of jax programs whose rows run on several work-groups
(frontend/lower/families/control/row_split.py): ``lax.scan`` RNNs and a fixed-step
solver with nested stage loops and ``.at[].set`` saves, through ``tlc.jax.jit``
against ``jax.jit``, with the split checked in the lowered plan."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")

import frontend  # noqa: E402 -- after the skips
from frontend.lower import lower_function, merged_launches  # noqa: E402
from frontend.lower.families.control import row_split  # noqa: E402
from tensorlang.plan import Launch, launches  # noqa: E402

RNG = np.random.default_rng(17)


def _random(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _loop_groups(fn: Callable[..., Any], args: tuple[np.ndarray, ...]) -> list[int]:
    """The work-groups of the launches of ``fn``'s loop kernels."""
    text = tlc_jax.jit(fn).lower(*args).as_text()
    plan = merged_launches(lower_function(frontend.parse(text))).plan
    return [s.num_groups for s in launches(plan.steps) if isinstance(s, Launch)
            and "_while" in s.kernel and not s.kernel.endswith(("init", "slots"))]


def _check(fn: Callable[..., Any], *args: np.ndarray) -> None:
    assert _loop_groups(fn, args) == [row_split.GROUPS]
    want = jax.jit(fn)(*args)
    got = tlc_jax.jit(fn)(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                    strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def lstm(params: tuple[np.ndarray, ...], xs: np.ndarray) -> tuple[Any, Any]:
    """An LSTM over the time steps of ``xs`` [T, B, D]: the last state and every
    output."""
    wx, wh, b = params

    def cell(carry: tuple[Any, Any], x: Any) -> tuple[tuple[Any, Any], Any]:
        h, c = carry
        gates = x @ wx + h @ wh + b
        i, f, g, o = jnp.split(gates, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    batch, units = xs.shape[1], wh.shape[0]
    zeros = jnp.zeros((batch, units), xs.dtype)
    return jax.lax.scan(cell, (zeros, zeros), xs)


def test_an_lstm_scan() -> None:
    d, units = 12, 32
    params = (_random(d, 4 * units, scale=0.3), _random(units, 4 * units, scale=0.2),
              _random(4 * units))
    _check(lstm, params, _random(10, 16, d))


def solve(params: tuple[np.ndarray, ...], y0: np.ndarray) -> tuple[Any, Any]:
    """Fixed steps of an explicit 3-stage Runge-Kutta method on an MLP vector field,
    its stages a nested ``fori_loop`` carrying the weights, the state saved by
    ``.at[].set`` every step."""
    w1, b1, w2, b2 = params
    steps, dt = 8, 0.1

    def field(y: Any) -> Any:
        return jnp.tanh(y @ w1 + b1) @ w2 + b2

    def step(n: int, state: tuple[Any, Any]) -> tuple[Any, Any]:
        y, saved = state

        def stage(s: int, carry: tuple[Any, Any]) -> tuple[Any, Any]:
            k, acc = carry
            k = field(y + dt * 0.5 * k)
            return k, acc + k / 3.0

        _, acc = jax.lax.fori_loop(0, 3, stage, (jnp.zeros_like(y), jnp.zeros_like(y)))
        y = y + dt * acc
        return y, saved.at[n].set(y)

    saved = jnp.zeros((steps, *y0.shape), y0.dtype)
    return jax.lax.fori_loop(0, steps, step, (y0, saved))


def test_a_fixed_step_solve_with_nested_stages() -> None:
    dim, hidden = 8, 32
    params = (_random(dim, hidden, scale=0.4), _random(hidden), _random(hidden, dim, scale=0.3),
              _random(dim))
    _check(solve, params, _random(64, dim))
