""".atomic updates: 64 work-groups accumulate into the same output and match numpy."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl

GROUPS = 64
FLOATS = ("f32", "f64", "c32", "c64")


def _one(t: str) -> str:
    return "[1.0, 0.0]" if t.startswith("c") else ("1" if t.startswith("i") else "1.0")


def gemm_source(t: str) -> str:
    a, am = f"memref<{t}x8x4x?>", f"memref<{t}x8x4>"
    return f"""
func @gemm_atomic_{t}(%alpha: {t}, %A: {a}, %B: memref<{t}x4x6>, %C: memref<{t}x8x6>)
    work_group_size(2, 2) {{
  %g = group_id
  %a = subview %A[:, :, %g] : {a}
  %one = constant {_one(t)} : {t}
  gemm.n.n.atomic %alpha, %a, %B, %one, %C : {t}, {am}, memref<{t}x4x6>, {t}, memref<{t}x8x6>
}}
"""


def axpby_source(t: str) -> str:
    return f"""
func @axpby_atomic_{t}(%A: memref<{t}x?x?>, %C: memref<{t}x?>) work_group_size(4, 1) {{
  %g = group_id
  %a = subview %A[:, %g] : memref<{t}x?x?>
  %one = constant {_one(t)} : {t}
  axpby.n.atomic %one, %a, %one, %C : {t}, memref<{t}x?>, {t}, memref<{t}x?>
}}
"""


def beta_source(t: str) -> str:
    return f"""
func @gemv_atomic_beta_{t}(%alpha: {t}, %A: memref<{t}x5x3>, %b: memref<{t}x3>, %beta: {t},
                          %c: memref<{t}x5>) work_group_size(2, 1) {{
  gemv.n.atomic %alpha, %A, %b, %beta, %c : {t}, memref<{t}x5x3>, memref<{t}x3>, {t}, memref<{t}x5>
}}
"""


LOCAL = """
func @local_atomic(%A: memref<f64x8>, %out: memref<f64x8>) work_group_size(4, 1) {
  %t = alloca -> memref<f64x8,local>
  %one = constant 1.0 : f64
  %zero = constant 0.0 : f64
  %half = constant 0.5 : f64
  axpby.n %one, %A, %zero, %t : f64, memref<f64x8>, f64, memref<f64x8,local>
  axpby.n.atomic %one, %A, %half, %t : f64, memref<f64x8>, f64, memref<f64x8,local>
  axpby.n %one, %t, %zero, %out : f64, memref<f64x8,local>, f64, memref<f64x8>
}

func @int_gemm(%A: memref<i32x5x4>, %B: memref<i32x4x3>, %C: memref<i32x5x3>) {
  %one = constant 1 : i32
  gemm.n.n.atomic %one, %A, %B, %one, %C
    : i32, memref<i32x5x4>, memref<i32x4x3>, i32, memref<i32x5x3>
}
"""


@pytest.fixture(scope="module")
def module() -> object:
    parts = [gemm_source(t) for t in FLOATS] + [axpby_source(t) for t in ("i32", "i64", "f64")]
    parts += [beta_source(t) for t in ("f32", "f64", "c32")] + [LOCAL]
    return backend_opencl.compile("\n".join(parts))


@pytest.mark.parametrize("t", FLOATS)
def test_gemm_atomic_64_groups(module, h, rng, t: str) -> None:
    A = h.rand(rng, (8, 4, GROUPS), t)
    B = h.rand(rng, (4, 6), t)
    C = h.rand(rng, (8, 6), t)
    alpha = h.scalar(rng, t)
    want = C.astype(np.complex128) + alpha * np.einsum("ikg,kj->ij", A, B)
    getattr(module, f"gemm_atomic_{t}")(alpha, A, B, C, num_groups=GROUPS)
    h.close(C, want if t.startswith("c") else want.real, t)


@pytest.mark.parametrize("t", ["i32", "i64", "f64"])
def test_axpby_atomic_64_groups(module, h, rng, t: str) -> None:
    A = h.rand(rng, (37, GROUPS), t)
    C = h.rand(rng, (37,), t)
    want = C + A.sum(axis=1)
    getattr(module, f"axpby_atomic_{t}")(A, C, num_groups=GROUPS)
    h.close(C, want, t)


@pytest.mark.parametrize("t", ["f32", "f64", "c32"])
def test_atomic_general_beta(module, h, rng, t: str) -> None:
    A, b, c = h.rand(rng, (5, 3), t), h.rand(rng, (3,), t), h.rand(rng, (5,), t)
    alpha, beta = h.scalar(rng, t), h.scalar(rng, t)
    want = alpha * (A @ b) + beta * c
    getattr(module, f"gemv_atomic_beta_{t}")(alpha, A, b, beta, c)
    h.close(c, want, t)


def test_atomic_into_local_memory(module, h, rng) -> None:
    A = h.rand(rng, (8,), "f64")
    out = h.poison((8,), "f64")
    module.local_atomic(A, out)
    h.close(out, 1.5 * A, "f64")


def test_integer_gemm_atomic(module, h, rng) -> None:
    A, B, C = h.rand(rng, (5, 4), "i32"), h.rand(rng, (4, 3), "i32"), h.rand(rng, (5, 3), "i32")
    want = C + A @ B
    module.int_gemm(A, B, C, num_groups=1)
    h.close(C, want, "i32")
