"""ODE solves with diffrax: a neural ODE (an equinox MLP as the vector field) integrated
by Tsit5 with fixed steps, and per sample (``jax.vmap``) with adaptive steps.

diffrax's defaults otherwise, ``throw=True`` included: its check of a failed solve is
an ``eqx.error_if``, a host callback in the compiled program.
"""

from __future__ import annotations

from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from models.common import Builder, Fn


def ode(adaptive: bool) -> Builder:
    """A builder of a neural ODE solve over t in [0, 1]: 20 fixed Tsit5 steps of the
    whole batch (the final state), or each sample apart with a PID step-size controller
    (rtol 1e-4, atol 1e-6) saved at 11 times."""

    def build(key: jax.Array, inputs: tuple[np.ndarray, ...]) -> tuple[Fn, Any]:
        dim = inputs[0].shape[-1]
        field = eqx.nn.MLP(dim, dim, 64, 2, activation=jnp.tanh, key=key)
        params, static = eqx.partition(field, eqx.is_array)

        def fn(params: Any, y0: jax.Array) -> jax.Array:
            mlp = eqx.combine(params, static)
            if adaptive:
                return jax.vmap(lambda y: _solve_adaptive(mlp, y))(y0)
            return _solve_fixed(mlp, y0)

        return fn, params

    return build


def _solve_fixed(mlp: eqx.nn.MLP, y0: jax.Array) -> jax.Array:
    """Tsit5, 20 steps of 0.05, the batch as one state; the state at t = 1."""
    term = diffrax.ODETerm(lambda t, y, args: jax.vmap(mlp)(y))
    sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.05, y0,
                              stepsize_controller=diffrax.ConstantStepSize(),
                              saveat=diffrax.SaveAt(t1=True))
    return sol.ys[-1]


def _solve_adaptive(mlp: eqx.nn.MLP, y0: jax.Array) -> jax.Array:
    """Tsit5 with a PID controller on one sample; the states at 11 times."""
    term = diffrax.ODETerm(lambda t, y, args: mlp(y))
    sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.1, y0,
                              stepsize_controller=diffrax.PIDController(rtol=1e-4, atol=1e-6),
                              saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 1.0, 11)),
                              max_steps=256)
    return sol.ys
