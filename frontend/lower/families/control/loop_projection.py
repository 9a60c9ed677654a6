"""Hoisting a scan's input projection out of a device loop.

An RNN step ``h = tanh(x[t] @ W + h @ U)`` multiplies the time step's slice of a
loop-invariant input by a loop-invariant matrix: that product does not depend on the
carried state, so all of them are one GEMM over every time step, computed before the loop
by the ordinary dot lowering (all cores, register-blocked), where the loop kernel runs on
one core.  :func:`find` recognises, in the body of a ``while``, a ``dot_general`` one
operand of which is ``dynamic_slice(xs, ..., t, ...)`` (size 1 along one dimension of
``xs``, full along the others; optionally reshaped to drop that unit dimension) and the
other loop-invariant; :func:`compute` lowers ``dot_general(xs, W)`` (the sliced dimension
a free one of the product) before the loop, and :func:`load` gives the element of the
body's product: the hoisted one at the same clamped start index ``t``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from frontend.ir.attrs import IntAttr, ListAttr, StructAttr
from frontend.ir.core import Op, Value
from frontend.ir.types import TensorType
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.loop_invariants import defined_in, value_outside
from frontend.lower.core.registry import KERNEL

_SIDES = ("lhs", "rhs")
MIN_WORK = 1 << 23
"""Hoist a product only when it is at least this many multiply-adds over all time steps:
the hoisted product is one launch more (~25 us of latency on PoCL), and the loop kernel's
``gemm`` runs ~100 multiply-adds per ns on one core (Zen 5, f32), so the second core
pays for that launch from ~5M multiply-adds on."""


@dataclass(frozen=True)
class Hoisted:
    """A body ``dot_general`` computed for every time step before the loop."""

    dot: Op
    """The body's product (its result is read from :attr:`op`'s at the time step)."""
    op: Op
    """The product over every time step (not in any block)."""
    at: int
    """The time dimension's position in :attr:`op`'s result."""
    dropped: bool
    """True when the body's product lacks that dimension (the slice was reshaped)."""
    start: Value
    """The body's start index along the time dimension."""


def find(loop: Op, count: int | None) -> list[Hoisted]:
    """The products of ``loop``'s body that can be hoisted (see the module docstring), when
    its trip count ``count`` is known and covers at least half of the time steps, and
    the products over all of them are at least :data:`MIN_WORK` multiply-adds."""
    if count is None:
        return []
    body = loop.regions[1].block
    inside = defined_in(body)
    found = []
    for o in body.ops[:-1]:
        if o.name != "stablehlo.dot_general" or len(o.results) != 1 \
                or not isinstance(o.result.type, TensorType):
            continue
        for side in range(2):
            h = _hoistable(loop, o, side, inside, count)
            if h is not None:
                found.append(h)
                break
    return found


def _hoistable(loop: Op, dot: Op, side: int, inside: set[Value],
               count: int) -> Hoisted | None:
    """The hoisted form of ``dot`` when operand ``side`` is a time step's slice of an
    invariant input and the other operand is invariant, else None."""
    sliced = _slice_of(dot.operands[side])
    other = value_outside(loop, dot.operands[1 - side], inside)
    if sliced is None or other is None:
        return None
    s, dropped = sliced
    xs = value_outside(loop, s.operand("operand"), inside)
    if xs is None:
        return None
    xshape = types.shape(xs)
    sizes = s.ints_attr("slice_sizes")
    short = [d for d, (n, m) in enumerate(zip(sizes, xshape, strict=True)) if n != m]
    if len(short) != 1 or sizes[short[0]] != 1 or 2 * count < xshape[short[0]] \
            or _macs(dot) * count < MIN_WORK:
        return None
    d = short[0]
    vshape = list(types.shape(dot.operands[side]))
    if dropped and list(types.shape(s.result))[:d] + list(types.shape(s.result))[d + 1:] \
            != vshape:
        return None
    # the slice's dimension e (of the product's operand) is xs's dimension to_xs[e]
    rank = len(xshape) - 1 if dropped else len(xshape)
    to_xs = [e + 1 if dropped and e >= d else e for e in range(rank)]
    numbers = {k: _dims(dot, k) for k in _fields(dot)}
    mine = _SIDES[side]
    for kind in ("batching", "contracting"):
        key = f"{mine}_{kind}_dimensions"
        if not dropped and d in numbers.get(key, []):
            return None
        numbers[key] = [to_xs[e] for e in numbers.get(key, [])]
    operands = [xs, other] if side == 0 else [other, xs]
    at = _time_position(numbers, [types.shape(v) for v in operands], side, d)
    shape = _result_shape(numbers, [types.shape(v) for v in operands])
    op = _dot_op(dot, operands, numbers, shape)
    start = s.operand_group("start_indices")[d]
    return Hoisted(dot, op, at, dropped, start)


def _macs(dot: Op) -> int:
    """Multiply-adds of one run of ``dot``."""
    lhs = types.shape(dot.operands[0])
    return types.size(dot.result) * prod(lhs[d] for d in _dims(dot, "lhs_contracting_dimensions"))


def _slice_of(v: Value) -> tuple[Op, bool] | None:
    """``(dynamic_slice, reshaped)`` when ``v`` is a dynamic slice or a reshape of one
    (whether it drops the sliced dimension is checked by the caller)."""
    o = v.owner
    if not isinstance(o, Op):
        return None
    if o.name == "stablehlo.dynamic_slice":
        return o, False
    if o.name != "stablehlo.reshape":
        return None
    s = o.operands[0].owner
    if not isinstance(s, Op) or s.name != "stablehlo.dynamic_slice":
        return None
    return s, True


def _fields(dot: Op) -> list[str]:
    numbers = dot.attrs["dot_dimension_numbers"]
    assert isinstance(numbers, StructAttr)
    return [k for k, _ in numbers.fields]


def _dims(dot: Op, name: str) -> list[int]:
    return dot.struct_ints("dot_dimension_numbers", name)


def _free(numbers: dict[str, list[int]], side: str, rank: int) -> list[int]:
    used = numbers.get(f"{side}_batching_dimensions", []) + \
        numbers.get(f"{side}_contracting_dimensions", [])
    return [d for d in range(rank) if d not in used]


def _result_shape(numbers: dict[str, list[int]], shapes: list[tuple[int, ...]]
                  ) -> list[int]:
    """dot_general's result shape: batch, lhs free, rhs free dimensions."""
    ls, rs = shapes
    out = [ls[d] for d in numbers.get("lhs_batching_dimensions", [])]
    out += [ls[d] for d in _free(numbers, "lhs", len(ls))]
    return out + [rs[d] for d in _free(numbers, "rhs", len(rs))]


def _time_position(numbers: dict[str, list[int]], shapes: list[tuple[int, ...]],
                   side: int, d: int) -> int:
    """Where xs's dimension ``d`` (a free one of operand ``side``) is in the result."""
    at = len(numbers.get("lhs_batching_dimensions", []))
    if side == 1:
        at += len(_free(numbers, "lhs", len(shapes[0])))
    return at + _free(numbers, _SIDES[side], len(shapes[side])).index(d)


def _dot_op(dot: Op, operands: list[Value], numbers: dict[str, list[int]],
            shape: list[int]) -> Op:
    """A detached ``dot_general`` like ``dot`` on ``operands`` (dimension ``numbers``)."""
    old = dot.attrs["dot_dimension_numbers"]
    assert isinstance(old, StructAttr) and isinstance(dot.result.type, TensorType)
    fields = tuple((k, ListAttr(tuple(IntAttr(d) for d in numbers[k]))) for k, _ in old.fields)
    attrs = dict(dot.attrs)
    attrs["dot_dimension_numbers"] = StructAttr(old.name, fields)
    t = dot.result.type.with_shape(tuple(shape))
    op = Op(dot.name, list(operands), [t], attrs, [], dot.loc)
    op.results = [Value(t, op, 0, f"{dot.result.name}_hoisted", dot.loc)]
    return op


def compute(lw: FuncLowering, h: Hoisted) -> int:
    """Lower the product over every time step (before the loop); its buffer."""
    KERNEL[h.op.name](lw, h.op)
    return lw.materialize(h.op.result)


def load(f: Fused, h: Hoisted, buffer: int, idx: list[IndexExpr]) -> str:
    """Element ``idx`` of the body's product: the hoisted one at the clamped time step."""
    k = f.k
    shape = types.shape(h.op.result)
    t = k.iclamp(k.to_index(f.value(h.start, []), types.elem(h.start)), 0, shape[h.at] - 1)
    full = list(idx)
    if h.dropped:
        full.insert(h.at, t)
    else:
        full[h.at] = t
    return k.load(buffer, types.elem(h.op.result), prod(shape), k.linear(full, shape))
