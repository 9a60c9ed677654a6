"""Products read transposed, computed transposed, before lowering.

jax's ``vmap`` of a cell or vector field written per sample (equinox's ``W @ h``, an MLP
under diffrax) multiplies the weights by the batch, ``dot(W, H)`` of shape ``[units,
batch]``, and transposes the product to ``[batch, units]`` for the element-wise work that
follows, often after adding the input's product: ``transpose(dot(Wx, x) + dot(Wh, h))``.
In a loop run as one kernel (:mod:`frontend.lower.device_loop`) that work then reads the
products down their columns, a stride of the batch between neighbouring elements: no
vector loads, a gather per element.  :func:`swap_transposed_products` moves such a
transpose up through the element-wise ops it reads, ``transpose(f(a, b)) =
f(transpose(a), transpose(b))``, to the products, and uses the identity
``transpose(dot(a, b), [1, 0]) = dot(b, a)`` (contracting dimensions swapped) there, so
each product is computed in the order its readers want.  A transposed operand that is
not such a product stays a transpose: an index map its consumer reads.

Only transposes that reach a product this way are rewritten, and only products of
rank-2 results without batch dimensions whose one use is the transposed chain.  Outside
``while`` bodies a product is swapped only when its rows, which become the gemm's vector
direction, are not too few (:data:`.general.MIN_SWAPPED_ROWS`).  The rewrite runs before
:mod:`.batching`, so an unrolled recurrence's steps stack the swapped products (the
input's projection over every step then has the units innermost, as its readers want).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from frontend.ir.attrs import Attr, DenseArrayAttr, IntAttr, ListAttr, StructAttr
from frontend.ir.core import Block, Op, Region, Value, walk_ops
from frontend.ir.types import TensorType
from frontend.lower.core.fused import ELEMENTWISE
from frontend.lower.core.registry import rewrite
from frontend.lower.families.dot.general import MIN_SWAPPED_ROWS

DOT = "stablehlo.dot_general"
TRANSPOSE = "stablehlo.transpose"
WHILE = "stablehlo.while"

DEPTH = 8
"""Element-wise ops a transpose moves through at most (a cell's gate is a few)."""


@rewrite(order=2)  # before batch_dots: the steps' products are stacked swapped
def swap_transposed_products(region: Region) -> Region:
    """Rewrite the transposed products of every block of ``region`` (changed in place);
    return ``region``."""
    for block, loops in loop_blocks(region):
        _Block(block, in_loop=bool(loops)).rewrite()
    return region


@dataclass(frozen=True)
class Loop:
    """A ``while`` and the block holding it."""

    op: Op
    block: Block


def loop_blocks(region: Region, loops: tuple[Loop, ...] = ()
                ) -> Iterator[tuple[Block, tuple[Loop, ...]]]:
    """Every block of ``region``, nested ones included, and the loops whose bodies it
    is in (the innermost last)."""
    for block in region.blocks:
        yield block, loops
        for op in block.ops:
            for n, inner in enumerate(op.regions):
                yield from loop_blocks(inner, (*loops, Loop(op, block))
                                       if op.name == WHILE and n == 1 else loops)


class _Block:
    """The rewrite of one block: the transposes moved up, the products swapped."""

    def __init__(self, block: Block, in_loop: bool) -> None:
        self.block = block
        self.in_loop = in_loop
        self.uses = Counter(v for op in walk_ops(block.ops) for v in op.operands)
        self.here = set(block.ops)
        self.replaced: dict[Op, list[Op]] = {}
        """Ops of the block and what stands in their place (nothing: removed)."""
        self.subst: dict[Value, Value] = {}

    def rewrite(self) -> None:
        """Rewrite every transpose of the block that reaches a product."""
        for op in list(self.block.ops):
            if _swaps_rows(op) and op not in self.replaced and self._reaches(op.operands[0], 0):
                before: list[Op] = []
                self.subst[op.result] = self._transposed(op.operands[0], before, 0)
                self.replaced[op] = before
        if not self.subst:
            return
        self.block.ops[:] = [new for op in self.block.ops
                             for new in self.replaced.get(op, [op])]
        for op in walk_ops(self.block.ops):
            op.operands = [self.subst.get(v, v) for v in op.operands]

    def _owned(self, v: Value) -> Op | None:
        """The op of this block defining ``v`` when ``v``'s one use is the chain."""
        op = v.defining_op
        return op if op in self.here and self.uses[v] == 1 and op not in self.replaced \
            else None

    def _reaches(self, v: Value, depth: int) -> bool:
        """Whether moving a transpose of ``v`` up reaches a product to swap."""
        op = self._owned(v)
        if op is None or depth > DEPTH:
            return False
        if op.name == DOT:
            return self._swappable(op)
        return _elementwise(op) and any(
            self._reaches(x, depth + 1) for x in op.operands if shape(x) == shape(v))

    def _swappable(self, dot: Op) -> bool:
        """Whether ``dot`` (read only transposed) is computed swapped."""
        dims = shape(dot.result)
        if dims is None or len(dims) != 2 or dot.struct_ints("dot_dimension_numbers",
                                                             "lhs_batching_dimensions"):
            return False
        rows, cols = dims
        return self.in_loop or rows >= min(cols, MIN_SWAPPED_ROWS)

    def _transposed(self, v: Value, before: list[Op], depth: int) -> Value:
        """``transpose(v)`` (``depth`` ops below the transpose): a swapped product, an
        element-wise op of transposed operands, or a transpose op (made in ``before``)."""
        op = self._owned(v)
        if op is not None and op.name == DOT and self._swappable(op):
            swapped = _swapped(op)
            self.replaced[op] = [swapped]
            return swapped.result
        if op is not None and _elementwise(op) and self._reaches(v, depth):
            operands = [self._transposed(x, before, depth + 1) if shape(x) else x
                        for x in op.operands]
            moved = _like(op, operands, _transposed_type(op.result), dict(op.attrs))
            self.replaced[op] = []
            before.append(moved)
            return moved.result
        t = transpose(v)
        before.append(t)
        return t.result


def transpose(v: Value) -> Op:
    """A new op transposing the matrix ``v``."""
    t = Op(TRANSPOSE, [v], [_transposed_type(v)],
           {"permutation": DenseArrayAttr("i64", (1, 0))}, [], v.loc)
    t.results = [Value(t.result_types[0], t, 0, f"{v.name}_t", v.loc)]
    return t


def _swaps_rows(op: Op) -> bool:
    """Whether ``op`` transposes a matrix."""
    return op.name == TRANSPOSE and op.ints_attr("permutation") == [1, 0] \
        and shape(op.result) is not None


def _elementwise(op: Op) -> bool:
    """An element-wise op of one result whose operands are of its shape or scalars."""
    if op.name not in ELEMENTWISE or len(op.results) != 1 or op.regions:
        return False
    dims = shape(op.result)
    return dims is not None and all(shape(x) in (dims, ()) for x in op.operands)


def shape(v: Value) -> tuple[int, ...] | None:
    """``v``'s static shape (None when it has none)."""
    t = v.type
    return t.static_shape if isinstance(t, TensorType) and t.is_static else None


def _transposed_type(v: Value) -> TensorType:
    """The type of ``v`` (a matrix) transposed."""
    dims = shape(v)
    assert isinstance(v.type, TensorType) and dims is not None and len(dims) == 2
    return v.type.with_shape(dims[::-1])


def _like(op: Op, operands: list[Value], result_type: TensorType,
          attrs: dict[str, Attr]) -> Op:
    """An op named as ``op`` (of its origin) on ``operands``, of ``result_type``."""
    new = Op(op.name, operands, [result_type], attrs, [], op.loc, op.src_loc,
             origin=op.origin)
    new.results = [Value(result_type, new, 0, op.result.name, op.result.loc)]
    return new


def with_contracting(dot: Op, side: str, dims: list[int]) -> StructAttr:
    """``dot``'s dimension numbers with ``side``'s contracting dimensions ``dims``."""
    numbers = dot.attr_of("dot_dimension_numbers", StructAttr)
    key = f"{side}_contracting_dimensions"
    return StructAttr(numbers.name, tuple(
        (name, ListAttr(tuple(IntAttr(d) for d in dims)) if name == key else value)
        for name, value in numbers.fields))


def _swapped(dot: Op) -> Op:
    """``dot(rhs, lhs)``: ``dot``'s product transposed."""
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
    return _like(dot, [dot.operands[1], dot.operands[0]], _transposed_type(dot.result), attrs)
