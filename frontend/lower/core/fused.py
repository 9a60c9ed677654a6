"""Fused elemental code generation: a value's element as scalar code in one kernel.

``Fused.value(v, idx)`` returns the SSA name of element ``idx`` of StableHLO value ``v``:
a load when ``v`` lives in a buffer, a bound scalar inside a region body, otherwise the
elemental lowering of ``v``'s defining op, applied recursively (so chains of elementwise
ops, broadcasts, reshapes, transposes and slices fuse into the consumer's kernel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from frontend.ir.core import Block, Op, Value
from frontend.ir.quant import is_quantized
from frontend.ir.types import TensorType
from frontend.lower.core import quant, types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, groups_nd
from frontend.lower.core.registry import ELEMENTAL
from tensorlang.diagnostics import CompileError

if TYPE_CHECKING:
    from frontend.lower.core.driver import FuncLowering, Readers

ELEMENTWISE = frozenset(f"stablehlo.{name}" for name in (
    "abs add and atan2 cbrt ceil clamp compare complex convert cosine count_leading_zeros "
    "divide exponential exponential_minus_one floor imag is_finite log log_plus_one logistic "
    "maximum minimum multiply negate not or popcnt power real reduce_precision remainder "
    "round_nearest_afz round_nearest_even rsqrt select shift_left shift_right_arithmetic "
    "shift_right_logical sign sine sqrt subtract tan tanh xor").split()) | frozenset(
    f"chlo.{name}" for name in (
        "acos acosh asin asinh atan atanh bessel_i1e conj cosh digamma erf erf_inv erfc "
        "is_inf is_neg_inf is_pos_inf lgamma next_after sinh square tan").split())
"""Ops whose elemental lowering reads every operand of the result's shape at the result
element's own index (epilogue fusion relies on it: ``FuncLowering.defer_to_epilogue``)."""


DEEP = 64
"""Nested elemental lowerings past which :meth:`Fused.value` computes a chain's operands
before the op that reads them (about 5 Python frames each: the recursion limit is 1000)."""


class Fused:
    """Elemental code generation into one kernel."""

    def __init__(self, lw: FuncLowering, k: KernelBuilder) -> None:
        self.lw = lw
        self.k = k
        self.bound: dict[Value, str] = {}
        self.redirect: dict[Value, Callable[[Sequence[IndexExpr]], str]] = {}
        """Values whose elements are read elsewhere than from their buffer or their op: the
        function gives the element's SSA name (row fusion's stash: ``reduce_rows``)."""
        self._depth = 0  # elemental lowerings under way, nested

    def value(self, v: Value, idx: Sequence[IndexExpr]) -> str:
        """Element ``idx`` (row-major) of ``v``."""
        if v in self.bound:
            return self.bound[v]
        key = ("value", id(v), tuple(idx))
        found = self.k.lookup(key)
        if found is not None:
            return found
        buf = self.lw.buffer_of(v)
        if v in self.redirect:
            result = self.redirect[v](idx)
        elif buf is not None:
            n = types.size(v)
            result = self.k.load(buf, types.elem(v), n, self.k.linear(idx, types.shape(v)))
        else:
            if self._depth >= DEEP:
                self._operands_first(v, idx)
            self._depth += 1
            try:
                result = self._wrap(v, self._elemental(v, list(idx)))
            finally:
                self._depth -= 1
        return self.k.remember(key, result)

    def _operands_first(self, v: Value, idx: Sequence[IndexExpr]) -> None:
        """Compute the operands of ``v``'s element-wise chain (:meth:`_chain_operands`)
        deepest first, in the order the recursion of :meth:`value` reaches them: then
        each is memoized when its consumer asks, so the recursion stays shallow however
        long the chain (``c = c * c`` a thousand times).  The code is the same but for
        the order of ops whose lowering reads an operand after emitting some."""
        order: list[Value] = []
        seen = {v}
        stack = [(o, False) for o in reversed(self._chain_operands(v, idx))]
        while stack:
            w, done = stack.pop()
            if done:
                order.append(w)
            elif w not in seen:
                seen.add(w)
                stack.append((w, True))
                stack.extend((o, False) for o in reversed(self._chain_operands(w, idx)))
        for w in order:
            self.value(w, idx)

    def _chain_operands(self, v: Value, idx: Sequence[IndexExpr]) -> list[Value]:
        """The operands of ``v`` when its element ``idx`` is still to be computed by an
        element-wise op reading each of them, in order, at ``idx``; else none."""
        if v in self.bound or v in self.redirect or self.lw.buffer_of(v) is not None \
                or self.k.lookup(("value", id(v), tuple(idx))) is not None:
            return []
        operands = same_index_operands(v)
        op = v.owner
        if not isinstance(op, Op) or len(operands) != len(op.operands) or not _plain(op):
            return []
        return operands

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
        if quant.requantizes(op):  # quantized tensors: dequantize, op in float, quantize
            return quant.lower_elemental(self, op, idx)
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


@dataclass(frozen=True)
class Epilogue:
    """Elementwise consumers of a kernel op's result ``source``, computed in the kernel
    that produces ``source``: every element of ``root`` from ``source``'s element at the
    same index.  ``values`` are the values in between (used only inside the chain)."""

    source: Value
    root: Value
    values: frozenset[Value]


def plan_epilogue(source: Value, readers: Callable[[Value], Readers], uses: dict[Value, int],
                  claimed: set[Value]) -> Epilogue | None:
    """The longest legal epilogue of ``source`` among the ops after it in its block (those
    reading its chain: ``readers``).

    Ops join while they are elementwise (:data:`ELEMENTWISE`, one result) and read chain
    values of their own shape, so every chain value is read at the element being
    computed.  A prefix of the joined ops is an epilogue when all its values but its last
    are used only by the prefix (that last one, the root, becomes the kernel's output).
    The scan stops at the first other consumer of a chain value; uses inside regions
    never join, so they keep the chain value alive and no later prefix qualifies.
    """
    if is_quantized(source.type):
        return None
    outstanding = {source: uses.get(source, 0)}
    live = 1 if outstanding[source] else 0  # chain values with uses outside the chain
    chain: list[Value] = []
    best = 0
    later = readers(source)
    for op in later:
        mine = [v for v in op.operands if v in outstanding]
        if not _joins(op, mine, claimed):
            break
        for v in mine:
            outstanding[v] -= 1
            if outstanding[v] == 0:
                live -= 1
        result = op.results[0]
        later.watch(result)
        outstanding[result] = uses.get(result, 0)
        live += outstanding[result] > 0
        chain.append(result)
        if live == 1 and outstanding[result] > 0:
            best = len(chain)
    if best == 0:
        return None
    return Epilogue(source, chain[best - 1], frozenset(chain[:best - 1]))


def _joins(op: Op, chain_operands: list[Value], claimed: set[Value]) -> bool:
    if op.name not in ELEMENTWISE or len(op.results) != 1 or op.results[0] in claimed:
        return False
    shape = types.shape(op.results[0])
    return all(types.shape(v) == shape for v in chain_operands) and _plain(op)


def _plain(op: Op) -> bool:
    """True when no operand or result of ``op`` is quantized."""
    return not any(is_quantized(v.type) for v in (*op.operands, *op.results))


def same_index_operands(v: Value) -> list[Value]:
    """The operands that the element-wise op (:data:`ELEMENTWISE`) defining ``v`` reads at
    ``v``'s own index, those of ``v``'s shape, in order; none for other ops."""
    op = v.owner
    if not isinstance(op, Op) or op.name not in ELEMENTWISE or len(op.results) != 1:
        return []
    shape = types.shape(v)
    return [o for o in op.operands if types.shape(o) == shape]


def materialize_results(lw: FuncLowering, values: Sequence[Value]) -> list[int]:
    """The buffers of a function's results.  Lazy results of one shape are computed by one
    kernel, a loop over the work-group's block per result (one launch replaces several;
    the inputs are re-read from cache; one loop computing every result measured no
    faster on PoCL and its vectoriser gives up on long bodies); the rest are
    materialized one by one."""
    groups: dict[tuple[int, ...], list[Value]] = {}
    for v in dict.fromkeys(values):
        if lw.buffer_of(v) is None and isinstance(v.owner, Op) \
                and isinstance(v.type, TensorType) and types.size(v) > 0:
            groups.setdefault(types.shape(v), []).append(v)
    for group in groups.values():
        if len(group) > 1:
            _compute_together(lw, group)
    return [lw.materialize(v) for v in values]


def _compute_together(lw: FuncLowering, group: list[Value]) -> None:
    shape = types.shape(group[0])
    n = types.size(group[0])
    outs = [lw.buffer_for(v) for v in group]
    with lw.kernel(f"{len(group)}_results") as (k, f):
        for v, out in zip(group, outs, strict=True):
            with k.elements_nd(shape) as idx:  # a loop per result: each stays vectorisable
                k.store(f.value(v, idx), out, types.elem(v), n, k.linear(idx, shape))
    lw.launch_last(groups_nd(shape))
    for v, out in zip(group, outs, strict=True):
        lw.bind(v, out)


_SPLAT_KEEPING = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.reshape"})


_LIGHT = frozenset(f"stablehlo.{name}" for name in (
    "abs add and compare convert divide maximum minimum multiply negate not or remainder "
    "select shift_left shift_right_arithmetic shift_right_logical sign subtract xor").split())
"""Element-wise ops costing a few instructions per element."""
_RETURNS = frozenset({"func.return", "stablehlo.return"})


def recompute_instead(lw: FuncLowering, v: Value) -> bool:
    """True when a lazy value used several times is better recomputed by each consumer
    than written to a buffer: a splat constant (:func:`splat_constant`), or one light op
    (:data:`_LIGHT`) over buffers and splat constants whose users are all element-wise
    ops or returns (one op per use, never a chain: ``x // 7`` read by both fixes of
    ``jnp.floor_divide``).  A kernel op as a user would need a buffer anyway (a dot
    makes its own layout copy of a shared ReLU: one kernel more, not less)."""
    op = v.owner
    if splat_constant(lw, v) or small_view(lw, v):
        return True
    if not isinstance(op, Op) or op.name not in _LIGHT or lw.buffer_of(v) is not None:
        return False
    if not (all(lw.buffer_of(o) is not None or splat_constant(lw, o) for o in op.operands)
            or index_arithmetic(lw, v)):
        return False
    return all(u.name in ELEMENTWISE or u.name in _RETURNS for u in lw.users(v))


VIEW_ELEMENTS = 64
"""The largest view of a buffer recomputed by each consumer (:func:`small_view`)."""
_VIEWS = frozenset({"stablehlo.slice", "stablehlo.reshape"})


def small_view(lw: FuncLowering, v: Value) -> bool:
    """True for a lazy value of at most :data:`VIEW_ELEMENTS` elements that slices and
    reshapes take from a buffer: each consumer reads it with a load (a PRNG key's words,
    ``key[0]``, read by several ops and loops, were a launch of their own each, ~15 us
    of host time for one element)."""
    if types.size(v) > VIEW_ELEMENTS:
        return False
    while lw.buffer_of(v) is None:
        op = v.owner
        if not isinstance(op, Op) or op.name not in _VIEWS:
            return False
        v = op.operands[0]
    return True


INDEX_OPS = 8
"""The most ops an index computation recomputed by each consumer may take
(:func:`index_arithmetic`)."""


def index_arithmetic(lw: FuncLowering, v: Value) -> bool:
    """True for a lazy value computed from iotas and splat constants alone by at most
    :data:`INDEX_OPS` light ops, broadcasts and reshapes (counted once per use, so the
    work to recompute it is bounded): jax.random's counters, ``iota * n + iota`` in u64,
    cost a few integer ops per element where a buffer costs a store and a load of each."""
    ops = 0
    stack = [v]
    while stack:
        w = stack.pop()
        op = w.owner
        if not isinstance(op, Op) or lw.buffer_of(w) is not None or op.regions:
            return False
        if op.name == "stablehlo.iota" or splat_constant(lw, w):
            continue
        ops += 1
        if ops > INDEX_OPS or op.name not in _LIGHT and op.name not in _SPLAT_KEEPING:
            return False
        stack.extend(op.operands)
    return True


def splat_constant(lw: FuncLowering, v: Value) -> bool:
    """True for a lazy value whose elements are all one compile-time constant: a splat
    constant, or element-wise ops, broadcasts and reshapes of such values.  It is never
    worth a buffer: recomputed in each consumer, the OpenCL compiler folds it (an integer
    divisor becomes a multiplication by its reciprocal instead of a loaded ``idiv``).

    Each value is decided once (``lw.splats``), after its operands and without recursion,
    so a long chain or a DAG sharing its values costs time linear in its size."""
    memo = lw.splats
    stack = [v]
    while stack:
        w = stack[-1]
        if w not in memo:
            operands = _splat_through(lw, w)
            if operands is None or any(memo.get(o) is False for o in operands):
                memo[w] = False
            elif todo := [o for o in operands if o not in memo]:
                stack.extend(todo)
                continue
            else:
                memo[w] = True
        stack.pop()
    return memo[v]


def _splat_through(lw: FuncLowering, v: Value) -> Sequence[Value] | None:
    """The operands ``v`` is a splat constant through when they all are; None when it
    cannot be one."""
    op = v.owner
    if not isinstance(op, Op) or lw.buffer_of(v) is not None or op.regions:
        return None
    if op.name == "stablehlo.constant":
        return ()
    if op.name not in ELEMENTWISE and op.name not in _SPLAT_KEEPING:
        return None
    return op.operands
