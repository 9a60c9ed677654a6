"""The collective BLAS-like instructions: gemm, gemv, ger, sum, axpby, hadamard_product.

Each becomes a contraction or an elementwise update (see :mod:`backend_opencl.emit.tiling`)
realised as a helper function called by every work-item of the work-group.
"""

from __future__ import annotations

from backend_opencl.emit.cnames import address_space, ctype, literal
from backend_opencl.emit.kernel import KernelEmitter, handler
from backend_opencl.emit.tiling import (
    Contraction,
    Elementwise,
    MakeStore,
    Matrix,
    Params,
    Store,
    contraction_helper,
    elementwise_helper,
    reduction_helper,
)
from backend_opencl.emit.update import Scale, atomic_update, update
from backend_opencl.emit.view import MemView
from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import Transpose
from tensorlang.ir.types import ScalarType


def _scale(em: KernelEmitter, value: Value) -> Scale:
    known = em.const(value)
    if known is not None:
        return Scale(literal(known, value.scalar_type), known)
    return Scale(em.scalar(value), None)


def _scales(em: KernelEmitter, inst: Instruction) -> tuple[Scale, Scale]:
    return _scale(em, inst.single("alpha")), _scale(em, inst.single("beta"))


def _pick(*sizes: str) -> str:
    """A literal among equal sizes when there is one."""
    return next((s for s in sizes if s.isdigit()), sizes[0])


def _space(view: MemView) -> str:
    return address_space(view.type)


def _op(view: MemView, trans: Transpose | None) -> tuple[str, str, str, str]:
    """(rows, cols, row stride, col stride) of op(X) for a vector or matrix X."""
    if view.type.order == 1:
        return view.shape[0], "1", view.strides[0], "0"
    if trans is Transpose.T:
        return view.shape[1], view.shape[0], view.strides[1], view.strides[0]
    return view.shape[0], view.shape[1], view.strides[0], view.strides[1]


def _store(em: KernelEmitter, inst: Instruction, out: MemView) -> MakeStore:
    t = out.type.element
    if inst.attrs.get("atomic"):
        def make_atomic(beta: Scale) -> Store:
            return lambda lhs, value: atomic_update(em.unit, t, _space(out), lhs, value, beta,
                                                    inst.loc)
        return make_atomic

    def make(beta: Scale) -> Store:
        return lambda lhs, value: update(t, lhs, value, beta)

    return make


def _emit_call(em: KernelEmitter, inst: Instruction, base: str, text: str, p: Params) -> None:
    name = em.unit.helper(base, text)
    em.w.line(f"// {_describe(inst)}")
    em.w.line(f"{name}({', '.join(p.args)});")


def _contract(em: KernelEmitter, inst: Instruction, spec: Contraction, out: MemView) -> None:
    em.use_type(spec.elem)
    p = Params()
    text = contraction_helper(spec, em.plan, _store(em, inst, out), p, em.scratch)
    _emit_call(em, inst, f"{inst.name}_{spec.elem}", text, p)


def _describe(inst: Instruction) -> str:
    mods = [inst.attrs[a].value for a in ("trans_a", "trans_b") if a in inst.attrs]
    mods += ["atomic"] if inst.attrs.get("atomic") else []
    operands = ", ".join(f"%{v.name}" for v in inst.operand_values())
    return ".".join([inst.name, *mods]) + " " + operands


def _mat(view: MemView, si: str, sk: str) -> Matrix:
    return Matrix(view.ptr, _space(view), si, sk)


def _transposed(inst: Instruction, *names: str) -> str:
    """The operands ("a", "b") that ``inst`` reads transposed (``trans_a``, ``trans_b``)."""
    return "".join(name[-1] for name in names if inst.attr(name) is Transpose.T)


def _atomic(inst: Instruction) -> bool:
    return bool(inst.attrs.get("atomic"))


@handler("gemm")
def emit_gemm(em: KernelEmitter, inst: Instruction) -> None:
    """``gemm``: C := alpha op(A) op(B) + beta C."""
    A, B, C = (em.view(inst.operand(x)) for x in "ABC")
    m, k, sam, sak = _op(A, inst.attr_of("trans_a", Transpose))
    _, n, sbk, sbn = _op(B, inst.attr_of("trans_b", Transpose))
    spec = Contraction(C.type.element, _pick(m, C.shape[0]), _pick(n, C.shape[1]), k,
                       _mat(A, sam, sak), _mat(B, sbk, sbn),
                       _mat(C, C.strides[0], C.strides[1]), *_scales(em, inst),
                       _transposed(inst, "trans_a", "trans_b"), _atomic(inst))
    _contract(em, inst, spec, C)


@handler("gemv")
def emit_gemv(em: KernelEmitter, inst: Instruction) -> None:
    """``gemv``: c := alpha op(A) b + beta c."""
    A, b, c = (em.view(inst.operand(x)) for x in "ABC")
    m, k, sam, sak = _op(A, inst.attr_of("trans_a", Transpose))
    spec = Contraction(c.type.element, _pick(m, c.shape[0]), "1", k, _mat(A, sam, sak),
                       _mat(b, b.strides[0], "0"), _mat(c, c.strides[0], "0"),
                       *_scales(em, inst), _transposed(inst, "trans_a"), _atomic(inst))
    _contract(em, inst, spec, c)


@handler("ger")
def emit_ger(em: KernelEmitter, inst: Instruction) -> None:
    """``ger``: C := alpha a b^T + beta C."""
    a, b, C = (em.view(inst.operand(x)) for x in "ABC")
    spec = Contraction(C.type.element, _pick(a.shape[0], C.shape[0]),
                       _pick(b.shape[0], C.shape[1]), "1", _mat(a, a.strides[0], "0"),
                       _mat(b, "0", b.strides[0]), _mat(C, C.strides[0], C.strides[1]),
                       *_scales(em, inst), atomic=_atomic(inst))
    _contract(em, inst, spec, C)


@handler("sum")
def emit_sum(em: KernelEmitter, inst: Instruction) -> None:
    """``sum``: B := alpha op(A) 1 + beta B (a vector A sums into a scalar memref)."""
    A, B = em.view(inst.single("A")), em.view(inst.single("B"))
    if A.type.order == 1:
        spec = Contraction(B.type.element, "1", "1", A.shape[0], _mat(A, "0", A.strides[0]),
                           None, _mat(B, "0", "0"), *_scales(em, inst), atomic=_atomic(inst))
        _reduce(em, inst, spec, B)
        return
    else:
        m, k, sam, sak = _op(A, inst.attr_of("trans_a", Transpose))
        spec = Contraction(B.type.element, _pick(m, B.shape[0]), "1", k, _mat(A, sam, sak),
                           None, _mat(B, B.strides[0], "0"), *_scales(em, inst),
                           atomic=_atomic(inst))
    _contract(em, inst, spec, B)


def _reduce(em: KernelEmitter, inst: Instruction, spec: Contraction, out: MemView) -> None:
    t = spec.elem
    em.use_type(t)
    size = max(1, t.bits // 8) * em.plan.num_work_items
    scratch = em.scratch(size, ctype(t)) if em.plan.num_work_items > 1 else ""
    p = Params()
    text = reduction_helper(spec, em.plan, _store(em, inst, out), p, scratch)
    _emit_call(em, inst, f"sum_{t}", text, p)


def _elementwise(em: KernelEmitter, inst: Instruction, ops: tuple[Matrix, ...],
                 out: MemView) -> None:
    t: ScalarType = out.type.element
    em.use_type(t)
    m, n, si, sj = _op(out, None)
    spec = Elementwise(t, m, n, ops, _mat(out, si, sj), *_scales(em, inst))
    p = Params()
    store = _store(em, inst, out)
    _emit_call(em, inst, f"{inst.name}_{t}", elementwise_helper(spec, em.plan, store, p), p)


@handler("axpby")
def emit_axpby(em: KernelEmitter, inst: Instruction) -> None:
    """``axpby``: B := alpha op(A) + beta B."""
    A, B = em.view(inst.single("A")), em.view(inst.single("B"))
    _, _, si, sj = _op(A, inst.attr_of("trans_a", Transpose))
    _elementwise(em, inst, (_mat(A, si, sj),), B)


@handler("hadamard_product")
def emit_hadamard(em: KernelEmitter, inst: Instruction) -> None:
    """``hadamard_product``: c_i := alpha a_i b_i + beta c_i."""
    a, b, c = (em.view(inst.operand(x)) for x in "ABC")
    ops = tuple(_mat(v, *_op(v, None)[2:]) for v in (a, b))
    _elementwise(em, inst, ops, c)

