"""Scalar instructions: arith, cast, cmp, constant and the work-group queries."""

from __future__ import annotations

from backend_opencl.emit import numeric, prelude
from backend_opencl.emit.cnames import literal
from backend_opencl.emit.kernel import KernelEmitter, handler
from tensorlang.ir.core import Instruction
from tensorlang.ir.ops import ArithOp, CmpCond
from tensorlang.ir.types import ScalarType

_BINARY = {
    ArithOp.ADD: "+", ArithOp.SUB: "-", ArithOp.MUL: "*", ArithOp.DIV: "/", ArithOp.REM: "%",
    ArithOp.SHL: "<<", ArithOp.SHR: ">>", ArithOp.AND: "&", ArithOp.OR: "|", ArithOp.XOR: "^",
}
_CMP = {CmpCond.EQ: "==", CmpCond.NE: "!=", CmpCond.GT: ">", CmpCond.GE: ">=",
        CmpCond.LT: "<", CmpCond.LE: "<="}


def binary(op: ArithOp, t: ScalarType, a: str, b: str) -> str:
    """C for ``a op b`` on type ``t`` (integer and f16/bf16 semantics: numeric.py)."""
    if t.is_int:
        defined = numeric.int_binary(op, t, a, b)
        if defined is not None:
            return defined
    if t.is_half:
        return numeric.rounded(t, _plain_binary(op, t, a, b))
    return _plain_binary(op, t, a, b)


def _plain_binary(op: ArithOp, t: ScalarType, a: str, b: str) -> str:
    if t.is_complex and op in (ArithOp.MUL, ArithOp.DIV):
        helper = prelude.cmul(t.name) if op is ArithOp.MUL else prelude.cdiv(t.name)
        return f"{helper}({a}, {b})"
    if t.is_complex and op in (ArithOp.ADD, ArithOp.SUB):
        sign = _BINARY[op]
        return numeric.by_parts(t, f"({a}).x {sign} ({b}).x", f"({a}).y {sign} ({b}).y")
    if op is ArithOp.REM and not t.is_int:
        return f"fmod({a}, {b})"
    if t.is_bool and op in (ArithOp.ADD, ArithOp.SUB):
        return f"({a} != {b})"  # arithmetic modulo 2
    if t.is_bool and op is ArithOp.MUL:
        return f"({a} && {b})"
    return f"{a} {_BINARY[op]} {b}"


@handler("arith")
def emit_arith(em: KernelEmitter, inst: Instruction) -> None:
    """``arith.<op>``."""
    t: ScalarType = inst.attr("type")
    op: ArithOp = inst.attr_of("op", ArithOp)
    a = em.scalar(inst.single("a"))
    narrow = _narrow_arith(em, inst)
    if narrow is not None:
        expr = narrow
    elif op is ArithOp.NEG:
        expr = numeric.negate(t, a)
    elif op is ArithOp.NOT:
        expr = f"!{a}" if t.is_bool else f"~{a}"
    else:
        expr = binary(op, t, a, em.scalar(inst.operand("b")))
    em.define(inst.result, expr)


def _narrow_arith(em: KernelEmitter, inst: Instruction) -> str | None:
    """Plain 32-bit C for index arithmetic whose operands and exact result fit an ``int``
    (so it cannot overflow, and division needs no zero or -1 case); else None."""
    op: ArithOp = inst.attr_of("op", ArithOp)
    operands = [v for v in (inst.single("a"), inst.operand("b")) if v is not None]
    if not em.narrow(inst.result) or not all(em.narrow(v) for v in operands):
        return None
    names = [em.scalar(v) for v in operands]
    if op is ArithOp.NEG:
        return f"-{names[0]}"
    if op in (ArithOp.ADD, ArithOp.SUB, ArithOp.MUL):
        return f"{names[0]} {_BINARY[op]} {names[1]}"
    ra, rb = em.range(operands[0]), em.range(operands[-1])
    if op in (ArithOp.DIV, ArithOp.REM) and ra and rb and ra[0] >= 0 and rb[0] > 0:
        return f"{names[0]} {_BINARY[op]} {names[1]}"
    return None


@handler("cast")
def emit_cast(em: KernelEmitter, inst: Instruction) -> None:
    """``cast``: C conversions; real -> complex puts the value in the real part."""
    src: ScalarType = inst.attr_of("from_type", ScalarType)
    dst: ScalarType = inst.attr_of("to_type", ScalarType)
    em.use_type(src)
    a = em.scalar(inst.single("a"))
    em.define(inst.result, numeric.cast(em.unit, a, src, dst))


@handler("cmp")
def emit_cmp(em: KernelEmitter, inst: Instruction) -> None:
    """``cmp.<cond>``; complex values compare equal part by part."""
    t: ScalarType = inst.attr("type")
    cond: CmpCond = inst.attr_of("cond", CmpCond)
    a, b = em.scalar(inst.single("a")), em.scalar(inst.operand("b"))
    if t.is_complex:
        expr = f"({a}.x == {b}.x && {a}.y == {b}.y)"
        expr = expr if cond is CmpCond.EQ else f"!{expr}"
    else:
        expr = f"{a} {_CMP[cond]} {b}"
    em.define(inst.result, expr)


@handler("constant")
def emit_constant(em: KernelEmitter, inst: Instruction) -> None:
    """``constant``: a named C constant; its value is kept for specialisation."""
    t: ScalarType = inst.attr("type")
    value = inst.attr("value")
    em.consts[inst.result] = value
    em.define(inst.result, str(value) if em.narrow(inst.result) else literal(value, t))


@handler("group_id")
def emit_group_id(em: KernelEmitter, inst: Instruction) -> None:
    """``group_id``: the work-group's index along the launch."""
    em.define(inst.result, "(long)get_group_id(0)", "gid")


@handler("group_size")
def emit_group_size(em: KernelEmitter, inst: Instruction) -> None:
    """``group_size``: the number of work-groups launched."""
    em.define(inst.result, "(long)get_num_groups(0)", "num_groups")


@handler("subgroup_size", "num_subgroups", "subgroup_id", "subgroup_local_id")
def emit_subgroup_query(em: KernelEmitter, inst: Instruction) -> None:
    """Subgroup queries: native builtins, or emulated from the linear local id."""
    if em.plan.native_subgroups:
        builtin = {"subgroup_size": "get_sub_group_size", "num_subgroups": "get_num_sub_groups",
                   "subgroup_id": "get_sub_group_id",
                   "subgroup_local_id": "get_sub_group_local_id"}[inst.name]
        em.define(inst.result, f"(int){builtin}()")
        return
    sg = em.plan.subgroup_size
    lid = em.local_id()
    expr = {
        "subgroup_size": str(sg),
        "num_subgroups": str(em.plan.num_work_items // sg),
        "subgroup_id": f"(int)({lid} / {sg})",
        "subgroup_local_id": f"(int)({lid} % {sg})",
    }[inst.name]
    em.define(inst.result, expr)
