"""A counted loop whose body is element-wise, as one element-wise kernel.

jax's ``threefry2x32`` (every ``jax.random`` sampler) is a ``fori_loop`` of 5 rounds whose
body adds, rotates and xors two arrays of the sample's shape, with a few scalars and two
4-element rotation tables carried beside them.  Each element of the arrays depends only
on the same element of the arrays at the previous iteration, so the loop runs as one
multi-work-group kernel over the arrays' shape: each work-item computes the initial
values of its own elements, runs every iteration on them in registers, and stores the
final values once (instead of a host loop of element-wise kernels per iteration, or a
device loop on one work-item, :mod:`frontend.lower.families.control.device_loop`).

A ``while`` qualifies (:func:`analyse`) when its trip count is a compile-time constant
(:func:`frontend.lower.core.loops.constant_count`), and, with ``S`` the shape of the largest
value the body changes:

* the *element* carries are the changed carried values of shape ``S``; every body value
  computed from them (transitively) is of shape ``S`` and made by an element-wise op
  (:data:`frontend.lower.core.fused.ELEMENTWISE`, or a same-width ``bitcast_convert``) that
  reads them at the element's own index;
* the other changed carries, the *uniform* ones (the counter, the rotation tables), total
  at most :data:`MAX_UNIFORM` elements: every work-item computes them alike, as scalars;
* every other body op is elemental (no ``reduce``, ``dot_general``, inner loop or host
  effect), so what it computes is fused where it is read.

Values from outside the loop that the element-wise ops read at the element's index (a
loop-invariant array, a broadcast) are computed before the first iteration, once per
element; the loop's initial values are fused in too (jax's counters from ``iota``: no
buffer).  Up to :data:`UNROLL_TRIPS` iterations are unrolled (a constant table carried
in then folds into the code: threefry's rotations become rotations by constants);
longer loops are a ``for`` in the kernel.  Results the program reads are stored after
the last iteration, the uniform ones by the first element's work-item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from frontend.ir.core import Block, Op, Value
from frontend.ir.quant import is_quantized
from frontend.ir.types import TokenType
from frontend.lower.core import loops, types
from frontend.lower.core.builder import IndexExpr, groups_nd
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import ELEMENTWISE, Fused
from frontend.lower.core.registry import ELEMENTAL, KERNEL
from tensorlang.diagnostics import CompileError

ENABLED = True
"""Take this path when a loop qualifies (tests turn it off to exercise the others)."""
MAX_UNIFORM = 64
"""The most elements of uniform carried values (each is a scalar in every work-item)."""
UNROLL_TRIPS = 8
"""Loops of at most this many iterations are unrolled..."""
UNROLL_OPS = 2048
"""... when iterations times body ops stay within this."""


@dataclass(frozen=True)
class Pointwise:
    """How a qualifying ``while`` runs: its element shape, trip count and carried values
    by kind (positions in the carried tuple)."""

    shape: tuple[int, ...]
    count: int
    elements: tuple[int, ...]
    """Changed carried values of ``shape``: one scalar per work-item element."""
    uniform: tuple[int, ...]
    """Other changed carried values: all their elements in every work-item."""
    passed: tuple[int, ...]
    """Carried values the body returns unchanged (read where the operand is)."""
    reads: tuple[Value, ...]
    """Values from outside the body read at the element's own index."""


def lower(lw: FuncLowering, op: Op) -> bool:
    """Lower while ``op`` as one element-wise kernel when it qualifies; False (nothing
    emitted) otherwise."""
    plan = analyse(lw, op)
    if plan is None:
        return False
    body = op.regions[1].block
    for o in body.ops:
        if o.name == "stablehlo.constant":  # non-splat ones: initialized buffers
            KERNEL[o.name](lw, o)
    for i in plan.passed:
        if lw.uses.get(op.results[i]):
            lw.bind(op.results[i], lw.materialize(op.operands[i]))
    env, steps = dict(lw.env), list(lw.steps)
    outs = {i: lw.buffer_for(op.results[i]) for i in (*plan.elements, *plan.uniform)
            if lw.uses.get(op.results[i])}
    try:
        _kernel(lw, op, plan, outs)
    except CompileError:  # an op the fused code cannot express here: another path
        lw.env = env
        lw.steps[:] = steps
        return False
    for i, buf in outs.items():
        lw.bind(op.results[i], buf)
    return True


def analyse(lw: FuncLowering, op: Op) -> Pointwise | None:
    """The plan of while ``op`` as a point-wise loop, or None when it does not qualify.
    The element shape is the first, largest first, of the changed carried values' shapes
    that qualifies (threefry on a 2-element key carries 4-element rotation tables)."""
    if not ENABLED or any(isinstance(v.type, TokenType) or is_quantized(v.type)
                          for v in op.operands):
        return None
    body = op.regions[1].block
    changed = [i for i, (a, v) in enumerate(zip(body.args, body.ops[-1].operands,
                                                 strict=True)) if v is not a]
    if not changed or any(types.elem(op.operands[i]).startswith("c") for i in changed):
        return None
    shapes = sorted({types.shape(body.args[i]) for i in changed}, key=prod, reverse=True)
    for shape in shapes:
        if not shape or prod(shape) == 0:
            continue
        plan = _with_shape(lw, op, changed, shape)
        if plan is not None:
            return plan
    return None


def _with_shape(lw: FuncLowering, op: Op, changed: list[int], shape: tuple[int, ...]
                ) -> Pointwise | None:
    """The plan of while ``op`` (carried values ``changed`` by the body) with element
    shape ``shape``, or None."""
    body = op.regions[1].block
    results = body.ops[-1].operands
    elements = tuple(i for i in changed if types.shape(body.args[i]) == shape)
    uniform = tuple(i for i in changed if i not in elements)
    if sum(types.size(body.args[i]) for i in uniform) > MAX_UNIFORM:
        return None
    found = _element_wise(body, shape, {body.args[i] for i in elements})
    if found is None or any(results[i] in found[1] for i in uniform):
        return None
    count = loops.constant_count(op)
    if count is None:
        return None
    passed = tuple(i for i in range(len(results)) if i not in changed)
    operand = {body.args[i]: op.operands[i] for i in passed}
    reads = tuple(operand.get(v, v) for v in found[0]
                  if v in operand or not _inside(v, body))
    return Pointwise(shape, count, elements, uniform, passed, reads)


def _element_wise(body: Block, shape: tuple[int, ...], per_element: set[Value]
                  ) -> tuple[list[Value], set[Value]] | None:
    """Check ``body``: ops reading an element carry (``per_element``), directly or not,
    are element-wise ops of ``shape``; the others are elemental.  Returns what those ops
    read at the element's index that no element carry feeds (in order), and the values
    the element carries feed; None when the body does not qualify."""
    dependent = set(per_element)
    reads: dict[Value, None] = {}
    for o in body.ops[:-1]:
        if any(is_quantized(v.type) for v in (*o.operands, *o.results)):
            return None
        types.check_op_types(o)
        if any(v in dependent for v in o.operands):
            if not _same_index(o, shape):
                return None
            dependent.update(o.results)
            reads.update((v, None) for v in o.operands
                         if v not in dependent and types.shape(v) == shape)
        elif o.name not in ELEMENTAL or o.regions:
            return None
    return list(reads), dependent


def _same_index(o: Op, shape: tuple[int, ...]) -> bool:
    """``o`` computes each element of its one result, of ``shape``, from its operands'
    elements at the same index (operands of another shape are scalars it broadcasts)."""
    if len(o.results) != 1 or types.shape(o.result) != shape or o.regions:
        return False
    if o.name == "stablehlo.bitcast_convert":
        return types.shape(o.operands[0]) == shape
    return o.name in ELEMENTWISE and all(types.shape(v) in (shape, ()) for v in o.operands)


def _inside(v: Value, body: Block) -> bool:
    owner = v.owner
    return owner is body if isinstance(owner, Block) else owner in body.ops


State = dict[int, list[str]]
"""The SSA names of carried values in a work-item: per carried position, one name for an
element carry, every element (row-major) of a uniform one."""


def _kernel(lw: FuncLowering, op: Op, plan: Pointwise, outs: dict[int, int]) -> None:
    """Build and launch the loop kernel: per element, the initial values, the iterations,
    the results into ``outs`` (position -> buffer)."""
    shape = plan.shape
    with lw.kernel("while_pointwise") as (k, f), k.elements_nd(shape) as idx:
        for v in plan.reads:
            f.value(v, idx)
        state = {i: [f.value(op.operands[i], idx)] for i in plan.elements}
        state |= {i: _uniform_initial(f, op.operands[i]) for i in plan.uniform}
        state = _iterations(f, op, plan, idx, state)
        for i, buf in outs.items():
            if i in plan.elements:
                k.store(state[i][0], buf, types.elem(op.results[i]), prod(shape),
                        k.linear(idx, shape))
        uniform = [i for i in plan.uniform if i in outs]
        if uniform:
            first = k.cmp("eq", k.idx(k.linear(idx, shape)), k.idx(0), "index")
            with k.block(f"if {first} {{"):
                for i in uniform:
                    r = op.results[i]
                    for j, x in enumerate(state[i]):
                        k.store(x, outs[i], types.elem(r), types.size(r), j)
    lw.launch_last(groups_nd(shape))


def _uniform_initial(f: Fused, v: Value) -> list[str]:
    """Every element of ``v`` (row-major); a constant's as literals, so an unrolled loop
    folds them."""
    shape, t = types.shape(v), types.elem(v)
    owner = v.owner
    if isinstance(owner, Op) and owner.name == "stablehlo.constant":
        array = np.broadcast_to(owner.dense_attr("value"), shape).reshape(-1)
        return [f.k.const(x.item(), t) for x in array]
    return [f.value(v, f.k.delinearize(j, shape)) for j in range(prod(shape))]


def _iterations(f: Fused, op: Op, plan: Pointwise, idx: list[IndexExpr], state: State
                ) -> State:
    """Run the body ``plan.count`` times on ``state``: unrolled, or a ``for``."""
    body = op.regions[1].block
    k = f.k
    order = [*plan.elements, *plan.uniform]
    if plan.count <= UNROLL_TRIPS and plan.count * len(body.ops) <= UNROLL_OPS:
        for _ in range(plan.count):
            with k.scope():
                state = _iteration(f, op, plan, idx, state)
        return state
    flat = [x for i in order for x in state[i]]
    dtypes = [types.elem(op.operands[i]) for i in order for _ in state[i]]
    with k.loop(0, plan.count, flat, dtypes) as loop:
        new = _iteration(f, op, plan, idx, _unflatten(order, state, loop.carried))
        loop.yields = [x for i in order for x in new[i]]
    return _unflatten(order, state, loop.results)


def _unflatten(order: Sequence[int], like: State, flat: Sequence[str]) -> State:
    """``flat`` cut into a state of the same sizes as ``like``."""
    out, at = {}, 0
    for i in order:
        out[i] = list(flat[at:at + len(like[i])])
        at += len(like[i])
    return out


def _iteration(f: Fused, op: Op, plan: Pointwise, idx: list[IndexExpr], state: State
               ) -> State:
    """One run of the body on ``state``: the new state."""
    body = op.regions[1].block
    for i, a in enumerate(body.args):
        if i in plan.passed:
            f.redirect[a] = _reader(f, op.operands[i])
        elif i in plan.elements:
            f.redirect[a] = _element(state[i][0], idx, a)
        else:
            f.redirect[a] = _uniform(f, state[i], a)
    try:
        results = body.ops[-1].operands
        new = {i: [f.value(results[i], idx)] for i in plan.elements}
        for i in plan.uniform:
            v = results[i]
            new[i] = [f.value(v, f.k.delinearize(j, types.shape(v)))
                      for j in range(types.size(v))]
    finally:
        for a in body.args:
            f.redirect.pop(a, None)
    return new


def _reader(f: Fused, v: Value) -> Callable[[Sequence[IndexExpr]], str]:
    """Elements of a value passed through the loop: where its operand is."""
    return lambda at: f.value(v, at)


def _element(x: str, idx: list[IndexExpr], a: Value) -> Callable[[Sequence[IndexExpr]], str]:
    """An element carry: read at the element's own index only."""
    def read(at: Sequence[IndexExpr]) -> str:
        if list(at) != idx:
            raise CompileError.at(a.loc, "a per-element loop value read at another index")
        return x
    return read


def _uniform(f: Fused, xs: list[str], a: Value) -> Callable[[Sequence[IndexExpr]], str]:
    """A uniform carry: any element at a constant index."""
    shape = types.shape(a)

    def read(at: Sequence[IndexExpr]) -> str:
        if not all(isinstance(i, int) and 0 <= i < n for i, n in zip(at, shape, strict=True)):
            raise CompileError.at(a.loc, "a carried table read at a computed index")
        return xs[int(f.k.linear(at, shape))]
    return read
