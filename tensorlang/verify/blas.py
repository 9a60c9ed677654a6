"""The collective BLAS-like updates: gemm, gemv, ger, hadamard_product, axpby, sum.

Each computes ``out := alpha f(...) + beta out``.  Shapes follow the reference; a
static size must agree with the size it is compared to, a dynamic size (``?``)
agrees with anything (checked at run time by nobody: a mismatch is undefined
behaviour).  Element types (docs/language-constraints.md, "BLAS instructions"):
the memref operands share one numeric element type (not i1); alpha and beta have
that type or, when it is complex, the real type of the same precision.
"""

from __future__ import annotations

from typing import NamedTuple

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import Transpose
from tensorlang.ir.types import Dim, MemRefType, ScalarType
from tensorlang.verify.errors import dims_agree, fail, shape_str, value_name

_ORDER_NAMES = {0: "a scalar memref (order 0)", 1: "a vector (order 1)", 2: "a matrix (order 2)"}
_REAL_OF = {"c32": "f32", "c64": "f64"}
ATOMIC_TYPES = ("i32", "i64", "index", "f32", "f64", "c32", "c64")
"""Element types of ``.atomic`` BLAS updates (the back end's compare-and-swap helpers)."""


def _memref(inst: Instruction, rule: str, name: str, orders: tuple[int, ...]) -> MemRefType:
    value: Value = inst.operand(name)
    t = value.type
    wanted = " or ".join(_ORDER_NAMES[o] for o in orders)
    if not isinstance(t, MemRefType) or t.order not in orders:
        raise fail(inst, rule, f"{name} ({value_name(value)}) must be {wanted}, got {t}", value)
    return t


def _op_shape(t: MemRefType, trans: Transpose) -> tuple[Dim, ...]:
    return t.shape[::-1] if trans is Transpose.T and t.order == 2 else t.shape


class _Side(NamedTuple):
    """One side of a size comparison: a label such as ``op(A)``, its shape, the mode."""

    label: str
    shape: tuple[Dim, ...]
    mode: int


def _agree(inst: Instruction, rule: str, a: tuple[str, tuple[Dim, ...], int],
           b: tuple[str, tuple[Dim, ...], int], what: str, *values: Value) -> None:
    """The compared mode of ``a`` must agree with that of ``b`` (static sizes equal)."""
    left, right = _Side(*a), _Side(*b)
    if not dims_agree(left.shape[left.mode], right.shape[right.mode]):
        raise fail(inst, rule, f"{left.label} is {shape_str(left.shape)} but {right.label} is "
                   f"{shape_str(right.shape)} ({what} must agree)", *values)


def _check_types(inst: Instruction, elem_rule: str, scalar_rule: str,
                 memrefs: tuple[str, ...]) -> None:
    out_name = memrefs[-1]
    out = inst.single(out_name)
    elem = out.memref_type.element
    if elem.is_bool:
        raise fail(inst, elem_rule, f"{out_name} has element type i1; BLAS instructions need "
                   "a numeric element type", out)
    for name in memrefs[:-1]:
        value = inst.single(name)
        if value.memref_type.element != elem:
            raise fail(inst, elem_rule, f"{name} has element type {value.memref_type.element} but "
                       f"{out_name} has {elem} (element types must be equal)", value, out)
    for name in ("alpha", "beta"):
        _check_scalar(inst, scalar_rule, name, elem)
    if inst.attrs.get("atomic"):
        _check_atomic(inst, elem)


def _check_atomic(inst: Instruction, elem: ScalarType) -> None:
    """``.atomic`` needs a type with atomic helpers; c64 updates only add or store."""
    if elem.name not in ATOMIC_TYPES:
        why = "storage floats have no atomic updates" if elem.is_half else \
            f"use {', '.join(ATOMIC_TYPES)}"
        raise fail(inst.loc, "", f"{inst.name}.atomic on {elem} is not supported ({why})")
    if elem.name == "c64":
        beta: Value = inst.single("beta")
        owner = beta.owner
        known = owner.attrs.get("value") if isinstance(owner, Instruction) and \
            owner.name == "constant" else None
        if known is None or complex(known) not in (0, 1):
            raise fail(inst.loc, "", f"{inst.name}.atomic on c64 needs beta to be the "
                       "constant 0 or 1 (a c64 update is two f64 atomics)", beta)


def _check_scalar(inst: Instruction, rule: str, name: str, elem: ScalarType) -> None:
    value: Value = inst.operand(name)
    allowed = [elem.name] + ([_REAL_OF[elem.name]] if elem.name in _REAL_OF else [])
    if not isinstance(value.type, ScalarType) or value.type.name not in allowed:
        raise fail(inst, rule, f"{name} ({value_name(value)}) has type {value.type}, expected "
                   f"{' or '.join(allowed)} for element type {elem}", value)


def check_gemm(inst: Instruction) -> None:
    """gemm: C1 matrices, C2 M, C3 N, C4 K, C5 element types, C6 alpha/beta types."""
    a, b, c = (_memref(inst, "C1", n, (2,)) for n in ("A", "B", "C"))
    op_a = _op_shape(a, inst.attr_of("trans_a", Transpose))
    op_b = _op_shape(b, inst.attr_of("trans_b", Transpose))
    va, vb, vc = (inst.operand(n) for n in ("A", "B", "C"))
    _agree(inst, "C2", ("op(A)", op_a, 0), ("C", c.shape, 0), "M", va, vc)
    _agree(inst, "C3", ("op(B)", op_b, 1), ("C", c.shape, 1), "N", vb, vc)
    _agree(inst, "C4", ("op(A)", op_a, 1), ("op(B)", op_b, 0), "K", va, vb)
    _check_types(inst, "C5", "C6", ("A", "B", "C"))


def check_gemv(inst: Instruction) -> None:
    """gemv: C1 A matrix, b and c vectors, C2 M, C3 K, C4 element types, C5 alpha/beta."""
    a = _memref(inst, "C1", "A", (2,))
    b, c = (_memref(inst, "C1", n, (1,)) for n in ("B", "C"))
    op_a = _op_shape(a, inst.attr_of("trans_a", Transpose))
    va, vb, vc = (inst.operand(n) for n in ("A", "B", "C"))
    _agree(inst, "C2", ("op(A)", op_a, 0), ("c", c.shape, 0), "M", va, vc)
    _agree(inst, "C3", ("op(A)", op_a, 1), ("b", b.shape, 0), "K", va, vb)
    _check_types(inst, "C4", "C5", ("A", "B", "C"))


def check_ger(inst: Instruction) -> None:
    """ger: C1 a, b vectors and C matrix, C2 M, C3 N, C4 element types, C5 alpha/beta."""
    a, b = (_memref(inst, "C1", n, (1,)) for n in ("A", "B"))
    c = _memref(inst, "C1", "C", (2,))
    va, vb, vc = (inst.operand(n) for n in ("A", "B", "C"))
    _agree(inst, "C2", ("a", a.shape, 0), ("C", c.shape, 0), "M", va, vc)
    _agree(inst, "C3", ("b", b.shape, 0), ("C", c.shape, 1), "N", vb, vc)
    _check_types(inst, "C4", "C5", ("A", "B", "C"))


def check_hadamard(inst: Instruction) -> None:
    """hadamard_product: C1 vectors, C2 equal shapes, C3 element types, C4 alpha/beta."""
    a, b, c = (_memref(inst, "C1", n, (1,)) for n in ("A", "B", "C"))
    va, vb, vc = (inst.operand(n) for n in ("A", "B", "C"))
    _agree(inst, "C2", ("a", a.shape, 0), ("c", c.shape, 0), "the sizes", va, vc)
    _agree(inst, "C2", ("b", b.shape, 0), ("c", c.shape, 0), "the sizes", vb, vc)
    _check_types(inst, "C3", "C4", ("A", "B", "C"))


def check_axpby(inst: Instruction) -> None:
    """axpby: C1 orders 1 or 2 and equal, C2 op(A) and B shapes, C3 element types, C4 scalars."""
    a, b = (_memref(inst, "C1", n, (1, 2)) for n in ("A", "B"))
    va, vb = inst.single("A"), inst.single("B")
    if a.order != b.order:
        raise fail(inst, "C1", f"A has order {a.order} but B has order {b.order} "
                   "(orders must be equal)", va, vb)
    op_a = _op_shape(a, inst.attr_of("trans_a", Transpose))
    for mode in range(a.order):
        _agree(inst, "C2", ("op(A)", op_a, mode), ("B", b.shape, mode), "the shapes", va, vb)
    _check_types(inst, "C3", "C4", ("A", "B"))


def check_sum(inst: Instruction) -> None:
    """sum: C1 matrix->vector or vector->scalar memref, C2 sizes, C3 elements, C4 scalars."""
    a = _memref(inst, "C1", "A", (1, 2))
    b = _memref(inst, "C1", "B", (a.order - 1,))
    if a.order == 2:
        op_a = _op_shape(a, inst.attr_of("trans_a", Transpose))
        _agree(inst, "C2", ("op(A)", op_a, 0), ("B", b.shape, 0),
               "the first mode of op(A) and the size of B", inst.single("A"), inst.single("B"))
    _check_types(inst, "C3", "C4", ("A", "B"))


CHECKS = {"gemm": check_gemm, "gemv": check_gemv, "ger": check_ger,
          "hadamard_product": check_hadamard, "axpby": check_axpby, "sum": check_sum}
"""The BLAS family's check per instruction name."""
