"""Prepared frames of plans with host loops (``While``) and host callbacks
(``Callback``): a loop's condition and body run as prepared enqueues, its flag read when
the queue reaches it; a callback reads its arguments once the commands before it ran and
writes its results before the commands after it.  Each program runs framed and step by
step (``TLC_FRAMES=0``), poisoned and concurrently, against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from backend_opencl.exec import executable
from backend_opencl.runtime.opencl import frames
from frontend.lower.families.control import device_loop
from tensorlang.plan import Buffer, Callback, Free, HostValue, Launch, Plan, While
from tests.lowering.test_executor_io import call_concurrently
from tests.runtime.test_plan_frames import _fresh

RNG = np.random.default_rng(41)
V = "tensor<256xf32>"
CALL = "stablehlo.custom_call @xla_ffi_python_cpu_callback"

# a loop of a data-dependent trip count: halve x until its norm is below the limit
HALVING = f"""func.func public @main(%x: {V}, %limit: tensor<f32>) -> ({V}, tensor<i32>) {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%v = %x, %i = %c0) : {V}, tensor<i32>
   cond {{
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %sq = stablehlo.multiply %v, %v : {V}
    %s = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [0]
         : ({V}, tensor<f32>) -> tensor<f32>
    %p = stablehlo.compare GT, %s, %limit : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %h = stablehlo.constant dense<0.5> : {V}
    %w = stablehlo.multiply %v, %h : {V}
    %c = stablehlo.cosine %w : {V}
    %u = stablehlo.multiply %c, %w : {V}
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %u, %j : {V}, tensor<i32>
  }}
  return %0#0, %0#1 : {V}, tensor<i32>
}}
"""

# a callback in a branch inside a counted loop, its trip count a parameter
CALLING = f"""func.func public @main(%x: {V}, %n: tensor<i32>) -> {V} {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, {V}
   cond {{
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %two = stablehlo.constant dense<2> : tensor<i32>
    %r = stablehlo.remainder %i, %two : tensor<i32>
    %s = stablehlo.sine %v : {V}
    %b = "stablehlo.case"(%r) ({{
      %y = {CALL}(%i, %s) {{mhlo.backend_config = {{index = 0 : ui64}}}}
           : (tensor<i32>, {V}) -> {V}
      stablehlo.return %y : {V}
    }}, {{
      %y = stablehlo.negate %s : {V}
      stablehlo.return %y : {V}
    }}) : (tensor<i32>) -> {V}
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %u = stablehlo.add %b, %v : {V}
    stablehlo.return %j, %u : tensor<i32>, {V}
  }}
  return %0#1 : {V}
}}
"""


@pytest.fixture(autouse=True)
def host_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loops stay on the host (no loop kernels); fresh poisoned frames per call."""
    monkeypatch.setattr(device_loop, "MAX_ELEMENTS", 0)
    monkeypatch.setattr(executable, "POISON", True)


def _both(text: str, monkeypatch: pytest.MonkeyPatch, *functions: Any
          ) -> tuple[executable.Executable, executable.Executable]:
    """The program run framed and step by step (each its own executable)."""
    framed = _fresh(text, *functions)
    assert any(isinstance(s, While) for s in framed.plan.steps)
    framed._resolve()
    monkeypatch.setenv(executable.FRAMES_ENV, "0")
    stepped = _fresh(text, *functions)
    stepped._resolve()
    monkeypatch.delenv(executable.FRAMES_ENV)
    assert framed._frames is not None and stepped._frames is None
    return framed, stepped


def _halving(x: np.ndarray, limit: np.float32) -> tuple[np.ndarray, int]:
    v, i = x.copy(), 0
    while np.float32((v * v).sum()) > limit:
        w = v * np.float32(0.5)
        v, i = np.cos(w) * w, i + 1
    return v, i


@pytest.mark.parametrize("scale", [0.1, 3.0, 40.0])
def test_a_loop_of_data_dependent_trips_framed(scale: float, monkeypatch) -> None:
    framed, stepped = _both(HALVING, monkeypatch)
    x = (RNG.standard_normal(256) * scale).astype(np.float32)
    limit = np.float32(0.5)
    want_v, want_i = _halving(x, limit)
    for exe in (framed, stepped):
        v, i = exe(x, limit)
        assert int(i) == want_i
        np.testing.assert_allclose(v, want_v, rtol=1e-4, atol=1e-6)
    assert want_i > 0 or scale < 1


def test_loops_in_concurrent_framed_calls(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    framed, _ = _both(HALVING, monkeypatch)
    data = [((RNG.standard_normal(256) * s).astype(np.float32), np.float32(0.5))
            for s in (0.2, 2.0, 9.0, 30.0)]

    def work(args: tuple[np.ndarray, np.float32]) -> None:
        want_v, want_i = _halving(*args)
        for _ in range(4):
            v, i = framed(*args)
            assert int(i) == want_i
            np.testing.assert_allclose(v, want_v, rtol=1e-4, atol=1e-6)

    call_concurrently(work, data)


@pytest.mark.parametrize("trips", [0, 1, 5])
def test_callbacks_in_a_counted_loop_framed(trips: int, monkeypatch) -> None:
    """The callback runs in the even iterations, in order, on that iteration's values;
    framed and stepped runs call it alike."""
    seen: dict[str, list[tuple[int, np.ndarray]]] = {"framed": [], "stepped": []}
    runs = iter(["framed", "stepped"])
    current = ["framed"]

    def scale(i: np.ndarray, s: np.ndarray) -> list[np.ndarray]:
        seen[current[0]].append((int(i), s.copy()))
        return [s * np.float32(int(i) + 2)]

    framed, stepped = _both(CALLING, monkeypatch, scale)
    x = RNG.standard_normal(256).astype(np.float32)
    want = x.copy()
    for i in range(trips):
        s = np.sin(want)
        want = want + (s * np.float32(i + 2) if i % 2 == 0 else -s)
    for exe in (framed, stepped):
        current[0] = next(runs)
        np.testing.assert_allclose(exe(x, np.int32(trips))[0], want, rtol=1e-4, atol=1e-5)
    assert [i for i, _ in seen["framed"]] == list(range(0, trips, 2))
    for (i, a), (j, b) in zip(seen["framed"], seen["stepped"], strict=True):
        assert i == j
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_an_exception_in_a_framed_callback_reaches_the_caller(monkeypatch) -> None:
    def fail(i: np.ndarray, s: np.ndarray) -> list[np.ndarray]:
        raise RuntimeError("from the callback")

    framed, _ = _both(CALLING, monkeypatch, fail)
    x = RNG.standard_normal(256).astype(np.float32)
    with pytest.raises(RuntimeError, match="from the callback"):
        framed(x, np.int32(3))
    np.testing.assert_allclose(framed(x, np.int32(0))[0], x)  # the frame is usable again


def test_a_free_inside_a_loop_frees_no_slot() -> None:
    """The next iteration may use the buffer again: a buffer freed inside the loop keeps
    its slot, so no buffer of the loop shares one; the flag and a callback's buffers get
    slots too."""
    f32 = [Buffer(i, "f32", (8,)) for i in range(5)]
    flag = Buffer(5, "i1", ())
    plan = Plan(buffers=(*f32, flag), params=(0,), results=(4,), steps=(
        Launch("k", (0, 1), 1),
        While((Launch("c", (1, 5), 1),), 5, (
            Launch("k", (1, 2), 1), Free((2,)),
            Callback(0, (HostValue(1, "float32"),), (HostValue(3, "float32"),)),
            Launch("k", (3, 1), 1))),
        Free((1, 3)), Launch("k", (0, 4), 1)))
    layout = frames.Layout(plan, dynamic=frozenset({0}), constants=frozenset())
    s = layout.slot_of
    assert layout.ok and len({s[b] for b in (0, 1, 2, 3)}) == 4 and 5 in s
    assert s[4] in (s[1], s[3])  # freed after the loop: reused


def test_a_loop_called_without_waiting(monkeypatch) -> None:
    """``dispatch``: the loop's flag is read as the queue reaches it; its result is the
    parameter's buffer, which the loop writes: the result is that buffer, not the
    argument."""
    framed, _ = _both(HALVING, monkeypatch)
    assert framed.plan.results[0] in framed.plan.params
    x = (RNG.standard_normal(256) * 20).astype(np.float32)
    limit = np.float32(0.5)
    want_v, want_i = _halving(x, limit)
    v, i = framed.dispatch(x, limit)
    assert int(np.asarray(i)) == want_i > 0
    np.testing.assert_allclose(np.asarray(v), want_v, rtol=1e-4, atol=1e-6)
