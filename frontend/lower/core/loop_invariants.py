"""Hoisting loop-invariant computations out of ``stablehlo.while`` bodies.

jax traces a scan's step function once and flax, haiku and equinox build their cells'
weights inside it: an LSTM cell of ``flax.linen`` concatenates its four 128x128 gate
kernels into one 128x512 matrix *in the loop body*, so every time step recomputes it
(65,536 elements a step), and a value that large keeps the loop off the device
(:mod:`frontend.lower.families.control.device_loop` admits at most ``MAX_ELEMENTS``
per value computed in an iteration).

:func:`hoist_loop_invariants` moves every body op whose operands are all invariant --
defined outside the loop, carried values the body passes through unchanged, or results
of ops moved before -- to just before the ``while``, a carried value replaced by the
loop's operand for it.  Inner loops are treated first, so an invariant of two nested
loops leaves both.  Only pure ops without regions move (no ``custom_call``, random
numbers, collectives, tokens), and only those that compute from a non-constant value:
constants and what is computed from constants alone stay where they are, where they
fuse into their users as splats or iotas (hoisted, they would become buffers).
Broadcasts stay too: a broadcast read in place by its users costs nothing, hoisted it
would be a buffer of the broadcast size.  A hoisted op runs once even when the loop
runs zero times; StableHLO's pure ops cannot fail, so only time is spent.
"""

from __future__ import annotations

from frontend.ir.core import Block, Op, Region, Value
from frontend.ir.types import TokenType

IMPURE = frozenset({
    "stablehlo.custom_call", "stablehlo.rng", "stablehlo.rng_bit_generator",
    "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv",
    "stablehlo.after_all", "stablehlo.create_token", "stablehlo.optimization_barrier",
    "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.all_to_all",
    "stablehlo.reduce_scatter", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "stablehlo.partition_id", "stablehlo.replica_id",
    "stablehlo.return", "func.return", "func.call", "stablehlo.composite",
})
"""Ops that are not pure functions of their operands at their place: effects,
collectives, the process's identity, terminators, calls (also used by
:mod:`frontend.lower.reroll`)."""
STAYS = IMPURE | {
    "stablehlo.constant", "stablehlo.iota", "stablehlo.broadcast_in_dim",
    "stablehlo.broadcast", "stablehlo.dynamic_broadcast_in_dim",
    "stablehlo.get_dimension_size", "stablehlo.set_dimension_size",
}
"""Ops never hoisted: the impure ones, and cheap splats/broadcasts."""

CONSTANT_SOURCES = frozenset({"stablehlo.constant", "stablehlo.iota"})


def hoist_loop_invariants(region: Region) -> Region:
    """Hoist the loop invariants of every ``while`` in ``region`` (changed in place);
    return ``region``."""
    for block in region.blocks:
        _hoist_in_block(block)
    return region


def _hoist_in_block(block: Block) -> None:
    """Hoist out of the loops of ``block`` (and of the blocks nested in its ops)."""
    ops: list[Op] = []
    for op in block.ops:
        for inner in op.regions:
            hoist_loop_invariants(inner)
        if op.name == "stablehlo.while":
            ops.extend(_invariants(op))
        ops.append(op)
    block.ops[:] = ops


def _invariants(loop: Op) -> list[Op]:
    """Remove the invariant ops of ``loop``'s body and return them (in order), their
    operands that were passed-through carried values replaced by the loop's operands."""
    body = loop.regions[1].block
    outer = _passed_through(loop)
    inside = set(body.args) | {r for o in body.ops for r in o.results}
    constant: set[Value] = set()
    hoisted: list[Op] = []
    moved: set[Value] = set()
    for op in body.ops[:-1]:
        if op.name in CONSTANT_SOURCES or op.operands and all(v in constant
                                                              for v in op.operands):
            constant.update(op.results)
            continue
        if _movable(op) and all(v not in inside or v in outer or v in moved
                                for v in op.operands):
            op.operands = [outer.get(v, v) for v in op.operands]
            hoisted.append(op)
            moved.update(op.results)
    if hoisted:
        gone = set(hoisted)
        body.ops[:] = [op for op in body.ops if op not in gone]
    return hoisted


def _passed_through(loop: Op) -> dict[Value, Value]:
    """The carried values of ``loop``'s body that it returns unchanged, each to the
    loop's operand for it (the value it has on every trip)."""
    body = loop.regions[1].block
    ret = body.ops[-1]
    return {arg: loop.operands[i] for i, arg in enumerate(body.args)
            if i < len(ret.operands) and ret.operands[i] is arg}


def value_outside(loop: Op, v: Value, inside: set[Value]) -> Value | None:
    """The value outside ``loop`` that ``v`` always equals in its body: a carried value
    passed through unchanged (the loop's operand) or a value defined before the loop;
    None when ``v`` varies in the loop.  ``inside``: :func:`defined_in` of the body."""
    body = loop.regions[1].block
    if v in body.args:
        i = body.args.index(v)
        return loop.operands[i] if body.ops[-1].operands[i] is v else None
    return None if v in inside else v


def defined_in(block: Block) -> set[Value]:
    """Every value defined in ``block`` (arguments and results, nested regions too)."""
    out = set(block.args)
    for o in block.ops:
        out.update(o.results)
        for r in o.regions:
            out |= defined_in(r.block)
    return out


def _movable(op: Op) -> bool:
    """Whether ``op`` is pure, without regions (a ``reduce``'s scalar body aside), and
    touches no token."""
    if op.name in STAYS or op.regions and op.name != "stablehlo.reduce":
        return False
    return not any(isinstance(v.type, TokenType) for v in (*op.operands, *op.results))
