"""Device loops (one kernel per ``while``) whose body holds another ``while`` (run as a
``for`` of its trip bound, :func:`frontend.lower.families.control.device_loop._trip_bound`) or a
``scatter`` (applied in order by the loop's one work-item): the programs jax writes for
``fori_loop`` in ``fori_loop``, ``x.at[i].set`` in a loop (plain and under ``vmap``), and
diffrax's solvers.  Every result is checked against ``jax.jit``; the plan is checked to
be one loop kernel with no host ``While``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import frontend
from frontend.lower.core.driver import lower_function
from frontend.lower.families.control import device_loop
from tensorlang.plan import Launch, Step, While

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")


pytestmark = pytest.mark.usefixtures("uncached")


def _random(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _steps(steps: tuple[Step, ...]) -> list[Step]:
    """Every step, nested ones included."""
    out: list[Step] = []
    for s in steps:
        out.append(s)
        for field in ("cond", "body", "then", "otherwise"):
            out.extend(_steps(getattr(s, field, ()) or ()))
    return out


def _host_loop(s: Step) -> bool:
    """A host ``While`` running steps per iteration (not the relaunch of one loop kernel
    by the flag it leaves, as a device loop without a trip count is)."""
    return isinstance(s, While) and (bool(s.body) or not all(
        isinstance(c, Launch) and "while" in c.kernel for c in s.cond))


def _plan_loops(text: str, callbacks: int | None = None) -> tuple[int, int]:
    """(loop kernels launched, host loops) of the plan of StableHLO ``text``."""
    steps = _steps(lower_function(frontend.parse(text), host_callbacks=callbacks).plan.steps)
    return (sum(isinstance(s, Launch) and "while" in s.kernel for s in steps),
            sum(_host_loop(s) for s in steps))


def _loop_kernels(fun: Callable[..., Any], *args: Any) -> tuple[int, int]:
    """(loop kernels launched, host loops) of ``fun``'s plan."""
    return _plan_loops(jax.jit(fun).lower(*args).as_text())


def _check(fun: Callable[..., Any], *args: Any, rtol: float = 1e-5) -> None:
    """tlc's results equal jax's, and the loops are one kernel on the device."""
    kernels, host_loops = _loop_kernels(fun, *args)
    assert kernels >= 1 and host_loops == 0, (kernels, host_loops)
    got = jax.tree.leaves(tlc_jax.jit(fun)(*args))
    want = jax.tree.leaves(jax.jit(fun)(*args))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-5)


def nested_fori(x: Any) -> Any:
    """A fori_loop whose body is another, the inner trip count fixed."""
    def outer(i: Any, y: Any) -> Any:
        def inner(j: Any, z: Any) -> Any:
            return jnp.tanh(z * 0.9 + j.astype(jnp.float32) * 0.1 + i.astype(jnp.float32))
        return jax.lax.fori_loop(0, 3, inner, y)
    return jax.lax.fori_loop(0, 5, outer, x)


def test_a_loop_in_a_loop_is_one_kernel() -> None:
    _check(nested_fori, _random(4, 8, seed=1))


def test_an_inner_loop_stopping_early_on_a_second_condition() -> None:
    def fun(x: Any) -> Any:
        def outer(i: Any, y: Any) -> Any:
            def cond(c: Any) -> Any:  # bounded by j < 6, stops once the sum passes 2
                return (c[0] < 6) & (c[1].sum() < 2.0)
            def body(c: Any) -> Any:
                return c[0] + 1, c[1] + jnp.abs(c[1]) * 0.5 + 0.01
            return jax.lax.while_loop(cond, body, (0, y))[1] * 0.5
        return jax.lax.fori_loop(0, 4, outer, x)

    _check(fun, _random(3, 5, seed=2) * 0.1)


def test_an_inner_loop_of_no_trips() -> None:
    def fun(x: Any) -> Any:
        def outer(i: Any, y: Any) -> Any:
            return jax.lax.fori_loop(3, 3, lambda j, z: z * 100.0, y) + 1.0
        return jax.lax.fori_loop(0, 4, outer, x)

    _check(fun, _random(6, seed=3))


def test_a_scatter_in_a_loop_with_indices_in_and_out_of_range() -> None:
    def fun(x: Any, u: Any) -> Any:
        def body(i: Any, acc: Any) -> Any:  # i - 2 runs from -2 to 6: some dropped
            return acc.at[i - 2].set(u * i.astype(jnp.float32), mode="drop") * 0.99
        return jax.lax.fori_loop(0, 9, body, x)

    _check(fun, _random(5, 3, seed=4), _random(3, seed=5))


def test_a_scatter_adding_at_repeated_indices_in_a_loop() -> None:
    def fun(x: Any, idx: Any, u: Any) -> Any:
        return jax.lax.fori_loop(0, 3, lambda i, acc: acc.at[idx].add(u) * 0.5, x)

    idx = np.array([1, 3, 1, 0, 3, 3], np.int32)
    _check(fun, _random(5, seed=6), idx, _random(6, seed=7))


def test_a_batched_scatter_in_a_loop_under_vmap() -> None:
    def one(x: Any, u: Any) -> Any:
        def body(i: Any, acc: Any) -> Any:
            return acc.at[i % 4].set(acc[(i + 1) % 4] + u)
        return jax.lax.fori_loop(0, 6, body, x)

    _check(jax.vmap(one), _random(3, 4, 2, seed=8), _random(3, 2, seed=9))


def test_a_big_inner_loop_keeps_the_outer_loop_on_the_host(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setattr(device_loop, "MAX_INNER_TRIPS", 2)  # the inner loop runs 3 times
    kernels, host_loops = _loop_kernels(nested_fori, _random(4, 8, seed=1))
    assert host_loops == 1 and kernels == 1  # the inner loop alone is a device loop
    x = _random(4, 8, seed=1)
    np.testing.assert_allclose(np.asarray(tlc_jax.jit(nested_fori)(x)),
                               np.asarray(jax.jit(nested_fori)(x)), rtol=1e-5, atol=1e-6)


def test_a_diffrax_solve_is_one_loop_kernel() -> None:
    diffrax = pytest.importorskip("diffrax")

    def solve(y0: Any, w: Any) -> Any:
        term = diffrax.ODETerm(lambda t, y, args: jnp.tanh(y @ args))
        sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0,
                                  args=w, stepsize_controller=diffrax.ConstantStepSize())
        return sol.ys

    y0, w = _random(4, 3, seed=10), _random(3, 3, seed=11) * 0.5
    text = tlc_jax.jit(solve).lower(y0, w).as_text()
    kernels, host_loops = _plan_loops(text, callbacks=text.count("xla_ffi_python"))
    assert kernels >= 1 and host_loops == 0
    np.testing.assert_allclose(np.asarray(tlc_jax.jit(solve)(y0, w)),
                               np.asarray(jax.jit(solve)(y0, w)), rtol=2e-5, atol=1e-6)
