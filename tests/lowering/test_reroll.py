"""Rolling unrolled recurrences back into loops (:mod:`frontend.lower.reroll`): which
blocks roll and which stay unrolled, the rewritten module printing and verifying, and
every program's results against numpy with poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower.core import types
from frontend.lower.core.driver import lower_function
from frontend.lower.core.inline import inline_calls
from frontend.lower.families.control import reroll
from frontend.syntax.printer import print_module
from frontend.verify import verify_module
from tensorlang.plan import Launch

from .conftest import RNG, module, run

B, I, H = 4, 8, 16  # noqa: E741 - batch, input and hidden sizes


def unrolled_rnn(steps: int, *, sequence: bool = False, reslice: bool = False,
                 skip: bool = False, feedback: bool = True) -> str:
    """StableHLO of ``h_t = tanh(x_t W + h_{t-1} U + b)`` unrolled over ``steps`` steps, as
    jax prints a Python loop: returns the last ``h`` (and every step's ``h`` stacked when
    ``sequence``).  ``reslice``: ``U`` sliced out of a wider matrix at every step (haiku's
    cells); ``skip``: ``h_{t-2}`` added too; ``feedback=False``: no ``h_{t-1} U`` (steps
    independent but for the sum)."""
    lines = []
    h, prev = "%h0", "%h0"
    outs = []
    for t in range(steps):
        p = f"%s{t}_"
        lines += [
            f"{p}xs = stablehlo.slice %xs [{t}:{t + 1}, 0:{B}, 0:{I}] : "
            f"(tensor<{steps}x{B}x{I}xf32>) -> tensor<1x{B}x{I}xf32>",
            f"{p}x = stablehlo.reshape {p}xs : (tensor<1x{B}x{I}xf32>) -> tensor<{B}x{I}xf32>",
            f"{p}xw = stablehlo.dot_general {p}x, %w, contracting_dims = [1] x [0] : "
            f"(tensor<{B}x{I}xf32>, tensor<{I}x{H}xf32>) -> tensor<{B}x{H}xf32>"]
        u = "%u"
        if reslice:
            lines.append(f"{p}u = stablehlo.slice %uu [0:{H}, {H}:{2 * H}] : "
                         f"(tensor<{H}x{2 * H}xf32>) -> tensor<{H}x{H}xf32>")
            u = f"{p}u"
        total = f"{p}xw"
        if feedback:
            lines += [f"{p}hu = stablehlo.dot_general {h}, {u}, contracting_dims = [1] x [0] "
                      f": (tensor<{B}x{H}xf32>, tensor<{H}x{H}xf32>) -> tensor<{B}x{H}xf32>",
                      f"{p}s = stablehlo.add {p}xw, {p}hu : tensor<{B}x{H}xf32>"]
            total = f"{p}s"
        if skip:
            lines.append(f"{p}k = stablehlo.add {total}, {prev} : tensor<{B}x{H}xf32>")
            total = f"{p}k"
        lines += [f"{p}b = stablehlo.broadcast_in_dim %b, dims = [1] : "
                  f"(tensor<{H}xf32>) -> tensor<{B}x{H}xf32>",
                  f"{p}a = stablehlo.add {total}, {p}b : tensor<{B}x{H}xf32>",
                  f"{p}h = stablehlo.tanh {p}a : tensor<{B}x{H}xf32>"]
        prev, h = h, f"{p}h"
        if sequence:
            lines.append(f"{p}o = stablehlo.broadcast_in_dim {h}, dims = [1, 2] : "
                         f"(tensor<{B}x{H}xf32>) -> tensor<1x{B}x{H}xf32>")
            outs.append(f"{p}o")
    results, types = [h], [f"tensor<{B}x{H}xf32>"]
    if sequence:
        lines.append(f"%seq = stablehlo.concatenate {', '.join(outs)}, dim = 0 : "
                     f"({', '.join([f'tensor<1x{B}x{H}xf32>'] * steps)}) -> "
                     f"tensor<{steps}x{B}x{H}xf32>")
        results.append("%seq")
        types.append(f"tensor<{steps}x{B}x{H}xf32>")
    lines.append(f"return {', '.join(results)} : {', '.join(types)}")
    u_type = f"tensor<{H}x{2 * H}xf32>" if reslice else f"tensor<{H}x{H}xf32>"
    signature = (f"(%xs: tensor<{steps}x{B}x{I}xf32>, %h0: tensor<{B}x{H}xf32>, "
                 f"%w: tensor<{I}x{H}xf32>, {'%uu' if reslice else '%u'}: {u_type}, "
                 f"%b: tensor<{H}xf32>) -> ({', '.join(types)})")
    return module(signature, "\n".join("  " + line for line in lines))


def inputs(steps: int, reslice: bool = False) -> list[np.ndarray]:
    """Random inputs of :func:`unrolled_rnn`, small enough that tanh does not saturate."""
    shapes = [(steps, B, I), (B, H), (I, H), (H, 2 * H) if reslice else (H, H), (H,)]
    return [(RNG.standard_normal(s) * 0.4).astype(np.float32) for s in shapes]


def reference(steps: int, xs: np.ndarray, h: np.ndarray, w: np.ndarray, u: np.ndarray,
              b: np.ndarray, *, reslice: bool = False, skip: bool = False,
              feedback: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The last ``h`` and the stacked sequence, in double precision."""
    u = u[:, H:] if reslice else u
    prev, seq = h.astype(np.float64), []
    for t in range(steps):
        s = xs[t].astype(np.float64) @ w + (h @ u if feedback else 0) + (prev if skip else 0)
        prev, h = h, np.tanh(s + b)
        seq.append(h)
    return h, np.stack(seq)


def rolled(text: str) -> list[str]:
    """The names of the top-level ops of ``text``'s ``@main`` after rolling."""
    mod = frontend.parse(text)
    body = reroll.reroll_recurrences(inline_calls(mod, mod.func("main")))
    return [op.name for op in body.block.ops]


def launches(text: str) -> int:
    """Kernel launches of the lowered program's plan (a device loop: one)."""
    return sum(isinstance(s, Launch) for s in lower_function(frontend.parse(text)).plan.steps)


@pytest.mark.parametrize("steps", [3, 8])
@pytest.mark.parametrize("sequence", [False, True])
def test_an_unrolled_rnn_rolls_into_one_loop(steps: int, sequence: bool) -> None:
    text = unrolled_rnn(steps, sequence=sequence)
    names = rolled(text)
    assert names.count("stablehlo.while") == 1
    assert "stablehlo.tanh" not in names  # every step's cell is in the loop
    if steps > 3:  # (the lowering unrolls a loop of three trips again)
        assert launches(text) <= 4  # the input product, the loop kernel, the results
    args = inputs(steps)
    got = run(text, *args)
    want = reference(steps, *args)
    for g, x in zip(got, want[:len(got)], strict=True):
        np.testing.assert_allclose(g, x, rtol=2e-5, atol=2e-6)


def test_weights_sliced_at_every_step_are_hoisted() -> None:
    """haiku slices a cell's weights at each step: the slices are the same value every
    step, so they are computed once, not carried or stacked by the loop."""
    steps = 6
    text = unrolled_rnn(steps, sequence=True, reslice=True)
    mod = frontend.parse(text)
    body = reroll.reroll_recurrences(inline_calls(mod, mod.func("main")))
    (loop,) = [op for op in body.block.ops if op.name == "stablehlo.while"]
    # the counter, h, and the stack of every step's h (as the concatenation reads it)
    assert [types.shape(v) for v in loop.operands] == [(), (B, H), (steps, 1, B, H)]
    args = inputs(steps, reslice=True)
    got = run(text, *args)
    for g, x in zip(got, reference(steps, *args, reslice=True), strict=True):
        np.testing.assert_allclose(g, x, rtol=2e-5, atol=2e-6)


def test_the_rolled_module_prints_parses_and_verifies() -> None:
    mod = frontend.parse(unrolled_rnn(5, sequence=True, reslice=True))
    func = mod.func("main")
    assert func is not None
    func.body = reroll.reroll_recurrences(inline_calls(mod, func))
    verify_module(mod)
    assert rolled(print_module(mod)).count("stablehlo.while") == 1  # parsed back: no new one


def test_a_value_of_two_steps_before_is_carried() -> None:
    """``h_{t-2}`` read by a step's last add: the loop's step begins mid-period, so the
    add's other operand is carried along with ``h``."""
    steps = 7
    text = unrolled_rnn(steps, sequence=True, skip=True)
    assert rolled(text).count("stablehlo.while") == 1
    args = inputs(steps)
    got = run(text, *args)
    for g, x in zip(got, reference(steps, *args, skip=True), strict=True):
        np.testing.assert_allclose(g, x, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("case", ["two_steps", "no_feedback"])
def test_what_stays_unrolled(case: str) -> None:
    """Fewer than MIN_STEPS steps; steps whose products do not depend on the step before
    (a loop would serialize independent work)."""
    steps = 2 if case == "two_steps" else 6
    options = {"feedback": case != "no_feedback"}
    text = unrolled_rnn(steps, sequence=True, **options)
    assert "stablehlo.while" not in rolled(text)
    args = inputs(steps)
    got = run(text, *args)
    for g, x in zip(got, reference(steps, *args, **options), strict=True):
        np.testing.assert_allclose(g, x, rtol=2e-5, atol=2e-6)
