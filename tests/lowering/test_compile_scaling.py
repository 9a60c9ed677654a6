"""Lowering time is linear in the program's size (issue #20).

A chain ``c = c * c`` of splat constants, n ops long, took time exponential in n to
lower: every value used twice was visited along every path of the DAG (24 ops: ~14 s).
The tests count the Python calls the lowering makes (frontend/lower only): each hundred
ops more must cost as many calls more, and a budget stops a lowering that explodes
instead of letting it run for ever.  Long chains and DAGs sharing every value also compile and give
numpy's results.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest

import backend_opencl
import frontend
from backend_opencl.api import compiler
from frontend.lower import lower_function
from frontend.lower.core import fused
from tests.lowering.conftest import RNG

LOWER_DIR = str(Path(fused.__file__).parent)
CALLS_PER_OP = 500
"""The budget of Python calls into frontend/lower per line of StableHLO (100-250 are
made per op)."""


class Exploded(Exception):
    """The lowering made more calls than its budget."""


def chain(n: int, shape: str = "4", start: str = "splat", ops: Sequence[str] = ("multiply",),
          share: bool = False) -> str:
    """``%c0`` (``start``: a splat constant, a broadcast scalar constant, a constant of
    distinct elements, or the parameter ``%y``), then ``%ck = op(%c(k-1), %c(k-2))``
    (``share``; else ``op(%c(k-1), %c(k-1))``) with ``ops`` in turn, and ``%x * %cn``."""
    ty = f"tensor<{shape}xf32>"
    size = int(np.prod([int(d) for d in shape.split("x")]))
    lines = {
        "splat": [f"%c0 = stablehlo.constant dense<0.75> : {ty}"],
        "broadcast": ["%s = stablehlo.constant dense<0.75> : tensor<f32>",
                      f"%c0 = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> {ty}"],
        "dense": [f"%c0 = stablehlo.constant dense<{[1.0 + i / 8 for i in range(size)]}> "
                  f": {ty}"],
        "parameter": [f"%c0 = stablehlo.add %y, %y : {ty}"],
    }[start]
    lines.append(f"%c1 = stablehlo.multiply %c0, %c0 : {ty}")
    for k in range(2, n + 1):
        other = k - 2 if share else k - 1
        lines.append(f"%c{k} = stablehlo.{ops[k % len(ops)]} %c{k - 1}, %c{other} : {ty}")
    lines += [f"%r = stablehlo.multiply %x, %c{n} : {ty}", f"return %r : {ty}"]
    body = "\n  ".join(lines)
    return f"func.func public @main(%x: {ty}, %y: {ty}) -> {ty} {{\n  {body}\n}}\n"


def reference(n: int, x: np.ndarray, c0: float, ops: Sequence[str], share: bool) -> np.ndarray:
    """:func:`chain`'s result computed by numpy in f32, op by op."""
    fns = {"multiply": np.multiply, "divide": np.divide, "add": np.add,
           "subtract": np.subtract}
    c = [np.float32(c0)]
    c.append(c[0] * c[0])
    for k in range(2, n + 1):
        c.append(np.float32(fns[ops[k % len(ops)]](c[k - 1], c[k - 2 if share else k - 1])))
    return x * c[n]


def dots(n: int) -> str:
    """``n`` products ``x @ w`` plus ``x`` (a gemm with its epilogue), all returned: each
    epilogue's root is read only by the return at the end of the function."""
    ty = "tensor<8x8xf32>"
    lines = []
    for i in range(n):
        lines += [f"%d{i} = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] "
                  f": ({ty}, {ty}) -> {ty}", f"%e{i} = stablehlo.add %d{i}, %x : {ty}"]
    types_ = ", ".join([ty] * n)
    lines.append(f"return {', '.join(f'%e{i}' for i in range(n))} : {types_}")
    body = "\n  ".join(lines)
    return f"func.func public @main(%x: {ty}, %w: {ty}) -> ({types_}) {{\n  {body}\n}}\n"


def loops(n: int) -> str:
    """``n`` while loops one after the other, each carrying a counter and two tensors."""
    ty = "tensor<64xf32>"
    lines = ["%zero = stablehlo.constant dense<0> : tensor<i32>",
             "%one = stablehlo.constant dense<1> : tensor<i32>",
             "%five = stablehlo.constant dense<5> : tensor<i32>",
             f"%a0 = stablehlo.add %x, %y : {ty}", f"%b0 = stablehlo.multiply %x, %y : {ty}"]
    for i in range(n):
        lines.append(f"""%i{i + 1}, %a{i + 1}, %b{i + 1} = stablehlo.while(%it = %zero, \
%at = %a{i}, %bt = %b{i}) : tensor<i32>, {ty}, {ty}
    cond {{
      %p = stablehlo.compare LT, %it, %five : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %next = stablehlo.add %it, %one : tensor<i32>
      %s = stablehlo.add %at, %bt : {ty}
      %t = stablehlo.multiply %bt, %at : {ty}
      stablehlo.return %next, %s, %t : tensor<i32>, {ty}, {ty}
    }}""")
    lines += [f"%r = stablehlo.add %a{n}, %b{n} : {ty}", f"return %r : {ty}"]
    body = "\n  ".join(lines)
    return f"func.func public @main(%x: {ty}, %y: {ty}) -> {ty} {{\n  {body}\n}}\n"


def lowering_calls(text: str) -> int:
    """The Python calls into frontend/lower that lowering ``text`` makes (raises
    :class:`Exploded` past :data:`CALLS_PER_OP` per line of ``text``)."""
    module = frontend.parse(text)
    budget = CALLS_PER_OP * text.count("\n")
    calls = 0

    def count(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename.startswith(LOWER_DIR):
            calls += 1
            if calls > budget:
                raise Exploded(f"more than {budget} calls")

    lower_function(frontend.parse(chain(2)))  # imports the op families first
    before = sys.getprofile()
    sys.setprofile(count)
    try:
        lower_function(module)
    finally:
        sys.setprofile(before)
    return calls


CASES: dict[str, Callable[[int], str]] = {
    "splat": chain,
    "broadcast": partial(chain, start="broadcast"),
    "dense": partial(chain, start="dense"),
    "64x64": partial(chain, shape="64x64"),
    "256x256": partial(chain, shape="256x256"),  # large enough for concat_slices to look
    "mixed": partial(chain, ops=("add", "subtract", "multiply")),
    "shared": partial(chain, share=True, ops=("divide", "add", "multiply")),
    "shared_parameter": partial(chain, share=True, start="parameter"),
    "shared_256x256": partial(chain, share=True, shape="256x256"),
    "dots": dots,
    "loops": loops,
}


@pytest.mark.parametrize("case", CASES)
def test_lowering_calls_grow_linearly(case: str) -> None:
    """Each hundred ops (products, loops) more costs as many calls more (at 100, 200 and
    300; the differences of a quadratic cost would grow by half)."""
    c100, c200, c300 = (lowering_calls(CASES[case](n)) for n in (100, 200, 300))
    assert c300 - c200 < 1.15 * (c200 - c100), (c100, c200, c300)


def compiled(text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``text`` compiled from scratch (no cache on disk or in memory), after
    checking that its lowering stays within the budget."""
    lowering_calls(text)
    monkeypatch.setenv("TLC_CACHE_DIR", "off")
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    return backend_opencl.compile_stablehlo(text)


def test_chain_of_a_thousand_ops_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported program, ``c = c * c`` on ``jnp.full((4,), 1.0)``, 1000 times."""
    x, y = RNG.standard_normal((2, 4)).astype(np.float32)
    exe = compiled(chain(1000).replace("dense<0.75>", "dense<1.0>"), monkeypatch)
    np.testing.assert_array_equal(exe(x, y)[0], x)


@pytest.mark.parametrize(("n", "shape"), [(1000, "4"), (200, "64x64")])
def test_shared_dag_gives_numpys_result(monkeypatch: pytest.MonkeyPatch, n: int,
                                        shape: str) -> None:
    """Every value read by the next two ops (divide, add and multiply in turn: the values
    stay between 0.4 and 3)."""
    ops = ("divide", "add", "multiply")
    dims = tuple(int(d) for d in shape.split("x"))
    x, y = RNG.standard_normal((2, *dims)).astype(np.float32)
    exe = compiled(chain(n, shape, ops=ops, share=True), monkeypatch)
    np.testing.assert_allclose(exe(x, y)[0], reference(n, x, 0.75, ops, share=True),
                               rtol=1e-4)


def test_shared_parameter_dag_gives_numpys_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same DAG over a parameter: shared values are materialized or recomputed."""
    n, ops = 30, ("divide", "add", "multiply")
    x = RNG.standard_normal(4).astype(np.float32)
    y = RNG.uniform(0.3, 0.45, 4).astype(np.float32)
    exe = compiled(chain(n, start="parameter", ops=ops, share=True), monkeypatch)
    np.testing.assert_allclose(exe(x, y)[0], reference(n, x, y + y, ops, share=True),
                               rtol=1e-4)


def test_stack_of_100_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """``jnp.stack`` of 100 arrays: the fused concatenation picks its input by a binary
    search (with a branch per input nested in the last one's, past 40 inputs the kernel
    nested its regions deeper than the tensor language allows, past ~330 the lowering
    exceeded Python's recursion limit)."""
    n, ty = 100, "tensor<1x4xf32>"
    lines = []
    for i in range(n):
        lines += [f"%k{i} = stablehlo.constant dense<{i}.0> : {ty}",
                  f"%v{i} = stablehlo.add %x, %k{i} : {ty}"]
    inputs = ", ".join(f"%v{i}" for i in range(n))
    lines += [f"%r = stablehlo.concatenate {inputs}, dim = 0 : ({', '.join([ty] * n)}) "
              f"-> tensor<{n}x4xf32>", f"return %r : tensor<{n}x4xf32>"]
    body = "\n  ".join(lines)
    text = f"func.func public @main(%x: {ty}) -> tensor<{n}x4xf32> {{\n  {body}\n}}\n"
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    (got,) = compiled(text, monkeypatch)(x)
    np.testing.assert_array_equal(got, x + np.arange(n, dtype=np.float32)[:, None])
