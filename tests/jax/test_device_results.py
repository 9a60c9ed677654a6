"""Results that stay on the device (``tlc.jax.jit(f, device_results=True)``): calls return
:class:`DeviceArray` s without waiting, the next call takes them as they stand, and they
read back as jax's results (``np.asarray``, ``__array__``, DLPack, ``jnp.asarray``).

Every check compares with ``jax.jit`` on random data.  The chains and the threads also run
in CI's stress slice (``TLC_STRESS=1``: the device late behind every command), where a
result read before its commands ran, or a frame reused while a result lives in it, gives
wrong numbers.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
tlc_jax = pytest.importorskip("tlc.jax")

DeviceArray = tlc_jax.DeviceArray


def _random(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def step(x: Any, w: Any) -> Any:
    """One small recurrent step (a matrix product, a nonlinearity, a bias)."""
    return jnp.tanh(x @ w) + 0.5 * x


def stats(x: Any) -> dict[str, Any]:
    """Several results of several kinds: a reduction, an element-wise map, a comparison."""
    return {"sum": x.sum(0), "exp": jnp.exp(-x * x), "pos": x > 0, "n": jnp.int32(x.size)}


STEP = tlc_jax.jit(step, device_results=True)
STATS = tlc_jax.jit(stats, device_results=True)
W = _random(32, 32, seed=1) * 0.3


def _chain(x: np.ndarray, n: int) -> np.ndarray:
    """``step`` applied ``n`` times by numpy (float64), the reference of the chains."""
    y, w = x.astype(np.float64), W.astype(np.float64)
    for _ in range(n):
        y = np.tanh(y @ w) + 0.5 * y
    return y


def test_results_are_device_arrays_equal_to_jax() -> None:
    x = _random(16, 32, seed=2)
    got = STATS(x)
    want = jax.jit(stats)(x)
    for name in want:
        assert isinstance(got[name], DeviceArray), name
        assert got[name].shape == want[name].shape and got[name].dtype == want[name].dtype
        np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]),
                                   rtol=1e-5, atol=1e-6)


def test_a_chain_of_calls_stays_on_the_device() -> None:
    x = _random(16, 32, seed=3)
    y = x
    for _ in range(12):
        y = STEP(y, W)
        assert isinstance(y, DeviceArray)
    np.testing.assert_allclose(np.asarray(y), _chain(x, 12), rtol=1e-4, atol=1e-5)


def test_results_kept_alive_are_not_overwritten_by_later_calls() -> None:
    xs = [_random(16, 32, seed=10 + i) for i in range(12)]
    held = [STEP(x, W) for x in xs]  # twelve results alive at once, none read
    for _ in range(6):  # more calls, their results dropped unread
        STEP(xs[0], W)
    for x, r in zip(xs, held, strict=True):
        np.testing.assert_allclose(np.asarray(r), _chain(x, 1), rtol=1e-4, atol=1e-5)


def test_numpy_arguments_are_taken_at_the_call() -> None:
    x = _random(256, 128, seed=4)  # large enough to be bound in place by a waiting call
    want = np.exp(-x * x)
    got = STATS(x)
    x[...] = 7.0  # the caller reuses its array before reading the result
    np.testing.assert_allclose(np.asarray(got["exp"]), want, rtol=1e-5, atol=1e-6)


def test_conversions() -> None:
    x = _random(8, 32, seed=5)
    r = STEP(x, W)
    assert r.block_until_ready() is r and r.is_ready()
    want = _chain(x, 1)
    np.testing.assert_allclose(np.asarray(r), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.from_dlpack(r), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.asarray(r)), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(r, dtype=np.float64), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r + 1, want + 1, rtol=1e-4, atol=1e-5)
    assert r[2, 3] == pytest.approx(want[2, 3], rel=1e-4, abs=1e-5)
    assert r.tolist()[1][0] == pytest.approx(want[1, 0], rel=1e-4, abs=1e-5)
    assert (r.ndim, r.size, r.nbytes, len(r)) == (2, 256, 1024, 8)
    assert "dtype=float32" in repr(r)
    n = STATS(x)["n"]
    assert n.item() == 256 and int(n) == 256
    with pytest.raises(ValueError):  # numpy's own: results are read-only
        np.asarray(r)[0, 0] = 1.0


def test_device_results_feed_a_waiting_function_and_jax() -> None:
    x = _random(16, 32, seed=6)
    plain = tlc_jax.jit(step)  # numpy results after a wait
    got = plain(STEP(x, W), W)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, _chain(x, 2), rtol=1e-4, atol=1e-5)
    via_jax = jax.jit(step)(jnp.asarray(STEP(x, W)), W)  # as jax takes any array-like
    np.testing.assert_allclose(np.asarray(via_jax), _chain(x, 2), rtol=1e-4, atol=1e-5)


def test_a_result_that_is_an_argument_or_a_constant() -> None:
    x = _random(4, 5, seed=7)
    both = tlc_jax.jit(lambda a: (a, jnp.arange(6.0, dtype=jnp.float32)),
                       device_results=True)
    same, const = both(x)
    x[...] = -1.0  # the result is the argument at the call, not the caller's memory
    np.testing.assert_array_equal(np.asarray(same), _random(4, 5, seed=7))
    np.testing.assert_array_equal(np.asarray(const), np.arange(6.0, dtype=np.float32))


def test_an_updated_argument_is_copied_on_the_device() -> None:
    set_row = tlc_jax.jit(lambda a, v: a.at[1].set(v) * 2.0, device_results=True)
    x, v = _random(6, 32, seed=8), _random(32, seed=9)
    first = STEP(x, W)
    got = set_row(first, v)
    want = _chain(x, 1)
    np.testing.assert_allclose(np.asarray(first), want, rtol=1e-4, atol=1e-5)  # unchanged
    want[1] = v
    np.testing.assert_allclose(np.asarray(got), want * 2.0, rtol=1e-4, atol=1e-5)


def test_a_host_loop_runs_and_returns_device_arrays() -> None:
    def halve_until_small(x: Any) -> Any:
        return jax.lax.while_loop(lambda c: jnp.abs(c).max() > 1e-3, lambda c: c * 0.5, x)

    x = _random(300, 64, seed=11) * 100  # large: the loop stays on the host
    got = tlc_jax.jit(halve_until_small, device_results=True)(x)
    assert isinstance(got, DeviceArray)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.jit(halve_until_small)(x)),
                               rtol=1e-6)


def test_the_default_is_set_for_all_functions() -> None:
    f = tlc_jax.jit(lambda a: a * 3.0)
    x = _random(5, seed=12)
    previous = tlc_jax.set_device_results(True)
    try:
        assert isinstance(f(x), DeviceArray)
        assert isinstance(tlc_jax.jit(lambda a: a * 3.0, device_results=False)(x), np.ndarray)
    finally:
        tlc_jax.set_device_results(previous)
    assert isinstance(f(x), np.ndarray)


def test_threads_running_chains_at_once() -> None:
    errors: list[BaseException] = []

    def chain(seed: int) -> None:
        try:
            for round_ in range(4):
                x = _random(16, 32, seed=seed * 100 + round_)
                y = x
                for _ in range(5):
                    y = STEP(y, W)
                np.testing.assert_allclose(np.asarray(y), _chain(x, 5), rtol=1e-4, atol=1e-5)
        except BaseException as err:  # reported below, in the test's thread
            errors.append(err)

    threads = [threading.Thread(target=chain, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_warm_calls_take_the_quick_way_and_agree_with_jax() -> None:
    f = tlc_jax.jit(step, device_results=True)
    x = _random(16, 32, seed=13)
    f(x, W)
    assert f._quick is not None  # the executable's short way, tried first from now on
    for got in (f(x, W), f(x.astype(np.float64), W), f(jnp.asarray(x), W), f(f(x, W) * 0 + x, W)):
        assert isinstance(got, DeviceArray)  # the quick way or, converting, the general one
        np.testing.assert_allclose(np.asarray(got), _chain(x, 1), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError):  # as jax says for a wrong shape: no quick way around it
        f(x[:, :5], W)


def test_the_quick_way_serves_only_calls_shaped_as_its_own() -> None:
    """A tuple of two arrays and two arrays are the same leaves: the second call must not
    run the first call's program."""
    def f(x: Any, y: Any = None) -> Any:
        return x[0] * 2.0 + x[1] if y is None else x * y

    g = tlc_jax.jit(f, device_results=True)
    a, b = _random(6, seed=15), _random(6, seed=16)
    for args in [((a, b),), (a, b), ((a, b),), (a, b)]:
        np.testing.assert_allclose(np.asarray(g(*args)), np.asarray(jax.jit(f)(*args)),
                                   rtol=1e-6)
