"""Control flow: for, if, yield, foreach, parallel and barrier."""

from __future__ import annotations

from backend_opencl.emit.cnames import ctype
from backend_opencl.emit.kernel import KernelEmitter, handler
from tensorlang.ir.core import Instruction
from tensorlang.ir.types import ScalarType


def _results(em: KernelEmitter, inst: Instruction, inits: list[str] | None) -> list[str]:
    names = []
    for k, result in enumerate(inst.results):
        t: ScalarType = result.type
        em.use_type(t)
        name = em.namer.fresh(result.name or "r")
        init = f" = {inits[k]}" if inits is not None else ""
        em.w.line(f"{ctype(t)} {name}{init};")
        em.env[result] = name
        names.append(name)
    return names


@handler("for")
def emit_for(em: KernelEmitter, inst: Instruction) -> None:
    """``for``: a C loop; loop-carried values live in the result variables."""
    t: ScalarType = inst.attr("loop_type")
    lo, hi = em.scalar(inst.operand("from")), em.scalar(inst.operand("to"))
    step = inst.operand("step")
    step_expr = em.scalar(step) if step is not None else "1"
    carried = _results(em, inst, [em.scalar(v) for v in inst.operand("init")])
    body = inst.regions[0]
    var = em.namer.fresh(body.args[0].name or "i")
    em.env[body.args[0]] = var
    inc = f"++{var}" if step_expr == "1" else f"{var} += {step_expr}"
    with em.w.block(f"for ({ctype(t)} {var} = {lo}; {var} < {hi}; {inc})"):
        for arg, name in zip(body.args[1:], carried, strict=False):
            em.define(arg, name)
        em.yields.append(carried)
        em.region(body)
        em.yields.pop()


@handler("if")
def emit_if(em: KernelEmitter, inst: Instruction) -> None:
    """``if``/``else``; results are assigned by the yields of both branches."""
    targets = _results(em, inst, None)
    em.yields.append(targets)
    with em.w.block(f"if ({em.scalar(inst.operand('cond'))})"):
        em.region(inst.regions[0])
    if len(inst.regions) > 1 and inst.regions[1].instructions:
        with em.w.else_block():
            em.region(inst.regions[1])
    em.yields.pop()


@handler("yield")
def emit_yield(em: KernelEmitter, inst: Instruction) -> None:
    """``yield``: assign the enclosing if/for's result variables."""
    targets = em.yields[-1]
    values = [em.scalar(v) for v in inst.operand("values")]
    for target, value in zip(targets, values, strict=False):
        em.w.line(f"{target} = {value};")


@handler("foreach")
def emit_foreach(em: KernelEmitter, inst: Instruction) -> None:
    """``foreach``: iterations distributed cyclically over the work-group's work-items."""
    t: ScalarType = inst.attr("loop_type")
    lo, hi = em.scalar(inst.operand("from")), em.scalar(inst.operand("to"))
    body = inst.regions[0]
    var = em.namer.fresh(body.args[0].name or "i")
    em.env[body.args[0]] = var
    items = em.plan.num_work_items
    lid = em.local_id()
    cast = "" if ctype(t) == "long" else f"({ctype(t)})"
    start = lo if lid == "0" else f"{lo} + {cast}{lid}"
    inc = f"++{var}" if items == 1 else f"{var} += {items}"
    with em.w.block(f"for ({ctype(t)} {var} = {start}; {var} < {hi}; {inc})"):
        em.region(body)


@handler("parallel")
def emit_parallel(em: KernelEmitter, inst: Instruction) -> None:
    """``parallel``: an SPMD region, run by every work-item."""
    with em.w.block("/* parallel */"):
        em.region(inst.regions[0])


@handler("barrier")
def emit_barrier(em: KernelEmitter, inst: Instruction) -> None:
    """``barrier[.global][.local]``."""
    flags = []
    if inst.attr("fence_local"):
        flags.append("CLK_LOCAL_MEM_FENCE")
    if inst.attr("fence_global"):
        flags.append("CLK_GLOBAL_MEM_FENCE")
    em.w.line(f"barrier({' | '.join(flags) or 'CLK_LOCAL_MEM_FENCE'});")


@handler("foreach_nd")
def emit_foreach_nd(em: KernelEmitter, inst: Instruction) -> None:
    """``foreach (%i, %j, ...)``: the box's linear index is distributed cyclically over the
    work-items and decomposed with the first mode fastest (contiguous for column-major)."""
    t: ScalarType = inst.attr("loop_type")
    lows = [em.scalar(v) for v in inst.operand("from")]
    highs = [em.scalar(v) for v in inst.operand("to")]
    extents = []
    for k, (lo, hi) in enumerate(zip(lows, highs, strict=True)):
        extent = em.namer.fresh(f"extent{k}")
        em.w.line(f"const long {extent} = {hi} > {lo} ? (long)({hi}) - (long)({lo}) : 0;")
        extents.append(extent)
    total = em.namer.fresh("total")
    em.w.line(f"const long {total} = {' * '.join(extents)};")
    body = inst.regions[0]
    linear = em.namer.fresh("linear")
    items = em.plan.num_work_items
    inc = f"++{linear}" if items == 1 else f"{linear} += {items}"
    with em.w.block(f"for (long {linear} = {em.local_id()}; {linear} < {total}; {inc})"):
        rest = linear
        for k, (arg, lo, extent) in enumerate(zip(body.args, lows, extents, strict=True)):
            var = em.namer.fresh(arg.name or f"i{k}")
            last = k == len(extents) - 1
            offset = rest if last else f"{rest} % {extent}"
            em.w.line(f"const {ctype(t)} {var} = ({ctype(t)})({lo} + {offset});")
            em.env[arg] = var
            if not last:
                quotient = em.namer.fresh(f"rest{k}")
                em.w.line(f"const long {quotient} = {rest} / {extent};")
                rest = quotient
        em.region(body)
