"""Which rows of a device loop each work-group can run alone (the loop over all cores).

A loop kernel (:mod:`frontend.lower.families.control.device_loop`) runs on one work-item,
so on one core.  Often its iterations never mix the rows of a batch: an RNN scan's
state ``h[b]`` at step ``t + 1`` reads ``h[b]`` at step ``t``, the weights and the
counter, nothing of another row.  Then :data:`GROUPS` work-groups can each run the whole
loop for a block of the rows, with no synchronisation between them.

:func:`find` labels every value the loop computes: a *row dimension* ``d`` (element
``[.., b at d, ..]`` depends on row ``b`` of the split values only, and the dimension
is the batch's whole ``extent``), or *uniform* (it reads no split value: every work-group
computes all of it, alike).  The labels follow the data from seeds, the changed carried
values with one dimension of the extent, through rules that keep a row's index a row's
index (element-wise ops, broadcasts and reshapes that keep the dimension, transposes,
slices and dynamic slices taking the whole dimension, products and reductions that do
not contract it), until the carried values agree with the results the body gives them.
Nested loops are labelled alike (their condition uniform); a scatter splits along a
window dimension no index moves.  Anything else that reads a split value (a reduction
over the rows, a slice of some rows, a sort) leaves the loop to one work-group.  The
loop must also decide alike in every work-group: its condition is uniform.

Uniform values the loop carries or stores are then computed by every work-group into
memory of its own (:mod:`.device_loop` checks they fit local memory): a shared buffer
would let one work-group's next iteration overwrite what another still reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod

from frontend.ir.core import Block, Op, Value
from frontend.lower.core import loops, types
from frontend.lower.core.fused import ELEMENTWISE

GROUPS = 2
"""Work-groups a split loop runs on: the cores of the CPUs tlc is measured on.  The
lowering is device-independent (its result is cached across devices); on one core the
two work-groups run one after the other, at the cost of the uniform work done twice."""
MIN_ROWS = 4
"""The fewest rows a work-group takes (fewer: the uniform work and the weights read by
each work-group cost more than the rows save)."""

_KEEP_SHAPE = ELEMENTWISE | {"stablehlo.bitcast_convert"}


class _Mixed(Exception):
    """A value mixes rows (or labels disagree): the loop cannot be split."""


@dataclass(frozen=True)
class RowSplit:
    """The row dimension of each split value of a loop (the others are uniform), the
    rows' extent and the work-groups sharing them."""

    dims: Mapping[Value, int]
    extent: int
    groups: int = GROUPS

    @property
    def rows_per_group(self) -> int:
        """Rows each work-group runs."""
        return self.extent // self.groups

    def dim(self, v: Value) -> int | None:
        """The row dimension of ``v``, or None when it is uniform."""
        return self.dims.get(v)


def find(op: Op, in_place: Sequence[Op]) -> RowSplit | None:
    """The split of while ``op`` over :data:`GROUPS` work-groups, or None when its
    iterations mix rows, its condition depends on them, or no extent divides evenly.
    ``in_place``: the ``dynamic_update_slice`` ops that write their slice straight into
    a carried buffer (each must be split: a uniform one would be written by every
    work-group into the one buffer)."""
    body = op.regions[1].block
    changed = [i for i, (a, v) in enumerate(zip(body.args, body.ops[-1].operands,
                                                 strict=True)) if v is not a]
    extents = sorted({n for i in changed for n in types.shape(body.args[i])
                      if n % GROUPS == 0 and n // GROUPS >= MIN_ROWS}, reverse=True)
    for extent in extents:
        seeds = _seeds(body, extent)
        for chosen in (seeds, {i: d for i, d in seeds.items() if i in changed}):
            dims = _agreeing(op, extent, chosen)
            if dims is not None and _worthwhile(body, dims) \
                    and all(u.result in dims for u in in_place):
                return RowSplit(dims, extent)
    return None


def _seeds(body: Block, extent: int) -> dict[int, int]:
    """The carried values with one dimension of ``extent``: the rows of those the body
    changes, and of those it only reads (a scan's inputs: read split, each work-group
    computes only its rows from them; they stay uniform when that mixes rows, as a
    weight whose dimension happens to be the extent)."""
    return {i: at[0] for i, a in enumerate(body.args)
            if len(at := [d for d, n in enumerate(types.shape(a)) if n == extent]) == 1}


def _agreeing(op: Op, extent: int, seeds: dict[int, int]) -> dict[Value, int] | None:
    """The labels from ``seeds`` less those whose carried value the body sets to a
    uniform value (each work-group writes only its rows of a split carried value, so a
    result must be split exactly as its carried value is), or None."""
    body = op.regions[1].block
    while True:
        dims: dict[Value, int] = {}
        try:
            _settle(op, extent, dims, dict(seeds))
        except _Mixed:
            return None
        uniform = _disagreeing(body, dims)
        if not uniform:
            return dims
        if not all(i in seeds for i in uniform):
            return None
        seeds = {i: d for i, d in seeds.items() if i not in uniform}


def _settle(op: Op, extent: int, dims: dict[Value, int], carried: dict[int, int]) -> None:
    """Label the values of loop ``op`` into ``dims`` from the labels ``carried`` of its
    carried values, grown by those of the results its body gives them until they agree;
    its results labelled as its carried values.  Its condition must stay uniform (the
    work-groups would decide apart)."""
    cond, body = op.regions[0].block, op.regions[1].block
    for _ in range(len(body.args) + 1):
        for block in (cond, body):
            for i, a in enumerate(block.args):
                if i in carried:
                    dims[a] = carried[i]
            _block(block, extent, dims)
        if cond.ops[-1].operands[0] in dims:
            raise _Mixed
        grown = dict(carried)
        for i, v in enumerate(body.ops[-1].operands):
            d = dims.get(v)
            if d is not None and grown.setdefault(i, d) != d:
                raise _Mixed
        if grown == carried:
            for i, d in carried.items():
                dims[op.results[i]] = d
            return
        carried = grown
    raise _Mixed


def _disagreeing(body: Block, dims: Mapping[Value, int]) -> list[int]:
    """The carried values the body changes whose label is not that of their result."""
    return [i for i, (a, v) in enumerate(zip(body.args, body.ops[-1].operands, strict=True))
            if v is not a and dims.get(a) != dims.get(v)]


def _block(block: Block, extent: int, dims: dict[Value, int]) -> None:
    """Label the results of ``block``'s ops (its arguments labelled already)."""
    for o in block.ops[:-1]:
        if o.name == "stablehlo.while":
            _inner(o, extent, dims)
            continue
        split = [(v, dims[v]) for v in o.operands if v in dims]
        inner = _reads_inside(o, dims)
        if not split and not inner:
            continue  # uniform
        if inner:
            raise _Mixed  # a region reading split values: a sort, a reduction's body...
        d = _rule(o, split, extent)
        for r in o.results:
            dims[r] = d


def _inner(op: Op, extent: int, dims: dict[Value, int]) -> None:
    """Label a ``while`` nested in the loop: its carried values split as its operands
    are, and those with one dimension of the extent split too where that keeps rows
    apart (a uniform value the nested loop carries would be stored by every work-group
    in one buffer), then as its body's results are, until they agree; its condition
    uniform, and every changed carried value split exactly as the body's result."""
    body = op.regions[1].block
    given = {i: dims[v] for i, v in enumerate(op.operands) if v in dims}
    before = dict(dims)
    try:
        _inner_from(op, extent, dims, {**_seeds(body, extent), **given})
    except _Mixed:
        dims.clear()
        dims.update(before)
        _inner_from(op, extent, dims, given)


def _inner_from(op: Op, extent: int, dims: dict[Value, int], carried: dict[int, int]
                ) -> None:
    """:func:`_inner` from the labels ``carried`` of the nested loop's carried values."""
    _settle(op, extent, dims, carried)
    if _disagreeing(op.regions[1].block, dims):
        raise _Mixed


def _reads_inside(o: Op, dims: Mapping[Value, int]) -> bool:
    """Whether a region of ``o`` reads a split value defined outside it."""
    return any(v in dims for v in loops.captured(o))


def _rule(o: Op, split: list[tuple[Value, int]], extent: int) -> int:
    """The row dimension of ``o``'s results, given its split operands."""
    name, r = o.name, o.results[0]
    rshape = types.shape(r)
    if name in _KEEP_SHAPE:
        return _same(split, rshape)
    if name == "stablehlo.broadcast_in_dim":
        v, d = _one(split)
        e = o.ints_attr("broadcast_dimensions")[d]
        return _whole(rshape, e, extent)
    if name == "stablehlo.reshape":
        v, d = _one(split)
        shape = types.shape(v)
        for e, n in enumerate(rshape):
            if n == shape[d] and prod(rshape[:e]) == prod(shape[:d]):
                return _whole(rshape, e, extent)
        raise _Mixed
    if name == "stablehlo.transpose":
        v, d = _one(split)
        return _whole(rshape, o.ints_attr("permutation").index(d), extent)
    if name == "stablehlo.slice":
        v, d = _one(split)
        if o.ints_attr("start_indices")[d] != 0 or o.ints_attr("strides")[d] != 1:
            raise _Mixed
        return _whole(rshape, d, extent)
    if name == "stablehlo.dynamic_slice":
        v, d = _one(split)
        if v is not o.operands[0]:
            raise _Mixed  # a split start index
        return _whole(rshape, d, extent)  # the whole dimension: its start clamps to 0
    if name == "stablehlo.dynamic_update_slice":
        if any(v not in o.operands[:2] for v, _ in split):
            raise _Mixed
        d = _same(split, None)
        if types.shape(o.operands[1])[d] != extent:
            raise _Mixed
        return _whole(rshape, d, extent)
    if name == "stablehlo.concatenate":
        d = _same(split, None)
        if o.int_attr("dimension") == d:
            raise _Mixed
        return _whole(rshape, d, extent)
    if name == "stablehlo.dot_general":
        return _dot(o, split, extent)
    if name == "stablehlo.scatter":
        return _scatter(o, split, extent)
    if name == "stablehlo.reduce":
        n_in = len(o.results)
        if any(v not in o.operands[:n_in] for v, _ in split):
            raise _Mixed  # a split initial value
        d = _same(split, None)
        reduced = o.ints_attr("dimensions")
        if d in reduced:
            raise _Mixed
        return _whole(rshape, d - sum(1 for x in reduced if x < d), extent)
    raise _Mixed


def _one(split: list[tuple[Value, int]]) -> tuple[Value, int]:
    """The one split operand of an op that reads one."""
    if len(split) != 1:
        raise _Mixed
    return split[0]


def _same(split: list[tuple[Value, int]], shape: tuple[int, ...] | None) -> int:
    """The one row dimension of the split operands (of the result's ``shape`` when given:
    an element-wise op whose split operands are not scalars)."""
    ds = {d for _, d in split}
    if len(ds) != 1 or shape is not None and any(types.shape(v) != shape for v, _ in split):
        raise _Mixed
    return ds.pop()


def _whole(shape: tuple[int, ...], d: int, extent: int) -> int:
    """``d``, when dimension ``d`` of ``shape`` is all the rows."""
    if d >= len(shape) or shape[d] != extent:
        raise _Mixed
    return d


def _dot(o: Op, split: list[tuple[Value, int]], extent: int) -> int:
    """A product's row dimension: a free dimension of one side (the other uniform), or a
    batch dimension of both."""
    lhs, rhs = o.operands
    numbers = {name: o.struct_ints("dot_dimension_numbers", name) for name in (
        "lhs_batching_dimensions", "rhs_batching_dimensions",
        "lhs_contracting_dimensions", "rhs_contracting_dimensions")}
    lb, rb = numbers["lhs_batching_dimensions"], numbers["rhs_batching_dimensions"]
    lc, rc = numbers["lhs_contracting_dimensions"], numbers["rhs_contracting_dimensions"]
    lfree = [d for d in range(len(types.shape(lhs))) if d not in lb + lc]
    rfree = [d for d in range(len(types.shape(rhs))) if d not in rb + rc]
    labels = {id(v): d for v, d in split}
    dl, dr = labels.get(id(lhs)), labels.get(id(rhs))
    rshape = types.shape(o.result)
    if dl is not None and dr is not None:
        if dl in lb and dr in rb and lb.index(dl) == rb.index(dr):
            return _whole(rshape, lb.index(dl), extent)
        raise _Mixed
    if dl is not None and dl in lfree:
        return _whole(rshape, len(lb) + lfree.index(dl), extent)
    if dr is not None and dr in rfree:
        return _whole(rshape, len(lb) + len(lfree) + rfree.index(dr), extent)
    raise _Mixed


def scatter_update_dim(op: Op, d: int) -> int:
    """The dimension of scatter ``op``'s updates that writes dimension ``d`` of its
    result, a window dimension no index moves (:func:`_scatter`)."""
    window = op.struct_ints("scatter_dimension_numbers", "update_window_dims")
    return window[_window_dims(op).index(d)]


def _window_dims(op: Op) -> list[int]:
    """The result dimensions of scatter ``op`` that its update windows span, in order."""
    numbers = "scatter_dimension_numbers"
    skipped = set(op.struct_ints(numbers, "inserted_window_dims")) \
        | set(op.struct_ints(numbers, "input_batching_dims"))
    return [x for x in range(len(types.shape(op.results[0]))) if x not in skipped]


def _scatter(o: Op, split: list[tuple[Value, int]], extent: int) -> int:
    """A scatter's row dimension: a window dimension of its inputs (and updates) that no
    index moves (each update row then lands in the same row of the result)."""
    n = len(o.results)
    inputs, indices, updates = o.operands[:n], o.operands[n], o.operands[n + 1:]
    labels = {id(v): d for v, d in split}
    if id(indices) in labels:
        raise _Mixed
    in_dims = {labels[id(v)] for v in inputs if id(v) in labels}
    if len(in_dims) > 1:
        raise _Mixed
    if in_dims:
        d = in_dims.pop()
    else:
        window = o.struct_ints("scatter_dimension_numbers", "update_window_dims")
        u = _same([(v, e) for v, e in split if v in updates], None)
        if u not in window:
            raise _Mixed
        d = _window_dims(o)[window.index(u)]
    indexed = o.struct_ints("scatter_dimension_numbers", "scatter_dims_to_operand_dims")
    if d not in _window_dims(o) or d in indexed:
        raise _Mixed
    u = scatter_update_dim(o, d)
    if any(labels.get(id(v), u) != u or types.shape(v)[u] != extent for v in updates):
        raise _Mixed
    return _whole(types.shape(o.results[0]), d, extent)


def _worthwhile(body: Block, dims: Mapping[Value, int]) -> bool:
    """Whether the split work includes a product (nested loops' too): the loops worth
    two cores are those whose iterations multiply matrices per row (an RNN cell, an MLP
    vector field)."""
    return any(o.name == "stablehlo.dot_general" and o.result in dims
               or any(_worthwhile(r.block, dims) for r in o.regions) for o in body.ops)
