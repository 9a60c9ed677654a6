"""``tlc.jax.jit`` functions inside jax's transformations: ``jax.jit``, ``grad``,
``value_and_grad``, ``jvp``, ``vjp``, ``linearize``, ``vmap`` and ``eval_shape`` give what
they give on the function under ``jax.jit`` (tlc compiling each transformed function).

Skipped when jax is not installed (``pip install 'tlc[jax]'``).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")


def _random(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def mlp_loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    """A small MLP's mean squared error."""
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


PARAMS = {"w1": _random(4, 8, seed=1), "b1": _random(8, seed=2), "w2": _random(8, 2, seed=3)}
X, Y = _random(5, 4, seed=4), _random(5, 2, seed=5)
LOSS = tlc_jax.jit(mlp_loss)  # shared: each transformed function compiles once
JAX_LOSS = jax.jit(mlp_loss)


def _close(got: Any, want: Any, rtol: float = 2e-5, atol: float = 1e-5) -> None:
    """Same pytree structure, shapes and dtypes as jax's, and values as close as f32
    sums in another order are (the absolute error of values near 1)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def test_grad_of_an_mlp_loss() -> None:
    _close(jax.grad(LOSS)(PARAMS, X, Y), jax.grad(JAX_LOSS)(PARAMS, X, Y))


def test_value_and_grad_under_jit() -> None:
    """value_and_grad of the tlc function, all inside jax.jit (lowered as host calls)."""
    def step(params: Any, loss: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(params, X, Y)
        return value, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    _close(jax.jit(step, static_argnums=1)(PARAMS, LOSS),
           jax.jit(step, static_argnums=1)(PARAMS, JAX_LOSS))


def test_jvp_and_linearize() -> None:
    tangents = (jax.tree.map(lambda p: p / 3, PARAMS), _random(5, 4, seed=6), Y / 2)
    _close(jax.jvp(LOSS, (PARAMS, X, Y), tangents),
           jax.jvp(JAX_LOSS, (PARAMS, X, Y), tangents))
    value, linear = jax.linearize(LOSS, PARAMS, X, Y)
    want_value, want_linear = jax.linearize(JAX_LOSS, PARAMS, X, Y)
    _close((value, linear(*tangents)), (want_value, want_linear(*tangents)))


def test_vjp_with_some_inputs_not_differentiated() -> None:
    """The cotangents of the inputs jax differentiates; an integer input has none."""
    def scaled(x: Any, w: Any, k: Any) -> Any:
        return jnp.sin(x @ w) * k, jnp.argmax(x, axis=1)

    x, w, k = _random(3, 4, seed=7), _random(4, 2, seed=8), np.int32(3)
    out, pullback = jax.vjp(tlc_jax.jit(scaled), x, w, k)
    want_out, want_pullback = jax.vjp(jax.jit(scaled), x, w, k)
    _close(out, want_out)
    cotangent = (_random(3, 2, seed=9), np.zeros(3, jax.dtypes.float0))
    got, want = pullback(cotangent), want_pullback(cotangent)
    _close(got[:2], want[:2])
    assert got[2].dtype == jax.dtypes.float0


@pytest.mark.parametrize("in_axes", [(None, 0, 0), (None, 1, None)])
def test_vmap_in_axes(in_axes: tuple[Any, ...]) -> None:
    xs, ys = _random(3, 5, 4, seed=10), _random(3, 5, 2, seed=11)
    if in_axes[1] == 1:
        xs, ys = xs.transpose(1, 0, 2), Y
    _close(jax.vmap(LOSS, in_axes=in_axes)(PARAMS, xs, ys),
           jax.vmap(JAX_LOSS, in_axes=in_axes)(PARAMS, xs, ys))


def test_nested_vmap() -> None:
    """Every x against every y: vmap of vmap, compiled by tlc as one batched program."""
    def dist(x: Any, y: Any) -> Any:
        return jnp.sqrt(jnp.sum((x - y) ** 2))

    xs, ys = _random(4, 3, seed=12), _random(6, 3, seed=13)
    pairwise = jax.vmap(jax.vmap(tlc_jax.jit(dist), in_axes=(None, 0)), in_axes=(0, None))
    want = jax.vmap(jax.vmap(jax.jit(dist), in_axes=(None, 0)), in_axes=(0, None))
    _close(pairwise(xs, ys), want(xs, ys))


def test_per_example_grads() -> None:
    """grad inside vmap, and that under jax.jit."""
    xs, ys = X[:, None], Y[:, None]
    per_example = jax.vmap(jax.grad(LOSS), in_axes=(None, 0, 0))
    want = jax.vmap(jax.grad(JAX_LOSS), in_axes=(None, 0, 0))(PARAMS, xs, ys)
    _close(per_example(PARAMS, xs, ys), want)
    _close(jax.jit(per_example)(PARAMS, xs, ys), want)


def test_forward_over_reverse() -> None:
    """A Hessian-vector product: jvp of grad (each derivative a tlc program)."""
    def energy(x: Any) -> Any:
        return jnp.sum(jnp.tanh(x @ PARAMS["w1"]) ** 2)

    def hvp(f: Any, v: Any) -> Any:
        return jax.jvp(jax.grad(f), (X,), (v,))[1]

    v = _random(5, 4, seed=14)
    _close(hvp(tlc_jax.jit(energy), v), hvp(jax.jit(energy), v))


def test_linear_transpose() -> None:
    """A linear tlc function transposed: its VJP at zero."""
    def project(v: Any) -> Any:
        return 2 * v @ PARAMS["w1"]

    cotangent = _random(5, 8, seed=16)
    _close(jax.linear_transpose(tlc_jax.jit(project), X)(cotangent),
           jax.linear_transpose(jax.jit(project), X)(cotangent))


def test_eval_shape_compiles_nothing() -> None:
    f = tlc_jax.jit(mlp_loss)
    assert jax.eval_shape(f, PARAMS, X, Y) == jax.eval_shape(mlp_loss, PARAMS, X, Y)
    assert f.signatures == 0


def test_inside_jax_jit_with_other_ops() -> None:
    """jax's ops before and after a tlc function in one jax.jit: the tlc part is a host
    call into tlc's executable, the rest XLA's."""
    def model(params: Any, x: Any, loss: Any) -> Any:
        x = jnp.cos(x) * 2
        return jnp.log1p(loss(params, x, jnp.flip(Y, 0)) ** 2) + x.sum()

    got = jax.jit(model, static_argnums=2)
    _close(got(PARAMS, X, LOSS), jax.jit(model, static_argnums=2)(PARAMS, X, JAX_LOSS))
    assert "tlc_call" in str(jax.make_jaxpr(model, static_argnums=2)(PARAMS, X, LOSS))
    assert "xla_ffi_python_cpu_callback" in got.lower(PARAMS, X, LOSS).as_text()


def test_typed_keys_and_static_arguments_under_grad() -> None:
    """Dropout with a key and a static rate, differentiated in x."""
    def dropout(key: Any, x: Any, rate: float) -> Any:
        keep = jax.random.bernoulli(key, 1 - rate, x.shape)
        return jnp.sum(jnp.where(keep, x / (1 - rate), 0) ** 2), jax.random.split(key)[0]

    key = jax.random.key(3)
    grad = jax.grad(tlc_jax.jit(dropout, static_argnums=2), argnums=1, has_aux=True)
    (g, new_key), (w, want_key) = grad(key, X, 0.5), \
        jax.grad(jax.jit(dropout, static_argnums=2), argnums=1, has_aux=True)(key, X, 0.5)
    _close(g, w)
    assert new_key.dtype == want_key.dtype
    np.testing.assert_array_equal(jax.random.key_data(new_key), jax.random.key_data(want_key))


def test_tlc_function_inside_tlc_function() -> None:
    """Called inside another tlc.jax.jit function it is inlined: one tlc program."""
    outer = tlc_jax.jit(lambda p, x, y: jax.grad(LOSS, argnums=1)(p, x, y) * 2)
    _close(outer(PARAMS, X, Y), jax.grad(JAX_LOSS, argnums=1)(PARAMS, X, Y) * 2)
    assert "xla_ffi_python_cpu_callback" not in outer.lower(PARAMS, X, Y).as_text()


def test_collective_over_an_enclosing_axis_is_a_located_error() -> None:
    centred = tlc_jax.jit(lambda v: v - jax.lax.pmean(v, "batch"))
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(tlc_jax.JaxCompileError) as info:
        jax.vmap(centred, axis_name="batch")(X)
    first = info.value.first
    assert (first.loc.file, first.loc.line) == (__file__, line)
    assert "uses the named axis 'batch' of an enclosing transformation" in first.message


def test_export_is_a_located_error() -> None:
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(tlc_jax.JaxCompileError) as info:
        jax.export.export(jax.jit(lambda x: LOSS(PARAMS, x, Y)))(X)
    first = info.value.first
    assert (first.loc.file, first.loc.line) == (__file__, line)
    assert "jax.export cannot serialize mlp_loss" in first.message


def test_compile_error_under_a_transformation_is_at_the_op() -> None:
    """An op tlc cannot compile, met compiling vmap(f) inside jax.jit: at f's line."""
    def eig(x: Any) -> Any:  # eigh: a LAPACK call tlc has no kernel for
        return jnp.linalg.eigh(x @ x.T + 3 * jnp.eye(3))[0]

    line = inspect.getsourcelines(eig)[1] + 1
    with pytest.raises(tlc_jax.JaxCompileError) as info:
        jax.jit(jax.vmap(tlc_jax.jit(eig)))(_random(2, 3, 3, seed=15))
    assert (info.value.first.loc.file, info.value.first.loc.line) == (__file__, line)
    assert "<jax vmap(" in str(info.value)  # the program tlc was compiling
