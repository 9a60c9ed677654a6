"""Each distinct kernel once (frontend/lower/core/dedup.py): kernels equal up to the names of
their buffers and values share one function, launched with each one's buffers; kernels
differing in a constant, a shape, a dtype or a layout stay apart.  Results on random data
against numpy, with poisoned buffers (conftest)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import backend_opencl
import frontend
from frontend.lower import lower_function
from frontend.lower.core.dedup import DistinctKernels, kernel_key
from tensorlang.plan import Case, Copy, Free, If, Launch, Step, While, kernels_renamed
from tests.filecheck import check_text, tlc
from tests.lowering.conftest import module, rand, run

STEPS = Path(__file__).with_name("dedup_steps.mlir")


def launches(steps: tuple[Step, ...]) -> list[Launch]:
    """The plan's launches (no host control flow in these programs)."""
    return [s for s in steps if isinstance(s, Launch)]


def test_unrolled_steps_emit_one_kernel() -> None:
    code, text, err = tlc("compile", str(STEPS), "--emit", "tl")
    assert code == 0, err
    check_text(STEPS, text)


def test_unrolled_steps_launch_the_shared_kernel_with_their_buffers() -> None:
    exe = backend_opencl.compile_stablehlo(STEPS.read_text())
    steps = launches(exe.plan.steps)
    assert list(exe.module.kernels) == ["k0_dot_tanh"]
    assert [s.kernel for s in steps] == ["k0_dot_tanh"] * 4
    assert len({s.args for s in steps}) == 4  # each step its own buffers


def test_unrolled_steps_match_numpy() -> None:
    h, w, *xs = rand((8, 16)), rand((16, 16)) * 0.3, *(rand((8, 16)) for _ in range(4))
    out, mid = run(STEPS.read_text(), h, w, *xs)
    states = [h]
    for x in xs:
        states.append(np.tanh(states[-1] @ w + x))
    np.testing.assert_allclose(out, states[4], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mid, states[2], rtol=1e-5, atol=1e-6)


def _loop(x: str) -> str:
    """``x = sin(x) + x`` five times, as a counted ``while`` on ``x``."""
    ty = "tensor<4x8xf32>"
    return f"""stablehlo.while(%i = %c0, %x = {x}) : tensor<i32>, {ty}
    cond {{
      %n = stablehlo.constant dense<5> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %y = stablehlo.sine %x : {ty}
      %z = stablehlo.add %y, %x : {ty}
      stablehlo.return %j, %z : tensor<i32>, {ty}
    }}"""


LOOPS = module("(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, "
               "tensor<4x8xf32>)", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r0:2 = {_loop("%a")}
  %r1:2 = {_loop("%b")}
  return %r0#1, %r1#1 : tensor<4x8xf32>, tensor<4x8xf32>""")


def test_equal_loops_share_their_kernels() -> None:
    """A loop's kernel is launched from inside its builder's block (device_loop): the
    plan's launches are renamed once the lowering is done."""
    lowered = lower_function(frontend.parse(LOOPS))
    steps = launches(lowered.plan.steps)
    assert lowered.kernels.count("func @") == len({s.kernel for s in steps})
    loops = [s.kernel for s in steps if "while" in s.kernel]
    assert len(loops) == 2 and len(set(loops)) == 1
    a, b = rand((4, 8)), rand((4, 8))
    got = run(LOOPS, a, b)
    for out, x in zip(got, (a, b), strict=True):
        for _ in range(5):
            x = np.sin(x) + x
        np.testing.assert_allclose(out, x, rtol=1e-5, atol=1e-5)


@dataclass(frozen=True)
class Cell:
    """One step ``tanh(h w + x)``: ``rows`` of ``h``, the element type, a constant factor
    ``scale`` (none when empty), and ``w`` transposed when ``contract`` is 1."""

    rows: int = 8
    dtype: str = "f32"
    scale: str = ""
    contract: int = 0

    @property
    def types(self) -> tuple[str, str]:
        """The types of ``h`` (and ``x``, the result) and of ``w``."""
        return f"tensor<{self.rows}x16x{self.dtype}>", f"tensor<16x16x{self.dtype}>"

    def text(self, i: int, h: str, w: str, x: str) -> str:
        """The step's ops, its result ``%h<i>``."""
        ty, wty = self.types
        lines = [f"  %d{i} = stablehlo.dot_general {h}, {w}, contracting_dims = [1] x "
                 f"[{self.contract}] : ({ty}, {wty}) -> {ty}",
                 f"  %a{i} = stablehlo.add %d{i}, {x} : {ty}"]
        last = f"%a{i}"
        if self.scale:
            lines += [f"  %c{i} = stablehlo.constant dense<{self.scale}> : {ty}",
                      f"  %s{i} = stablehlo.multiply %a{i}, %c{i} : {ty}"]
            last = f"%s{i}"
        return "\n".join([*lines, f"  %h{i} = stablehlo.tanh {last} : {ty}"])

    def inputs(self) -> list[np.ndarray]:
        """Random ``h``, ``w``, ``x``."""
        dt = np.float64 if self.dtype == "f64" else np.float32
        return [rand((self.rows, 16), dt), rand((16, 16), dt) * 0.3, rand((self.rows, 16), dt)]

    def reference(self, h: np.ndarray, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """numpy's result of the step."""
        a = h @ (w.T if self.contract else w) + x
        return np.tanh(a * a.dtype.type(self.scale) if self.scale else a)


def _pair(first: Cell, second: Cell) -> str:
    """Two independent steps: ``%h0`` from ``%p``, ``%h1`` from ``%q``."""
    (t0, w0), (t1, w1) = first.types, second.types
    body = "\n".join([first.text(0, "%p", "%v", "%x"), second.text(1, "%q", "%u", "%y"),
                      f"  return %h0, %h1 : {t0}, {t1}"])
    return module(f"(%p: {t0}, %v: {w0}, %x: {t0}, %q: {t1}, %u: {w1}, %y: {t1}) -> "
                  f"({t0}, {t1})", body)


DIFFERENT = {
    "constant": (Cell(scale="2.0"), Cell(scale="3.0")),
    "shape": (Cell(rows=8), Cell(rows=4)),
    "dtype": (Cell(dtype="f32"), Cell(dtype="f64")),
    "layout": (Cell(contract=0), Cell(contract=1)),
}


def test_equal_steps_of_independent_chains_merge() -> None:
    text = _pair(Cell(scale="2.0"), Cell(scale="2.0"))
    lowered = lower_function(frontend.parse(text))
    assert lowered.kernels.count("func @") == 1
    assert len({s.kernel for s in launches(lowered.plan.steps)}) == 1


@pytest.mark.parametrize("what", sorted(DIFFERENT))
def test_kernels_differing_in_one_thing_stay_apart(what: str) -> None:
    cells = DIFFERENT[what]
    text = _pair(*cells)
    lowered = lower_function(frontend.parse(text))
    assert lowered.kernels.count("func @") == 2, lowered.kernels
    steps = launches(lowered.plan.steps)
    assert len(steps) == 2 and steps[0].kernel != steps[1].kernel
    inputs = [cell.inputs() for cell in cells]
    got = run(text, *inputs[0], *inputs[1])
    for out, cell, (h, w, x) in zip(got, cells, inputs, strict=True):
        np.testing.assert_allclose(out, cell.reference(h, w, x), rtol=1e-5, atol=1e-6)


KERNEL = """func @k3_add(%b4: memref<f32x16>, %b9: memref<f32x16>) {
  %g1 = group_id
  %x2 = load %b4[%g1] : memref<f32x16>
  store %x2, %b9[%g1] : memref<f32x16>
}
"""


def test_key_ignores_the_names_of_kernel_parameters_and_values() -> None:
    renamed = KERNEL.replace("k3_add", "k7_copy").replace("%b4", "%b11") \
        .replace("%b9", "%b2").replace("%x2", "%t5")
    assert kernel_key(renamed) == kernel_key(KERNEL)


@pytest.mark.parametrize(("old", "one", "other"), [
    ("%b9[%g1]", "%b9[%g1]", "%b4[%g1]"),  # another parameter (their order matters)
    ("f32x16", "f32x16", "f64x16"),  # a dtype
    ("f32x16", "f32x16", "f32x17"),  # a shape
    ("f32x16", "f32x4x4,strided<1,4>", "f32x4x4,strided<4,1>"),  # a layout
    ("%g1 = group_id", "%g1 = constant 1 -> index", "%g1 = constant 2 -> index"),
])
def test_key_keeps_what_the_kernel_computes(old: str, one: str, other: str) -> None:
    assert kernel_key(KERNEL.replace(old, one)) != kernel_key(KERNEL.replace(old, other))


def test_distinct_kernels_answer_the_first_name() -> None:
    kernels = DistinctKernels()
    assert kernels.add("k0_add", KERNEL) == "k0_add"
    assert kernels.add("k1_copy", KERNEL.replace("%b4", "%b1")) == "k0_add"
    other = KERNEL.replace("memref<f32x16>", "memref<f64x16>")
    assert kernels.add("k1_add", other) == "k1_add"
    assert len(kernels) == 2 and kernels.built == 3
    assert kernels.texts == [KERNEL, other]
    assert kernels.aliases == {"k1_copy": "k0_add"}


def test_launches_in_nested_steps_are_renamed() -> None:
    def launch(name: str) -> Launch:
        return Launch(name, (0,), 1)

    steps = (launch("k1"), While((launch("k1"),), 0, (If(0, (launch("k1"),),
                                                          (launch("k2"),)),)),
             Case(0, ((launch("k1"),), (Copy(0, 1), launch("k3")))), Free((1,)))
    renamed = kernels_renamed(steps, {"k1": "k0", "k3": "k2"})
    assert renamed == (launch("k0"), While((launch("k0"),), 0, (If(0, (launch("k0"),),
                                                                   (launch("k2"),)),)),
                       Case(0, ((launch("k0"),), (Copy(0, 1), launch("k2")))), Free((1,)))
    assert kernels_renamed(steps, {}) == steps
