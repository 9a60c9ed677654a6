"""Scatter parallel over its free window (segment sums and the like): work-groups own
window positions, apply every update in order there, and write the operand first, in
the same kernel.  Against in-order numpy references, with poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.ir.core import Op
from frontend.lower import lower_function
from frontend.lower.families import scatter_gather
from tests.lowering.conftest import module, run

RNG = np.random.default_rng(11)


def _t(shape: tuple[int, ...], elem: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elem}>"


def scatter_program(operand: tuple[int, ...], indices: tuple[int, ...],
                    updates: tuple[int, ...], dims: str, body: str, elem: str = "f32",
                    prologue: str = "") -> str:
    """@main(%a, %i, %u) scattering ``%u`` into ``%a`` (or into ``%a2``/``%u2`` when the
    prologue defines them) with ``dims`` and the update computation ``body``."""
    a, i, u = _t(operand, elem), _t(indices, "i32"), _t(updates, elem)
    src_a = "%a2" if "%a2" in prologue else "%a"
    src_u = "%u2" if "%u2" in prologue else "%u"
    return module(f"(%a: {a}, %i: {i}, %u: {u}) -> {a}", f"""{prologue}
  %0 = "stablehlo.scatter"({src_a}, %i, {src_u}) <{{indices_are_sorted = false,
      scatter_dimension_numbers = #stablehlo.scatter<{dims}>, unique_indices = false}}> ({{
  ^bb0(%x: tensor<{elem}>, %y: tensor<{elem}>):
    {body}
  }}) : ({a}, {i}, {u}) -> {a}
  return %0 : {a}""")


ADD = "%s = stablehlo.add %x, %y : tensor<{t}>\n    stablehlo.return %s : tensor<{t}>"
REPLACE = "stablehlo.return %y : tensor<{t}>"
SEGMENT = ("update_window_dims = [1], inserted_window_dims = [0], "
           "scatter_dims_to_operand_dims = [0], index_vector_dim = 1")


@pytest.mark.parametrize("width", [64, 200])  # one block per group; a ragged last block
def test_segment_sum(width: int) -> None:
    """jax.ops.segment_sum's scatter: repeated and out-of-range segment ids (skipped)."""
    m, segments = 700, 37
    a = RNG.standard_normal((segments, width)).astype(np.float32)
    ids = RNG.integers(-3, segments + 3, size=m).astype(np.int32)
    u = RNG.standard_normal((m, width)).astype(np.float32)
    want = a.copy()
    inside = (ids >= 0) & (ids < segments)
    np.add.at(want, ids[inside], u[inside])  # in order, in f32
    text = scatter_program(a.shape, (m, 1), u.shape, SEGMENT, ADD.format(t="f32"))
    (got,) = run(text, a, ids[:, None], u)
    np.testing.assert_array_equal(got, want)


def test_last_update_wins_with_two_free_dims() -> None:
    """Replacement keeps the last update per target: the update order is kept."""
    m, rows = 300, 9
    a = RNG.integers(-99, 99, size=(rows, 4, 8)).astype(np.int32)
    ids = RNG.integers(0, rows, size=m).astype(np.int32)
    u = RNG.integers(-99, 99, size=(m, 4, 8)).astype(np.int32)
    want = a.copy()
    for j, row in zip(ids, u, strict=True):
        want[j] = row
    dims = ("update_window_dims = [1, 2], inserted_window_dims = [0], "
            "scatter_dims_to_operand_dims = [0], index_vector_dim = 1")
    (got,) = run(scatter_program(a.shape, (m, 1), u.shape, dims, REPLACE.format(t="i32"),
                                 "i32"), a, ids[:, None], u)
    np.testing.assert_array_equal(got, want)


def test_window_partly_indexed() -> None:
    """Operand dimension 1 is both indexed and windowed (overlapping windows of 3, some
    elements out of bounds and skipped); dimension 2 is free."""
    m, shape = 250, (6, 10, 24)
    a = RNG.standard_normal(shape).astype(np.float32)
    ids = np.stack([RNG.integers(0, 6, size=m), RNG.integers(-1, 10, size=m)], 1)
    ids = ids.astype(np.int32)
    u = RNG.standard_normal((m, 3, 24)).astype(np.float32)
    want = a.copy()
    for (r, c), block in zip(ids, u, strict=True):
        for w in range(3):
            if 0 <= c + w < shape[1]:
                want[r, c + w] = want[r, c + w] * np.float32(0.5) + block[w]
    dims = ("update_window_dims = [1, 2], inserted_window_dims = [0], "
            "scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1")
    body = ("%h = stablehlo.constant dense<5.000000e-01> : tensor<f32>\n"
            "    %p = stablehlo.multiply %x, %h : tensor<f32>\n"
            "    %s = stablehlo.add %p, %y : tensor<f32>\n"
            "    stablehlo.return %s : tensor<f32>")
    assert [d for _, d in scatter_gather._free_window(_op(scatter_program(
        shape, (m, 2), u.shape, dims, body)))] == [2]
    (got,) = run(scatter_program(shape, (m, 2), u.shape, dims, body), a, ids, u)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_fused_operand_and_updates() -> None:
    """The operand (a * 2) is computed in the scatter's kernel, and so are the updates."""
    m, segments, width = 500, 16, 48
    a = RNG.standard_normal((segments, width)).astype(np.float32)
    ids = RNG.integers(0, segments, size=m).astype(np.int32)
    u = RNG.standard_normal((m, width)).astype(np.float32)
    prologue = (f"  %a2 = stablehlo.add %a, %a : {_t(a.shape, 'f32')}\n"
                f"  %u2 = stablehlo.negate %u : {_t(u.shape, 'f32')}")
    want = a + a
    np.add.at(want, ids, -u)
    text = scatter_program(a.shape, (m, 1), u.shape, SEGMENT, ADD.format(t="f32"),
                           prologue=prologue)
    (got,) = run(text, a, ids[:, None], u)
    np.testing.assert_array_equal(got, want)


def test_segment_sum_takes_the_window_path() -> None:
    text = scatter_program((8, 64), (100, 1), (100, 64), SEGMENT, ADD.format(t="f32"))
    kernels = lower_function(frontend.parse(text)).kernels
    assert kernels.count("func @") == 1 and "scatter_window" in kernels


def _op(text: str) -> Op:
    """The scatter op of ``text``."""
    body = frontend.parse(text).funcs[0].body
    assert body is not None
    return next(op for op in body.block.ops if op.name == "stablehlo.scatter")


def test_window_shorter_than_result() -> None:
    """Updates cover columns 0..39 of 70: the other columns keep the operand."""
    m, segments = 300, 11
    a = RNG.standard_normal((segments, 70)).astype(np.float32)
    ids = RNG.integers(0, segments, size=m).astype(np.int32)
    u = RNG.standard_normal((m, 40)).astype(np.float32)
    want = a.copy()
    np.add.at(want[:, :40], ids, u)
    text = scatter_program(a.shape, (m, 1), u.shape, SEGMENT, ADD.format(t="f32"))
    (got,) = run(text, a, ids[:, None], u)
    np.testing.assert_array_equal(got, want)
