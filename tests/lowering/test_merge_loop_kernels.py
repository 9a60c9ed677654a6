"""The one-work-group launch after a loop kernel merged into its launches
(:mod:`frontend.lower.core.merge_loop_kernels`): the plan and kernel it makes, what stays
apart, and a solve-like program against numpy whose loop ends in the first launch or
takes relaunches (the epilogue must then run once, at the end)."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl
import frontend
from frontend.lower import lower_function, merged_launches
from frontend.lower.core import merge_loop_kernels as mlk
from frontend.lower.families.control import device_loop, pointwise_loop
from tensorlang.plan import Free, Launch, While, launches

from .conftest import RNG, module
from .test_merge_launches import ADD

LOOP = """func @loop(%b1: memref<f32x4>, %b2: memref<f32x4>, %b9: memref<i1x1>) \
work_group_size(1,1) {
  %c1 = constant 0 -> index
  %x2 = load %b1[%c1] : memref<f32x4>
  store %x2, %b2[%c1] : memref<f32x4>
  %f3 = constant false -> i1
  store %f3, %b9[%c1] : memref<i1x1>
}"""

SETS_FLAG = """func @kepi(%b2: memref<f32x4>, %b9: memref<i1x1>) {
  %c1 = constant 0 -> index
  %f3 = constant true -> i1
  store %f3, %b9[%c1] : memref<i1x1>
}"""

EPILOGUE = ADD.format(n="epi", a=2, o=3)


def test_the_epilogue_joins_the_relaunched_kernel() -> None:
    texts = [ADD.format(n="pro", a=0, o=1), LOOP, EPILOGUE]
    steps = (Launch("kpro", (0, 1), 1), While((Launch("loop", (1, 2, 9), 1),), 9, ()),
             Free((1,)), Launch("kepi", (2, 3), 1), Free((2,)))
    kept, merged = mlk.merge_loop_kernels(texts, steps)
    assert merged == (Launch("kpro", (0, 1), 1),
                      While((Launch("loop_ended0", (1, 2, 9, 3), 1),), 9, ()), Free((1,)),
                      Free((2,)))
    text = kept[-1]
    assert text.startswith("func @loop_ended0(%b1: memref<f32x4>, %b2: memref<f32x4>, "
                           "%b9: memref<i1x1>, %b3: memref<f32x4>) work_group_size(1,1) {")
    assert text.index("store %x2_0, %b2") < text.index("if %tlc_ended {") \
        < text.index("store %t5_1, %b3")
    assert [t.split("(")[0] for t in kept] == ["func @kpro", "func @loop_ended0"]


def test_a_first_kernel_and_its_relaunch_both_take_the_epilogue() -> None:
    """A loop that initializes carried buffers is a first kernel and a relaunched one."""
    again = LOOP.replace("@loop", "@again")
    steps = (Launch("loop", (1, 2, 9), 1), Free((4,)),
             While((), 9, (Launch("again", (1, 2, 9), 1),)), Launch("kepi", (2, 3), 1))
    kept, merged = mlk.merge_loop_kernels([LOOP, again, EPILOGUE], steps)
    assert merged == (Launch("loop_ended1", (1, 2, 9, 3), 1),
                      While((), 9, (Launch("again_ended0", (1, 2, 9, 3), 1),)), Free((4,)))
    assert "".join(kept).count("if %tlc_ended") == 2


@pytest.mark.parametrize("why", ["writes the flag", "has attributes", "several groups",
                                 "too long"])
def test_what_stays_apart(why: str) -> None:
    epilogue = {"writes the flag": SETS_FLAG,
                "has attributes": EPILOGUE.replace(") {", ") work_group_size(4,1) {", 1),
                "too long": EPILOGUE.replace("    store", "    %t6 = arith.add %t5, %t5 : f32\n"
                                             * mlk.MAX_LINES + "    store")
                }.get(why, EPILOGUE)
    args = (2, 9) if why == "writes the flag" else (2, 3)
    steps = (While((Launch("loop", (1, 2, 9), 1),), 9, ()),
             Launch("kepi", args, 2 if why == "several groups" else 1))
    kept, merged = mlk.merge_loop_kernels([LOOP, epilogue], steps)
    assert merged == steps and len(kept) == 2


# A solve-like program: small launches make the loop's start and bound, a loop whose
# trip count is only known on the device, an epilogue of small launches reduces its
# result.
STEP = """    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %k = stablehlo.constant dense<0.9> : tensor<16xf32>
    %c = stablehlo.constant dense<0.25> : tensor<16xf32>
    %vk = stablehlo.multiply %v, %k : tensor<16xf32>
    %v2 = stablehlo.add %vk, %c : tensor<16xf32>
"""
"""The loops' step of their counter ``%i`` and state ``%v``: ``%j``, ``%v2``."""


def step(v: np.ndarray) -> np.ndarray:
    """``STEP``'s state in numpy."""
    return v * np.float32(0.9) + np.float32(0.25)


SOLVE = module(
    "(%x: tensor<16xf32>, %steps: tensor<f32>, %n: tensor<i32>) "
    "-> (tensor<16xf32>, tensor<f32>, tensor<i32>)", """
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %half = stablehlo.constant dense<0.5> : tensor<16xf32>
  %v0 = stablehlo.multiply %x, %half : tensor<16xf32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0]
       : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
  %t0 = stablehlo.abs %s : tensor<f32>
  %limit = stablehlo.add %t0, %steps : tensor<f32>
  %c0 = {start}
  %w:3 = stablehlo.while(%t = %t0, %i = %c0, %v = %v0) : tensor<f32>, tensor<i32>, tensor<16xf32>
   cond {
    %p = stablehlo.compare LT, %t, %limit : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
{step}    %dt = stablehlo.constant dense<1.0> : tensor<f32>
    %t2 = stablehlo.add %t, %dt : tensor<f32>
    stablehlo.return %t2, %j, %v2 : tensor<f32>, tensor<i32>, tensor<16xf32>
  }
  %tb = stablehlo.broadcast_in_dim %w#0, dims = [] : (tensor<f32>) -> tensor<1xf32>
  %at = stablehlo.constant dense<3> : tensor<i32>
  %u = stablehlo.dynamic_update_slice %w#2, %tb, %at
       : (tensor<16xf32>, tensor<1xf32>, tensor<i32>) -> tensor<16xf32>
  %m = stablehlo.reduce(%u init: %z) applies stablehlo.maximum across dimensions = [0]
       : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [] : (tensor<f32>) -> tensor<16xf32>
  %r = stablehlo.divide %u, %mb : tensor<16xf32>
  %e = stablehlo.subtract %w#0, %t0 : tensor<f32>
  return %r, %e, %w#1 : tensor<16xf32>, tensor<f32>, tensor<i32>""").replace("{step}", STEP)


STARTS = {"constant": "stablehlo.constant dense<0> : tensor<i32>",
          "computed": "stablehlo.negate %n : tensor<i32>"}
"""The loop counter's start: a constant the loop kernel's first launch stores (a first
kernel and a relaunched one) or a value computed before (one kernel)."""


def solve(x: np.ndarray, steps: float, start: int) -> tuple[np.ndarray, np.float32, int]:
    """``SOLVE`` in numpy, f32 throughout."""
    v, t0 = x * np.float32(0.5), np.float32(abs(x.sum(dtype=np.float32)))
    t, limit, i = t0, t0 + np.float32(steps), start
    while t < limit:
        v, t, i = step(v), t + np.float32(1), i + 1
    v[3] = t
    return v / max(np.float32(0), v.max()), t - t0, i


@pytest.mark.parametrize("start", sorted(STARTS))
@pytest.mark.parametrize("chunk", [device_loop.CHUNK_TRIPS, 3])
@pytest.mark.parametrize("speculate", ["1", "0"])
def test_a_solve_ends_in_its_loop_kernel_against_numpy(monkeypatch: pytest.MonkeyPatch,
                                                     uncached: None, start: str, chunk: int,
                                                     speculate: str) -> None:
    """With chunks of 3 trips the loop is relaunched (a bet on one launch loses) and the
    epilogue must run once, at the end."""
    monkeypatch.setattr(device_loop, "CHUNK_TRIPS", chunk)
    monkeypatch.setattr(pointwise_loop, "ENABLED", False)
    monkeypatch.setenv("TLC_SPECULATE", speculate)
    text = SOLVE.replace("{start}", STARTS[start])
    lowered = lower_function(frontend.parse(text))
    steps = [s for s in merged_launches(lowered).plan.steps if not isinstance(s, Free)]
    loop = steps[-1]  # nothing launched after the loop
    assert isinstance(loop, While) and len(list(launches((loop,)))) == 1
    if start == "constant":
        assert steps[-2].kernel.split("_")[-1].startswith("ended")
    exe = backend_opencl.compile_stablehlo(text)
    for trips in (2, 11):
        x = RNG.standard_normal(16).astype(np.float32)
        r, e, i = exe(x, np.float32(trips - 0.5), np.int32(5))
        want_r, want_e, want_i = solve(x, trips - 0.5, 0 if start == "constant" else -5)
        assert int(i) == want_i
        np.testing.assert_allclose(r, want_r, rtol=1e-5)
        np.testing.assert_allclose(e, want_e, rtol=1e-5)


def test_a_loop_launched_once_takes_its_epilogue_unguarded() -> None:
    """A counted loop's kernel (one work-item, one work-group) is launched once: the
    epilogue follows its body with no flag to test."""
    steps = (Launch("loop", (1, 2, 9), 1), Free((1,)), Launch("kepi", (2, 3), 1))
    kept, merged = mlk.merge_loop_kernels([LOOP, EPILOGUE], steps)
    assert merged == (Launch("loop_ended0", (1, 2, 9, 3), 1), Free((1,)))
    assert "if %tlc_ended" not in kept[-1] and "store %t5_1, %b3" in kept[-1]


COUNTED = module("(%x: tensor<16xf32>, %w: tensor<16x4xf32>) -> tensor<4xf32>", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %l:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<16xf32>
   cond {
    %n = stablehlo.constant dense<7> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
{step}    stablehlo.return %j, %v2 : tensor<i32>, tensor<16xf32>
  }
  %d = stablehlo.dot_general %l#1, %w, contracting_dims = [0] x [0]
       : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
  %t = stablehlo.tanh %d : tensor<4xf32>
  return %t : tensor<4xf32>""").replace("{step}", STEP)


def test_a_counted_loop_ends_with_its_epilogue_against_numpy(
        monkeypatch: pytest.MonkeyPatch, uncached: None) -> None:
    monkeypatch.setattr(pointwise_loop, "ENABLED", False)
    steps = [s for s in merged_launches(lower_function(frontend.parse(COUNTED))).plan.steps
             if not isinstance(s, Free)]
    assert [s.kernel.split("_")[-1][:5] for s in steps if isinstance(s, Launch)] == ["ended"]
    x, w = RNG.standard_normal(16).astype(np.float32), RNG.standard_normal((16, 4)).astype(
        np.float32)
    v = x.copy()
    for _ in range(7):
        v = step(v)
    (got,) = backend_opencl.compile_stablehlo(COUNTED)(x, w)
    np.testing.assert_allclose(got, np.tanh(v @ w), rtol=1e-5, atol=1e-6)


def test_a_loop_kernel_launched_for_two_loops_keeps_its_launches() -> None:
    """dedup's shared loop kernel: a copy per epilogue would be built again."""
    steps = (Launch("loop", (1, 2, 9), 1), Launch("kepi", (2, 3), 1),
             Launch("loop", (4, 5, 9), 1))
    kept, merged = mlk.merge_loop_kernels([LOOP, EPILOGUE], steps)
    assert merged == steps and len(kept) == 2
