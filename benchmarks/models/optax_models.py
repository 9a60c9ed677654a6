"""Training steps with optax: a flax linen classifier, softmax cross-entropy, one
optimizer update.

:func:`train_step` makes a builder (``models.common``) whose function takes the
parameters, any other variable collections of the module (batch-norm statistics, updated
in training mode) and the optimizer's state, and returns the loss and all three updated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax
from flax import linen as nn

from models.common import Builder, Fn


def train_step(factory: Callable[[], nn.Module],
               optimizer: Callable[[], optax.GradientTransformation]) -> Builder:
    """A builder of one training step of ``factory()`` on inputs ``(images or features,
    labels)`` with ``optimizer()``."""

    def build(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
        module, opt = factory(), optimizer()
        variables = dict(module.init(key, inputs[0]))
        params = variables.pop("params")
        forward = _forward(module, sorted(variables))

        def step(state: Any, x: jax.Array, y: jax.Array) -> Any:
            params, others, opt_state = state

            def loss(params: Any) -> tuple[jax.Array, Any]:
                logits, others_now = forward({"params": params, **others}, x)
                ce = optax.softmax_cross_entropy_with_integer_labels(logits, y)
                return ce.mean(), others_now

            (value, others), grads = jax.value_and_grad(loss, has_aux=True)(params)
            updates, opt_state = opt.update(grads, opt_state, params)
            return value, (optax.apply_updates(params, updates), others, opt_state)

        return step, (params, variables, opt.init(params))

    return build


def _forward(module: nn.Module, mutable: list[str]) -> Callable[[Any, jax.Array], Any]:
    """The module in training mode: ``(logits, updated collections)``."""
    if not mutable:
        return lambda variables, x: (module.apply(variables, x), {})
    return lambda variables, x: module.apply(variables, x, train=True, mutable=mutable)
