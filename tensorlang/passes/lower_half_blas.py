"""``lower-half-blas``: BLAS instructions on f16/bf16 memrefs become foreach loops.

The collective BLAS lowering of the OpenCL back end addresses memory as the value type,
so instructions on the 16-bit storage floats are rewritten first into a (multi-
dimensional) ``foreach`` over the output that accumulates in ``f32``:

    out[idx] := round(alpha * acc + beta * out[idx])    (beta = 0: out is not read)

where ``acc`` is the f32 sum of products (gemm, gemv, sum) or product (ger,
hadamard_product) or element (axpby) of the operands converted to f32, and ``round``
converts once to the element type.  ``.atomic`` updates on these types are rejected by the
verifier, so none reach this pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from tensorlang.ir.core import Instruction, Program, Region, Value
from tensorlang.ir.ops import ArithOp, CmpCond, Transpose
from tensorlang.ir.types import F32, INDEX, ScalarType
from tensorlang.passes.manager import Pass
from tensorlang.passes.rewrite import InstructionBuilder

Body = Callable[["_Builder", list[Value]], Value]
"""(builder, output indices) -> the f32 value before scaling by alpha."""


@dataclass(frozen=True)
class LowerHalfBlas(Pass):
    """Rewrite gemm, gemv, ger, hadamard_product, axpby and sum on f16/bf16 memrefs."""

    name: ClassVar[str] = "lower-half-blas"

    def run(self, program: Program) -> None:
        """Rewrite every function of ``program`` in place."""
        for func in program.functions:
            _rewrite(func.body)


def _rewrite(region: Region) -> None:
    instructions: list[Instruction] = []
    for inst in region.instructions:
        for inner in inst.regions:
            _rewrite(inner)
        if _applies(inst):
            instructions += _lower(inst)
        else:
            instructions.append(inst)
    region.instructions = []
    for inst in instructions:
        region.append(inst)


def _applies(inst: Instruction) -> bool:
    if not inst.op.blas:
        return False
    alpha = inst.single("alpha").type
    return isinstance(alpha, ScalarType) and alpha.is_half


class _Builder(InstructionBuilder):
    """Builds the f32 loops of a 16-bit BLAS instruction."""

    def to_f32(self, value: Value) -> Value:
        """``value`` cast to f32."""
        return self.one("cast", {"a": value}, {"from_type": value.type, "to_type": F32})

    def load_f32(self, memref: Value, indices: list[Value]) -> Value:
        """``memref[indices]`` as f32."""
        return self.to_f32(self.load(memref, indices))

    def f32(self, op: str, a: Value, b: Value) -> Value:
        """``a op b`` in f32."""
        return self.arith(ArithOp(op), a, b, F32)


def _op_at(b: _Builder, x: Value, trans: Transpose | None, i: Value, k: Value) -> Value:
    """op(X)[i, k] as f32."""
    return b.load_f32(x, [k, i] if trans is Transpose.T else [i, k])


def _op_size(b: _Builder, x: Value, trans: Transpose | None, mode: int) -> Value:
    return b.size(x, 1 - mode if trans is Transpose.T else mode)


def _reduce(b: _Builder, count: Value, term: Callable[[Value], Value]) -> Value:
    """sum over k in [0, count) of term(k), accumulated in f32."""
    zero, acc0 = b.const(0, INDEX), b.const(0.0, F32)
    k, acc = Value(INDEX, "k", b.loc), Value(F32, "acc", b.loc)
    with b.region([k, acc]) as body:
        total = b.f32("add", acc, term(k))
        b.op("yield", {"values": [total]}, {"types": (F32,)})
    return b.op("for", {"from": zero, "to": count, "step": None, "init": [acc0]},
                {"loop_type": INDEX}, [body])[0]


def _gemm(b: _Builder, inst: Instruction) -> Body:
    a, bm = inst.single("A"), inst.single("B")
    ta, tb = inst.attr_of("trans_a", Transpose), inst.attr_of("trans_b", Transpose)
    depth = _op_size(b, a, ta, 1)
    return lambda b, ij: _reduce(b, depth, lambda k: b.f32(
        "mul", _op_at(b, a, ta, ij[0], k), _op_at(b, bm, tb, k, ij[1])))


def _gemv(b: _Builder, inst: Instruction) -> Body:
    a, x, ta = inst.single("A"), inst.single("B"), inst.attr_of("trans_a", Transpose)
    depth = _op_size(b, a, ta, 1)
    return lambda b, i: _reduce(b, depth, lambda k: b.f32(
        "mul", _op_at(b, a, ta, i[0], k), b.load_f32(x, [k])))


def _sum(b: _Builder, inst: Instruction) -> Body:
    a, ta = inst.single("A"), inst.attr_of("trans_a", Transpose)
    if a.memref_type.order == 1:
        count = b.size(a, 0)
        return lambda b, i: _reduce(b, count, lambda k: b.load_f32(a, [k]))
    depth = _op_size(b, a, ta, 1)
    return lambda b, i: _reduce(b, depth, lambda k: _op_at(b, a, ta, i[0], k))


def _axpby(b: _Builder, inst: Instruction) -> Body:
    a, ta = inst.single("A"), inst.attrs.get("trans_a")
    if a.memref_type.order == 2:
        return lambda b, ij: _op_at(b, a, ta, ij[0], ij[1])
    return lambda b, idx: b.load_f32(a, list(idx))


_BODIES: dict[str, Callable[[_Builder, Instruction], Body]] = {
    "gemm": _gemm, "gemv": _gemv, "sum": _sum, "axpby": _axpby,
    "ger": lambda b, inst: lambda b, ij: b.f32("mul", b.load_f32(inst.single("A"), [ij[0]]),
                                                 b.load_f32(inst.single("B"), [ij[1]])),
    "hadamard_product": lambda b, inst: lambda b, i: b.f32("mul", b.load_f32(inst.single("A"), i),
                                                              b.load_f32(inst.single("B"), i)),
}


def _lower(inst: Instruction) -> list[Instruction]:
    b = _Builder(inst.loc)
    out: Value = inst.operand(inst.op.output)
    body = _BODIES[inst.name](b, inst)
    alpha, beta = b.to_f32(inst.single("alpha")), b.to_f32(inst.single("beta"))
    beta_zero = b.one("cmp", {"a": beta, "b": b.const(0.0, F32)},
                      {"cond": CmpCond.EQ, "type": F32})
    t = out.memref_type
    sizes = [b.size(out, m) for m in range(t.order)] or [b.const(1, INDEX)]
    lows = [b.const(0, INDEX) for _ in sizes]
    args = [Value(INDEX, f"i{m}", b.loc) for m in range(len(sizes))]
    with b.region(args) as loop:
        idx = args[:t.order]
        scaled = b.f32("mul", alpha, body(b, idx))
        result = _plus_beta_out(b, beta_zero, scaled, beta, out, idx)
        stored = b.one("cast", {"a": result}, {"from_type": F32, "to_type": t.element})
        b.op("store", {"value": stored, "operand": out, "indices": idx}, {"type": t})
    b.op("foreach_nd", {"from": lows, "to": sizes}, {"loop_type": INDEX}, [loop])
    return b.instructions


def _plus_beta_out(b: _Builder, beta_zero: Value, scaled: Value, beta: Value, out: Value,
                   idx: list[Value]) -> Value:
    """scaled, or scaled + beta * out[idx] when beta is not zero (out is then read)."""
    with b.region([]) as then:
        b.op("yield", {"values": [scaled]}, {"types": (F32,)})
    with b.region([]) as other:
        total = b.f32("add", scaled, b.f32("mul", beta, b.load_f32(out, idx)))
        b.op("yield", {"values": [total]}, {"types": (F32,)})
    return b.op("if", {"cond": beta_zero}, {"result_types": (F32,)}, [then, other])[0]

