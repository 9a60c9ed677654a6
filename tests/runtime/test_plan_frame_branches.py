"""Prepared frames of plans with branches (``If``, ``Case``): the predicate is read back
when the queue reaches it and the branch taken runs its prepared launches; every branch,
an out-of-range case index, concurrent calls taking different branches and poisoned
buffers, all against numpy."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from backend_opencl.exec import executable
from backend_opencl.runtime.opencl import frames
from tensorlang.plan import Buffer, Case, Free, Launch, Plan
from tests.lowering.test_executor_io import call_concurrently
from tests.runtime.test_plan_frames import _fresh, poison  # noqa: F401 (poison: a fixture)

RNG = np.random.default_rng(23)
T = "tensor<128x128xf32>"
S = "tensor<8xf32>"
CASE = f"""func.func public @main(%i: tensor<i32>, %x: {T}, %w: {T}, %v: {S})
    -> ({T}, {S}) {{
  %r:2 = "stablehlo.case"(%i) ({{
    %a = stablehlo.cosine %x : {T}
    %b = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : ({T}, {T}) -> {T}
    %c = stablehlo.negate %v : {S}
    stablehlo.return %b, %c : {T}, {S}
  }}, {{
    %a = stablehlo.sine %x : {T}
    %b = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : ({T}, {T}) -> {T}
    stablehlo.return %b, %v : {T}, {S}
  }}, {{
    %a = stablehlo.multiply %x, %w : {T}
    %c = stablehlo.exponential %v : {S}
    stablehlo.return %a, %c : {T}, {S}
  }}) : (tensor<i32>) -> ({T}, {S})
  return %r#0, %r#1 : {T}, {S}
}}
"""
IF = """func.func public @main(%x: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1]
       : (tensor<64x16xf32>, tensor<f32>) -> tensor<f32>
  %p = stablehlo.compare GT, %s, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %r = "stablehlo.if"(%p) ({
    %a = stablehlo.tanh %x : tensor<64x16xf32>
    stablehlo.return %a : tensor<64x16xf32>
  }, {
    %a = stablehlo.abs %x : tensor<64x16xf32>
    stablehlo.return %a : tensor<64x16xf32>
  }) : (tensor<i1>) -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}
"""


def _case_inputs(i: int) -> tuple[np.ndarray, ...]:
    return (np.array(i, np.int32), RNG.standard_normal((128, 128)).astype(np.float32),
            (RNG.standard_normal((128, 128)) / 11).astype(np.float32),
            RNG.standard_normal(8).astype(np.float32))


def _case_want(i: np.ndarray, x: np.ndarray, w: np.ndarray, v: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    branch = int(i) if 0 <= int(i) <= 2 else 2
    return [(np.cos(x) @ w, -v), (np.sin(x) @ w, v), (x * w, np.exp(v))][branch]


def _check_case(outs: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...]) -> None:
    for got, want in zip(outs, _case_want(*args), strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_a_free_inside_a_branch_frees_no_slot() -> None:
    """The branch may not run: a buffer it frees keeps its slot, so a later buffer of the
    same dtype and size gets another; the buffers of two branches share no slot."""
    f32 = [Buffer(i, "f32", (8,)) for i in range(5)]
    plan = Plan(buffers=(*f32, Buffer(5, "i32", ())), params=(0, 5), results=(4,), steps=(
        Launch("k", (0, 1), 1),
        Case(5, ((Launch("k", (1, 2), 1), Free((1,))), (Launch("k", (0, 3), 1),))),
        Launch("k", (0, 4), 1)))
    layout = frames.Layout(plan, dynamic=frozenset({0, 5}), constants=frozenset())
    s = layout.slot_of
    assert layout.ok and len({s[b] for b in range(5)}) == 5


@pytest.mark.parametrize("index", [0, 1, 2, 7, -1])
def test_every_branch_against_numpy(index: int) -> None:
    exe = _fresh(CASE)
    args = _case_inputs(index)
    _check_case(exe(*args), args)
    assert exe._frames is not None


def test_if_on_a_computed_predicate_agrees_with_the_step_by_step_executor(monkeypatch) -> None:
    framed = _fresh(IF)
    framed(np.ones((64, 16), np.float32))  # the plan is resolved at the first call
    monkeypatch.setenv(executable.FRAMES_ENV, "0")
    stepped = _fresh(IF)
    for sign in (1, -1, 1):
        x = sign * np.abs(RNG.standard_normal((64, 16))).astype(np.float32)
        a, b = framed(x), stepped(x)
        np.testing.assert_allclose(a[0], np.tanh(x) if sign > 0 else np.abs(x), rtol=1e-6)
        np.testing.assert_array_equal(a[0], b[0])
    assert framed._frames is not None and stepped._frames is None


def test_warm_calls_in_either_branch_make_no_kernels(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    exe = _fresh(CASE)
    first = _case_inputs(0)
    kept = exe(*first)
    made: list[str] = []
    real = cl.Kernel
    monkeypatch.setattr(cl, "Kernel", lambda program, name: made.append(name)
                        or real(program, name))
    for i in (1, 2, 0, 5):
        args = _case_inputs(i)
        _check_case(exe(*args), args)
    assert made == []
    _check_case(kept, first)


def test_concurrent_calls_in_different_branches(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    exe = _fresh(CASE)
    data = [_case_inputs(i) for i in (0, 1, 2, 3)]

    def work(args: tuple[np.ndarray, ...]) -> None:
        for _ in range(5):
            _check_case(exe(*args), args)

    call_concurrently(work, data)


def test_the_gate_opens_before_a_predicate_read_and_after_the_enqueues(monkeypatch) -> None:
    """On CPU devices a call's commands wait behind a gate: it is open whenever the frame
    reads a predicate and when the call returns; ``TLC_GATE=0`` turns it off."""
    exe = _fresh(CASE)
    args = _case_inputs(1)
    _check_case(exe(*args), args)
    if not frames.Frame(exe, exe._frames.layout).gated:
        pytest.skip("no gate on this device")
    reads: list[object] = []
    real = frames.Frame.scalar

    def scalar(self: frames.Frame, bid: int) -> object:
        value = real(self, bid)
        reads.append(self.gate)
        return value

    closed: list[object] = []
    real_close = frames.Frame._close

    def close(self: frames.Frame) -> None:
        real_close(self)
        closed.append(self.gate)

    monkeypatch.setattr(frames.Frame, "scalar", scalar)
    monkeypatch.setattr(frames.Frame, "_close", close)
    _check_case(exe(*args), args)
    assert reads == [None]
    assert len(closed) == 2 and all(g is not None for g in closed)  # the call, the branch
    monkeypatch.setenv(frames.GATE_ENV, "0")
    assert not frames.Frame(exe, exe._frames.layout).gated
