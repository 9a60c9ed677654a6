"""Programs that once verified but did not build, now run and match numpy: ``ger.atomic``
and ``sum.t.atomic`` from many work-groups, ``hadamard_product`` whose output is also an
input, and kernels whose names are no OpenCL C identifiers (``@main``, ``@0``, keywords,
builtins, vector types)."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl
from tensorlang import CompileError

GROUPS = 16
SOURCE = """
func @ger_atomic(%alpha: f32, %a: memref<f32x16>, %b: memref<f32x8>, %C: memref<f32x16x8>) {
  %one = constant 1.0 : f32
  ger.atomic %alpha, %a, %b, %one, %C : f32, memref<f32x16>, memref<f32x8>, f32, memref<f32x16x8>
}

func @sum_t_atomic(%A: memref<f64x12x5x?>, %b: memref<f64x5>) {
  %g = group_id
  %a = subview %A[:, :, %g] : memref<f64x12x5x?>
  %one = constant 1.0 : f64
  sum.t.atomic %one, %a, %one, %b : f64, memref<f64x12x5>, f64, memref<f64x5>
}

func @sum_vector_atomic(%A: memref<i32x37x?>, %s: memref<i32>) work_group_size(4, 1) {
  %g = group_id
  %a = subview %A[:, %g] : memref<i32x37x?>
  %one = constant 1 : i32
  sum.n.atomic %one, %a, %one, %s : i32, memref<i32x37>, i32, memref<i32>
}

func @square_in_place(%alpha: f32, %x: memref<f32x?>, %beta: f32) {
  hadamard_product %alpha, %x, %x, %beta, %x : f32, memref<f32x?>, memref<f32x?>, f32, memref<f32x?>
}

func @main(%x: memref<f32x8>, %y: memref<f32x8>) {
  axpby.n 2.0, %x, 0.0, %y : f32, memref<f32x8>, f32, memref<f32x8>
}

func @0(%x: memref<f32x8>, %y: memref<f32x8>) {
  axpby.n 3.0, %x, 0.0, %y : f32, memref<f32x8>, f32, memref<f32x8>
}

func @kernel(%x: memref<f32x8>, %y: memref<f32x8>) {
  axpby.n 4.0, %x, 0.0, %y : f32, memref<f32x8>, f32, memref<f32x8>
}

func @float8(%x: memref<f32x8>, %y: memref<f32x8>) {
  axpby.n 5.0, %x, 0.0, %y : f32, memref<f32x8>, f32, memref<f32x8>
}

func @erf(%x: memref<f32x8>, %y: memref<f32x8>) {
  axpby.n 6.0, %x, 0.0, %y : f32, memref<f32x8>, f32, memref<f32x8>
}
"""


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile(SOURCE)


def test_ger_atomic_from_many_groups(module, h, rng) -> None:
    a, b, C = h.rand(rng, (16,), "f32"), h.rand(rng, (8,), "f32"), h.rand(rng, (16, 8), "f32")
    alpha = h.scalar(rng, "f32")
    want = C + GROUPS * alpha * np.outer(a, b)
    module.ger_atomic(alpha, a, b, C, num_groups=GROUPS)
    h.close(C, want, "f32")


def test_sum_t_atomic_from_many_groups(module, h, rng) -> None:
    A, b = h.rand(rng, (12, 5, GROUPS), "f64"), h.rand(rng, (5,), "f64")
    want = b + A.sum(axis=(0, 2))
    module.sum_t_atomic(A, b, num_groups=GROUPS)
    h.close(b, want, "f64")


def test_vector_sum_atomic_from_many_groups(module, h, rng) -> None:
    A, s = h.rand(rng, (37, GROUPS), "i32"), np.array(h.scalar(rng, "i32"))
    want = s + A.sum()
    module.sum_vector_atomic(A, s, num_groups=GROUPS)
    h.close(s, want, "i32")


def test_hadamard_output_that_is_an_input(module, h, rng) -> None:
    x = h.rand(rng, (29,), "f32")
    alpha, beta = h.scalar(rng, "f32"), h.scalar(rng, "f32")
    want = alpha * x * x + beta * x
    module.square_in_place(alpha, x, beta)
    h.close(x, want, "f32")


@pytest.mark.parametrize(("name", "factor"), [("main", 2), ("0", 3), ("kernel", 4),
                                              ("float8", 5), ("erf", 6)])
def test_kernel_names_that_are_no_c_identifiers(module, h, rng, name: str,
                                                factor: int) -> None:
    x, y = h.rand(rng, (8,), "f32"), h.poison((8,), "f32")
    getattr(module, name)(x, y)
    h.close(y, factor * x, "f32")


@pytest.mark.parametrize(("t", "beta", "message"), [
    ("i8", "%one", "axpby.atomic on i8 is not supported"),
    ("f16", "%one", "axpby.atomic on f16 is not supported"),
    ("c64", "%beta", "axpby.atomic on c64 needs beta to be the constant 0 or 1"),
])
def test_atomic_updates_the_back_end_lacks_are_rejected_by_the_verifier(
        t: str, beta: str, message: str) -> None:
    one = "[1.0, 0.0]" if t.startswith("c") else ("1" if t.startswith("i") else "1.0")
    text = f"""
func @k(%beta: {t}, %x: memref<{t}x8>, %y: memref<{t}x8>) {{
  %one = constant {one} : {t}
  axpby.n.atomic %one, %x, {beta}, %y : {t}, memref<{t}x8>, {t}, memref<{t}x8>
}}
"""
    with pytest.raises(CompileError, match=message):
        backend_opencl.compile(text)
