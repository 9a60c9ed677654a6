"""Loop-invariant weights a loop's products read across their rows, transposed once
before the loop.

The ``gemm`` a device loop runs (:mod:`frontend.lower.families.control.device_loop`)
vectorizes along the result's last dimension, the right operand's free one.  A weight
``W [N, K]`` contracted on its last dimension (a per-sample cell's ``W @ h`` under
``vmap``, once :mod:`.transposed_products` has swapped it to ``dot(H, W)``) is then read
across its rows: the gemm copies it into local memory transposed, panel by panel, on
every trip of the loop (for a 512 x 128 weight and a batch of 16 the copy cost more than
the product).  :func:`pretranspose_loop_weights` rewrites such a product in a ``while``
body, the weight defined outside the loop or carried through it unchanged, to contract
``transpose(W)`` on its first dimension, the transpose placed before the outermost loop
it is invariant in: the loop materializes what it captures (a small transpose in its
own first launch, no launch of its own), so the copy is made once per run of the loop
and the gemm reads it in place.  Only rank-2 floating-point weights of products without
batch dimensions are rewritten.
"""

from __future__ import annotations

from frontend.ir.core import Block, Op, Region, Value
from frontend.ir.types import TensorType
from frontend.lower.core.loop_invariants import defined_in, value_outside
from frontend.lower.core.registry import rewrite
from frontend.lower.families.dot.transposed_products import (
    DOT,
    Loop,
    loop_blocks,
    shape,
    transpose,
    with_contracting,
)


@rewrite(order=5)  # after the recurrences are rolled into loops
def pretranspose_loop_weights(region: Region) -> Region:
    """Rewrite the products of every ``while`` body in ``region`` (changed in place) as
    the module docstring says; return ``region``."""
    rewriter = _Rewriter()
    for block, loops in loop_blocks(region):
        if loops:
            rewriter.block(block, loops)
    for (_, loop), op in rewriter.made.items():
        loop.block.ops.insert(loop.block.ops.index(loop.op), op)
    return region


class _Rewriter:
    """The products rewritten, and the transposes made for them (one per weight and
    loop)."""

    def __init__(self) -> None:
        self.made: dict[tuple[Value, Loop], Op] = {}
        """The transpose of each weight placed before a loop."""
        self._inside: dict[Op, set[Value]] = {}

    def block(self, block: Block, loops: tuple[Loop, ...]) -> None:
        """Rewrite the products of ``block`` (in ``loops``) whose weight is read across
        its rows."""
        for op in block.ops:
            if op.name != DOT or op.struct_ints("dot_dimension_numbers",
                                                "rhs_batching_dimensions") \
                    or op.struct_ints("dot_dimension_numbers",
                                      "rhs_contracting_dimensions") != [1]:
                continue
            dims = shape(op.operands[1])
            found = self._invariant(op.operands[1], loops)
            if found is None or dims is None or len(dims) != 2 \
                    or not _is_float(op.operands[1]):
                continue
            t = self.made.setdefault(found, transpose(found[0]))
            op.operands[1] = t.result
            op.attrs["dot_dimension_numbers"] = with_contracting(op, "rhs", [0])

    def _invariant(self, v: Value, loops: tuple[Loop, ...]) -> tuple[Value, Loop] | None:
        """The outermost of ``loops`` that ``v`` is invariant in (defined outside it, or
        carried through it unchanged) and ``v``'s value before it; None if it varies in
        the innermost."""
        found = None
        for loop in reversed(loops):
            if loop.op not in self._inside:
                self._inside[loop.op] = defined_in(loop.op.regions[1].block)
            outer = value_outside(loop.op, v, self._inside[loop.op])
            if outer is None:
                break
            v = outer
            found = (v, loop)
        return found


def _is_float(v: Value) -> bool:
    """Whether ``v`` is a tensor of f32 or f64 (what the loop's gemm takes)."""
    return isinstance(v.type, TensorType) and str(v.type.element) in ("f32", "f64")
