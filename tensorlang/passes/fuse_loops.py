"""fuse-loops: consecutive loops over the same box become one loop nest.

Two ``foreach``/``foreach_nd`` loops in a collective region, with nothing between them
but pure scalar or view instructions (constants, arithmetic, ``size``, ``subview``...),
are merged into one when :func:`tensorlang.schedule.deps.fusable` proves it legal: the
same iteration domain, and every dependence between them joins equal points (the second
loop at point x touches what the first touched only at x).  The second body is appended
to the first at each point, so the barrier ``insert-barrier`` would have put between the
loops is not needed either.  The instructions between them move above the fused loop.

``axpby`` and ``hadamard_product`` (real or integer element type, alpha and beta of that
type, not ``.atomic``) take part too: when one would fuse with a neighbouring loop it is
rewritten as the loop ``out[i] = alpha * f(i) + beta * out[i]`` first (``beta = 0`` does
not read ``out``, as in the collective).  Never fused: different boxes or loop types,
bodies with a barrier, accesses isl cannot place exactly (``expand``/``fuse`` views), and
a second loop touching at x what the first touched at another point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tensorlang.ir.core import Instruction, Program, Region, Value
from tensorlang.ir.ops import ArithOp, CmpCond, Transpose
from tensorlang.ir.types import INDEX, MemRefType, ScalarType
from tensorlang.passes.manager import Pass
from tensorlang.passes.rewrite import InstructionBuilder
from tensorlang.schedule.affine import Symbols
from tensorlang.schedule.deps import fusable
from tensorlang.schedule.domains import statement

_LOOPS = ("foreach", "foreach_nd")
_ELEMENTWISE = ("axpby", "hadamard_product")
"""Element-wise collectives, which may become a loop over their output."""


def _movable(inst: Instruction) -> bool:
    """Whether ``inst`` may move above a loop: pure, no memory access, no regions."""
    return inst.op.pure and not inst.op.touches_memory and not inst.regions


@dataclass(frozen=True)
class FuseLoops(Pass):
    """Merge consecutive loops over the same box when the dependences allow it."""

    name: ClassVar[str] = "fuse-loops"

    def run(self, program: Program) -> None:
        """Fuse in every function of ``program``."""
        for func in program.functions:
            fuse_region(func.body)


@dataclass
class _Candidate:
    """A loop (or an elementwise collective that may become one) waiting for a partner."""

    inst: Instruction
    between: list[Instruction]
    """Hoistable instructions seen since ``inst``."""


def fuse_region(region: Region) -> int:
    """Fuse consecutive loops of ``region`` and its nested regions; return how many fusions."""
    count = 0
    out: list[Instruction] = []
    current: _Candidate | None = None
    for inst in region.instructions:
        for inner in inst.regions:
            count += fuse_region(inner)
        if current is not None and _movable(inst):
            current.between.append(inst)
            continue
        fused = _fuse(current, inst) if current is not None else None
        if fused is not None:
            count += 1
            out[-1:] = fused
            current = _Candidate(fused[-1], [])
            continue
        if current is not None:
            out += current.between
        out.append(inst)
        current = _Candidate(inst, []) if _is_loop_like(inst) else None
    if current is not None:
        out += current.between
    region.instructions = []
    for inst in out:
        region.append(inst)
    return count


def _is_loop_like(inst: Instruction) -> bool:
    return inst.name in _LOOPS or _convertible(inst)


def _fuse(first: _Candidate, second: Instruction) -> list[Instruction] | None:
    """``[...prelude, fused loop]`` replacing ``first.inst`` (and ``second``), or None."""
    if not _is_loop_like(second):
        return None
    a, b = _as_loop(first.inst), _as_loop(second)
    if a is None or b is None or not _legal(a[-1], b[-1]):
        return None
    _append_body(a[-1], b[-1])
    return [*a[:-1], *first.between, a[-1]]  # b's prelude only computed b's bounds


def _legal(first: Instruction, second: Instruction) -> bool:
    if first.attr_of("loop_type", ScalarType) != second.attr_of("loop_type", ScalarType):
        return False
    if any(n.name == "barrier" for loop in (first, second) for n in loop.walk()):
        return False
    syms = Symbols()
    s1, s2 = statement(first, syms), statement(second, syms)
    return s1 is not None and s2 is not None and fusable(s1, s2)


def _append_body(first: Instruction, second: Instruction) -> None:
    """Run ``second``'s body after ``first``'s at each point (``first`` becomes the fusion)."""
    body, other = first.regions[0], second.regions[0]
    renamed = dict(zip(other.args, body.args, strict=True))
    for inst in other.instructions:
        for nested in inst.walk():
            _replace_operands(nested, renamed)
        body.append(inst)


def _replace_operands(inst: Instruction, renamed: dict[Value, Value]) -> None:
    for name, slot in inst.operands.items():
        if isinstance(slot, list):
            inst.operands[name] = [renamed.get(v, v) for v in slot]
        elif slot is not None:
            inst.operands[name] = renamed.get(slot, slot)


# -- elementwise collectives as loops ------------------------------------------------------


def _convertible(inst: Instruction) -> bool:
    if inst.name not in _ELEMENTWISE or inst.attrs.get("atomic"):
        return False
    out: MemRefType = inst.operand(inst.op.output).type
    elem = out.element
    if out.order == 0 or elem.is_complex or elem.is_half or elem.is_bool:
        return False
    return all(inst.operand(s).type == elem for s in ("alpha", "beta"))


def _as_loop(inst: Instruction) -> list[Instruction] | None:
    """``[...prelude, loop]``: ``inst`` itself for a loop, a new loop for a collective."""
    if inst.name in _LOOPS:
        return [inst]
    return as_foreach(inst) if _convertible(inst) else None


def as_foreach(inst: Instruction) -> list[Instruction]:
    """An ``axpby``/``hadamard_product`` as ``[...prelude, foreach]`` over its output."""
    b = InstructionBuilder(inst.loc)
    out = inst.single(inst.op.output)
    t = out.memref_type
    sizes = [b.size(out, m) for m in range(t.order)]
    zero = b.const(0, INDEX)
    args = [Value(INDEX, f"i{m}" if t.order > 1 else "i", inst.loc) for m in range(t.order)]
    with b.region(args) as body:
        value = b.arith(ArithOp.MUL, inst.single("alpha"), _term(b, inst, args))
        result = _plus_beta_out(b, inst.single("beta"), value, out, args)
        b.op("store", {"value": result, "operand": out, "indices": args}, {"type": t})
    if t.order == 1:
        b.op("foreach", {"from": zero, "to": sizes[0]}, {"loop_type": INDEX}, [body])
    else:
        b.op("foreach_nd", {"from": [zero] * t.order, "to": sizes}, {"loop_type": INDEX},
             [body])
    return b.instructions


def _term(b: InstructionBuilder, inst: Instruction, idx: list[Value]) -> Value:
    """op(A)[idx] (axpby) or A[idx] * B[idx] (hadamard_product)."""
    a: Value = inst.single("A")
    if inst.name == "hadamard_product":
        return b.arith(ArithOp.MUL, b.load(a, idx), b.load(inst.single("B"), idx))
    transposed = inst.attrs.get("trans_a") is Transpose.T and a.memref_type.order == 2
    return b.load(a, idx[::-1] if transposed else idx)


def _plus_beta_out(b: InstructionBuilder, beta: Value, value: Value, out: Value,
                   idx: list[Value]) -> Value:
    """``value + beta * out[idx]`` where ``beta = 0`` never reads ``out``."""
    known = _constant(beta)
    if known is not None and complex(known) == 0:
        return value
    if known is not None and complex(known) == 1:
        return b.arith(ArithOp.ADD, value, b.load(out, idx))
    t = value.scalar_type
    zero = b.const(0.0 if t.is_float else 0, t)
    is_zero = b.one("cmp", {"a": beta, "b": zero}, {"cond": CmpCond.EQ, "type": t})
    with b.region([]) as then:
        b.op("yield", {"values": [value]}, {"types": (t,)})
    with b.region([]) as other:
        total = b.arith(ArithOp.ADD, b.arith(ArithOp.MUL, beta, b.load(out, idx)), value)
        b.op("yield", {"values": [total]}, {"types": (t,)})
    return b.op("if", {"cond": is_zero}, {"result_types": (t,)}, [then, other])[0]


def _constant(value: Value) -> int | float | complex | None:
    owner = value.owner
    if isinstance(owner, Instruction) and owner.name == "constant":
        return owner.attr("value")
    return None
