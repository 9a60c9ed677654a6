"""Loops: counted whiles (trip count decided before the loop) and the JAX-exported
while_loop / fori_loop / scan programs in tests/lowering/loops, against numpy, as device
and host loops (point-wise loop kernels off)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import frontend
from backend_opencl.api import compiler
from frontend.lower.core.driver import lower_function
from frontend.lower.families.control import device_loop, pointwise_loop
from tensorlang.plan import Bound, Launch, Step, TripCount, While
from tests.lowering.conftest import module, rand, run

LOOPS = Path(__file__).resolve().parent / "loops"


@pytest.fixture(autouse=True)
def no_pointwise_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """These loops' bodies are element-wise: they test the device and host loops, not the
    point-wise loop kernel (tests/lowering/test_pointwise_loop.py)."""
    monkeypatch.setattr(pointwise_loop, "ENABLED", False)
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")


@pytest.fixture(params=["device", "host"])
def where(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run loops as one kernel (small loops, the default) or on the host."""
    if request.param == "host":
        on_host(monkeypatch)
    return str(request.param)


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loops on the host (their plan steps are what the test looks at)."""
    on_host(monkeypatch)


def on_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """No device loops, and no compiled program cached from a run with them."""
    monkeypatch.setattr(device_loop, "MAX_ELEMENTS", 0)
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")


def counter_loop(dtype: str, start: str, limit: str, step: int, direction: str,
                 compare_type: str = "SIGNED") -> str:
    """A while over (counter, x): x += a per iteration; ``start``/``limit`` are SSA names
    or constants of ``dtype``."""
    t = f"tensor<{dtype}>"
    define, n = ("", limit) if limit.startswith("%") else (f"%n = {limit}", "%n")
    return module(f"(%a: tensor<3xf32>, %s: {t}, %l: {t}) -> ({t}, tensor<3xf32>)", f"""
  %start = {start}
  %0:2 = stablehlo.while(%i = %start, %x = %a) : {t}, tensor<3xf32>
   cond {{
    {define}
    %p = stablehlo.compare {direction}, %i, {n}, {compare_type} : ({t}, {t}) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<{step}> : {t}
    %j = stablehlo.add %i, %one : {t}
    %y = stablehlo.add %x, %a : tensor<3xf32>
    stablehlo.return %j, %y : {t}, tensor<3xf32>
  }}
  return %0#0, %0#1 : {t}, tensor<3xf32>""")


def simulate(dtype: str, start: int, limit: int, step: int, direction: str) -> int:
    """The iterations of the counter loop, run in numpy's wrapping arithmetic."""
    np_type = np_dtype(dtype)
    i, n, s = np.array(start, np_type), np.array(limit, np_type), np.array(step).astype(np_type)
    ops = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
           "NE": np.not_equal}
    count = 0
    with np.errstate(over="ignore"):
        while ops[direction](i, n):
            i, count = (i + s).astype(np_type), count + 1
            assert count < 10_000
    return count


def np_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of a StableHLO integer type name (i32, ui8, ...)."""
    return np.dtype(("uint" + dtype[2:]) if dtype.startswith("ui") else "int" + dtype[1:])


def whiles(steps: tuple[Step, ...]) -> list[While]:
    """The top-level while steps."""
    return [s for s in steps if isinstance(s, While)]


@pytest.mark.parametrize("direction,start,limit,step", [
    ("LT", 0, 7, 1), ("LT", -3, 8, 3), ("LE", 2, 11, 4), ("GT", 9, -2, -2),
    ("GE", 5, 1, -1), ("NE", 0, 12, 3), ("LT", 6, 2, 1)])
def test_constant_bounds_run_the_body_count_times(direction: str, start: int, limit: int,
                                                  step: int, where: str) -> None:
    text = counter_loop("i32", f"stablehlo.constant dense<{start}> : tensor<i32>",
                        f"stablehlo.constant dense<{limit}> : tensor<i32>", step, direction)
    steps = lower_function(frontend.parse(text)).plan.steps
    if where == "device":  # one launch, nothing read back
        assert not whiles(steps)
        assert sum(isinstance(s, Launch) and "while" in s.kernel for s in steps) == 1
    else:
        (loop,) = whiles(steps)
        assert loop.trips is not None and loop.trips.start.buffer is None
    a = rand((3,))
    n = simulate("i32", start, limit, step, direction)
    i, x = run(text, a, np.int32(0), np.int32(0))
    assert int(i) == start + n * step
    np.testing.assert_allclose(x, (n + 1) * a, rtol=1e-5)


@pytest.mark.parametrize("dtype,start,limit", [("i32", 4, 13), ("i64", -20, -5),
                                               ("ui32", 3, 9), ("i32", 9, 3)])
def test_bounds_from_parameters_are_read_once(dtype: str, start: int, limit: int,
                                              host: None) -> None:
    text = counter_loop(dtype, "stablehlo.add %s, %s : tensor<" + dtype + ">", "%l", 2,
                        "LT", "UNSIGNED" if dtype.startswith("ui") else "SIGNED")
    (loop,) = whiles(lower_function(frontend.parse(text)).plan.steps)
    assert loop.trips is not None and loop.trips.start.buffer is not None
    assert loop.trips.limit.buffer is not None
    np_type = np_dtype(dtype)
    a = rand((3,))
    n = simulate(dtype, 2 * start, limit, 2, "LT")
    i, x = run(text, a, np.array(start, np_type), np.array(limit, np_type))
    assert int(i) == 2 * start + 2 * n
    np.testing.assert_allclose(x, (n + 1) * a, rtol=1e-5)


def test_wrapping_counter_falls_back_to_the_predicate(where: str) -> None:
    text = counter_loop("i8", "stablehlo.constant dense<0> : tensor<i8>",
                        "stablehlo.constant dense<120> : tensor<i8>", 100, "LT")
    steps = lower_function(frontend.parse(text)).plan.steps
    if where == "host":
        (loop,) = whiles(steps)
        assert loop.trips is not None and loop.trips.count(0, 120) is None
    n = simulate("i8", 0, 120, 100, "LT")
    a = rand((3,))
    i, x = run(text, a, np.int8(0), np.int8(0))
    assert int(i) == 120
    np.testing.assert_allclose(x, (n + 1) * a, rtol=1e-5)


def test_counter_written_otherwise_is_not_counted(host: None) -> None:
    text = counter_loop("i32", "stablehlo.constant dense<0> : tensor<i32>",
                        "stablehlo.constant dense<9> : tensor<i32>", 1, "LT")
    text = text.replace("%j = stablehlo.add %i, %one", "%j = stablehlo.multiply %i, %one")
    text = text.replace("dense<1> : tensor<i32>\n    %j", "dense<2> : tensor<i32>\n    %j")
    text = text.replace("dense<0> : tensor<i32>\n  %0", "dense<1> : tensor<i32>\n  %0")
    (loop,) = whiles(lower_function(frontend.parse(text)).plan.steps)
    assert loop.trips is None
    i, x = run(text, rand((3,)), np.int32(0), np.int32(0))
    assert int(i) == 16


def test_trip_count_matches_a_simulation() -> None:
    for dtype, direction in itertools.product(["i8", "ui8"], ["LT", "LE", "GT", "GE", "NE"]):
        bits, signed = 8, dtype == "i8"
        values = range(-128, 128, 7) if signed else range(0, 256, 7)
        for start, limit, step in itertools.product(values, values, [-5, -1, 1, 2, 9]):
            trips = TripCount(Bound(), Bound(), step, direction, bits, signed)
            n = trips.count(start, limit)
            if n is not None:
                assert n == simulate(dtype, start, limit, step, direction), \
                    (dtype, direction, start, limit, step)


def collatz_steps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The collatz.mlir program in numpy."""
    v, n = x.copy(), np.zeros_like(x)
    while np.any(v != 1):
        n += v != 1
        v = np.where(v == 1, v, np.where(v % 2 == 1, 3 * v + 1, v // 2))
    return v, n


def test_jax_collatz_while_loop(where: str) -> None:
    x = np.random.default_rng(3).integers(1, 200, size=64).astype(np.int32)
    v, n = run((LOOPS / "collatz.mlir").read_text(), x)
    want_v, want_n = collatz_steps(x)
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(n, want_n)


def test_jax_fori_loop_power_iteration(where: str) -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    v = rng.standard_normal(64).astype(np.float32)
    text = (LOOPS / "power.mlir").read_text()
    want = v.astype(np.float64)
    for _ in range(50):
        w = a.astype(np.float64) @ want
        want = w / np.linalg.norm(w)
    (got,) = run(text, a, v)
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_jax_scan_rnn(where: str) -> None:
    rng = np.random.default_rng(5)
    xs, wx, wh = (0.1 * rng.standard_normal((64, 64)).astype(np.float32) for _ in range(3))
    h0 = rng.standard_normal(64).astype(np.float32)
    h, hs = h0.astype(np.float64), []
    for x in xs.astype(np.float64):
        h = np.tanh(x @ wx + h @ wh)
        hs.append(h)
    got_h, got_hs = run((LOOPS / "rnn.mlir").read_text(), xs, h0, wx, wh)
    np.testing.assert_allclose(got_h, h, atol=1e-5)
    np.testing.assert_allclose(got_hs, np.array(hs), atol=1e-5)


def scan_rows(extra_use: str = "") -> str:
    """A counted loop writing row ``2i - 1`` (clamped into range) of a carried 5x4 buffer
    with ``2 * row i of %a``; ``extra_use`` may read the carried buffer once more."""
    return module("(%a: tensor<5x4xf32>, %o: tensor<5x4xf32>) -> tensor<5x4xf32>", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %out = %o) : tensor<i32>, tensor<5x4xf32>
   cond {{
    %n = stablehlo.constant dense<4> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %z = stablehlo.constant dense<0> : tensor<i32>
    %row = stablehlo.dynamic_slice %a, %i, %z, sizes = [1, 4]
        : (tensor<5x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %two = stablehlo.add %row, %row : tensor<1x4xf32>
    %at = stablehlo.add %i, %i : tensor<i32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %at1 = stablehlo.subtract %at, %one : tensor<i32>
    %new = stablehlo.dynamic_update_slice %out, %two, %at1, %z
        : (tensor<5x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<5x4xf32>
    {extra_use}
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %new : tensor<i32>, tensor<5x4xf32>
  }}
  return %0#1 : tensor<5x4xf32>""")


def scan_rows_expected(a: np.ndarray, o: np.ndarray) -> np.ndarray:
    """scan_rows in numpy."""
    out = o.copy()
    for i in range(4):
        out[min(max(2 * i - 1, 0), 4)] = 2 * a[i]
    return out


def body_copies(text: str) -> int:
    """Copies in the body of the program's one while."""
    from tensorlang.plan import Copy

    (loop,) = whiles(lower_function(frontend.parse(text)).plan.steps)
    return sum(isinstance(s, Copy) for s in loop.body)


def test_dynamic_update_slice_of_a_carry_updates_in_place(where: str) -> None:
    text = scan_rows()
    if where == "host":
        assert body_copies(text) == 1  # the counter only
    a, o = rand((5, 4)), rand((5, 4))
    (got,) = run(text, a, o)
    np.testing.assert_array_equal(got, scan_rows_expected(a, o))


def test_dynamic_update_slice_of_a_carry_read_again_copies(where: str) -> None:
    text = scan_rows("%keep = stablehlo.add %out, %out : tensor<5x4xf32>")
    if where == "host":
        assert body_copies(text) == 2
    a, o = rand((5, 4)), rand((5, 4))
    (got,) = run(text, a, o)
    np.testing.assert_array_equal(got, scan_rows_expected(a, o))


def test_device_loop_relaunches_chunk_after_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_loop, "CHUNK_TRIPS", 3)
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")
    x = np.random.default_rng(6).integers(1, 100, size=64).astype(np.int32)
    text = (LOOPS / "collatz.mlir").read_text()
    steps = lower_function(frontend.parse(text)).plan.steps
    (loop,) = whiles(steps)
    # the first launch also zeroes the step counts (folded in), then it is relaunched
    # without that while the flag says the loop goes on
    launches = [s for s in steps[:steps.index(loop)] if isinstance(s, Launch)]
    assert [s.kernel.split("_", 1)[1] for s in launches] == ["while"]
    assert not loop.cond and len(loop.body) == 1 and loop.body[0].kernel.endswith("_while")
    v, n = run(text, x)
    want_v, want_n = collatz_steps(x)
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(n, want_n)


def test_passed_through_carry_is_not_copied(where: str) -> None:
    text = counter_loop("i32", "stablehlo.constant dense<0> : tensor<i32>",
                        "stablehlo.constant dense<4> : tensor<i32>", 1, "LT")
    text = text.replace("%y = stablehlo.add %x, %a : tensor<3xf32>", "%y = stablehlo.add %x, %x"
                        " : tensor<3xf32>\n    %a2 = stablehlo.negate %y : tensor<3xf32>")
    text = text.replace("stablehlo.return %j, %y", "stablehlo.return %j, %x")
    from tensorlang.plan import Copy

    steps = lower_function(frontend.parse(text)).plan.steps
    assert not any(isinstance(s, Copy) and s.src == 0 for s in steps)  # %a's buffer
    a = rand((3,))
    i, x = run(text, a, np.int32(0), np.int32(0))
    assert int(i) == 4
    np.testing.assert_array_equal(x, a)


def test_loop_with_a_large_value_stays_on_the_host() -> None:
    text = counter_loop("i32", "stablehlo.constant dense<0> : tensor<i32>",
                        "stablehlo.constant dense<3> : tensor<i32>", 1, "LT")
    n = device_loop.MAX_ELEMENTS + 1
    text = text.replace("tensor<3xf32>", f"tensor<{n}xf32>")
    (loop,) = whiles(lower_function(frontend.parse(text)).plan.steps)
    assert loop.trips is not None
    a = rand((n,))
    i, x = run(text, a, np.int32(0), np.int32(0))
    np.testing.assert_allclose(x, 4 * a, rtol=1e-5)


def test_batched_dot_and_reduce_in_a_loop(where: str) -> None:
    text = module("(%m: tensor<2x3x3xf32>, %w: tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, "
                  "tensor<2xf32>)", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %z = stablehlo.constant dense<0.0> : tensor<2xf32>
  %0:3 = stablehlo.while(%i = %c0, %x = %m, %s = %z) : tensor<i32>, tensor<2x3x3xf32>,
      tensor<2xf32>
   cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %d = stablehlo.dot_general %x, %w, batching_dims = [0] x [0], contracting_dims = [2] x [1]
        : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
    %t = stablehlo.tanh %d : tensor<2x3x3xf32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %r = stablehlo.reduce(%t init: %ninf) applies stablehlo.maximum across dimensions = [1, 2]
        : (tensor<2x3x3xf32>, tensor<f32>) -> tensor<2xf32>
    %s2 = stablehlo.add %s, %r : tensor<2xf32>
    stablehlo.return %j, %t, %s2 : tensor<i32>, tensor<2x3x3xf32>, tensor<2xf32>
  }
  return %0#1, %0#2 : tensor<2x3x3xf32>, tensor<2xf32>""")
    m, w = rand((2, 3, 3)), rand((2, 3, 3))
    x, s = m.astype(np.float64), np.zeros(2)
    for _ in range(3):
        x = np.tanh(np.einsum("bij,bjk->bik", x, w.astype(np.float64)))
        s += x.max(axis=(1, 2))
    got_x, got_s = run(text, m, w)
    np.testing.assert_allclose(got_x, x, atol=1e-5)
    np.testing.assert_allclose(got_s, s, atol=1e-5)


def test_small_dot_in_a_loop(where: str) -> None:
    text = module("(%v: tensor<16xf32>) -> tensor<f32>", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0:3 = stablehlo.while(%i = %c0, %x = %v, %s = %z) : tensor<i32>, tensor<16xf32>,
      tensor<f32>
   cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %d = stablehlo.dot_general %x, %x, contracting_dims = [0] x [0]
        : (tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
    %s2 = stablehlo.add %s, %d : tensor<f32>
    %x2 = stablehlo.sine %x : tensor<16xf32>
    stablehlo.return %j, %x2, %s2 : tensor<i32>, tensor<16xf32>, tensor<f32>
  }
  return %0#2 : tensor<f32>""")
    v = rand((16,))
    x, s = v.astype(np.float64), 0.0
    for _ in range(3):
        s += x @ x
        x = np.sin(x)
    (got,) = run(text, v)
    np.testing.assert_allclose(got, s, rtol=1e-5)
