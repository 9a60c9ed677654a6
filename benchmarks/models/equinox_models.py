"""Models written with equinox: ``eqx.nn`` layers, batched with ``jax.vmap``.

:func:`equinox` turns a model into a builder (``models.common``): its arrays are the
parameters (``eqx.partition``), the rest is closed over and combined back inside the
function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from models.common import Builder, Fn


def equinox(factory: Callable[[jax.Array], eqx.Module]) -> Builder:
    """A builder of the equinox model ``factory(key)``, called as ``model(*inputs)``."""

    def build(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
        params, static = eqx.partition(factory(key), eqx.is_array)

        def fn(params: Any, *xs: jax.Array) -> Any:
            return eqx.combine(params, static)(*xs)

        return fn, params

    return build


class MLP(eqx.Module):
    """``eqx.nn.MLP`` (784 -> 2 x 256 -> 10, GELU) over a batch by ``jax.vmap``."""

    mlp: eqx.nn.MLP

    def __init__(self, key: jax.Array) -> None:
        self.mlp = eqx.nn.MLP(784, 10, 256, 2, activation=jax.nn.gelu, key=key)

    def __call__(self, x: jax.Array) -> jax.Array:
        return jax.vmap(self.mlp)(x)


class CNN(eqx.Module):
    """``eqx.nn.Conv2d`` and ``MaxPool2d`` (channels first) and a linear head, over a batch
    by ``jax.vmap``."""

    layers: list[Any]

    def __init__(self, key: jax.Array) -> None:
        k1, k2, k3 = jax.random.split(key, 3)
        self.layers = [
            eqx.nn.Conv2d(3, 32, 3, padding=1, key=k1), jax.nn.relu,
            eqx.nn.MaxPool2d(2, 2),
            eqx.nn.Conv2d(32, 64, 3, padding=1, key=k2), jax.nn.relu,
            eqx.nn.MaxPool2d(2, 2),
            jnp.ravel, eqx.nn.Linear(64 * 8 * 8, 10, key=k3),
        ]

    def __call__(self, x: jax.Array) -> jax.Array:
        def one(image: jax.Array) -> jax.Array:
            for layer in self.layers:
                image = layer(image)
            return image

        return jax.vmap(one)(x)


class GRUScan(eqx.Module):
    """``eqx.nn.GRUCell`` over the sequence by ``lax.scan``, batched by ``jax.vmap``."""

    cell: eqx.nn.GRUCell
    head: eqx.nn.Linear

    def __init__(self, key: jax.Array, features: int = 32, hidden: int = 128) -> None:
        k1, k2 = jax.random.split(key)
        self.cell = eqx.nn.GRUCell(features, hidden, key=k1)
        self.head = eqx.nn.Linear(hidden, 10, key=k2)

    def __call__(self, xs: jax.Array) -> jax.Array:
        def one(seq: jax.Array) -> jax.Array:
            def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, None]:
                return self.cell(x, h), None

            h, _ = lax.scan(step, jnp.zeros(self.cell.hidden_size), seq)
            return self.head(h)

        return jax.vmap(one)(xs)


class LSTMUnrolled(eqx.Module):
    """``eqx.nn.LSTMCell`` applied step by step in a Python loop (unrolled), batched by
    ``jax.vmap``."""

    cell: eqx.nn.LSTMCell
    head: eqx.nn.Linear

    def __init__(self, key: jax.Array, features: int = 32, hidden: int = 128) -> None:
        k1, k2 = jax.random.split(key)
        self.cell = eqx.nn.LSTMCell(features, hidden, key=k1)
        self.head = eqx.nn.Linear(hidden, 10, key=k2)

    def __call__(self, xs: jax.Array) -> jax.Array:
        def one(seq: jax.Array) -> jax.Array:
            state = (jnp.zeros(self.cell.hidden_size), jnp.zeros(self.cell.hidden_size))
            for x in seq:
                state = self.cell(x, state)
            return self.head(state[0])

        return jax.vmap(one)(xs)
