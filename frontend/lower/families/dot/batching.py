"""Batching the matrix products an unrolled recurrence repeats, before lowering.

A recurrent cell unrolled in Python (flax's ``nn.GRUCell`` in a ``for`` loop, haiku's
``static_unroll``, equinox's cells in a loop) computes at every time step ``t`` the
product of ``x[:, t]`` by each input weight and of ``h_t`` by each hidden weight: three
to eight small products a step, each a kernel launch (a 32-step GRU: 228 launches a
call, ~15 us of host time and ~15 us of PoCL's time each).  In a function body already
inlined, :func:`batch_dots` rewrites

* products of time steps of one value by one weight -- ``reshape(slice(X, t))`` by ``W``,
  the slice one element long in one dimension of ``X`` and whole in the others -- into
  one product of ``X`` by ``W`` before the first of them, each step's product a slice of
  it (one large ``gemm`` over every step instead of a small one per step: what
  :mod:`frontend.lower.families.control.loop_projection` does for a scan's input projection);
* products of one left operand by several right operands of one shape (a cell's gates)
  into one product by their concatenation, sliced apart, when the same right operands
  are multiplied so at least twice (every step of the recurrence): the concatenation is
  then made once for all of them, where for one group it would cost a kernel of its own
  and the products' fused epilogues.

Slices and reshapes are index maps that fuse into their consumers.  Each rewrite is an
identity of StableHLO (the sums are the same products, in the order the ``gemm`` adds
them).  Only products without batch dimensions and with one contracting dimension are
rewritten, and only groups of at least two.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from frontend.ir.attrs import DenseArrayAttr, IntAttr, ListAttr, StructAttr
from frontend.ir.core import Block, Op, Region, Value
from frontend.ir.types import TensorType
from frontend.lower.core import types
from frontend.lower.core.registry import rewrite

DOT = "stablehlo.dot_general"


@dataclass(frozen=True)
class _Slice:
    """``slice`` of one dimension, ``lo:hi``."""

    dim: int
    lo: int
    hi: int

    def make(self, x: Value, like: Value) -> Op:
        return _slice(x, self.dim, self.lo, self.hi)


@dataclass(frozen=True)
class _Reshape:
    """``reshape`` to ``shape``."""

    shape: tuple[int, ...]

    def make(self, x: Value, like: Value) -> Op:
        return _reshape(x, self.shape, like)


Subst = dict[Value, tuple[Value, tuple["_Slice | _Reshape", ...]]]
"""A replaced product: the value it is an index map of, and the maps (each use gets ops
of its own, so every one fuses into its consumer instead of being computed once into a
buffer: the lowering materializes a value several ops read)."""


@rewrite(order=3)  # after channels_last and swap_transposed_products
def batch_dots(region: Region) -> Region:
    """Rewrite the products of every block of ``region`` (changed in place) as the module
    docstring says; return it."""
    subst: Subst = {}
    for block in _blocks(region):
        _stack_time_steps(block, subst)
        _merge_shared_lhs(block, subst)
    if subst:
        _substitute(region, subst)
    return region


# -- products of time steps -----------------------------------------------------------------

@dataclass(frozen=True)
class _Step:
    """A product's left operand as time step ``t`` of ``whole`` along ``dim``; ``contract``
    is the dimension of ``whole`` the product contracts."""

    whole: Value
    dim: int
    t: int
    contract: int


def _stack_time_steps(block: Block, subst: Subst) -> None:
    """One product of each ``X`` by ``W`` that several time-step products share (the time
    step either operand: ``vmap`` of a per-sample cell writes ``W @ x_t``)."""
    groups: dict[tuple[object, ...], tuple[int, list[tuple[_Step, Op]]]] = {}
    for op in block.ops:
        contraction = _contraction(op)
        if contraction is None:
            continue
        for side in (0, 1):
            step = _time_step(op.operands[side], contraction[side])
            if step is not None:
                key = (side, step.whole, step.dim, step.contract, op.operands[1 - side],
                       contraction[1 - side], str(op.result.type))
                groups.setdefault(key, (side, []))[1].append((step, op))
                break
    edit = _Edit()
    for side, members in groups.values():
        if len(members) >= 2:
            _stack(edit, side, members, subst)
    edit.apply(block)


def _stack(edit: _Edit, side: int, members: list[tuple[_Step, Op]], subst: Subst) -> None:
    """The product of the whole by the shared operand before the first member; each
    member a slice of it (``side``: which operand the time step is)."""
    first = members[0][1]
    whole, dim, contract = members[0][0].whole, members[0][0].dim, members[0][0].contract
    other = first.operands[1 - side]
    oc = _must_contract(first)[1 - side]
    free = [d for d in range(len(types.shape(whole))) if d != contract]
    at = free.index(dim)
    if side == 0:
        big = _dot(first, whole, other, contract, oc)
    else:
        big = _dot(first, other, whole, oc, contract)
        at += len(types.shape(other)) - 1
    edit.insert(first, big)
    for step, op in members:
        subst[op.result] = (big.result, (_Slice(at, step.t, step.t + 1),
                                         _Reshape(tuple(types.shape(op.result)))))
        edit.remove(op)


def _time_step(lhs: Value, contract: int) -> _Step | None:
    """``lhs`` as ``reshape(slice(X))`` taking one element along one dimension of ``X``
    (longer than one) and all of the others, the reshape dropping that dimension."""
    reshape = lhs.owner
    if not isinstance(reshape, Op) or reshape.name != "stablehlo.reshape":
        return None
    piece = reshape.operands[0].owner
    if not isinstance(piece, Op) or piece.name != "stablehlo.slice":
        return None
    whole = piece.operands[0]
    shape = types.shape(whole)
    starts, limits, strides = (piece.ints_attr(a)
                               for a in ("start_indices", "limit_indices", "strides"))
    cut = [d for d in range(len(shape)) if (starts[d], limits[d]) != (0, shape[d])]
    if len(cut) != 1 or any(s != 1 for s in strides) or limits[cut[0]] - starts[cut[0]] != 1:
        return None
    dim = cut[0]
    kept = [n for d, n in enumerate(shape) if d != dim]
    if list(types.shape(lhs)) != kept:
        return None
    return _Step(whole, dim, starts[dim], contract if contract < dim else contract + 1)


# -- products sharing their left operand ----------------------------------------------------

def _merge_shared_lhs(block: Block, subst: Subst) -> None:
    """One product of each left operand by the concatenation of its right operands."""
    groups: dict[tuple[object, ...], list[Op]] = {}
    for op in block.ops:
        contraction = _contraction(op)
        rhs = op.operands[1] if contraction else None
        if contraction and rhs is not None and len(types.shape(rhs)) == 2:
            key = (op.operands[0], contraction, tuple(types.shape(rhs)), str(op.result.type))
            groups.setdefault(key, []).append(op)
    weights = [tuple(m.operands[1] for m in members) for members in groups.values()]
    repeats = Counter(weights)
    position = {op: i for i, op in enumerate(block.ops)}
    made: dict[tuple[Value, ...], Value] = {}
    edit = _Edit()
    for members, joined in zip(groups.values(), weights, strict=True):
        if len(members) >= 2 and repeats[joined] >= 2 \
                and _available(position, joined, members[0]):
            _merge(edit, members, made, subst)
    edit.apply(block)


def _merge(edit: _Edit, members: list[Op], made: dict[tuple[Value, ...], Value],
           subst: Subst) -> None:
    first = members[0]
    lc, rc = _must_contract(first)
    weights = tuple(m.operands[1] for m in members)
    free = 1 - rc  # the right operand's other dimension
    joined = made.get(weights)
    if joined is None:
        concat = _concatenate(list(weights), free)
        edit.insert(first, concat)
        joined = made[weights] = concat.result
    big = _dot(first, first.operands[0], joined, lc, rc)
    edit.insert(first, big)
    last = len(types.shape(big.result)) - 1
    n = types.shape(first.result)[-1]
    for i, op in enumerate(members):
        subst[op.result] = (big.result, (_Slice(last, i * n, (i + 1) * n),))
        edit.remove(op)


def _available(position: dict[Op, int], values: Iterable[Value], at: Op) -> bool:
    """Whether every value is defined before ``at`` (``position``: the ops of its block
    in order; a value of no op there is defined outside the block)."""
    here = position[at]
    return all(not isinstance(v.owner, Op) or position.get(v.owner, -1) < here
               for v in values)


class _Edit:
    """Insertions and removals in one block, applied in one pass (:meth:`apply`)."""

    def __init__(self) -> None:
        self.before: dict[Op, list[Op]] = {}
        self.removed: set[Op] = set()

    def insert(self, at: Op, op: Op) -> None:
        """Put ``op`` before ``at`` (after the ops inserted there before)."""
        self.before.setdefault(at, []).append(op)

    def remove(self, op: Op) -> None:
        """Take ``op`` out."""
        self.removed.add(op)

    def apply(self, block: Block) -> None:
        """``block``'s ops with the insertions and removals made."""
        if self.before or self.removed:
            block.ops[:] = [new for op in block.ops
                            for new in (*self.before.get(op, ()), op)
                            if new not in self.removed]


# -- the ops made -------------------------------------------------------------------------

def _contraction(op: Op) -> tuple[int, int] | None:
    """(lhs, rhs) contracting dimension of a product with one and no batch dimensions."""
    if op.name != DOT or len(op.operands) != 2:
        return None
    if not isinstance(op.attrs.get("dot_dimension_numbers"), StructAttr):
        return None
    a = "dot_dimension_numbers"
    if op.struct_ints(a, "lhs_batching_dimensions") or op.struct_ints(a, "rhs_batching_dimensions"):
        return None
    lc, rc = op.struct_ints(a, "lhs_contracting_dimensions"), \
        op.struct_ints(a, "rhs_contracting_dimensions")
    if len(lc) != 1 or len(rc) != 1 or types.elem(op.result) in ("i1", "c64", "c128"):
        return None
    return lc[0], rc[0]


def _must_contract(op: Op) -> tuple[int, int]:
    """:func:`_contraction` of a product known to have one."""
    contraction = _contraction(op)
    assert contraction is not None
    return contraction


def _dot(like: Op, lhs: Value, rhs: Value, lc: int, rc: int) -> Op:
    """``dot_general(lhs, rhs)`` contracting ``lc`` with ``rc``, with ``like``'s other
    attributes (precision) and element type."""
    ls, rs = types.shape(lhs), types.shape(rhs)
    shape = tuple([n for d, n in enumerate(ls) if d != lc] + [n for d, n in enumerate(rs)
                                                               if d != rc])
    dims = StructAttr("stablehlo.dot", (
        ("lhs_contracting_dimensions", ListAttr((IntAttr(lc),))),
        ("rhs_contracting_dimensions", ListAttr((IntAttr(rc),)))))
    return _new(DOT, [lhs, rhs], shape, like.result, {**like.attrs,
                                                      "dot_dimension_numbers": dims})


def _slice(x: Value, dim: int, lo: int, hi: int) -> Op:
    shape = list(types.shape(x))
    starts, limits = [0] * len(shape), list(shape)
    starts[dim], limits[dim] = lo, hi
    out = list(shape)
    out[dim] = hi - lo
    return _new("stablehlo.slice", [x], tuple(out), x, {
        "start_indices": DenseArrayAttr("i64", tuple(starts)),
        "limit_indices": DenseArrayAttr("i64", tuple(limits)),
        "strides": DenseArrayAttr("i64", (1,) * len(shape))})


def _reshape(x: Value, shape: tuple[int, ...] | list[int], like: Value) -> Op:
    return _new("stablehlo.reshape", [x], tuple(shape), like, {})


def _concatenate(values: list[Value], dim: int) -> Op:
    shape = list(types.shape(values[0]))
    shape[dim] = sum(types.shape(v)[dim] for v in values)
    return _new("stablehlo.concatenate", values, tuple(shape), values[0],
                {"dimension": IntAttr(dim)})


def _new(name: str, operands: list[Value], shape: tuple[int, ...], like: Value,
         attrs: dict) -> Op:
    """A detached op with one result of ``like``'s element type and ``shape``."""
    assert isinstance(like.type, TensorType)
    t = like.type.with_shape(shape)
    op = Op(name, operands, [t], attrs, [], like.loc)
    op.results = [Value(t, op, 0, f"{like.name}_b", like.loc)]
    return op


# -- walking --------------------------------------------------------------------------------

def _blocks(region: Region) -> list[Block]:
    """The blocks of ``region`` and of every region nested in it."""
    out = []
    for block in region.blocks:
        out.append(block)
        for op in block.ops:
            for inner in op.regions:
                out.extend(_blocks(inner))
    return out


def _substitute(region: Region, subst: Subst) -> None:
    """Replace the operands ``subst`` maps, in every op of ``region``, each use by index
    maps of its own inserted just before its user."""
    for block in _blocks(region):
        ops: list[Op] = []
        for op in block.ops:
            if any(v in subst for v in op.operands):
                operands = []
                for v in op.operands:
                    if v in subst:
                        v = _rebuild(v, subst, ops)
                    operands.append(v)
                op.operands = operands
            ops.append(op)
        block.ops[:] = ops


def _rebuild(v: Value, subst: Subst, into: list[Op]) -> Value:
    """Fresh ops computing replaced value ``v`` (appended to ``into``); its value."""
    base, maps = subst[v]
    if base in subst:  # a product merged in turn
        base = _rebuild(base, subst, into)
    for m in maps:
        op = m.make(base, v)
        into.append(op)
        base = op.result
    return base
