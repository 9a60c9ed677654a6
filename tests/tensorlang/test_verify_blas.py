"""Verifier rules of the BLAS instructions (docs/language-constraints.md, "BLAS")."""

from __future__ import annotations

import pytest

import tensorlang
from tests.tensorlang.verify_helpers import error_of, opcode_col, wrap

ARGS = {
    "a": "f32", "d": "f64", "c": "c32", "b": "i1",
    "A": "memref<f32x16x8>", "B": "memref<f32x8x16>", "C": "memref<f32x16x16>",
    "D": "memref<f32x?x?>", "E": "memref<f64x16x16>", "Z": "memref<c32x4x4>",
    "I": "memref<i1x4x4>", "v8": "memref<f32x8>", "v16": "memref<f32x16>",
    "vd": "memref<f32x?>", "s": "memref<f32>", "zv": "memref<c32x4>", "ev": "memref<f64x16>",
    "sd": "memref<f64>",
}
HEAD = "func @k(" + ", ".join(f"%{n}: {t}" for n, t in ARGS.items()) + ") {"


def blas(op: str, *names: str) -> str:
    """``op %n1, ... : types`` with the argument types of ARGS."""
    operands = ", ".join(f"%{n}" for n in names)
    return f"{op} {operands} : " + ", ".join(ARGS[n] for n in names)


def prog(*body: str) -> str:
    """``body`` inside this file's kernel header."""
    return wrap(HEAD, *body)


BAD = [
    (blas("gemm.n.n", "a", "A", "B", "a", "v16"), "gemm (C1): C (%v16) must be a matrix"),
    (blas("gemm.n.n", "a", "v8", "B", "a", "C"), "gemm (C1): A (%v8) must be a matrix"),
    (blas("gemm.n.n", "a", "A", "B", "a", "B"),
     "gemm (C2): op(A) is 16x8 but C is 8x16 (M must agree)"),
    (blas("gemm.n.t", "a", "A", "B", "a", "C"),
     "gemm (C3): op(B) is 16x8 but C is 16x16 (N must agree)"),
    (blas("gemm.t.n", "a", "C", "B", "a", "C"),
     "gemm (C4): op(A) is 16x16 but op(B) is 8x16 (K must agree)"),
    (blas("gemm.n.n", "d", "C", "C", "d", "E"),
     "gemm (C5): A has element type f32 but C has f64 (element types must be equal)"),
    (blas("gemm.n.n", "b", "I", "I", "b", "I"), "gemm (C5): C has element type i1"),
    (blas("gemm.n.n", "c", "A", "B", "a", "C"),
     "gemm (C6): alpha (%c) has type c32, expected f32 for element type f32"),
    (blas("gemm.n.n", "a", "A", "B", "d", "C"), "gemm (C6): beta (%d) has type f64"),
    (blas("gemv.n", "a", "A", "v8", "a", "v8"),
     "gemv (C2): op(A) is 16x8 but c is 8 (M must agree)"),
    (blas("gemv.t", "a", "A", "v8", "a", "v8"),
     "gemv (C3): op(A) is 8x16 but b is 8 (K must agree)"),
    (blas("gemv.n", "a", "A", "A", "a", "v16"), "gemv (C1): B (%A) must be a vector"),
    (blas("gemv.n", "a", "A", "v8", "c", "v16"), "gemv (C5): beta (%c) has type c32"),
    (blas("gemv.n", "d", "C", "v16", "d", "ev"),
     "gemv (C4): A has element type f32 but C has f64"),
    (blas("ger", "a", "v8", "v16", "a", "C"),
     "ger (C2): a is 8 but C is 16x16 (M must agree)"),
    (blas("ger", "a", "v16", "v8", "a", "C"),
     "ger (C3): b is 8 but C is 16x16 (N must agree)"),
    (blas("ger", "a", "v16", "v16", "a", "v16"), "ger (C1): C (%v16) must be a matrix"),
    (blas("ger", "a", "zv", "zv", "d", "Z"), "ger (C5): beta (%d) has type f64, expected c32 or "
     "f32 for element type c32"),
    (blas("ger", "a", "v16", "v16", "a", "E"), "ger (C4): A has element type f32 but C has f64"),
    (blas("hadamard_product", "a", "v8", "v16", "a", "v16"),
     "hadamard_product (C2): a is 8 but c is 16 (the sizes must agree)"),
    (blas("hadamard_product", "a", "v16", "v8", "a", "v16"),
     "hadamard_product (C2): b is 8 but c is 16 (the sizes must agree)"),
    (blas("hadamard_product", "d", "v16", "v16", "d", "ev"),
     "hadamard_product (C3): A has element type f32 but C has f64"),
    (blas("hadamard_product", "a", "v16", "v16", "c", "v16"),
     "hadamard_product (C4): beta (%c) has type c32"),
    (blas("hadamard_product", "a", "A", "A", "a", "A"),
     "hadamard_product (C1): A (%A) must be a vector"),
    (blas("axpby.n", "a", "A", "a", "B"),
     "axpby (C2): op(A) is 16x8 but B is 8x16 (the shapes must agree)"),
    (blas("axpby.n", "a", "v8", "a", "C"), "axpby (C1): A has order 1 but B has order 2"),
    (blas("axpby.n", "a", "s", "a", "s"), "axpby (C1): A (%s) must be a vector (order 1) or"),
    (blas("axpby.t", "a", "v8", "a", "v16"),
     "axpby (C2): op(A) is 8 but B is 16 (the shapes must agree)"),
    (blas("axpby.n", "d", "C", "d", "E"), "axpby (C3): A has element type f32 but B has f64"),
    (blas("axpby.n", "a", "E", "a", "E"), "axpby (C4): alpha (%a) has type f32, expected f64"),
    (blas("sum.n", "a", "A", "a", "v8"), "sum (C2): op(A) is 16x8 but B is 8 (the first mode"),
    (blas("sum.t", "a", "A", "a", "v16"), "sum (C2): op(A) is 8x16 but B is 16"),
    (blas("sum.n", "a", "v8", "a", "v8"), "sum (C1): B (%v8) must be a scalar memref (order 0)"),
    (blas("sum.n", "a", "A", "a", "s"), "sum (C1): B (%s) must be a vector (order 1)"),
    (blas("sum.n", "a", "s", "a", "s"), "sum (C1): A (%s) must be a vector (order 1) or a"),
    (blas("sum.n", "c", "v8", "a", "s"), "sum (C4): alpha (%c) has type c32"),
    (blas("sum.n", "d", "v8", "d", "sd"), "sum (C3): A has element type f32 but B has f64"),
]


@pytest.mark.parametrize(("line", "message"), BAD)
def test_blas_rule_violations(line: str, message: str) -> None:
    err = error_of(prog(line))
    assert (err.first.loc.line, err.first.loc.col) == (2, opcode_col(line))
    assert err.first.message.startswith(message), err.first.message
    assert any(n.message == "value defined here" and n.loc.line == 1 for n in err.first.notes)


GOOD = [
    blas("gemm.n.n", "a", "A", "B", "a", "C"),
    blas("gemm.t.t", "a", "B", "A", "a", "C"),
    blas("gemm.n.n", "a", "D", "D", "a", "C"),
    blas("gemm.n.n.atomic", "a", "A", "B", "a", "D"),
    blas("gemm.n.n", "c", "Z", "Z", "c", "Z"),
    blas("gemm.n.n", "a", "Z", "Z", "c", "Z"),
    blas("gemv.n", "a", "A", "v8", "a", "v16"),
    blas("gemv.t", "a", "A", "v16", "a", "v8"),
    blas("gemv.n", "a", "D", "vd", "a", "vd"),
    blas("ger", "a", "v16", "v8", "a", "A"),
    blas("ger", "a", "vd", "vd", "a", "C"),
    blas("ger", "a", "zv", "zv", "c", "Z"),
    blas("hadamard_product", "a", "v8", "vd", "a", "v8"),
    blas("axpby.n", "a", "A", "a", "A"),
    blas("axpby.t", "a", "A", "a", "B"),
    blas("axpby.t", "a", "v8", "a", "v8"),
    blas("axpby.n.atomic", "a", "D", "a", "C"),
    blas("sum.n", "a", "A", "a", "v16"),
    blas("sum.t", "a", "A", "a", "v8"),
    blas("sum.n", "a", "v8", "a", "s"),
    blas("sum.n", "a", "D", "a", "vd"),
]


@pytest.mark.parametrize("line", GOOD)
def test_blas_accepted(line: str) -> None:
    tensorlang.parse(prog(line), "k.tl")
