"""Batching the products of unrolled recurrences (:mod:`frontend.lower.families.dot.batching`):
time-step products stacked into one, products sharing a left operand merged, what is
left alone; every program's results against ``jax.jit``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import frontend
from frontend.lower.core.driver import lower_function
from frontend.lower.core.inline import inline_calls
from frontend.lower.families.dot.batching import DOT, batch_dots
from tensorlang.plan import Launch

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")


pytestmark = pytest.mark.usefixtures("uncached")


def _random(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.5


STEPS = 6
XS, H0 = _random(4, STEPS, 8, seed=1), _random(4, 16, seed=2)
WS = [_random(8, 16, seed=10 + i) for i in range(3)]
US = [_random(16, 16, seed=20 + i) for i in range(3)]


def gru(xs: Any, h: Any, ws: list[Any], us: list[Any]) -> Any:
    """A GRU unrolled in Python, its gates as separate products (flax's GRUCell)."""
    for t in range(xs.shape[1]):
        x = xs[:, t]
        r = jax.nn.sigmoid(x @ ws[0] + h @ us[0])
        z = jax.nn.sigmoid(x @ ws[1] + h @ us[1])
        n = jnp.tanh(x @ ws[2] + r * (h @ us[2]))
        h = (1 - z) * n + z * h
    return h


def per_sample(xs: Any, h: Any, w: Any, u: Any) -> Any:
    """An unrolled cell written per sample and vmapped: ``W @ x_t`` (the time step is the
    right operand)."""
    def cell(xs1: Any, h1: Any) -> Any:
        for t in range(xs1.shape[0]):
            h1 = jnp.tanh(w @ xs1[t] + u @ h1)
        return h1
    return jax.vmap(cell)(xs, h)


def _products(fun: Callable[..., Any], *args: Any) -> tuple[int, int]:
    """(products before, after batching) in ``fun``'s StableHLO."""
    mod = frontend.parse(jax.jit(fun).lower(*args).as_text())
    body = inline_calls(mod, mod.func("main"))
    before = sum(op.name == DOT for op in body.block.ops)
    after = sum(op.name == DOT for op in batch_dots(body).block.ops)
    return before, after


def _check(fun: Callable[..., Any], *args: Any) -> None:
    np.testing.assert_allclose(np.asarray(tlc_jax.jit(fun)(*args)),
                               np.asarray(jax.jit(fun)(*args)), rtol=2e-5, atol=2e-6)


def test_the_steps_stack_and_the_gates_merge() -> None:
    before, after = _products(gru, XS, H0, WS, US)
    assert before == 6 * STEPS
    assert after == 3 + STEPS  # an input product per weight; one gate product a step


def test_gates_multiplied_once_stay_apart() -> None:
    """Merging one group would cost a concatenation kernel and the fused epilogues."""
    def gates(x: Any, w1: Any, w2: Any) -> Any:
        return jnp.tanh(x @ w1) * jax.nn.sigmoid(x @ w2)

    x, w1, w2 = _random(5, 8, seed=11), _random(8, 6, seed=12), _random(8, 6, seed=13)
    assert _products(gates, x, w1, w2) == (2, 2)
    _check(gates, x, w1, w2)


def test_the_unrolled_gru_computes_what_jax_does() -> None:
    _check(gru, XS, H0, WS, US)


def test_each_use_reads_the_batched_product_in_place() -> None:
    """No kernel of its own copies a step's slice out of the stacked product."""
    text = jax.jit(gru).lower(XS, H0, WS, US).as_text()
    plan = lower_function(frontend.parse(text)).plan
    kernels = [s.kernel for s in plan.steps if isinstance(s, Launch)]
    assert not [k for k in kernels if k.endswith(("_slice", "_reshape"))], kernels
    assert len(kernels) <= 4 * STEPS


def test_a_time_step_on_the_right() -> None:
    w, u = _random(16, 8, seed=3), _random(16, 16, seed=4)
    before, after = _products(per_sample, XS.transpose(0, 1, 2), H0, w, u)
    assert after < before
    _check(per_sample, XS, H0, w, u)


def test_products_that_are_not_time_steps_stay() -> None:
    def two_rows(x: Any, w: Any) -> Any:  # slices of two elements: not time steps
        return x[:, 0:2].reshape(-1, 8) @ w, x[:, 2:4].reshape(-1, 8) @ w

    def batched(a: Any, b: Any) -> Any:  # batch dimensions: not rewritten
        return jnp.einsum("bij,bjk->bik", a, b), jnp.einsum("bij,bjk->bik", a, b * 2)

    x, w = _random(4, 6, 8, seed=5), _random(8, 5, seed=6)
    assert _products(two_rows, x, w) == (2, 2)
    a, b = _random(3, 4, 5, seed=7), _random(3, 5, 2, seed=8)
    assert _products(batched, a, b) == (2, 2)
    for fun, args in ((two_rows, (x, w)), (batched, (a, b))):
        for got, want in zip(tlc_jax.jit(fun)(*args), jax.jit(fun)(*args), strict=True):
            np.testing.assert_allclose(got, np.asarray(want), rtol=2e-5, atol=2e-6)


def test_weights_defined_after_the_first_product_are_not_merged() -> None:
    def late(x: Any, w: Any) -> Any:
        a = x @ w
        w2 = jnp.tanh(a[:8])  # a weight computed from the first product
        return a, x @ w2

    x, w = _random(8, 8, seed=9), _random(8, 8, seed=10)
    assert _products(late, x, w) == (2, 2)
    for got, want in zip(tlc_jax.jit(late)(x, w), jax.jit(late)(x, w), strict=True):
        np.testing.assert_allclose(got, np.asarray(want), rtol=2e-5, atol=2e-6)
