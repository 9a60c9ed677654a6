"""Models written with keras 3 on its jax backend (``KERAS_BACKEND=jax``, set here before
keras is imported).

:func:`keras_model` turns a keras model into a builder (``models.common``): the
parameters are the values of its trainable and non-trainable variables, and the function
is ``model.stateless_call`` in inference mode.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

os.environ["KERAS_BACKEND"] = "jax"

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

from models.common import Builder, Fn  # noqa: E402


def keras_model(factory: Callable[[], keras.Model]) -> Builder:
    """A builder of the keras model ``factory()`` (seeded from the key), called on its
    inputs in inference mode, its batch norms calibrated (:func:`calibrate`)."""

    def build(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
        keras.utils.set_random_seed(int(jax.random.randint(key, (), 0, 1 << 30)))
        model = factory()
        calibrate(model, list(inputs) if len(inputs) > 1 else inputs[0])
        variables = ([v.value for v in model.trainable_variables],
                     [v.value for v in model.non_trainable_variables])

        def fn(variables: Any, *xs: jax.Array) -> Any:
            args = list(xs) if len(xs) > 1 else xs[0]
            return model.stateless_call(*variables, args, training=False)[0]

        return fn, variables

    return build


def calibrate(model: keras.Model, inputs: Any) -> None:
    """Set the moving statistics of the model's batch norms to those of ``inputs`` (one
    call in training mode with momentum 0). With their initial statistics (mean 0,
    variance 1) the activations of a deep random network such as MobileNetV2 shrink to
    nothing and its softmax is uniform, a result every compiler gets right."""
    norms = [layer for layer in model.layers if isinstance(layer, layers.BatchNormalization)]
    for layer in norms:
        layer.momentum = 0.0
    if norms:
        model(inputs, training=True)


def functional() -> keras.Model:
    """A two-input functional model: a small conv branch over a 32x32 image and a dense
    branch over 16 features, concatenated into a softmax classifier (with dropout and
    layer norm)."""
    image = keras.Input((32, 32, 3))
    table = keras.Input((16,))
    x = layers.Conv2D(16, 3, activation="relu", padding="same")(image)
    x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(32, 3, activation="relu", padding="same")(x)
    x = layers.GlobalAveragePooling2D()(x)
    t = layers.Dense(32, activation="relu")(table)
    h = layers.Concatenate()([x, t])
    h = layers.LayerNormalization()(layers.Dense(64, activation="gelu")(h))
    h = layers.Dropout(0.3)(h)
    return keras.Model([image, table], layers.Dense(10, activation="softmax")(h))


def mobilenet_v2() -> keras.Model:
    """``keras.applications.MobileNetV2`` at 96x96, random weights, 10 classes."""
    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10)
