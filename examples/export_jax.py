"""Export the example models from JAX as StableHLO, with inputs and JAX's outputs.

Needs jax (``pip install jax``; it is not a dependency of tlc). For each model it writes
``examples/NAME.mlir`` (``jax.jit(f).lower(...).as_text()``, exactly as JAX prints it)
and ``examples/NAME.npz`` (``in0..`` the inputs, ``out0..`` JAX's results on the CPU),
which ``examples/run_examples.py`` compares tlc against.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent


def mlp(x, w1, b1, w2, b2, w3, b3):
    """A three-layer perceptron with ReLU and a softmax head."""
    h = jax.nn.relu(x @ w1 + b1)
    h = jax.nn.relu(h @ w2 + b2)
    return jax.nn.softmax(h @ w3 + b3, axis=-1)


def transformer_block(x, wq, wk, wv, wo, g1, w1, w2, g2):
    """Pre-norm single-head self-attention and a GELU feed-forward, with residuals."""

    def rms_norm(v, g):
        return v * jax.lax.rsqrt(jnp.mean(v * v, axis=-1, keepdims=True) + 1e-6) * g

    h = rms_norm(x, g1)
    q, k, v = h @ wq, h @ wk, h @ wv
    scores = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(q.shape[-1]).astype(x.dtype)
    mask = jnp.tril(jnp.ones(scores.shape[-2:], dtype=bool))
    scores = jnp.where(mask, scores, -1e9)
    x = x + jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(scores, axis=-1), v) @ wo
    h = rms_norm(x, g2)
    return x + jax.nn.gelu(h @ w1) @ w2


def cnn(images, k1, b1, k2, b2, wd, bd):
    """Two 3x3 convolutions with ReLU and max-pooling, then a dense layer."""

    def conv(x, k, b):
        y = jax.lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.nn.relu(y + b)

    def pool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                     "VALID")

    y = pool(conv(pool(conv(images, k1, b1)), k2, b2))
    return y.reshape(y.shape[0], -1) @ wd + bd


def _inputs(rng: np.random.Generator, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    return [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]


MODELS: dict[str, tuple[Callable[..., jax.Array], list[tuple[int, ...]]]] = {
    "mlp": (mlp, [(32, 64), (64, 128), (128,), (128, 128), (128,), (128, 10), (10,)]),
    "transformer_block": (transformer_block, [(2, 16, 32), (32, 32), (32, 32), (32, 32),
                                              (32, 32), (32,), (32, 64), (64, 32), (32,)]),
    "cnn": (cnn, [(4, 16, 16, 3), (3, 3, 3, 8), (8,), (3, 3, 8, 16), (16,), (256, 10),
                  (10,)]),
}


def export(name: str, seed: int = 0) -> None:
    """Write NAME.mlir and NAME.npz for one model."""
    fn, shapes = MODELS[name]
    args = _inputs(np.random.default_rng(seed), shapes)
    jitted = jax.jit(fn)
    (HERE / f"{name}.mlir").write_text(jitted.lower(*args).as_text())
    outs = jitted(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    arrays = {f"in{i}": a for i, a in enumerate(args)}
    arrays |= {f"out{i}": np.asarray(o) for i, o in enumerate(outs)}
    np.savez(HERE / f"{name}.npz", **arrays)
    print(f"wrote {name}.mlir and {name}.npz")


if __name__ == "__main__":
    for model in MODELS:
        export(model)
