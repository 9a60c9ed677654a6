"""Inlining ``func.call`` and ``stablehlo.composite`` before lowering.

:func:`inline_calls` returns a copy of a function's body in which every call (at any
depth, inside regions too) is replaced by a copy of the callee's body whose parameters
are substituted by the call's arguments, and the call's results by the values the callee
returns.  Each call site gets its own copy (fresh :class:`Value` objects), so two calls
of one function never share values, and the lowering sees one flat body: elementwise
chains fuse across calls and use counts are per call site.  The module is not modified.
"""

from __future__ import annotations

from collections.abc import Callable

from frontend.ir.core import Block, Func, Module, Op, Region, Value
from tensorlang.diagnostics import CompileError

CALLS = ("func.call", "stablehlo.composite")
NATIVE_COMPOSITES: dict[str, Callable[[Op], Op | None]] = {}
"""Composite names lowered as an op of their own instead of their decomposition: the
function turns the composite into that op (None keeps the decomposition)."""


def inline_calls(module: Module, func: Func) -> Region:
    """``func``'s body with every call inlined (``func`` must have a body)."""
    assert func.body is not None
    return _Inliner(module, [func.name.strip('"')]).region(func.body, {})


def callee_name(op: Op) -> str:
    """The function a ``func.call`` (its callee) or composite (its decomposition) runs."""
    target = op.attr("callee" if op.name == "func.call" else "decomposition")
    return str(target).lstrip("@").strip('"')


class _Inliner:
    """Copies regions, replacing calls by copies of their callees' bodies."""

    def __init__(self, module: Module, stack: list[str]) -> None:
        self.module = module
        self.stack = stack  # functions being inlined (a call back into one is recursion)

    def region(self, region: Region, subst: dict[Value, Value]) -> Region:
        """A copy of ``region``; ``subst`` maps outer values to their replacements."""
        return Region([self.block(b, subst) for b in region.blocks])

    def block(self, block: Block, subst: dict[Value, Value]) -> Block:
        """A copy of ``block`` with fresh arguments (``subst`` gains their mapping)."""
        new = Block(label=block.label)
        new.args = [Value(a.type, new, a.index, a.name, a.loc) for a in block.args]
        subst.update(zip(block.args, new.args, strict=True))
        self.ops(block.ops, new, subst)
        return new

    def ops(self, ops: list[Op], into: Block, subst: dict[Value, Value]) -> None:
        """Append copies of ``ops`` to ``into``, inlining calls."""
        for op in ops:
            native = NATIVE_COMPOSITES.get(str(op.attr("name"))) \
                if op.name == "stablehlo.composite" else None
            op = (native(op) or op) if native else op
            if op.name in CALLS:
                self.inline(op, into, subst)
            else:
                into.ops.append(self.copy(op, subst))

    def copy(self, op: Op, subst: dict[Value, Value]) -> Op:
        """A copy of ``op`` reading substituted operands, with fresh results."""
        new = Op(op.name, [subst.get(v, v) for v in op.operands], list(op.result_types),
                 op.attrs, [], op.loc, op.src_loc, [], op.origin)
        new.regions = [self.region(r, subst) for r in op.regions]
        new.results = [Value(r.type, new, r.index, r.name, r.loc) for r in op.results]
        subst.update(zip(op.results, new.results, strict=True))
        return new

    def inline(self, call: Op, into: Block, subst: dict[Value, Value]) -> None:
        """Append the callee's body ops to ``into``; map the call's results."""
        name = callee_name(call)
        callee = self.module.func(name)
        if callee is None or callee.body is None:
            raise CompileError.at(call.loc, f"no function @{name} to call")
        if name in self.stack:
            raise CompileError.at(call.loc, f"recursive call of @{name} is not supported")
        body = callee.body.block
        if len(body.args) != len(call.operands):
            raise CompileError.at(call.loc, f"@{name} takes {len(body.args)} arguments, "
                                  f"the call passes {len(call.operands)}")
        inner = {p: subst.get(a, a) for p, a in zip(body.args, call.operands, strict=True)}
        self.stack.append(name)
        self.ops(body.ops[:-1], into, inner)
        self.stack.pop()
        returned = body.ops[-1].operands
        if len(returned) != len(call.results):
            raise CompileError.at(call.loc, f"@{name} returns {len(returned)} values, "
                                  f"the call has {len(call.results)} results")
        subst.update((r, inner.get(v, v)) for r, v in zip(call.results, returned, strict=True))
