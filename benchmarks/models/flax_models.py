"""Models written with flax: linen modules and nnx modules, with flax's own layers.

:func:`linen` and :func:`nnx_model` turn a module into a builder (``models.common``):
linen's ``init``/``apply``, nnx's ``split``/``merge`` (the state as a pure dict).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import linen as nn
from flax import nnx

from models.common import Builder, Fn

# -- adapters --------------------------------------------------------------------------------


def linen(factory: Callable[[], nn.Module], **apply_kwargs: Any) -> Builder:
    """A builder of the linen module ``factory()``: ``module.apply(variables, *inputs,
    **apply_kwargs)`` (``mutable=[...]`` returns the updated collections too)."""

    def build(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
        module = factory()
        variables = module.init(key, *inputs, **apply_kwargs)

        def fn(variables: Any, *xs: jax.Array) -> Any:
            return module.apply(variables, *xs, **apply_kwargs)

        return fn, variables

    return build


def nnx_model(factory: Callable[[nnx.Rngs], nnx.Module], train: bool = False) -> Builder:
    """A builder of the nnx module ``factory(rngs)`` (in eval mode unless ``train``): its
    state (a pytree) is the parameters, ``nnx.merge`` rebuilds the module inside the
    function."""

    def build(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
        model = factory(nnx.Rngs(params=key))
        if not train:
            model.eval()
        graphdef, state = nnx.split(model)

        def fn(state: Any, *xs: jax.Array) -> Any:
            return nnx.merge(graphdef, state)(*xs)

        return fn, state

    return build


# -- linen modules ---------------------------------------------------------------------------


class LinenMLP(nn.Module):
    """Dense layers with ReLU between them."""

    features: Sequence[int]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for width in self.features[:-1]:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.features[-1])(x)


class LinenCNN(nn.Module):
    """Conv, batch norm, ReLU and 2x2 average pooling stages, then a dense classifier."""

    channels: Sequence[int] = (32, 64)
    classes: int = 10

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        for c in self.channels:
            x = nn.Conv(c, (3, 3), use_bias=False)(x)
            x = nn.relu(nn.BatchNorm(use_running_average=not train, momentum=0.9)(x))
            x = nn.avg_pool(x, (2, 2), (2, 2))
        return nn.Dense(self.classes)(x.reshape(x.shape[0], -1))


def conv_bn(x: jax.Array, features: int, kernel: int = 3, stride: int = 1) -> jax.Array:
    """A convolution without bias and a batch norm from its running averages (called
    inside a compact method: the layers are the caller's)."""
    x = nn.Conv(features, (kernel, kernel), (stride, stride), use_bias=False)(x)
    return nn.BatchNorm(use_running_average=True)(x)


class ResidualBlock(nn.Module):
    """A ResNet basic block: two 3x3 conv + batch norm, a projection when the shape
    changes."""

    features: int
    stride: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = conv_bn(nn.relu(conv_bn(x, self.features, stride=self.stride)), self.features)
        if x.shape != y.shape:
            x = conv_bn(x, self.features, kernel=1, stride=self.stride)
        return nn.relu(x + y)


class LinenResNet(nn.Module):
    """A CIFAR-style ResNet: a stem, residual stages of 16, 32, 64 channels (stride 2
    between stages), global average pooling and a dense layer."""

    blocks: int = 1
    classes: int = 10

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(conv_bn(x, 16))
        for stage, features in enumerate((16, 32, 64)):
            for block in range(self.blocks):
                x = ResidualBlock(features, 2 if stage and not block else 1)(x)
        return nn.Dense(self.classes)(jnp.mean(x, axis=(1, 2)))


class LinenEncoderLayer(nn.Module):
    """A pre-norm transformer encoder layer: multi-head self-attention and a GELU MLP."""

    heads: int = 4
    hidden: int = 512

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h)
        h = nn.LayerNorm()(x)
        h = nn.Dense(x.shape[-1])(nn.gelu(nn.Dense(self.hidden)(h)))
        return x + h


class LinenLSTM(nn.Module):
    """An LSTM over the sequence (``nn.RNN``: a ``lax.scan``), a dense head on the last
    state."""

    hidden: int = 128
    classes: int = 10

    @nn.compact
    def __call__(self, xs: jax.Array) -> jax.Array:
        (_, h), _ = nn.RNN(nn.OptimizedLSTMCell(self.hidden), return_carry=True)(xs)
        return nn.Dense(self.classes)(h)


class LinenGRUUnrolled(nn.Module):
    """A GRU cell applied step by step in a Python loop (the graph unrolled)."""

    hidden: int = 128
    classes: int = 10

    @nn.compact
    def __call__(self, xs: jax.Array) -> jax.Array:
        cell = nn.GRUCell(self.hidden)
        h = jnp.zeros((xs.shape[0], self.hidden), xs.dtype)
        for t in range(xs.shape[1]):
            h, _ = cell(h, xs[:, t])
        return nn.Dense(self.classes)(h)


# -- nnx modules -----------------------------------------------------------------------------


class NnxMLP(nnx.Module):
    """Dense layers with ReLU between them."""

    def __init__(self, sizes: Sequence[int], rngs: nnx.Rngs) -> None:
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs)
                                for a, b in zip(sizes[:-1], sizes[1:], strict=True)])

    def __call__(self, x: jax.Array) -> jax.Array:
        for layer in self.layers[:-1]:
            x = nnx.relu(layer(x))
        return self.layers[-1](x)


class NnxCNN(nnx.Module):
    """Two conv, batch norm, ReLU and max-pool stages, then a dense classifier."""

    def __init__(self, size: int, rngs: nnx.Rngs, classes: int = 10) -> None:
        self.conv1 = nnx.Conv(3, 32, (3, 3), use_bias=False, rngs=rngs)
        self.norm1 = nnx.BatchNorm(32, rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, (3, 3), use_bias=False, rngs=rngs)
        self.norm2 = nnx.BatchNorm(64, rngs=rngs)
        self.head = nnx.Linear(64 * (size // 4) ** 2, classes, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        for conv, norm in ((self.conv1, self.norm1), (self.conv2, self.norm2)):
            x = nnx.max_pool(nnx.relu(norm(conv(x))), (2, 2), (2, 2))
        return self.head(x.reshape(x.shape[0], -1))


class NnxEncoderLayer(nnx.Module):
    """A pre-norm transformer encoder layer: ``nnx.MultiHeadAttention`` (causal mask)
    and an MLP with the exact (erf) GELU."""

    def __init__(self, dim: int, heads: int, hidden: int, rngs: nnx.Rngs) -> None:
        self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(heads, dim, decode=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, rngs=rngs)
        self.up = nnx.Linear(dim, hidden, rngs=rngs)
        self.down = nnx.Linear(hidden, dim, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        mask = nnx.make_causal_mask(x[..., 0])
        x = x + self.attention(self.norm1(x), mask=mask)
        return x + self.down(jax.nn.gelu(self.up(self.norm2(x)), approximate=False))
