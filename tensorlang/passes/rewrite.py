"""Building replacement instructions inside a pass (lower-half-blas, fuse-loops)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tensorlang.diagnostics import Loc
from tensorlang.ir import infer
from tensorlang.ir.core import Instruction, Region, Value
from tensorlang.ir.ops import OPS, ArithOp
from tensorlang.ir.types import ScalarType


class InstructionBuilder:
    """Appends new instructions, located at ``loc``, to the innermost open region.

    Result types come from :mod:`tensorlang.ir.infer`, as for parsed instructions; the
    outermost region's instructions (:attr:`instructions`) replace what is rewritten.
    """

    def __init__(self, loc: Loc) -> None:
        self.loc = loc
        self.stack: list[Region] = [Region()]

    @property
    def instructions(self) -> list[Instruction]:
        """What was built at the outermost level, in order."""
        return self.stack[0].instructions

    def op(self, name: str, operands: dict[str, object], attrs: dict[str, object],
           regions: list[Region] | None = None) -> list[Value]:
        """Append instruction ``name``; its results."""
        inst = Instruction(OPS[name], dict(operands), dict(attrs), regions=regions or [],
                           loc=self.loc)
        inst.results = [Value(t, "", self.loc, inst) for t in infer.result_types(inst)]
        self.stack[-1].append(inst)
        return inst.results

    def one(self, name: str, operands: dict[str, object], attrs: dict[str, object]) -> Value:
        """Append a single-result instruction; its result."""
        return self.op(name, operands, attrs)[0]

    def const(self, value: object, t: ScalarType) -> Value:
        """A ``constant`` of type ``t``."""
        return self.one("constant", {}, {"value": value, "type": t})

    def arith(self, op: ArithOp, a: Value, b: Value, t: ScalarType | None = None) -> Value:
        """``a op b`` in type ``t`` (default: ``a``'s type)."""
        return self.one("arith", {"a": a, "b": b}, {"op": op, "type": t or a.type})

    def load(self, memref: Value, indices: list[Value]) -> Value:
        """``memref[indices]``."""
        return self.one("load", {"operand": memref, "indices": indices}, {"type": memref.type})

    def size(self, memref: Value, mode: int) -> Value:
        """The size of ``memref`` along ``mode``."""
        return self.one("size", {"operand": memref}, {"mode": mode, "type": memref.type})

    @contextmanager
    def region(self, args: list[Value]) -> Iterator[Region]:
        """Build the instructions of the block into a new region with ``args``."""
        self.stack.append(Region(args=args))
        try:
            yield self.stack[-1]
        finally:
            self.stack.pop()
