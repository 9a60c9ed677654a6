"""Benchmark: what a call of a tiny function costs, tlc against ``jax.jit`` (issue #21).

Run ``.venv/bin/python benchmarks/dispatch.py`` (``--quick`` for fewer repeats; the jax
extra must be installed).  Three tiny functions (``x * 2 + 1`` on 8 floats; a dict of
two results; a 16x32 by 32x32 product with ``tanh``), each measured five ways,
interleaved round by round, the median of the rounds printed in microseconds a call:

- ``wait``: a call that waits for its results (tlc: numpy arrays back; jax:
  ``block_until_ready`` on its result, numpy arguments in for both);
- ``dispatch``: calls that do not wait (tlc ``device_results=True``, the previous call's
  result dropped; jax: its asynchronous dispatch, jax arrays in), the time a call returns
  in, so the device's speed bounds it once its queue is full;
- ``chain``: ten calls each taking the last one's result, then a read (per call; for
  the functions returning one array);
- ``ratio`` columns: tlc over jax.

Results are checked against jax once per function.  On CPU drivers the device's cost of
a command (PoCL's submission and wake-up: ~35 us a command on the 2-core test VM, ~8 on
Intel's runtime) is part of every call that waits; calls that do not wait are submitted
in batches (``backend_opencl/runtime/opencl/held.py``), so ``dispatch`` is mostly tlc's
own Python.  ``--device`` picks another device (``tlc devices``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import tlc.jax  # noqa: E402

W = np.random.default_rng(1).standard_normal((32, 32)).astype(np.float32) * 0.3


def affine(x: Any) -> Any:
    """The tiniest program: one element-wise kernel."""
    return x * 2.0 + 1.0


def two(x: Any) -> dict[str, Any]:
    """Two results in a dict (a pytree out)."""
    return {"a": x * 2.0, "b": jnp.sin(x)}


def rnn_step(x: Any) -> Any:
    """A small recurrent step: a product, a nonlinearity, a residual."""
    return jnp.tanh(x @ W) + 0.5 * x


FUNCTIONS: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    "affine 8": (affine, (8,)),
    "dict 8": (two, (8,)),
    "rnn 16x32": (rnn_step, (16, 32)),
}


def per_call(run: Callable[[], Any], calls: int) -> float:
    """Microseconds a call of ``run`` takes over ``calls`` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls * 1e6


def ways(fun: Callable[..., Any], x: np.ndarray, device: str | None
         ) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """The (tlc, jax) callables of each way of calling (see the module docstring)."""
    waiting = tlc.jax.jit(fun, device=device)
    dispatching = tlc.jax.jit(fun, device=device, device_results=True)
    jitted = jax.jit(fun)
    jx = jnp.asarray(x)
    ready = jax.block_until_ready

    def tlc_chain() -> Any:
        y = x
        for _ in range(10):
            y = dispatching(y)
        return np.asarray(y)

    def jax_chain() -> Any:
        y = jx
        for _ in range(10):
            y = jitted(y)
        return ready(y)

    result = {"wait": (lambda: waiting(x), lambda: ready(jitted(x))),
              "dispatch": (lambda: dispatching(x), lambda: jitted(jx))}
    if isinstance(jax.eval_shape(fun, x), jax.ShapeDtypeStruct):  # an array out: chains
        result["chain"] = (tlc_chain, jax_chain)
    return result


def check(fun: Callable[..., Any], x: np.ndarray, device: str | None) -> None:
    """tlc's results (waiting and not) against jax's."""
    want = jax.tree.leaves(jax.jit(fun)(x))
    for got in (tlc.jax.jit(fun, device=device)(x),
                tlc.jax.jit(fun, device=device, device_results=True)(x)):
        for g, w in zip(jax.tree.leaves(got), want, strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and calls")
    parser.add_argument("--device", help="the OpenCL device (as tlc devices shows)")
    args = parser.parse_args()
    rounds, calls = (5, 300) if args.quick else (15, 1000)
    print(f"{'function':<12} {'way':<9} {'tlc us':>8} {'jax us':>8} {'tlc/jax':>8}")
    for name, (fun, shape) in FUNCTIONS.items():
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        check(fun, x, args.device)
        for way, (ours, theirs) in ways(fun, x, args.device).items():
            n = calls // 10 if way == "chain" else calls
            ours(), theirs()  # compiled and warm
            times: tuple[list[float], list[float]] = ([], [])
            for _ in range(rounds):  # interleaved, so load hits both alike
                times[0].append(per_call(ours, n) / (10 if way == "chain" else 1))
                times[1].append(per_call(theirs, n) / (10 if way == "chain" else 1))
            t, j = statistics.median(times[0]), statistics.median(times[1])
            print(f"{name:<12} {way:<9} {t:8.1f} {j:8.1f} {t / j:8.2f}")


if __name__ == "__main__":
    main()
