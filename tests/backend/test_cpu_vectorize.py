"""CPU loop vectorisation hints: innermost element loops (``foreach``) and innermost
``for`` loops without carried values ask clang for ``vectorize_width(16)`` on CPU
targets (no hint on GPUs, none on loops holding loops or carrying values, a build log
without warnings); complex elements are read and written as two real parts on CPUs,
and complex arithmetic is written part by part (no ``float2`` vector arithmetic, which
keeps LLVM's loop vectoriser off the whole loop).  Every kernel is also run against
numpy with poisoned outputs."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl
import tensorlang
from backend_opencl.api.compiler import lower
from backend_opencl.emit import DEFAULT_TARGET, Target
from backend_opencl.emit.loops import VECTORIZE_WIDTH

GPU = Target(kind="gpu", max_work_group_size=1024, local_mem_size=65536)
HINT = f"#pragma clang loop vectorize_width({VECTORIZE_WIDTH})"

ELEMENTS = """
func @scale(%a: memref<f32x?>, %out: memref<f32x?>, %n: index) {
  foreach %i = 0, %n {
    %x = load %a[%i] : memref<f32x?>
    %e = math.exp %x : f32
    %y = arith.mul %e, 2.0 : f32
    store %y, %out[%i] : memref<f32x?>
  }
}
"""

ROWS = """
func @rows(%a: memref<f32x?x?>, %out: memref<f32x?x?>, %s: memref<f32x?>, %m: index,
           %n: index) {
  foreach %r = 0, %m {
    %t = for %k = 0, %n init(%acc = 0.0) -> (f32) {
      %x = load %a[%r, %k] : memref<f32x?x?>
      %u = arith.add %acc, %x : f32
      yield %u : f32
    }
    store %t, %s[%r] : memref<f32x?>
    for %j = 0, %n {
      %x = load %a[%r, %j] : memref<f32x?x?>
      %y = arith.sub %x, %t : f32
      store %y, %out[%r, %j] : memref<f32x?x?>
    }
  }
}
"""

COMPLEX = """
func @cexp(%a: memref<c32x?>, %b: memref<c32x?>, %out: memref<c32x?>, %n: index) {
  foreach %i = 0, %n {
    %x = load %a[%i] : memref<c32x?>
    %y = load %b[%i] : memref<c32x?>
    %e = math.exp %x : c32
    %p = arith.mul %e, %y : c32
    store %p, %out[%i] : memref<c32x?>
  }
}
"""

COMPLEX_ARITH = """
func @carith(%a: memref<c32x?>, %b: memref<c32x?>, %w: memref<f32x?>, %out: memref<c32x?>,
             %n: index) {
  foreach %i = 0, %n {
    %x = load %a[%i] : memref<c32x?>
    %y = load %b[%i] : memref<c32x?>
    %r = load %w[%i] : memref<f32x?>
    %s = arith.add %x, %y : c32
    %d = arith.sub %x, %y : c32
    %m = arith.neg %d : c32
    %p = arith.mul %s, %m : c32
    %pos = cmp.gt %r, 0.0 : f32
    %q = select %pos, %p, %s : c32
    store %q, %out[%i] : memref<c32x?>
  }
}
"""


def _source(text: str, target: Target = DEFAULT_TARGET) -> str:
    return lower(tensorlang.parse(text), target).source


def _poisoned(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    return np.full(shape, np.nan, dtype=dtype)


def test_element_loop_asks_for_vectors_on_cpus_only() -> None:
    cpu = _source(ELEMENTS)
    assert cpu.count(HINT) == 1
    assert '#pragma clang diagnostic ignored "-Wpass-failed"' in cpu
    gpu = _source(ELEMENTS, GPU)
    assert "vectorize_width" not in gpu and "-Wpass-failed" not in gpu


def test_element_loop_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    n = 1000  # not a multiple of the vector width: a remainder loop
    a = rng.standard_normal(n).astype(np.float32)
    out = _poisoned((n,), np.float32)
    backend_opencl.compile(ELEMENTS).scale(a, out, n, num_groups=1)
    np.testing.assert_allclose(out, 2 * np.exp(a), rtol=2e-6)


def test_only_the_innermost_loop_without_carried_values_gets_the_hint() -> None:
    source = _source(ROWS)
    lines = source.splitlines()
    hinted = [lines[i + 1].strip() for i, line in enumerate(lines) if HINT in line]
    assert len(hinted) == 1 and hinted[0].startswith("for (")  # the row pass only
    assert "init" not in hinted[0]


def test_rows_match_numpy() -> None:
    rng = np.random.default_rng(2)
    m, n = 5, 37
    a = np.asfortranarray(rng.standard_normal((m, n)).astype(np.float32))
    out = np.asfortranarray(_poisoned((m, n), np.float32))  # memrefs are column-major
    s = _poisoned((m,), np.float32)
    backend_opencl.compile(ROWS).rows(a, out, s, m, n, num_groups=1)
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, a - s[:, None], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("target", [DEFAULT_TARGET, GPU], ids=["cpu", "gpu"])
def test_complex_elements_as_real_parts_on_cpus(target: Target) -> None:
    source = _source(COMPLEX, target)
    split = "((global float*)" in source
    assert split == (target.kind == "cpu")


def test_complex_loop_matches_numpy() -> None:
    rng = np.random.default_rng(3)
    n = 301
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    b = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    out = np.full(n, np.nan + 1j * np.nan, dtype=np.complex64)
    backend_opencl.compile(COMPLEX).cexp(a, b, out, n, num_groups=1)
    want = np.exp(a.astype(np.complex128)) * b
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("target", [DEFAULT_TARGET, GPU], ids=["cpu", "gpu"])
def test_complex_arithmetic_is_written_part_by_part(target: Target) -> None:
    lines = _source(COMPLEX_ARITH, target).splitlines()
    for name in ("s", "d", "m", "q"):  # add, sub, neg, select
        line = next(x for x in lines if x.strip().startswith(f"const float2 {name} = "))
        assert line.split("=", 1)[1].strip().startswith("((float2)("), line


def test_complex_arithmetic_matches_numpy() -> None:
    rng = np.random.default_rng(4)
    n = 333
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    b = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    w = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan + 1j * np.nan, dtype=np.complex64)
    backend_opencl.compile(COMPLEX_ARITH).carith(a, b, w, out, n, num_groups=1)
    s, d = a.astype(np.complex128) + b, a.astype(np.complex128) - b
    want = np.where(w > 0, s * -d, s)
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=2e-6)
