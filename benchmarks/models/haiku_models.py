"""Models written with dm-haiku: forward functions of haiku's own modules.

:func:`haiku` turns a forward function into a builder (``models.common``) through
``hk.transform_with_state`` (parameters and state, e.g. batch-norm averages, are the
function's parameters; no RNG at apply time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np

from models.common import Builder, Fn


def haiku(forward: Callable[..., jax.Array]) -> Builder:
    """A builder of the haiku forward function ``forward(*inputs)``."""
    transformed = hk.without_apply_rng(hk.transform_with_state(forward))

    def build(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
        params, state = transformed.init(key, *inputs)

        def fn(variables: Any, *xs: jax.Array) -> Any:
            return transformed.apply(*variables, *xs)[0]

        return fn, (params, state)

    return build


def mlp(x: jax.Array) -> jax.Array:
    """``hk.nets.MLP``: 512, 256 and 10 units, ReLU."""
    return hk.nets.MLP([512, 256, 10])(x)


def resnet18(x: jax.Array) -> jax.Array:
    """``hk.nets.ResNet18`` (10 classes), inference: batch norm from its moving averages
    (which ``init`` makes in training mode), the logits layer initialised at random
    (haiku's default is zeros)."""
    logits = {"w_init": hk.initializers.VarianceScaling()}
    net = hk.nets.ResNet18(num_classes=10, logits_config=logits)
    return net(x, is_training=hk.running_init())


def lstm_scan(xs: jax.Array) -> jax.Array:
    """``hk.LSTM`` over the time-major sequence by ``hk.dynamic_unroll`` (a ``lax.scan``),
    a linear head on the last output."""
    core = hk.LSTM(128)
    outs, _ = hk.dynamic_unroll(core, xs, core.initial_state(xs.shape[1]))
    return hk.Linear(10)(outs[-1])


def gru_unrolled(xs: jax.Array) -> jax.Array:
    """``hk.GRU`` over the time-major sequence by ``hk.static_unroll`` (unrolled), a linear
    head on the mean output."""
    core = hk.GRU(128)
    outs, _ = hk.static_unroll(core, xs, core.initial_state(xs.shape[1]))
    return hk.Linear(10)(jnp.mean(outs, axis=0))
