"""What every model of the benchmark is made of: input specs, builders and the model record.

A :class:`Model` names a builder and the data inputs it is called on.  A builder takes a
PRNG key and example inputs (numpy arrays of the specs' shapes, so that a library can
infer its parameters' shapes) and returns ``(fn, params)``: the pure function is then
called as ``fn(params, *inputs)``, under ``jax.jit`` and ``tlc.jax.jit`` alike.  Every
library's model object (a flax module, a haiku transform, an equinox or keras model) is
turned into such a function by the adapters of its module.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Fn = Callable[..., Any]
Builder = Callable[[Any, tuple[np.ndarray, ...]], tuple[Fn, Any]]
"""``build(key, inputs) -> (fn, params)``; the model is ``fn(params, *inputs)``."""


@dataclass(frozen=True)
class Input:
    """One data input: its shape and how it is drawn (f32 normal or uniform, int32 labels)."""

    shape: tuple[int, ...]
    kind: str = "normal"
    """``normal`` (f32, N(0, 1)), ``uniform`` (f32 in [low, high)) or ``labels`` (int32 in
    [0, high))."""
    low: float = 0.0
    high: float = 1.0

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """An array of this input's shape and kind."""
        if self.kind == "labels":
            return rng.integers(0, int(self.high), self.shape).astype(np.int32)
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high, self.shape).astype(np.float32)
        return rng.standard_normal(self.shape).astype(np.float32)


def normal(*shape: int) -> Input:
    """An f32 input of standard normal data."""
    return Input(shape)


def uniform(*shape: int, low: float, high: float) -> Input:
    """An f32 input uniform in [low, high)."""
    return Input(shape, "uniform", low, high)


def labels(batch: int, classes: int) -> Input:
    """An int32 vector of class labels in [0, classes)."""
    return Input((batch,), "labels", high=classes)


@dataclass(frozen=True)
class Model:
    """One benchmark model: its name, library, builder, inputs and how exactly it must
    match ``jax.jit``."""

    name: str
    library: str
    build: Builder
    inputs: tuple[Input, ...]
    tol: float = 1e-4
    """Largest error allowed, relative to each output's largest magnitude."""
    what: str = ""
    """A few words on the model, for the documentation table."""

    def seed(self) -> int:
        """A seed of the model's own (a hash of its name): the same in every process."""
        return zlib.crc32(self.name.encode())

    def data(self) -> tuple[np.ndarray, ...]:
        """The data inputs, the same on every run."""
        rng = np.random.default_rng(self.seed())
        return tuple(spec.draw(rng) for spec in self.inputs)

    def instantiate(self) -> tuple[Fn, tuple[Any, ...]]:
        """The pure function and its arguments ``(params, *inputs)``, every leaf a numpy
        array (parameters initialised by the library from the model's seed)."""
        import jax

        data = self.data()
        fn, params = self.build(jax.random.PRNGKey(self.seed()), data)
        return fn, (jax.tree.map(np.asarray, params), *data)
