"""Loop-invariant loads and arithmetic of a CPU element loop move in front of the
innermost loop (``emit/control.py``): a gather's row index is read once per row, not once
per element (the kernel's pointers may alias, so LLVM cannot hoist it itself).  Nothing
moves past a side effect or out of a loop that runs no iteration; every kernel is run
against numpy with poisoned outputs."""

from __future__ import annotations

import numpy as np

import backend_opencl
import tensorlang
from backend_opencl.api.compiler import lower

GATHER = """
func @gather(%table: memref<f32x?x?>, %rows: memref<i32x?>, %out: memref<f32x?x?>,
             %m: index, %n: index) {
  foreach (%j, %i) = (0, 0), (%n, %m) {
    %r = load %rows[%i] : memref<i32x?>
    %ri = cast %r : i32 -> index
    %x = load %table[%j, %ri] : memref<f32x?x?>
    %y = arith.mul %x, 3.0 : f32
    store %y, %out[%j, %i] : memref<f32x?x?>
  }
}
"""

AFTER_STORE = """
func @after_store(%a: memref<f32x?x?>, %b: memref<f32x?>, %out: memref<f32x?x?>,
                  %m: index, %n: index) {
  foreach (%j, %i) = (0, 0), (%n, %m) {
    %x = load %a[%j, %i] : memref<f32x?x?>
    store %x, %out[%j, %i] : memref<f32x?x?>
    %s = load %b[%i] : memref<f32x?>
    %y = arith.add %x, %s : f32
    store %y, %out[%j, %i] : memref<f32x?x?>
  }
}
"""


def _source(text: str) -> str:
    return lower(tensorlang.parse(text)).source


def _inner_loop_line(lines: list[str]) -> int:
    return next(k for k, line in enumerate(lines) if "vectorize_width" in line)


def test_row_index_is_loaded_before_the_inner_loop() -> None:
    lines = _source(GATHER).splitlines()
    inner = _inner_loop_line(lines)
    index_load = next(k for k, line in enumerate(lines) if "= rows[" in line
                      or ("rows" in line and "[" in line and "const int" in line))
    assert index_load < inner
    assert any(line.strip().startswith("if (") for line in lines[:inner])  # dynamic trips


def test_gather_matches_numpy() -> None:
    rng = np.random.default_rng(4)
    m, n = 37, 129
    table = np.asfortranarray(rng.standard_normal((n, 50)).astype(np.float32))
    rows = rng.integers(0, 50, m).astype(np.int32)
    out = np.asfortranarray(np.full((n, m), np.nan, np.float32))
    backend_opencl.compile(GATHER).gather(table, rows, out, m, n, num_groups=1)
    np.testing.assert_array_equal(out, 3.0 * table[:, rows])


def test_an_empty_inner_loop_loads_nothing() -> None:
    # n = 0: no point runs (the hoisted loads sit behind the loop's own trip check, and
    # the launch contract already refuses row indices shorter than %m).
    table = np.asfortranarray(np.ones((7, 50), np.float32))
    out = np.asfortranarray(np.full((7, 5), np.nan, np.float32))
    rows = np.full(5, 1 << 30, np.int32)  # out of range: reading them would be caught
    backend_opencl.compile(GATHER).gather(table, rows, out, 5, 0, num_groups=1)
    assert np.isnan(out).all()


def test_nothing_moves_past_a_store() -> None:
    lines = _source(AFTER_STORE).splitlines()
    inner = _inner_loop_line(lines)
    assert not any("b[" in line or "= b" in line for line in lines[:inner] if "load" in line)
    rng = np.random.default_rng(5)
    m, n = 9, 33
    a = np.asfortranarray(rng.standard_normal((n, m)).astype(np.float32))
    b = rng.standard_normal(m).astype(np.float32)
    out = np.asfortranarray(np.full((n, m), np.nan, np.float32))
    backend_opencl.compile(AFTER_STORE).after_store(a, b, out, m, n, num_groups=1)
    np.testing.assert_allclose(out, a + b[None, :], rtol=1e-6)
