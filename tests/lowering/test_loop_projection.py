"""Device loops: a scan's input projection (a dot of the time step's slice of an invariant
input by an invariant matrix) hoisted out of the loop as one product over every time step
(frontend/lower/families/control/loop_projection.py), and the loop's matrix products run as
``gemm``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import frontend
from backend_opencl.api import compiler
from frontend.lower.core.driver import lower_function
from frontend.lower.families.control import device_loop, loop_projection
from tensorlang.plan import Launch
from tests.lowering.conftest import module, rand, run

T, B, N, H = 6, 3, 5, 4


def rnn(slice_: str, product: str, start: str = "%i", limit: int = T) -> str:
    """An RNN over ``limit`` steps: ``h = tanh(p + h @ u)`` where ``slice_`` defines %x (the
    time step's slice of %xs at index %t) and ``product`` defines %p [B, H] from it and %w;
    ``start`` defines %t from the counter %i.  Returns the last h and every h (stacked)."""
    hs = f"tensor<{T}x{B}x{H}xf32>"
    return module(f"(%xs: tensor<{T}x{B}x{N}xf32>, %w: tensor<{N}x{H}xf32>, "
                  f"%u: tensor<{H}x{H}xf32>, %h0: tensor<{B}x{H}xf32>) -> "
                  f"(tensor<{B}x{H}xf32>, {hs})", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %zf = stablehlo.constant dense<0.0> : tensor<f32>
  %o = stablehlo.broadcast_in_dim %zf, dims = [] : (tensor<f32>) -> {hs}
  %0:3 = stablehlo.while(%i = %c0, %h = %h0, %out = %o) : tensor<i32>, tensor<{B}x{H}xf32>, {hs}
   cond {{
    %n = stablehlo.constant dense<{limit}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %z = stablehlo.constant dense<0> : tensor<i32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %last = stablehlo.constant dense<{T - 1}> : tensor<i32>
    %t = {start}
    {slice_}
    {product}
    %q = stablehlo.dot_general %h, %u, contracting_dims = [1] x [0]
        : (tensor<{B}x{H}xf32>, tensor<{H}x{H}xf32>) -> tensor<{B}x{H}xf32>
    %s = stablehlo.add %p, %q : tensor<{B}x{H}xf32>
    %hn = stablehlo.tanh %s : tensor<{B}x{H}xf32>
    %hb = stablehlo.reshape %hn : (tensor<{B}x{H}xf32>) -> tensor<1x{B}x{H}xf32>
    %new = stablehlo.dynamic_update_slice %out, %hb, %t, %z, %z
        : ({hs}, tensor<1x{B}x{H}xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> {hs}
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %hn, %new : tensor<i32>, tensor<{B}x{H}xf32>, {hs}
  }}
  return %0#1, %0#2 : tensor<{B}x{H}xf32>, {hs}""")


SLICE = f"""%x3 = stablehlo.dynamic_slice %xs, %t, %z, %z, sizes = [1, {B}, {N}]
        : (tensor<{T}x{B}x{N}xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x{B}x{N}xf32>
    %x = stablehlo.reshape %x3 : (tensor<1x{B}x{N}xf32>) -> tensor<{B}x{N}xf32>"""
X_W = f"""%p = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
        : (tensor<{B}x{N}xf32>, tensor<{N}x{H}xf32>) -> tensor<{B}x{H}xf32>"""
W_X = f"""%pt = stablehlo.dot_general %w, %x, contracting_dims = [0] x [1]
        : (tensor<{N}x{H}xf32>, tensor<{B}x{N}xf32>) -> tensor<{H}x{B}xf32>
    %p = stablehlo.transpose %pt, dims = [1, 0] : (tensor<{H}x{B}xf32>) -> tensor<{B}x{H}xf32>"""
UNIT = SLICE.split("\n")[0] + "\n" + SLICE.split("\n")[1]
X3_W = f"""%p3 = stablehlo.dot_general %x3, %w, contracting_dims = [2] x [0]
        : (tensor<1x{B}x{N}xf32>, tensor<{N}x{H}xf32>) -> tensor<1x{B}x{H}xf32>
    %p = stablehlo.reshape %p3 : (tensor<1x{B}x{H}xf32>) -> tensor<{B}x{H}xf32>"""
REVERSED = "stablehlo.subtract %last, %i : tensor<i32>"
COUNTER = "stablehlo.add %i, %z : tensor<i32>"


def expected(xs: np.ndarray, w: np.ndarray, u: np.ndarray, h0: np.ndarray,
             order: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The RNN in float64 visiting time steps in ``order``; untouched output rows zero."""
    h, out = h0.astype(np.float64), np.zeros((T, B, H))
    for t in order:
        h = np.tanh(xs[t].astype(np.float64) @ w + h @ u)
        out[t] = h
    return h, out


def hoisted(text: str) -> bool:
    """True when a product kernel runs before the loop (the hoisted projection)."""
    names = [s.kernel for s in lower_function(frontend.parse(text)).plan.steps
             if isinstance(s, Launch)]
    return any(name.endswith("_dot") for name in names)


@pytest.fixture(autouse=True)
def small_products_hoisted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hoist the tests' small products too (and compile afresh)."""
    monkeypatch.setattr(loop_projection, "MIN_WORK", 0)
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")


@pytest.mark.parametrize("slice_, product, start, order", [
    (SLICE, X_W, COUNTER, list(range(T))),
    (SLICE, W_X, COUNTER, list(range(T))),
    (UNIT, X3_W, COUNTER, list(range(T))),
    (SLICE, X_W, REVERSED, list(range(T - 1, -1, -1))),
], ids=["x_at_w", "w_at_x", "unit_dim_kept", "reversed"])
def test_projection_is_hoisted_and_matches_numpy(slice_: str, product: str,
                                                 start: str, order: list[int]) -> None:
    text = rnn(slice_, product, start)
    assert hoisted(text)
    xs, w, u, h0 = rand((T, B, N)), rand((N, H)), 0.5 * rand((H, H)), rand((B, H))
    got_h, got_hs = run(text, xs, w, u, h0)
    want_h, want_hs = expected(xs, w, u, h0, order)
    np.testing.assert_allclose(got_h, want_h, atol=1e-5)
    np.testing.assert_allclose(got_hs, want_hs, atol=1e-5)


def test_short_loop_is_not_hoisted() -> None:
    text = rnn(SLICE, X_W, COUNTER, limit=2)  # 2 of 6 time steps: the product in the loop
    assert not hoisted(text)
    xs, w, u, h0 = rand((T, B, N)), rand((N, H)), 0.5 * rand((H, H)), rand((B, H))
    got_h, got_hs = run(text, xs, w, u, h0)
    want_h, want_hs = expected(xs, w, u, h0, [0, 1])
    np.testing.assert_allclose(got_h, want_h, atol=1e-5)
    np.testing.assert_allclose(got_hs[:2], want_hs[:2], atol=1e-5)


@pytest.mark.parametrize("gemm", [True, False], ids=["gemm", "loops"])
def test_matrix_products_in_a_loop(monkeypatch: pytest.MonkeyPatch,
                                   gemm: bool) -> None:
    monkeypatch.setattr(device_loop, "GEMM", gemm)
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")
    text = rnn(SLICE, X_W, COUNTER)
    xs, w, u, h0 = rand((T, B, N)), rand((N, H)), 0.5 * rand((H, H)), rand((B, H))
    got_h, got_hs = run(text, xs, w, u, h0)
    want_h, want_hs = expected(xs, w, u, h0, list(range(T)))
    np.testing.assert_allclose(got_h, want_h, atol=1e-5)
    np.testing.assert_allclose(got_hs, want_hs, atol=1e-5)


def test_small_products_stay_in_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_projection, "MIN_WORK", T * B * N * H + 1)  # one launch more
    assert not hoisted(rnn(SLICE, X_W, COUNTER))


def test_initial_values_computed_in_the_loop_kernel() -> None:
    """The counter and the zeroed stack come from constants: no launch of their own."""
    steps = lower_function(frontend.parse(rnn(SLICE, X_W, COUNTER))).plan.steps
    assert [s.kernel.split("_", 1)[1] for s in steps if isinstance(s, Launch)] \
        == ["dot", "while"]


def test_jax_scan_carrying_its_inputs() -> None:
    """JAX's scan carries xs and the weights through the loop unchanged (rank-1 steps)."""
    text = (Path(__file__).resolve().parent / "loops" / "rnn.mlir").read_text()
    assert hoisted(text)
    xs, wx, wh = (0.1 * rand((64, 64)) for _ in range(3))
    h0 = rand((64,))
    h, hs = h0.astype(np.float64), []
    for x in xs.astype(np.float64):
        h = np.tanh(x @ wx + h @ wh)
        hs.append(h)
    got_h, got_hs = run(text, xs, h0, wx, wh)
    np.testing.assert_allclose(got_h, h, atol=1e-5)
    np.testing.assert_allclose(got_hs, np.array(hs), atol=1e-5)
