"""Host callbacks through ``tlc.jax.jit``: ``jax.debug.print``, ``jax.pure_callback``,
``io_callback`` (ordered or not) and equinox's ``error_if`` run in program order, inside
loops and branches, and give what ``jax.jit`` gives: the same results and the same printed
text (printed values are computed exactly: copies, doublings, integers).

Skipped without jax; the equinox and diffrax cases without those (not tlc's dependencies).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")
from jax.experimental import io_callback  # noqa: E402

import frontend  # noqa: E402
from frontend.lower import lower_function  # noqa: E402
from tensorlang.diagnostics import CallbackError  # noqa: E402
from tensorlang.plan import Case, If  # noqa: E402


def _random(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _same(got: Any, want: Any, rtol: float = 2e-6, atol: float = 2e-6) -> None:
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        w = np.asarray(w)
        assert isinstance(g, np.ndarray) and g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _like_jax(capsys: pytest.CaptureFixture[str], fun: Any, *args: Any,
              rtol: float = 2e-6) -> str:
    """Run ``fun`` under jax.jit and tlc.jax.jit: the same results and printed text (not
    empty); that text."""
    want = jax.block_until_ready(jax.jit(fun)(*args))
    jax.effects_barrier()
    printed = capsys.readouterr().out
    got = tlc_jax.jit(fun)(*args)
    _same(got, want, rtol=rtol)
    assert capsys.readouterr().out == printed != ""
    return printed


def test_debug_print(capsys: pytest.CaptureFixture[str]) -> None:
    def f(x: Any) -> Any:
        jax.debug.print("x = {x}", x=x)
        return x * 2

    printed = _like_jax(capsys, f, _random(4, 3))
    assert printed.startswith("x = [[")


def test_debug_print_formats_several_values(capsys: pytest.CaptureFixture[str]) -> None:
    def f(x: Any, n: Any) -> Any:
        y = x * 2
        jax.debug.print("{} then {y} and n={n}; first {f:.3f}", x, y=y, n=n + 1, f=x[0])
        return y + n

    _like_jax(capsys, f, _random(3, seed=1), np.int32(4))


def test_debug_print_in_fori_loop(capsys: pytest.CaptureFixture[str]) -> None:
    def f(x: Any) -> Any:
        def body(i: Any, c: Any) -> Any:
            jax.debug.print("step {i}: {c}", i=i, c=c)
            return c * 2

        return jax.lax.fori_loop(0, 4, body, x)

    printed = _like_jax(capsys, f, _random(2, seed=2))
    assert [line.split(":")[0] for line in printed.splitlines()] == [
        f"step {i}" for i in range(4)]


def test_debug_print_in_scan(capsys: pytest.CaptureFixture[str]) -> None:
    def f(c: Any, xs: Any) -> Any:
        def body(carry: Any, x: Any) -> Any:
            jax.debug.print("carry {c} x {x}", c=carry, x=x)
            return carry + x, carry * 2

        return jax.lax.scan(body, c, xs)

    _like_jax(capsys, f, _random(3, seed=3), _random(5, 3, seed=4))


def test_debug_print_in_while_loop(capsys: pytest.CaptureFixture[str]) -> None:
    def f(x: Any) -> Any:
        def body(c: Any) -> Any:
            i, v = c
            jax.debug.print("i={i} v={v}", i=i, v=v)
            return i + 1, v * 2

        return jax.lax.while_loop(lambda c: c[0] < 3 + (c[1][0] > 100), body, (0, x))

    printed = _like_jax(capsys, f, np.abs(_random(2, seed=5)) + 1)
    assert len(printed.splitlines()) == 3


@pytest.mark.parametrize("positive", [True, False])
def test_debug_print_in_cond_branches(capsys: pytest.CaptureFixture[str],
                                      positive: bool) -> None:
    def f(x: Any) -> Any:
        def yes(a: Any) -> Any:
            jax.debug.print("yes {a}", a=a)
            return a * 2

        def no(a: Any) -> Any:
            jax.debug.print("no {a}", a=-a)
            return a

        return jax.lax.cond(x[0] > 0, yes, no, x)

    x = np.abs(_random(3, seed=6)) * (1 if positive else -1)
    assert _like_jax(capsys, f, x).startswith("yes" if positive else "no")


@pytest.mark.parametrize("index", [0, 1, 2, 5])
def test_debug_print_in_switch(capsys: pytest.CaptureFixture[str], index: int) -> None:
    def branch(k: int) -> Any:
        def run(a: Any) -> Any:
            jax.debug.print("branch {k}: {a}", k=k, a=a)
            return a * (k + 1)
        return run

    def f(i: Any, x: Any) -> Any:
        return jax.lax.switch(i, [branch(0), branch(1), branch(2)], x)

    printed = _like_jax(capsys, f, np.int32(index), _random(2, seed=7))
    assert printed.startswith(f"branch {min(index, 2)}:")


def test_debug_callback_and_ahead_of_time(capsys: pytest.CaptureFixture[str]) -> None:
    """``jax.debug.callback`` runs too, and the compiled program prints its kernels."""
    def f(x: Any) -> Any:
        jax.debug.callback(lambda v: print("sum of squares", float((v * v).sum())), x)
        return jnp.sin(x)

    x = _random(5, seed=20)
    _like_jax(capsys, f, x, rtol=1e-6)
    compiled = tlc_jax.jit(f).lower(x).compile()
    assert "func @" in compiled.as_text("tl")
    _same(compiled(x), np.sin(x), rtol=1e-6)


def test_pure_callback_results_feed_later_ops() -> None:
    """Two results of two dtypes, used by later ops (and by another callback)."""
    def host(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.sin(x), np.argsort(x, axis=-1).astype(np.int32)

    def f(x: Any) -> Any:
        shapes = (jax.ShapeDtypeStruct(x.shape, x.dtype),
                  jax.ShapeDtypeStruct(x.shape, np.int32))
        s, order = jax.pure_callback(host, shapes, jnp.exp(x))
        t = jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), s * 2)
        return t + order, jnp.take_along_axis(x, order, axis=-1)

    x = _random(4, 5, seed=8)
    _same(tlc_jax.jit(f)(x), jax.jit(f)(x), rtol=1e-5)


def test_pure_callback_decides_a_loop() -> None:
    """A host loop whose predicate reads a callback's result."""
    def f(x: Any) -> Any:
        def body(c: Any) -> Any:
            return jax.pure_callback(lambda v: v * 1.5, jax.ShapeDtypeStruct(c.shape, c.dtype),
                                     c)

        return jax.lax.while_loop(lambda c: c.sum() < 100, body, x)

    x = np.abs(_random(3, seed=9)) + 1
    _same(tlc_jax.jit(f)(x), jax.jit(f)(x), rtol=1e-6)


@pytest.mark.parametrize("ordered", [False, True])
def test_io_callback_order(ordered: bool) -> None:
    """io_callback in a loop: called in the same order with the same values as jax."""
    calls: list[tuple[str, np.ndarray]] = []

    def record(tag: str) -> Any:
        def function(v: np.ndarray) -> np.ndarray:
            calls.append((tag, np.array(v)))
            return np.asarray(v + 1, v.dtype)
        return function

    def f(x: Any) -> Any:
        def body(i: Any, c: Any) -> Any:
            spec = jax.ShapeDtypeStruct(c.shape, c.dtype)
            c = io_callback(record("a"), spec, c, ordered=ordered)
            return io_callback(record("b"), spec, c * 2, ordered=ordered)

        return jax.lax.fori_loop(0, 3, body, x)

    x = _random(2, seed=10)
    want = jax.block_until_ready(jax.jit(f)(x))
    jax.effects_barrier()
    want_calls, calls[:] = list(calls), []
    _same(tlc_jax.jit(f)(x), want)
    assert [t for t, _ in calls] == [t for t, _ in want_calls] == ["a", "b"] * 3
    for (_, got), (_, expected) in zip(calls, want_calls, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_ordered_debug_print_threads_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    """Ordered effects add token parameters and results to the program; the bridge
    passes and drops them."""
    def f(x: Any) -> Any:
        def body(i: Any, c: Any) -> Any:
            jax.debug.print("ordered {i} {c}", i=i, c=c, ordered=True)
            return c * 2

        y = jax.lax.fori_loop(0, 3, body, x)
        jax.debug.print("done {y}", y=y, ordered=True)
        return y

    x = _random(2, seed=11)
    assert "!stablehlo.token" in jax.jit(f).lower(x).as_text()
    printed = _like_jax(capsys, f, x)
    assert printed.splitlines()[-1].startswith("done")
    summary = tlc_jax.jit(f).lower(x).compile().summary()
    assert summary.parameters[0][1] is None and "token" in str(summary)


def test_exception_in_a_callback_reaches_the_caller() -> None:
    """jax wraps it in a JaxRuntimeError; tlc raises the function's own exception."""
    def check(v: np.ndarray) -> np.ndarray:
        if (v > 0).all():
            raise ValueError("all positive")
        return v

    def f(x: Any) -> Any:
        return jax.pure_callback(check, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2

    with pytest.raises(ValueError, match="all positive"):
        tlc_jax.jit(f)(np.abs(_random(3, seed=12)) + 1)
    x = _random(3, seed=13)
    x[0] = -1
    _same(tlc_jax.jit(f)(x), x * 2)


def test_wrong_result_shape_is_reported() -> None:
    """jax's wrapper checks what the function returns (a RuntimeError, as under jax.jit);
    tlc checks it again for functions given to compile_stablehlo directly."""
    def f(x: Any) -> Any:
        return jax.pure_callback(lambda v: v[:1], jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    with pytest.raises((RuntimeError, CallbackError), match="shape"):
        tlc_jax.jit(f)(_random(3, seed=14))


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmapped_pure_callback(method: str) -> None:
    """jax's vmap_method: a loop of calls (sequential) or one call on the batch."""
    calls: list[tuple[int, ...]] = []

    def host(v: np.ndarray, w: np.ndarray) -> np.ndarray:
        calls.append(v.shape)
        return np.tanh(v) * w

    def one(v: Any, w: Any) -> Any:
        return jax.pure_callback(host, jax.ShapeDtypeStruct(v.shape, v.dtype), v, w,
                                 vmap_method=method)

    f = jax.vmap(one, in_axes=(0, None))
    x, w = _random(4, 3, seed=15), _random(3, seed=16)
    want = jax.jit(f)(x, w)
    want_calls, calls[:] = list(calls), []
    _same(tlc_jax.jit(f)(x, w), want, rtol=1e-6)
    assert calls == want_calls


def test_equinox_error_if() -> None:
    """equinox's runtime error (a pure_callback that raises) reaches the caller as
    equinox's exception; without the error the value passes through."""
    eqx = pytest.importorskip("equinox")

    def f(x: Any) -> Any:
        return eqx.error_if(x * 2, x.sum() > 0, "positive sum")

    with pytest.raises(Exception, match="positive sum") as info:
        tlc_jax.jit(f)(np.abs(_random(3, seed=17)))
    assert "equinox" in type(info.value).__module__
    x = -np.abs(_random(3, seed=18))
    _same(tlc_jax.jit(f)(x), jax.jit(f)(x))


def test_equinox_error_if_passing_then_failing_then_passing() -> None:
    """One compiled function: passing checks are bet on (no callback, no read of the
    device), a failing call still raises equinox's error, later calls stay right."""
    eqx = pytest.importorskip("equinox")

    def f(x: Any, limit: Any) -> Any:
        y = jnp.tanh(x) * 3
        return eqx.error_if(y + 1, y.sum() > limit, "too large")

    compiled, x = tlc_jax.jit(f), _random(64, seed=20)
    for limit in (1e3, 1e4):
        _same(compiled(x, np.float32(limit)), jax.jit(f)(x, np.float32(limit)), rtol=1e-6)
    with pytest.raises(Exception, match="too large"):
        compiled(np.abs(x), np.float32(1.0))
    _same(compiled(x, np.float32(1e3)), jax.jit(f)(x, np.float32(1e3)), rtol=1e-6)


def test_diffrax_checks_of_static_arguments_fold_away() -> None:
    """diffrax checks its static arguments (t0 != t1, save times increasing and inside
    [t0, t1]) with host branches on constants: decided when compiling, the plan keeps
    only the check of the solve's result (and the loop kernel's flag)."""
    diffrax = pytest.importorskip("diffrax")

    def solve(y0: Any) -> Any:
        term = diffrax.ODETerm(lambda t, y, args: -y + jnp.cos(t))
        sol = diffrax.diffeqsolve(
            term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0,
            stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-6),
            saveat=diffrax.SaveAt(ts=jnp.linspace(0, 1, 6)))
        return sol.ys

    y0 = _random(4, seed=21)
    text = jax.jit(solve).lower(y0).as_text()
    plan = lower_function(frontend.parse(text), host_callbacks=16).plan
    branches = [s for s in plan.steps if isinstance(s, (If, Case))]
    assert len(branches) <= 1 and text.count('"stablehlo.case"') >= 3
    np.testing.assert_allclose(tlc_jax.jit(solve)(y0), jax.jit(solve)(y0), rtol=1e-5,
                               atol=1e-6)


def test_diffrax_default_solve() -> None:
    """A default adaptive ODE solve (Tsit5, PIDController, SaveAt(ts)): equinox's checks
    are host callbacks inside its while loops."""
    diffrax = pytest.importorskip("diffrax")

    def solve(y0: Any, k: Any) -> Any:
        term = diffrax.ODETerm(lambda t, y, args: -args * y + jnp.sin(t))
        sol = diffrax.diffeqsolve(
            term, diffrax.Tsit5(), t0=0.0, t1=2.0, dt0=0.1, y0=y0, args=k,
            stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-6),
            saveat=diffrax.SaveAt(ts=jnp.linspace(0, 2, 5)))
        return sol.ys, sol.stats["num_steps"]

    y0, k = _random(3, seed=19), np.float32(0.7)
    (ys, steps), (want_ys, want_steps) = tlc_jax.jit(solve)(y0, k), jax.jit(solve)(y0, k)
    np.testing.assert_allclose(ys, want_ys, rtol=1e-5, atol=1e-6)
    assert int(steps) == int(want_steps)
