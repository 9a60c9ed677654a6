"""Control flow on the host: while, if, case, optimization_barrier, tuples.

Predicates are computed into one-element buffers that the executor reads back.  Loop
state lives in fresh "carry" buffers; results of the body are copied into them (through
temporaries when the body permutes carried buffers).  ``func.call`` and
``stablehlo.composite`` never get here: :mod:`frontend.lower.core.inline` inlines them first.
"""

from __future__ import annotations

from collections.abc import Sequence

from frontend.ir.core import Block, Op, Value
from frontend.ir.types import TokenType
from frontend.lower.core import loops, types
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.registry import kernel
from frontend.lower.families import dynamic
from frontend.lower.families.control import device_loop, pointwise_loop
from tensorlang.diagnostics import CompileError
from tensorlang.plan import Case, Copy, If, While, renamed


def _run_into(lw: FuncLowering, block: Block, outs: Sequence[int | None],
              args: Sequence[int] = (), in_place: dict[Op, int] | None = None,
              fresh: int | None = None) -> None:
    """Lower ``block`` (its args bound to ``args``) and copy its results into ``outs``
    (a result whose out is None is not needed and not computed); the
    ``dynamic_update_slice`` ops of ``in_place`` update their buffer in place.  With
    ``fresh`` (the first buffer id made for this block; ``outs`` are not read in it), a
    result in a buffer the block made is computed straight into its ``outs`` buffer
    instead of copied there."""
    for a, buf in zip(block.args, args, strict=True):
        lw.bind(a, buf)
    for op in block.ops[:-1]:
        if in_place and op in in_place:
            dynamic.update_in_place(lw, op, in_place[op])
            lw.bind(op.result, in_place[op])
        else:
            lw.lower_op(op)
    needed = [(v, out) for v, out in zip(block.ops[-1].operands, outs, strict=True)
              if out is not None]
    results = [lw.materialize(v) for v, _ in needed]
    targets = [out for _, out in needed]
    if fresh is not None:
        results = _write_into(lw, results, targets, fresh)
    staged = []
    for src, dst in zip(results, targets, strict=True):
        if fresh is None and src != dst and src in targets:  # carried buffers permuted
            tmp = lw.new_buffer(lw.buffers[src].dtype, lw.buffers[src].shape)
            lw.step(Copy(src, tmp))
            src = tmp
        staged.append((src, dst))
    for src, dst in staged:
        if src != dst:
            lw.step(Copy(src, dst))


def _write_into(lw: FuncLowering, results: list[int], outs: list[int], fresh: int
                ) -> list[int]:
    """Rename the block's own result buffers (made from id ``fresh`` on, no constants)
    to their ``outs`` buffers in the block's steps (a buffer returned twice: to the
    first); return the buffers to copy the results from."""
    names: dict[int, int] = {}
    checked = {buf for buf, _ in lw.checks}
    for src, dst in zip(results, outs, strict=True):
        if src >= fresh and lw.buffers[src].init is None and src not in names \
                and src not in checked:
            names[src] = dst
    lw.steps[:] = renamed(lw.steps, names)
    return [names.get(src, src) for src in results]


def _updates_in_place(lw: FuncLowering, body: Block, carry: list[int]) -> dict[Op, int]:
    """The body's ``dynamic_update_slice`` ops that can write into a carried buffer: the
    op's operand is carried value k, used only by it, and its result is carried on as k."""
    out = {}
    for k, v in enumerate(body.ops[-1].operands):
        op = v.owner
        if isinstance(op, Op) and op.name == "stablehlo.dynamic_update_slice" \
                and op in body.ops and op.operand("operand") is body.args[k] \
                and lw.uses.get(body.args[k]) == 1:
            out[op] = carry[k]
    return out


@kernel("stablehlo.while")
def while_(lw: FuncLowering, op: Op) -> None:
    """Host loop: cond kernels, read back the predicate, body kernels, copy to the carry.

    A counted loop (:mod:`frontend.lower.core.loops`) carries its trip count: the executor then
    runs the body that many times without the cond kernels or read-backs.  Before that,
    a loop with a constant trip count and an element-wise body runs as one element-wise
    kernel (:mod:`.pointwise_loop`), a small one as one kernel with the loop inside
    (:mod:`.device_loop`)."""
    if pointwise_loop.lower(lw, op):
        return
    body = op.regions[1].block
    carry = []
    for v, r, a, new in zip(op.operands, op.results, body.args, body.ops[-1].operands,
                            strict=True):
        if new is a or isinstance(v.type, TokenType):  # passed through, or no data:
            carry.append(lw.materialize(v))  # the operand's buffer is the carry
        elif _owned(lw, op, v):  # read by the loop only: its buffer is the carry
            carry.append(lw.materialize(v))
        else:
            carry.append(lw.buffer_for(r))
            lw.step(Copy(lw.materialize(v), carry[-1]))
    trips = loops.trip_count(lw, op, carry)
    if device_loop.lower(lw, op, carry, trips):
        _bind_results(lw, op, carry)
        return
    cond, body = op.regions[0].block, op.regions[1].block
    with lw.nested() as cond_steps:
        for a, c in zip(cond.args, carry, strict=True):
            lw.bind(a, c)
        pred = lw.materialize(lw.lower_block(cond)[0])
    with lw.nested() as body_steps:
        _run_into(lw, body, carry, carry, _updates_in_place(lw, body, carry))
    lw.step(While(tuple(cond_steps), pred, tuple(body_steps), trips))
    _bind_results(lw, op, carry)


def _owned(lw: FuncLowering, op: Op, v: Value) -> bool:
    """True when control-flow ``op`` may take operand ``v``'s buffer for a result of its
    own (no copy in): ``v`` has no other use, is computed in ``op``'s own block (so no later
    iteration of an enclosing loop needs it again) or is a parameter of the function, and
    its buffer holds no constant and no other value still read from ``op`` on."""
    if lw.uses.get(v) != 1:
        return False
    home = lw.region_of(op)
    owner = v.owner
    if isinstance(owner, Op):
        if lw.region_of(owner) is not home:
            return False
    elif lw.region_of(owner) is not None or home is not None:
        return False  # a block argument of a region, or a parameter read inside one
    buf = lw.materialize(v)
    return lw.buffers[buf].init is None and all(
        u is v or lw.dead_at(u, op) for u, held in lw.env.items() if held == buf)


def _branches(lw: FuncLowering, op: Op) -> tuple[list[int | None], list[tuple]]:
    """Buffers for ``op``'s results and the plan steps of each region writing into them.

    A result nothing reads gets no buffer (None) and no region computes it.  A result
    that a region returns unchanged from a value no other op reads takes that value's
    buffer: that region copies nothing (an error check's branch that passes its operands
    through costs no copies), the others write over the dead value."""
    outs = [_result_buffer(lw, op, k) for k in range(len(op.results))]
    branches = []
    for region in op.regions:
        with lw.nested() as steps:
            _run_into(lw, region.block, outs, fresh=len(lw.buffers))
        branches.append(tuple(steps))
    return outs, branches


def _result_buffer(lw: FuncLowering, op: Op, k: int) -> int | None:
    """The buffer branch ``op``'s result ``k`` is written into (see :func:`_branches`)."""
    result = op.results[k]
    if not lw.uses.get(result) and not isinstance(result.type, TokenType):
        return None
    for region in op.regions:
        v = region.block.ops[-1].operands[k]
        if isinstance(v.owner, Op) and lw.buffer_of(v) is not None and _owned(lw, op, v):
            return lw.materialize(v)
    return lw.buffer_for(result)


def _bind_results(lw: FuncLowering, op: Op, outs: Sequence[int | None]) -> None:
    for r, out in zip(op.results, outs, strict=True):
        if out is not None:
            lw.bind(r, out)


@kernel("stablehlo.if")
def if_(lw: FuncLowering, op: Op) -> None:
    """Host branch on the predicate's value."""
    pred = lw.materialize(op.operand("pred"))
    outs, branches = _branches(lw, op)
    lw.step(If(pred, branches[0], branches[1]))
    _bind_results(lw, op, outs)


@kernel("stablehlo.case")
def case(lw: FuncLowering, op: Op) -> None:
    """Host switch on the index (out of range runs the last branch)."""
    index = lw.materialize(op.operand("index"))
    outs, branches = _branches(lw, op)
    lw.step(Case(index, tuple(branches)))
    _bind_results(lw, op, outs)


@kernel("stablehlo.tuple")
def tuple_(lw: FuncLowering, op: Op) -> None:
    """Remember the elements; get_tuple_element picks one."""
    lw.tuples[op.result] = list(op.operands)


@kernel("stablehlo.get_tuple_element")
def get_tuple_element(lw: FuncLowering, op: Op) -> None:
    """The element of a tuple built by stablehlo.tuple."""
    elements = lw.tuples.get(op.operand("operand"))
    if elements is None:
        raise CompileError.at(op.loc, "tuples not built by 'stablehlo.tuple' in this "
                              "function are not supported yet")
    element = elements[op.int_attr("index")]
    if element in lw.tuples:
        lw.tuples[op.result] = lw.tuples[element]
    else:
        lw.bind(op.result, lw.materialize(element))


@kernel("stablehlo.optimization_barrier")
def barrier(lw: FuncLowering, op: Op) -> None:
    """Results are the operands."""
    for r, v in zip(op.results, op.operands, strict=True):
        lw.bind(r, lw.materialize(v))


_ = types
