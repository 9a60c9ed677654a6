"""Bets on host decisions (``backend_opencl/exec/speculation.py``, placed by prepared
frames): an error check's quiet branch and a loop kernel's exit are enqueued without
reading the predicate, checked after the call's wait, and a call whose bet lost runs
again without bets (that bet is not placed again).  Results against numpy on poisoned
buffers, alone and in concurrent calls; callbacks run exactly when the program says."""

from __future__ import annotations

import numpy as np
import pytest

from backend_opencl.exec import executable, speculation
from backend_opencl.runtime.opencl import frames
from frontend.lower.families.control import device_loop
from tensorlang.plan import (
    Bound,
    Buffer,
    Callback,
    Case,
    Free,
    HostValue,
    Launch,
    Plan,
    TripCount,
    While,
)
from tests.lowering.test_executor_io import call_concurrently
from tests.runtime.test_plan_frames import _fresh, poison  # noqa: F401 (poison: a fixture)

RNG = np.random.default_rng(47)
V = "tensor<64xf32>"
CALL = "stablehlo.custom_call @xla_ffi_python_cpu_callback"

# equinox's error_if on a computed value: the callback runs when sum(x) exceeds the limit
CHECKED = f"""func.func public @main(%x: {V}, %limit: tensor<f32>) -> {V} {{
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : {V}
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0]
       : ({V}, tensor<f32>) -> tensor<f32>
  %bad = stablehlo.compare GT, %s, %limit : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %k = stablehlo.convert %bad : (tensor<i1>) -> tensor<i32>
  %r = "stablehlo.case"(%k) ({{
    stablehlo.return %e : {V}
  }}, {{
    %y = {CALL}(%e) {{mhlo.backend_config = {{index = 0 : ui64}}}} : ({V}) -> {V}
    stablehlo.return %y : {V}
  }}) : (tensor<i32>) -> {V}
  %t = stablehlo.tanh %r : {V}
  return %t : {V}
}}
"""

# a loop kernel of a data-dependent trip count: x += 1 until its sum reaches the limit
COUNTING = f"""func.func public @main(%x: {V}, %limit: tensor<f32>) -> ({V}, tensor<i32>) {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%v = %x, %i = %c0) : {V}, tensor<i32>
   cond {{
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%v init: %z) applies stablehlo.add across dimensions = [0]
         : ({V}, tensor<f32>) -> tensor<f32>
    %p = stablehlo.compare LT, %s, %limit : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1.0> : {V}
    %w = stablehlo.add %v, %one : {V}
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %w, %j : {V}, tensor<i32>
  }}
  return %0#0, %0#1 : {V}, tensor<i32>
}}
"""


def _bets(exe: executable.Executable) -> int:
    exe._resolve()
    assert exe._frames is not None
    return len(exe._frames.layout.bets)


def _checked(x: np.ndarray, limit: np.float32) -> np.ndarray:
    e = np.exp(x)
    return np.tanh(e * 2 if np.float32(e.sum()) > limit else e)


def test_an_error_check_is_bet_on_until_it_fails(monkeypatch) -> None:
    """Passing checks run without reading the predicate and never call back; a failing
    one calls back (the betting run is redone) and is not bet on again."""
    monkeypatch.setattr(executable, "POISON", False)
    calls: list[np.ndarray] = []
    exe = _fresh(CHECKED, lambda e: (calls.append(e.copy()), [e * 2])[1])
    assert _bets(exe) == 1
    x = (RNG.standard_normal(64) * 0.1).astype(np.float32)
    limit = np.float32(1000.0)
    for _ in range(3):
        np.testing.assert_allclose(exe(x, limit)[0], _checked(x, limit), rtol=1e-5)
    assert calls == [] and exe._frames.lost == set()
    low = np.float32(10.0)
    np.testing.assert_allclose(exe(x, low)[0], _checked(x, low), rtol=1e-5)
    assert len(calls) == 1 and exe._frames.lost == {0}
    np.testing.assert_allclose(calls[0], np.exp(x), rtol=1e-5)
    for lim in (limit, low, limit):
        np.testing.assert_allclose(exe(x, lim)[0], _checked(x, lim), rtol=1e-5)
    assert len(calls) == 2


def test_a_raising_check_raises_once() -> None:
    def fail(e: np.ndarray) -> list[np.ndarray]:
        raise ValueError("sum too large")

    exe = _fresh(CHECKED, fail)
    x = RNG.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(exe(x, np.float32(1e6))[0], _checked(x, np.float32(1e6)),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="sum too large"):
        exe(x, np.float32(1.0))


def _counting(x: np.ndarray, limit: np.float32) -> tuple[np.ndarray, int]:
    v, i = x.copy(), 0
    while np.float32(v.sum()) < limit:
        v, i = v + np.float32(1), i + 1
    return v, i


def test_a_loop_kernel_is_bet_done_after_one_launch(monkeypatch) -> None:
    """Short loops finish in the first launch (the bet wins); a loop longer than a
    launch's chunk of iterations loses the bet once, and the call is still right."""
    monkeypatch.setattr(device_loop, "CHUNK_TRIPS", 8)
    exe = _fresh(COUNTING)
    assert _bets(exe) == 1
    x = RNG.standard_normal(64).astype(np.float32)
    for limit in (np.float32(x.sum() + 64 * 3), np.float32(-1e3)):
        want_v, want_i = _counting(x, limit)
        v, i = exe(x, limit)
        assert int(i) == want_i <= 8
        np.testing.assert_allclose(v, want_v, rtol=1e-5)
    assert exe._frames.lost == set()
    limit = np.float32(x.sum() + 64 * 20 - 32)  # 20 iterations: three launches
    for _ in range(2):
        v, i = exe(x, limit)
        want_v, want_i = _counting(x, limit)
        assert int(i) == want_i == 20
        np.testing.assert_allclose(v, want_v, rtol=1e-5)
    assert exe._frames.lost == {0}


def test_concurrent_calls_winning_and_losing_bets(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    exe = _fresh(CHECKED, lambda e: [e * 2])
    xs = [(RNG.standard_normal(64) * s).astype(np.float32) for s in (0.1, 0.5, 1.0, 2.0)]
    data = [(x, lim) for x in xs for lim in (np.float32(60.0), np.float32(1e5))]

    def work(args: tuple[np.ndarray, np.float32]) -> None:
        for _ in range(4):
            np.testing.assert_allclose(exe(*args)[0], _checked(*args), rtol=1e-5)

    call_concurrently(work, data)


def test_a_callback_outside_the_checks_turns_bets_off() -> None:
    """A callback that runs in every call (a debug print) would run twice when a bet
    loses: such a plan places no bets, and the callback runs once a call."""
    printed = CHECKED.replace(
        "  %t = stablehlo.tanh %r : {V}".replace("{V}", V),
        f"  {CALL}(%x) {{mhlo.backend_config = {{index = 1 : ui64}}}} : ({V}) -> ()\n"
        f"  %t = stablehlo.tanh %r : {V}")
    seen: list[np.ndarray] = []
    exe = _fresh(printed, lambda e: [e * 2], lambda x: seen.append(x.copy()))
    assert _bets(exe) == 0
    x = RNG.standard_normal(64).astype(np.float32)
    for lim in (np.float32(1e6), np.float32(1.0)):
        np.testing.assert_allclose(exe(x, lim)[0], _checked(x, lim), rtol=1e-5)
    assert len(seen) == 2


def test_speculate_off(monkeypatch) -> None:
    monkeypatch.setenv(speculation.ENV, "0")
    exe = _fresh(CHECKED, lambda e: [e * 2])
    assert _bets(exe) == 0
    x = RNG.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(exe(x, np.float32(1e6))[0], _checked(x, np.float32(1e6)),
                               rtol=1e-5)


def _quiet_check(pred: int) -> Case:
    """A case on ``pred``: branch 0 launches, branch 1 calls back."""
    return Case(pred, ((Launch("k", (0, 1), 1),),
                       (Callback(0, (HostValue(0, "float32"),), ()),)))


def test_no_bet_on_a_predicate_written_after_the_decision() -> None:
    check = _quiet_check(2)
    kept = speculation.bets((check,), lambda s: frozenset())
    assert [b.expected for b in kept.values()] == [0]
    rewritten = (check, Launch("w", (0, 2), 1))
    assert speculation.bets(rewritten, lambda s: frozenset({2}) if isinstance(s, Launch)
                            and s.kernel == "w" else frozenset()) == {}


def test_loops_are_bet_only_when_they_are_a_loop_kernel() -> None:
    kernel_loop = While((Launch("loop", (0, 2), 1),), 2, ())
    relaunch = While((), 2, (Launch("again", (0, 2), 1),))
    found = speculation.bets((kernel_loop, relaunch), lambda s: frozenset())
    assert set(found) == {kernel_loop, relaunch}
    assert not speculation.bets((While((Launch("c", (0, 2), 1),), 2, (_quiet_check(2),)),),
                                lambda s: frozenset())  # a callback in a loop: no bets


def test_a_host_loop_of_unknown_trips_turns_bets_off() -> None:
    """After a lost bet the loop would run on values the program never meant it to see,
    perhaps forever: no bets; a loop of a constant trip count keeps them."""
    host_loop = While((Launch("c", (0, 2), 1),), 2, (Launch("b", (0, 1), 1),))
    assert speculation.bets((_quiet_check(3), host_loop), lambda s: frozenset()) == {}
    counted = While((), 2, (Launch("b", (0, 1), 1),),
                    TripCount(Bound(0), Bound(5), 1, "LT", 32, True))
    assert len(speculation.bets((_quiet_check(3), counted), lambda s: frozenset())) == 1


def test_a_bet_predicate_keeps_its_slot_to_the_end() -> None:
    """Freed after the decision, the predicate's slot is not reused: it is read after
    the call's wait."""
    check = _quiet_check(1)
    plan = Plan(buffers=(Buffer(0, "f32", (8,)), Buffer(1, "i32", ()), Buffer(2, "i32", ())),
                params=(0,), results=(2,), steps=(
                    Launch("p", (0, 1), 1), check, Free((1,)), Launch("q", (0, 2), 1)))
    bets = speculation.bets(plan.steps, lambda s: frozenset())
    layout = frames.Layout(plan, frozenset({0}), frozenset(), bets)
    assert layout.slot_of[2] != layout.slot_of[1]
    assert frames.Layout(plan, frozenset({0}), frozenset()).slot_of[2] == layout.slot_of[1]
