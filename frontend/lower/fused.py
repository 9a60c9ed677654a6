"""Fused elemental code generation: a value's element as scalar code in one kernel.

``Fused.value(v, idx)`` returns the SSA name of element ``idx`` of StableHLO value ``v``:
a load when ``v`` lives in a buffer, a bound scalar inside a region body, otherwise the
elemental lowering of ``v``'s defining op, applied recursively (so chains of elementwise
ops, broadcasts, reshapes, transposes and slices fuse into the consumer's kernel).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from frontend.ir.core import Block, Op, Value
from frontend.lower import types
from frontend.lower.builder import IndexExpr, KernelBuilder
from frontend.lower.registry import ELEMENTAL
from tensorlang.diagnostics import CompileError

if TYPE_CHECKING:
    from frontend.lower.driver import FuncLowering


class Fused:
    """Elemental code generation into one kernel."""

    def __init__(self, lw: FuncLowering, k: KernelBuilder) -> None:
        self.lw = lw
        self.k = k
        self.bound: dict[Value, str] = {}

    def value(self, v: Value, idx: Sequence[IndexExpr]) -> str:
        """Element ``idx`` (row-major) of ``v``."""
        if v in self.bound:
            return self.bound[v]
        key = ("value", id(v), tuple(idx))
        found = self.k.lookup(key)
        if found is not None:
            return found
        buf = self.lw.buffer_of(v)
        if buf is not None:
            n = types.size(v)
            result = self.k.load(buf, types.elem(v), n, self.k.linear(idx, types.shape(v)))
        else:
            result = self._wrap(v, self._elemental(v, list(idx)))
        return self.k.remember(key, result)

    def _wrap(self, v: Value, x: str) -> str:
        """Sub-byte integers computed in bytes: wrap to their own width."""
        bits = types.narrow_bits(v)
        if bits is None:
            return x
        t = types.elem(v)
        k = self.k
        if t == "u8":
            return k.arith("and", x, k.const(2**bits - 1, t), t)
        shift = k.const(8 - bits, t)
        return k.arith("shr", k.arith("shl", x, shift, t), shift, t)

    def _elemental(self, v: Value, idx: list[IndexExpr]) -> str:
        op = v.owner
        if not isinstance(op, Op):
            raise AssertionError(f"block argument {v} is neither bound nor in a buffer")
        if op.name not in ELEMENTAL:
            raise CompileError.at(op.loc, f"'{op.name}' is not supported in this region yet")
        return ELEMENTAL[op.name](self, op, idx)

    def body(self, block: Block, args: Sequence[str]) -> list[str]:
        """Lower a scalar region body (reduce, sort, map, scatter...): its results."""
        for a, ssa in zip(block.args, args, strict=True):
            self.bound[a] = ssa
        for op in block.ops[:-1]:
            if op.name not in ELEMENTAL:
                raise CompileError.at(op.loc, f"'{op.name}' is not supported in this region "
                                      "yet")
            types.check_op_types(op)
        ret = block.ops[-1]
        return [self.value(r, []) for r in ret.operands]

    # -- helpers for lowerings -----------------------------------------------------------------

    def operands(self, op: Op, idx: Sequence[IndexExpr]) -> list[str]:
        """Every operand's element at ``idx`` (for elementwise ops)."""
        return [self.value(v, idx) for v in op.operands]
