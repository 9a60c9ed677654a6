"""``tlc.jax.jit``: JAX functions compiled by tlc match jax's own results.

Skipped when jax is not installed (``pip install 'tlc[jax]'``).
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _random(*shape: int, seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _same(got: Any, want: Any, rtol: float = 2e-5, atol: float = 2e-6) -> None:
    """Same pytree structure, every leaf a numpy array close to jax's."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert isinstance(g, np.ndarray)
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _check(fun: Any, *args: Any, **kwargs: Any) -> None:
    _same(tlc_jax.jit(fun)(*args, **kwargs), jax.jit(fun)(*args, **kwargs))


def _export_jax() -> Any:
    spec = importlib.util.spec_from_file_location("export_jax", EXAMPLES / "export_jax.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["mlp", "transformer_block", "cnn"])
def test_examples_match_jax(name: str) -> None:
    """The example models of examples/export_jax.py, called as JAX functions."""
    export = _export_jax()
    fun, shapes = export.MODELS[name]
    args = export._inputs(np.random.default_rng(1), shapes)
    _same(tlc_jax.jit(fun)(*args), jax.jit(fun)(*args), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_along_an_axis(axis: int) -> None:
    _check(functools.partial(jax.nn.softmax, axis=axis), _random(6, 10))


def test_scan_carries_and_stacks() -> None:
    """An RNN-like lax.scan: a carried state and per-step outputs."""

    def rnn(w: Any, xs: Any) -> Any:
        def step(h: Any, x: Any) -> Any:
            h = jnp.tanh(h @ w + x)
            return h, h.sum()

        return jax.lax.scan(step, jnp.zeros(8, xs.dtype), xs)

    _check(rnn, _random(8, 8, seed=1) / 3, _random(5, 8, seed=2))


def test_fori_loop() -> None:
    def power_iteration(a: Any, v: Any) -> Any:
        def body(_: Any, v: Any) -> Any:
            v = a @ v
            return v / jnp.linalg.norm(v)

        return jax.lax.fori_loop(0, 7, body, v)

    _check(power_iteration, _random(6, 6, seed=3), _random(6, seed=4))


def test_argsort_and_take() -> None:
    def top_rows(x: Any, idx: Any) -> Any:
        order = jnp.argsort(x[:, 0])
        return order, jnp.take(x, order, axis=0), jnp.take(x, idx, axis=1)

    _check(top_rows, _random(9, 4, seed=5), np.array([3, 0, 2], np.int32))


def test_conv_1d() -> None:
    def conv(x: Any, k: Any) -> Any:
        return jax.lax.conv_general_dilated(x, k, (2,), [(1, 1)],
                                            dimension_numbers=("NWC", "WIO", "NWC"))

    _check(conv, _random(2, 17, 3, seed=6), _random(3, 3, 4, seed=7))


def test_pytrees_in_and_out() -> None:
    def layer(params: dict[str, Any], batch: tuple[Any, Any]) -> Any:
        x, y = batch
        pred = x @ params["w"] + params["b"]
        return {"loss": jnp.mean((pred - y) ** 2), "pred": [pred, None]}

    params = {"w": _random(5, 3, seed=8), "b": _random(3, seed=9)}
    _check(layer, params, (_random(4, 5, seed=10), _random(4, 3, seed=11)))


def test_keyword_arguments() -> None:
    def affine(x: Any, *, w: Any, b: Any = 0.0) -> Any:
        return x @ w + b

    x, w = _random(3, 4, seed=15), _random(4, 2, seed=16)
    f = tlc_jax.jit(affine)
    _same(f(x, w=w, b=np.float32(1.5)), jax.jit(affine)(x, w=w, b=np.float32(1.5)))
    _same(f(x, b=np.float32(1.5), w=w), jax.jit(affine)(x, w=w, b=np.float32(1.5)))
    assert f.signatures == 1


def test_static_argnums_and_argnames() -> None:
    def f(x: Any, n: int, *, mode: str) -> Any:
        y = x * n
        return jnp.sin(y) if mode == "sin" else jnp.cos(y)

    x = _random(3, 4, seed=12)
    by_num = tlc_jax.jit(f, static_argnums=1, static_argnames="mode")
    by_name = tlc_jax.jit(f, static_argnames=("n", "mode"))
    for n, mode in [(2, "sin"), (3, "cos"), (2, "sin")]:
        want = jax.jit(f, static_argnums=1, static_argnames="mode")(x, n, mode=mode)
        _same(by_num(x, n, mode=mode), want)
        _same(by_name(x, n=n, mode=mode), want)
    assert by_num.signatures == 2


def test_retraces_on_new_shapes_and_dtypes() -> None:
    f = tlc_jax.jit(lambda x: (x * 2).sum(axis=0))
    for x in [_random(3, 4), _random(3, 4, seed=1), _random(5, 2), _random(5, 2, dtype=np.int32)]:
        _same(f(x), jax.jit(lambda x: (x * 2).sum(axis=0))(x))
    assert f.signatures == 3


def test_jax_arrays_python_scalars_and_float64() -> None:
    """jax arrays and numpy arrays alike; a Python scalar is weakly typed as under jax;
    float64 numpy input is jax's float32 without x64."""

    def f(x: Any, s: Any) -> Any:
        return x * s + 1

    x = _random(4, 4, seed=13)
    _check(f, jnp.asarray(x), 0.5)
    _check(f, x.astype(np.float64), np.float32(2))
    _check(f, x.astype(jnp.bfloat16), 3.0)


def test_jax_array_leaves_key_as_their_dtype_shape_and_weak_type() -> None:
    """The key of a jax array leaf (read off its aval) is what jax's own view of it
    gives: weakly typed scalars apart from strong ones, bfloat16 as itself, and a
    function called with each compiles once per distinct key."""
    from backend_opencl.api.jax.common import leaf_key

    weak, strong = jnp.asarray(1.5), jnp.asarray(np.float32(1.5))
    half = jnp.asarray(_random(2, 3), dtype=jnp.bfloat16)
    assert leaf_key(weak) == ((), np.dtype(np.float32), True)
    assert leaf_key(strong) == ((), np.dtype(np.float32), False)
    assert leaf_key(half) == ((2, 3), np.dtype(jnp.bfloat16), False)
    assert leaf_key(half) == leaf_key(np.asarray(half))
    f = tlc_jax.jit(lambda x, s: x * s)
    x = jnp.asarray(_random(3, seed=14))
    for s in (weak, strong, weak, np.float32(1.5)):
        _same(f(x, s), jax.jit(lambda x, s: x * s)(x, s))
    assert f.signatures == 2


def test_decorator_forms() -> None:
    @tlc_jax.jit
    def double(x: Any) -> Any:
        return 2 * x

    @functools.partial(tlc_jax.jit, static_argnums=1)
    def scale(x: Any, k: float) -> Any:
        return k * x

    x = _random(3, seed=14)
    _same(double(x), 2 * x)
    _same(scale(x, 3.0), np.float32(3.0) * x)
    assert double.__name__ == "double"


def test_unsupported_op_is_located_in_the_python_source() -> None:
    """An op tlc cannot compile is reported at the Python line that made it."""

    def eig(x: Any) -> Any:  # eigh: a LAPACK call tlc has no kernel for
        return jnp.linalg.eigh(x @ x.T + 3 * jnp.eye(3))[0]

    line = inspect.getsourcelines(eig)[1] + 1
    with pytest.raises(tlc_jax.JaxCompileError) as info:
        tlc_jax.jit(eig)(np.eye(3, dtype=np.float32))
    first = info.value.first
    assert first.loc.file == __file__ and first.loc.line == line
    assert "'stablehlo.custom_call' @lapack_ssyevd_ffi is not supported yet" in first.message
    assert "jnp.linalg.eigh" in str(info.value)  # the quoted source line
    assert "the op in the StableHLO jax produced" in str(info.value)


def test_unhashable_static_argument_is_a_clear_error() -> None:
    from tensorlang.diagnostics import TlcError

    f = tlc_jax.jit(functools.partial(jnp.reshape), static_argnums=1)
    with pytest.raises(TlcError, match="partial: static arguments must be hashable, got list"):
        f(_random(6), [2, 3])


def _identity(x: Any) -> Any:
    return x


class _Lowered:
    """A stand-in for jax's ``Lowered`` whose text tlc cannot parse (an op jax would
    only emit on several devices), at this file's ``line`` in the debug locations."""

    def __init__(self, line: int) -> None:
        self.line = line

    def as_text(self, debug_info: bool = False) -> str:
        loc = " loc(#loc2)" if debug_info and self.line else ""
        return ("module @jit_f {\n  func.func public @main(%arg0: tensor<2xf32>) -> "
                "tensor<2xf32> {\n    %0 = \"sdy.all_gather\"(%arg0) : (tensor<2xf32>) -> "
                f"tensor<2xf32>{loc}\n    return %0 : tensor<2xf32>\n  }}\n}}\n"
                f'#loc1 = loc("{__file__}":{self.line}:4 to :30)\n#loc2 = loc("f"(#loc1))\n')


@pytest.mark.parametrize("located", [True, False])
def test_parse_errors_are_jax_compile_errors(located: bool) -> None:
    """A parse error takes the path of every compile error: a JaxCompileError at the
    user's line where jax recorded one, else at the StableHLO line."""
    line = inspect.currentframe().f_lineno if located else 0
    f = tlc_jax.jit(_identity)
    f._jitted = type("Jit", (), {"lower": lambda self, *args: _Lowered(line)})()
    with pytest.raises(tlc_jax.JaxCompileError) as info:
        f(_random(2))
    first = info.value.first
    assert "'sdy.all_gather' is not supported" in first.message
    if located:
        assert (first.loc.file, first.loc.line) == (__file__, line)
        assert "<jax _identity>:3:10: note: the op in the StableHLO jax produced" \
            in str(info.value)
    else:
        assert (first.loc.file, first.loc.line, first.loc.col) == ("<jax _identity>", 3, 10)
