"""Functions of plain jax that models use: ``jax.random`` sampling, ``jax.scipy.special``
and ``jnp.fft``, as builders (``models.common``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special

from models.common import Fn


def noisy_dropout(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
    """Dropout (``jax.random.bernoulli``, keep 0.8) and Gaussian noise
    (``jax.random.normal``); the parameter is the (raw uint32) PRNG key."""

    def fn(key: jax.Array, x: jax.Array) -> jax.Array:
        k_keep, k_noise = jax.random.split(key)
        keep = jax.random.bernoulli(k_keep, 0.8, x.shape)
        return jnp.where(keep, x / 0.8, 0.0) + 0.1 * jax.random.normal(k_noise, x.shape)

    return fn, key


def special_functions(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
    """erf, gammaln, erfinv and the exact GELU (``jax.nn.gelu(approximate=False)``) of
    the input (four outputs); the parameter is a scale per column."""

    def fn(scale: jax.Array, x: jax.Array) -> tuple[jax.Array, ...]:
        x = x * scale
        return (special.erf(x), special.gammaln(jnp.abs(x) + 0.5),
                special.erfinv(0.999 * jnp.tanh(x)), jax.nn.gelu(x, approximate=False))

    return fn, 1.0 + 0.1 * jax.random.normal(key, inputs[0].shape[-1:])


def fft_filter(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
    """A learned filter in frequency space: ``irfft(rfft(x) * (re + i im))`` over the
    last axis, and the power spectrum of the input (two outputs)."""
    bins = inputs[0].shape[-1] // 2 + 1

    def fn(weights: tuple[jax.Array, jax.Array], x: jax.Array) -> tuple[jax.Array, ...]:
        spectrum = jnp.fft.rfft(x, axis=-1)
        filtered = jnp.fft.irfft(spectrum * (weights[0] + 1j * weights[1]), n=x.shape[-1])
        return filtered, jnp.abs(spectrum) ** 2

    k_re, k_im = jax.random.split(key)
    return fn, (jax.random.normal(k_re, (bins,)), jax.random.normal(k_im, (bins,)))
