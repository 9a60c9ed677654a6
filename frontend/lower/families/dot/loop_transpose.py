"""Products that loop bodies transpose, computed transposed, before lowering.

jax's ``vmap`` of a cell or vector field written per sample (equinox's ``W @ h``, an MLP
under diffrax) multiplies the weights by the batch, ``dot(W, H)`` of shape ``[units,
batch]``, and transposes the product to ``[batch, units]`` for the element-wise work that
follows.  In a loop run as one kernel (:mod:`frontend.lower.device_loop`) that work then
reads the product down its columns, a stride of the batch between neighbouring elements:
no vector loads, a gather per element.  :func:`swap_transposed_products` uses the
identity ``transpose(dot(a, b), [1, 0]) = dot(b, a)`` (contracting dimensions swapped)
in the bodies of ``while`` loops, so the product is computed in the order its readers
want.  Only products of rank-2 results without batch dimensions whose one use is that
transpose are rewritten.  Outside loops the lowering of :mod:`frontend.lower.dot` does the
same with the buffers in view (``_swapped_transpose`` of :mod:`.general`).
"""

from __future__ import annotations

from collections import Counter

from frontend.ir.attrs import ListAttr, StructAttr
from frontend.ir.core import Block, Op, Region, Value, walk, walk_ops
from frontend.lower.core import types
from frontend.lower.core.registry import rewrite

DOT = "stablehlo.dot_general"
TRANSPOSE = "stablehlo.transpose"


@rewrite(order=4)  # after the recurrences are rolled into loops
def swap_transposed_products(region: Region) -> Region:
    """Rewrite the transposed products of every ``while`` body in ``region`` (changed in
    place); return ``region``."""
    for op in walk(region):
        if op.name == "stablehlo.while":
            for block in op.regions[1].blocks:
                _swap_in_block(block)
    return region


def _swap_in_block(block: Block) -> None:
    uses = Counter(v for op in walk_ops(block.ops) for v in op.operands)
    at = {op: n for n, op in enumerate(block.ops)}
    replaced: dict[Value, Value] = {}
    for op in block.ops:
        dot = op.operands[0].defining_op if op.name == TRANSPOSE else None
        if dot in at and _swappable(op, uses):
            assert dot is not None
            swapped = _swapped(dot, op)
            block.ops[at[dot]] = swapped
            replaced[op.result] = swapped.result
    if replaced:
        block.ops[:] = [op for op in block.ops if not any(r in replaced for r in op.results)]
        for op in walk_ops(block.ops):
            op.operands = [replaced.get(v, v) for v in op.operands]


def _swappable(transpose: Op, uses: Counter[Value]) -> bool:
    """Whether ``transpose`` swaps the two dimensions of a product with no other use."""
    source = transpose.operands[0]
    dot = source.defining_op
    return dot is not None and dot.name == DOT and uses[source] == 1 \
        and transpose.ints_attr("permutation") == [1, 0] \
        and len(types.shape(source)) == 2 \
        and not dot.struct_ints("dot_dimension_numbers", "lhs_batching_dimensions")


def _swapped(dot: Op, transpose: Op) -> Op:
    """``dot(rhs, lhs)`` of ``transpose``'s result type."""
    numbers = dot.attr_of("dot_dimension_numbers", StructAttr)
    fields = dict(numbers.fields)
    lhs = fields.pop("lhs_contracting_dimensions", ListAttr(()))
    rhs = fields.pop("rhs_contracting_dimensions", ListAttr(()))
    swapped = (("lhs_contracting_dimensions", rhs), ("rhs_contracting_dimensions", lhs))
    attrs = {**dot.attrs,
             "dot_dimension_numbers": StructAttr(numbers.name, swapped + tuple(fields.items()))}
    precision = dot.attrs.get("precision_config")
    if isinstance(precision, ListAttr):
        attrs["precision_config"] = ListAttr(tuple(reversed(precision.items)))
    op = Op(DOT, [dot.operands[1], dot.operands[0]], list(transpose.result_types), attrs, [],
            dot.loc, dot.src_loc, origin=dot.origin)
    op.results = [Value(transpose.result.type, op, 0, transpose.result.name,
                        transpose.result.loc)]
    return op
