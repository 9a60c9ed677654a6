"""Prepared frames of straight-line plans (``backend_opencl.runtime.opencl.frames``): buffers share
slots only when their lifetimes do not overlap, warm calls make no kernel objects,
results never alias each other or a later call's, frames agree with the step-by-step
executor, misaligned numpy arguments are bound in place; all against numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pytest

import backend_opencl
from backend_opencl.exec import executable
from backend_opencl.runtime import get_device
from backend_opencl.runtime.opencl import frames, memory
from tensorlang.plan import Buffer, Copy, Free, Launch, Plan
from tests.lowering.test_executor_io import call_concurrently, record_in_place_bindings

RNG = np.random.default_rng(11)
T = "tensor<64x32xf32>"
CHAIN = f"""func.func public @main(%x: {T}, %w: tensor<32x32xf32>, %b: tensor<32xf32>)
    -> ({T}, {T}) {{
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : ({T}, tensor<32x32xf32>) -> {T}
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<32xf32>) -> {T}
  %2 = stablehlo.add %0, %1 : {T}
  %3 = stablehlo.tanh %2 : {T}
  %4 = stablehlo.dot_general %3, %w, contracting_dims = [1] x [0]
       : ({T}, tensor<32x32xf32>) -> {T}
  %5 = stablehlo.exponential %4 : {T}
  %6 = stablehlo.multiply %5, %x : {T}
  return %6, %3 : {T}, {T}
}}
"""


def _inputs() -> tuple[np.ndarray, ...]:
    return (RNG.standard_normal((64, 32)).astype(np.float32),
            (RNG.standard_normal((32, 32)) / 6).astype(np.float32),
            RNG.standard_normal(32).astype(np.float32))


def _want(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.tanh(x @ w + b)
    return np.exp(h @ w) * x, h


def _check(outs: tuple[np.ndarray, ...], args: tuple[np.ndarray, ...]) -> None:
    for got, want in zip(outs, _want(*args), strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.fixture(autouse=True)
def poison(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh frames of poisoned buffers unless a test turns it off."""
    monkeypatch.setattr(executable, "POISON", True)


def _fresh(text: str, *functions: Callable[..., object]) -> executable.Executable:
    """A new executable (not the driver's cached one) for ``text``, its host callbacks
    calling ``functions``."""
    exe = backend_opencl.compile_stablehlo(text, host_callbacks=list(functions) or None)
    return executable.Executable(exe.plan, exe.module, exe.runtime, exe.name,
                                 exe.arg_dtypes, exe.result_dtypes, functions)


def test_slots_are_shared_only_between_disjoint_lifetimes() -> None:
    f32 = [Buffer(i, "f32", (8,)) for i in range(5)]
    plan = Plan(buffers=(*f32, Buffer(5, "f32", (4,))), params=(0,), results=(4,), steps=(
        Launch("k", (0, 1), 1), Free((0,)),
        Launch("k", (1, 2), 1), Free((1,)),
        Launch("k", (2, 5), 1), Launch("k", (5, 3), 1), Free((2, 5)),
        Copy(3, 4), Free((3,))))
    layout = frames.Layout(plan, dynamic=frozenset({0}), constants=frozenset())
    assert layout.ok
    s = layout.slot_of
    assert s[0] == s[2] == s[4] and s[1] == s[5]  # reused after Free; 5 is smaller than 1
    assert s[3] not in (s[0], s[1])  # 2 and 5 are live when 3 is written
    assert s[4] != s[3]  # a copy's source and target live at once
    assert layout.slot_bytes == [32, 32, 32]
    assert layout.eager == tuple(sorted(set(s.values())))


def test_a_freed_slot_takes_the_best_fitting_buffer_of_any_dtype() -> None:
    """The smallest free slot that holds a buffer is reused; when none does, the largest
    grows (a new slot would take more memory than growing it)."""
    sizes = {0: ("f32", 4), 1: ("f32", 64), 2: ("f32", 16), 3: ("i8", 40), 4: ("f64", 64),
             5: ("f32", 1)}
    plan = Plan(buffers=tuple(Buffer(b, t, (n,)) for b, (t, n) in sizes.items()),
                params=(5,), results=(4,), steps=(
        Launch("k", (5, 0, 1, 2), 1), Free((0, 1, 2)),  # frees slots of 16, 256, 64 bytes
        Launch("k", (5, 3), 1),  # 40 bytes: the 64-byte slot
        Launch("k", (3, 4), 1)))  # 512 bytes: the 256-byte slot, grown
    layout = frames.Layout(plan, dynamic=frozenset({5}), constants=frozenset())
    s = layout.slot_of
    assert s[3] == s[2] and s[4] == s[1]
    assert layout.slot_bytes[s[4]] == 512 and layout.slot_bytes[s[3]] == 64
    assert len(layout.slot_bytes) == 4


def test_a_buffer_used_after_its_free_turns_frames_off() -> None:
    plan = Plan(buffers=(Buffer(0, "f32", (8,)), Buffer(1, "f32", (8,))), params=(0,),
                results=(1,), steps=(Launch("k", (0, 1), 1), Free((1,)),
                                     Launch("k", (0, 1), 1)))
    assert not frames.Layout(plan, frozenset({0}), frozenset()).ok


def test_frames_agree_with_the_step_by_step_executor(monkeypatch) -> None:
    args = _inputs()
    framed = _fresh(CHAIN)
    a = framed(*args)  # the plan is resolved at the first call
    monkeypatch.setenv(executable.FRAMES_ENV, "0")
    stepped = _fresh(CHAIN)
    b = stepped(*args)
    assert framed._frames is not None and stepped._frames is None
    _check(a, args)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


MIXED = """func.func public @main(%x: tensor<128x32xf32>, %w: tensor<32x8xf32>,
                            %v: tensor<8x128xf32>) -> (tensor<128x128xf64>, tensor<8xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
       : (tensor<128x32xf32>, tensor<32x8xf32>) -> tensor<128x8xf32>
  %1 = stablehlo.tanh %0 : tensor<128x8xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [0]
       : (tensor<128x8xf32>, tensor<f32>) -> tensor<8xf32>
  %3 = stablehlo.dot_general %1, %v, contracting_dims = [1] x [0]
       : (tensor<128x8xf32>, tensor<8x128xf32>) -> tensor<128x128xf32>
  %4 = stablehlo.convert %3 : (tensor<128x128xf32>) -> tensor<128x128xf64>
  %5 = stablehlo.exponential %4 : tensor<128x128xf64>
  %6 = stablehlo.dot_general %5, %5, contracting_dims = [1] x [1]
       : (tensor<128x128xf64>, tensor<128x128xf64>) -> tensor<128x128xf64>
  %7 = stablehlo.dot_general %6, %5, contracting_dims = [1] x [0]
       : (tensor<128x128xf64>, tensor<128x128xf64>) -> tensor<128x128xf64>
  return %7, %2 : tensor<128x128xf64>, tensor<8xf32>
}"""


def test_buffers_of_other_dtypes_share_a_slot(monkeypatch) -> None:
    """A slot freed by an f32 buffer holds a later f64 one: results as numpy's and as
    the step-by-step executor's, whose buffers are all their own."""
    x = RNG.standard_normal((128, 32)).astype(np.float32)
    w = (RNG.standard_normal((32, 8)) / 5).astype(np.float32)
    v = (RNG.standard_normal((8, 128)) / 5).astype(np.float32)
    framed = _fresh(MIXED)
    got = framed(x, w, v)
    layout = framed._frames.layout
    dtypes: dict[int, set[str]] = {}
    for bid, slot in layout.slot_of.items():
        dtypes.setdefault(slot, set()).add(framed.plan.buffers[bid].dtype)
    assert any(len(d) > 1 for d in dtypes.values()), layout.slot_of
    h = np.tanh(x.astype(np.float64) @ w)
    e = np.exp(h @ v)
    np.testing.assert_allclose(got[0], (e @ e.T) @ e, rtol=1e-5)
    np.testing.assert_allclose(got[1], h.sum(0), rtol=1e-5, atol=1e-5)
    monkeypatch.setenv(executable.FRAMES_ENV, "0")
    stepped = _fresh(MIXED)(x, w, v)
    for a, b in zip(got, stepped, strict=True):
        np.testing.assert_array_equal(a, b)


def test_warm_calls_reuse_one_frame_and_make_no_kernels(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    exe = _fresh(CHAIN)
    first = _inputs()
    kept = exe(*first)
    made: list[str] = []
    real = cl.Kernel
    monkeypatch.setattr(cl, "Kernel", lambda program, name: made.append(name)
                        or real(program, name))
    for _ in range(3):
        args = _inputs()
        _check(exe(*args), args)
    assert made == []
    assert exe._frames.unused() == 1
    _check(kept, first)  # earlier results are not overwritten by later calls


def test_results_of_one_call_never_share_memory() -> None:
    exe = _fresh(CHAIN)
    outs = exe(*_inputs())
    assert not np.shares_memory(outs[0], outs[1])


def test_concurrent_calls_take_their_own_frames(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    exe = _fresh(CHAIN)
    data = [_inputs() for _ in range(4)]

    def work(args: tuple[np.ndarray, ...]) -> None:
        for _ in range(5):
            _check(exe(*args), args)

    call_concurrently(work, data)
    assert 1 <= exe._frames.unused() <= len(data)


@pytest.mark.parametrize("dtype,shift", [(np.float32, 4), (np.float64, 8), (np.float32, 0)])
def test_misaligned_arguments_are_bound_in_place(monkeypatch, dtype, shift) -> None:
    made = record_in_place_bindings(monkeypatch)
    n = 128
    t = f"tensor<{n}x{n}x{'f32' if dtype == np.float32 else 'f64'}>"
    exe = backend_opencl.compile_stablehlo(f"""func.func public @main(%a: {t}, %b: {t}) -> {t} {{
  %0 = stablehlo.multiply %a, %b : {t}
  %1 = stablehlo.add %0, %a : {t}
  return %1 : {t}
}}
""")
    a, b = (_at(RNG.standard_normal((n, n)).astype(dtype), shift) for _ in range(2))
    before = a.copy(), b.copy()
    np.testing.assert_allclose(exe(a, b)[0], a * b + a, rtol=1e-6)
    if memory.binds_anywhere(get_device()) or shift == 0:
        assert a.ctypes.data in made and b.ctypes.data in made
    else:  # a driver that copies misaligned host pointers at every launch: tlc copies once
        assert a.ctypes.data not in made and b.ctypes.data not in made
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])


def _at(x: np.ndarray, shift: int) -> np.ndarray:
    """A copy of ``x`` whose data starts ``shift`` bytes past a boundary of the device's
    in-place alignment (at least 128 bytes)."""
    raw = memory.aligned_empty(x.nbytes + shift, max(128, memory.host_alignment(get_device())))
    out = raw[shift:].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out


def test_result_memory_is_reused_only_after_the_result_is_gone(monkeypatch) -> None:
    monkeypatch.setattr(executable, "POISON", False)
    n = 128  # 64 KiB results: bound in place, from leased memory
    t = f"tensor<{n}x{n}xf32>"
    exe = _fresh(f"""func.func public @main(%a: {t}) -> ({t}, {t}) {{
  %0 = stablehlo.add %a, %a : {t}
  %1 = stablehlo.multiply %a, %a : {t}
  return %0, %1 : {t}, {t}
}}
""")
    a = RNG.standard_normal((n, n)).astype(np.float32)
    first = exe(a)
    assert all(exe.in_place_results)
    held = {r.ctypes.data for r in first}
    second = exe(a)  # the first results are alive: fresh memory
    assert not held & {r.ctypes.data for r in second}
    for got in (first, second):
        np.testing.assert_allclose(got[0], a + a, rtol=1e-6)
        np.testing.assert_allclose(got[1], a * a, rtol=1e-6)
    view = second[0][3:5]  # a view keeps its result's memory leased
    kept = second[0].ctypes.data
    released = held | {second[1].ctypes.data}
    del first, second, got
    third = exe(a)
    assert {r.ctypes.data for r in third} <= released  # released memory is used again
    assert kept not in {r.ctypes.data for r in third}
    np.testing.assert_allclose(view, (a + a)[3:5], rtol=1e-6)
