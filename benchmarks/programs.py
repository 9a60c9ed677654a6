"""The benchmark's program set: JAX functions with concrete inputs, exported as StableHLO.

Each :class:`Program` is a JAX function and a generator of its inputs (random, from a
seed derived from the program's name, never all zeros).  :meth:`Program.text` exports
it the way a user would (``jax.jit(f).lower(*args).as_text()``); the three example models
instead read ``examples/NAME.mlir`` and ``examples/NAME.npz`` as they are.  Sizes are
moderate (a call takes tens of microseconds to tens of milliseconds on a 2-core CPU).
Needs jax; ``stablehlo_models.py`` imports this module only when jax is installed.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import export_jax  # noqa: E402  (examples/export_jax.py: the example models in JAX)

Inputs = Callable[[np.random.Generator], tuple[np.ndarray, ...]]


@dataclass(frozen=True)
class Program:
    """One benchmark program: a JAX function, its inputs and how exactly it must match."""

    name: str
    fn: Callable[..., Any]
    make_inputs: Inputs
    tol: float | None = None
    """Largest error relative to max(1, max |reference|); None: by the output's dtype."""
    mlir: Path | None = None
    """StableHLO text read from this file instead of exported from ``fn``."""
    target: bool = False
    """In the set that issue #11 targets (geometric mean tlc/best-peer <= 1)."""

    def inputs(self) -> tuple[np.ndarray, ...]:
        """The inputs, the same on every run (the seed is a hash of the name)."""
        return self.make_inputs(np.random.default_rng(zlib.crc32(self.name.encode())))

    def text(self, args: tuple[np.ndarray, ...]) -> str:
        """The StableHLO text of the program for ``args``."""
        if self.mlir is not None:
            return self.mlir.read_text()
        return jax.jit(self.fn).lower(*args).as_text()


# -- inputs ----------------------------------------------------------------------------------


def normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float | None = None,
           dtype: Any = np.float32) -> np.ndarray:
    """Normal data scaled by ``scale`` (default 1/sqrt(shape[0]), a weight's fan-in)."""
    scale = 1.0 / np.sqrt(shape[0]) if scale is None else scale
    return (rng.standard_normal(shape) * scale).astype(dtype)


def uniform(rng: np.random.Generator, shape: tuple[int, ...], lo: float,
            hi: float) -> np.ndarray:
    """Uniform f32 data in [lo, hi)."""
    return rng.uniform(lo, hi, shape).astype(np.float32)


def ints(rng: np.random.Generator, shape: tuple[int, ...], lo: int, hi: int,
         dtype: Any = np.int32) -> np.ndarray:
    """Uniform integers in [lo, hi)."""
    return rng.integers(lo, hi, shape).astype(dtype)


def _shapes(*shapes: tuple[int, ...]) -> Inputs:
    """Inputs of f32 normal data of these shapes (weights scaled by their fan-in)."""
    return lambda rng: tuple(normal(rng, s) for s in shapes)


def _example(name: str) -> Program:
    """An example model: text and inputs from examples/, the JAX function from export_jax."""
    fn = export_jax.MODELS[name][0]

    def load(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        data = np.load(EXAMPLES / f"{name}.npz")
        return tuple(data[f"in{i}"] for i in range(sum(k.startswith("in") for k in data.files)))

    return Program(f"ex_{name}", fn, load, mlir=EXAMPLES / f"{name}.mlir", target=True)


# -- building blocks -------------------------------------------------------------------------


def softmax(x: jax.Array) -> jax.Array:
    """Softmax over the last axis."""
    return jax.nn.softmax(x, axis=-1)


def layernorm(x: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    """Layer normalisation over the last axis."""
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * g + b


def attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """softmax(Q K^T / sqrt(d)) V over the last two axes."""
    s = jnp.einsum("...qd,...kd->...qk", q, k) / np.float32(np.sqrt(q.shape[-1]))
    return jnp.einsum("...qk,...kd->...qd", softmax(s), v)


def mlp(x, w1, b1, w2, b2, w3, b3):  # type: ignore[no-untyped-def]
    """Three dense layers with ReLU."""
    h = jax.nn.relu(x @ w1 + b1)
    h = jax.nn.relu(h @ w2 + b2)
    return h @ w3 + b3


def mlp_train_step(x, labels, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
    """One SGD step of a two-layer classifier: the loss and the updated parameters."""

    def loss(params):  # type: ignore[no-untyped-def]
        w1, b1, w2, b2 = params
        logits = jax.nn.relu(x @ w1 + b1) @ w2 + b2
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    params = (w1, b1, w2, b2)
    value, grads = jax.value_and_grad(loss)(params)
    return (value, *(p - 0.1 * g for p, g in zip(params, grads, strict=True)))


def transformer(x, wqkv, wo, w1, w2, g1, b1, g2, b2):  # type: ignore[no-untyped-def]
    """Pre-norm causal multi-head (4 heads) attention and a GELU MLP, with residuals."""
    batch, seq, dim = x.shape
    heads = 4

    def split(t):  # type: ignore[no-untyped-def]
        return t.reshape(batch, seq, heads, dim // heads).transpose(0, 2, 1, 3)

    q, k, v = jnp.split(layernorm(x, g1, b1) @ wqkv, 3, axis=-1)
    q, k, v = split(q), split(k), split(v)
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(dim // heads))
    s = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), s, np.float32(-1e9))
    o = jnp.einsum("bhqk,bhkd->bhqd", softmax(s), v).transpose(0, 2, 1, 3)
    x = x + o.reshape(batch, seq, dim) @ wo
    return x + jax.nn.gelu(layernorm(x, g2, b2) @ w1) @ w2


def conv(x: jax.Array, w: jax.Array, stride: int = 1, padding: str = "SAME",
         groups: int = 1) -> jax.Array:
    """An NHWC x HWIO convolution."""
    return lax.conv_general_dilated(x, w, (stride, stride), padding,
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups)


def max_pool(x: jax.Array) -> jax.Array:
    """3x3 max pooling, stride 2, over NHWC."""
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "VALID")


def avg_pool(x: jax.Array) -> jax.Array:
    """2x2 average pooling, stride 2, over NHWC."""
    return lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4


def rnn_scan(xs, w, u, h0):  # type: ignore[no-untyped-def]
    """An Elman RNN over the leading (time) axis: the last state and all states."""

    def step(h, x):  # type: ignore[no-untyped-def]
        h = jnp.tanh(x @ w + h @ u)
        return h, h

    return lax.scan(step, h0, xs)


def collatz(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Collatz steps of every element until all reach 1 (a data-dependent trip count)."""

    def cond(c):  # type: ignore[no-untyped-def]
        return jnp.any(c[0] != 1)

    def body(c):  # type: ignore[no-untyped-def]
        x, n = c
        done = x == 1
        nx = jnp.where(x % 2 == 1, 3 * x + 1, x // 2)
        return jnp.where(done, x, nx), n + jnp.where(done, 0, 1)

    return lax.while_loop(cond, body, (x, jnp.zeros_like(x)))


def power_iteration(a: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """50 steps of power iteration: the vector and its Rayleigh quotient."""

    def body(i, v):  # type: ignore[no-untyped-def]
        w = a @ v
        return w / jnp.sqrt(jnp.sum(w * w))

    v = lax.fori_loop(0, 50, body, v)
    return v, v @ (a @ v)


def int_bitwise(a, b, c):  # type: ignore[no-untyped-def]
    """uint32 bit manipulation and int32 integer arithmetic."""
    mixed = (a ^ b) & (a | (b >> 3))
    rotated = (a << 5) | (b >> 27)
    counts = lax.population_count(a) + lax.clz(b)
    signed = (c // 7) % 5 + (c >> 2) - jnp.abs(c)
    return mixed + rotated * np.uint32(3), counts, signed


def reductions6(x):  # type: ignore[no-untyped-def]
    """Six reductions of one matrix (six outputs)."""
    return (x.sum(0), x.max(1), x.min(), x.mean(1), (x * x).sum(0),
            jnp.argmax(x, axis=1).astype(jnp.int32))


def transcendental(x, y):  # type: ignore[no-untyped-def]
    """Twelve element-wise functions (twelve outputs)."""
    return (jnp.exp(x), jnp.log(x), jnp.sin(x), jnp.cos(x), jnp.tanh(y), jnp.sqrt(x),
            lax.rsqrt(x), jnp.log1p(x), jnp.expm1(y), jax.scipy.special.erf(y),
            jax.nn.sigmoid(y), jnp.power(x, y))


def complex_arith(a, b):  # type: ignore[no-untyped-def]
    """complex64 arithmetic, modulus and exponential."""
    return a * b + a / b, jnp.abs(a), jnp.exp(a) * jnp.conj(b)


def elementwise_chain(x, y):  # type: ignore[no-untyped-def]
    """A long fusable element-wise chain."""
    return jax.nn.gelu(x) * jax.nn.sigmoid(y) + jnp.maximum(x, y) * 0.5 - jnp.abs(x - y)


def top_k(x):  # type: ignore[no-untyped-def]
    """The 8 largest values of each row, and their indices."""
    return lax.top_k(x, 8)


def cond_branch(x, w):  # type: ignore[no-untyped-def]
    """lax.cond on a data-dependent predicate."""
    return lax.cond(jnp.sum(x) > 0, lambda t: jnp.sin(t) @ w, lambda t: jnp.cos(t) @ w, x)


# -- the set ---------------------------------------------------------------------------------


def _bf16(rng: np.random.Generator, *shapes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    return tuple(normal(rng, s, dtype=ml_dtypes.bfloat16) for s in shapes)


def _complex(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (normal(rng, shape, 1.0) + 1j * normal(rng, shape, 1.0)).astype(np.complex64)


def _label_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    return (normal(rng, (128, 256), 1.0), ints(rng, (128,), 0, 10),
            *_shapes((256, 512), (512,), (512, 10), (10,))(rng))


def _transformer_inputs(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    d = 128
    ws = _shapes((d, 3 * d), (d, d), (d, 4 * d), (4 * d, d))(rng)
    g1, b1, g2, b2 = (1 + normal(rng, (d,), 0.1), normal(rng, (d,), 0.1),
                      1 + normal(rng, (d,), 0.1), normal(rng, (d,), 0.1))
    return (normal(rng, (2, 64, d), 1.0), *ws, g1, b1, g2, b2)


PROGRAMS: list[Program] = [
    _example("mlp"),
    _example("transformer_block"),
    _example("cnn"),
    Program("mlp", mlp, _shapes((128, 256), (256, 512), (512,), (512, 512), (512,),
                                (512, 10), (10,)),
            target=True),
    Program("mlp_train_step", mlp_train_step, _label_inputs),
    Program("matmul", jnp.matmul, _shapes((256, 256), (256, 256))),
    Program("matmul_tn", lambda a, b: a.T @ b, _shapes((512, 256), (512, 256))),
    Program("batch_matmul", jnp.matmul, _shapes((32, 64, 64), (32, 64, 64))),
    Program("bf16_matmul", jnp.matmul, lambda rng: _bf16(rng, (256, 256), (256, 256))),
    Program("bf16_matmul_f32acc",
            lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
            lambda rng: _bf16(rng, (256, 256), (256, 256))),
    Program("attention", attention, _shapes((8, 128, 64), (8, 128, 64), (8, 128, 64)),
            target=True),
    Program("transformer", transformer, _transformer_inputs, target=True),
    Program("softmax", softmax, lambda rng: (normal(rng, (256, 1024), 2.0),), target=True),
    Program("layernorm", layernorm,
            lambda rng: (normal(rng, (256, 1024), 2.0), 1 + normal(rng, (1024,), 0.1),
                         normal(rng, (1024,), 0.1)),
            target=True),
    Program("conv2d_nhwc", conv, _shapes((8, 32, 32, 16), (3, 3, 16, 32)), target=True),
    Program("conv2d_stride2", lambda x, w: conv(x, w, 2, "VALID"),
            _shapes((8, 32, 32, 32), (3, 3, 32, 64))),
    Program("conv2d_depthwise", lambda x, w: conv(x, w, groups=32),
            _shapes((8, 32, 32, 32), (3, 3, 1, 32))),
    Program("max_pool", max_pool, _shapes((8, 64, 64, 16))),
    Program("avg_pool", avg_pool, _shapes((8, 64, 64, 16))),
    Program("rnn_scan", rnn_scan, _shapes((32, 8, 64), (64, 128), (128, 128), (8, 128)),
            target=True),
    Program("while_collatz", collatz, lambda rng: (ints(rng, (1024,), 1, 1000),),
            target=True),
    Program("fori_power_iter", power_iteration,
            lambda rng: ((lambda m: (m @ m.T / 256).astype(np.float32))(
                normal(rng, (256, 256), 1.0)), normal(rng, (256,), 1.0))),
    Program("cond", cond_branch, _shapes((128, 128), (128, 128))),
    Program("sort", lambda x: jnp.sort(x, axis=-1), lambda rng: (normal(rng, (128, 512)),),
            target=True),
    Program("sort_key_value", lambda k, v: lax.sort((k, v), num_keys=1),
            lambda rng: (normal(rng, (64, 1024)), ints(rng, (64, 1024), 0, 1 << 20))),
    Program("top_k", top_k, lambda rng: (normal(rng, (256, 1024)),)),
    Program("int_bitwise", int_bitwise,
            lambda rng: (ints(rng, (256, 1024), 1, 1 << 32, np.uint32),
                         ints(rng, (256, 1024), 1, 1 << 32, np.uint32),
                         ints(rng, (256, 1024), -1 << 20, 1 << 20))),
    Program("reductions6", reductions6, lambda rng: (normal(rng, (512, 512), 1.0),)),
    Program("transcendental12", transcendental,
            lambda rng: (uniform(rng, (256, 512), 0.1, 3.0), normal(rng, (256, 512), 1.0))),
    Program("elementwise_chain", elementwise_chain,
            lambda rng: (normal(rng, (512, 1024), 1.0), normal(rng, (512, 1024), 1.0))),
    Program("complex_arith", complex_arith,
            lambda rng: (_complex(rng, (256, 256)), _complex(rng, (256, 256)))),
    Program("gather_embedding", lambda t, i: jnp.take(t, i, axis=0),
            lambda rng: (normal(rng, (2048, 128), 1.0), ints(rng, (1024,), 0, 2048))),
    Program("segment_sum", lambda d, i: jax.ops.segment_sum(d, i, num_segments=128),
            lambda rng: (normal(rng, (4096, 64), 1.0), ints(rng, (4096,), 0, 128))),
    Program("cumsum", lambda x: jnp.cumsum(x, axis=1), lambda rng: (normal(rng, (256, 1024)),)),
    Program("transpose_concat",
            lambda x, y: jnp.concatenate([x.transpose(0, 2, 1), y], axis=1) * 2.0,
            lambda rng: (normal(rng, (64, 128, 64), 1.0), normal(rng, (64, 32, 128), 1.0))),
    Program("rfft", lambda x: jnp.fft.rfft(x, axis=-1), lambda rng: (normal(rng, (64, 512)),)),
]
"""Every program, in table order."""
