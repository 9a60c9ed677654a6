"""Split one process's function into device segments and host collective steps.

The function's calls are inlined and its ``replica_id`` / ``partition_id`` ops become
constants of this process.  The top-level ops then form runs: maximal runs of ordinary
ops become one StableHLO function each (compiled by tlc into kernels and a host plan),
and every collective, ``send`` and ``recv`` between them is a host step whose bytes move
over MPI.  A value crosses a step boundary as a numpy array; tokens carry no data, so a
segment that reads a token from outside makes its own with ``after_all``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from backend_opencl.distributed.grid import ProcessGrid
from frontend.ir.attrs import DenseElementsAttr
from frontend.ir.core import Block, Func, Module, Op, Region, Value, walk
from frontend.ir.types import TensorType
from frontend.lower.core.inline import inline_calls
from tensorlang.diagnostics import TlcError

HOST_OPS = frozenset({
    "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
    "stablehlo.all_to_all", "stablehlo.collective_permute", "stablehlo.collective_broadcast",
    "stablehlo.collective_reduce", "stablehlo.send", "stablehlo.recv",
})
"""Ops that exchange data between processes: run on the host, between segments."""

_EFFECTS = ("stablehlo.outfeed", "stablehlo.custom_call", "check.", "interpreter.")
_RETURNS = ("func.return", "return", "stablehlo.return")


@dataclass
class DeviceStep:
    """One compiled segment: a StableHLO module whose ``main`` maps inputs to outputs."""

    text: str
    inputs: list[Value]
    outputs: list[Value]


@dataclass
class HostStep:
    """A collective (or send / recv) op run by the host."""

    op: Op


@dataclass
class SegmentedFunc:
    """A function (or a region) as steps; ``args`` and ``returns`` are the values of its
    signature (block arguments and the terminator's operands)."""

    name: str
    args: list[Value]
    returns: list[Value]
    steps: list[DeviceStep | HostStep | ControlStep] = field(default_factory=list)


@dataclass
class ControlStep:
    """A ``while`` / ``if`` / ``case`` whose regions exchange data between processes: the
    host runs it, each region as its own steps (values of enclosing scopes are read from
    the enclosing environment)."""

    op: Op
    regions: list[SegmentedFunc]


def is_data(v: Value) -> bool:
    """True for a tensor value (tokens carry nothing between steps)."""
    return isinstance(v.type, TensorType)


def segment(module: Module, name: str, grid: ProcessGrid) -> SegmentedFunc:
    """``@name`` of ``module`` as device segments and host steps for process ``grid.rank``."""
    func = module.func(name)
    if func is None or func.body is None:
        raise TlcError(f"error: no function @{name} with a body in the module")
    body = inline_calls(module, func).block
    _bind_process_ids(body, grid)
    return _segment_block(body, name, func)


def _segment_block(block: Block, name: str, func: Func) -> SegmentedFunc:
    """``block`` as steps (its terminator gives the results)."""
    *ops, ret = block.ops
    if ret.name not in _RETURNS:
        raise TlcError(f"error: @{name} does not end with a return")
    _check_host_ops_on_top(ops, name)
    out = SegmentedFunc(name, list(block.args), list(ret.operands))
    out.steps = _steps(ops, ret, func)
    return out


_CONTROL = ("stablehlo.while", "stablehlo.if", "stablehlo.case")


def _exchanges(op: Op) -> bool:
    """True when an op's regions hold ops that exchange data between processes."""
    return any(o.name in HOST_OPS for r in op.regions for o in walk(r))


def _bind_process_ids(block: Block, grid: ProcessGrid) -> None:
    """Turn ``replica_id`` / ``partition_id`` (at any depth) into constants."""
    ids = {"stablehlo.replica_id": grid.replica_id, "stablehlo.partition_id": grid.partition_id}
    for op in walk(Region([block])):
        if op.name in ids:
            t = op.result_types[0]
            assert isinstance(t, TensorType)
            value = np.asarray(ids[op.name], dtype=t.element.dtype).reshape(t.static_shape)
            op.name, op.attrs, op.regions = "stablehlo.constant", {
                "value": DenseElementsAttr(t, value)}, []


def _check_host_ops_on_top(ops: list[Op], name: str) -> None:
    for op in ops:
        if op.name in _CONTROL:  # the host runs them when they exchange data
            continue
        for region in op.regions:
            nested = next((o for o in walk(region) if o.name in HOST_OPS), None)
            if nested is not None:
                raise TlcError(f"{nested.loc}: error: '{nested.name}' inside "
                               f"'{op.name}' across several processes is not supported "
                               "(collectives must be at the top level of a function or "
                               "of a while / if / case region)")


def _steps(ops: list[Op], ret: Op, func: Func) -> list[DeviceStep | HostStep | ControlStep]:
    """Group ``ops`` into runs, then keep what a later step or the return needs."""
    runs: list[list[Op] | Op] = []
    for op in ops:
        if op.name in HOST_OPS or (op.name in _CONTROL and _exchanges(op)):
            runs.append(op)
        elif runs and isinstance(runs[-1], list):
            runs[-1].append(op)
        else:
            runs.append([op])
    needed = {v for v in ret.operands if is_data(v)}
    steps: list[DeviceStep | HostStep | ControlStep] = []
    for run in reversed(runs):
        if isinstance(run, Op) and run.name in _CONTROL:
            needed.update(v for v in _free_values([run]) if is_data(v))
            regions = [_segment_block(r.block, f"{func.name} {run.name} region", func)
                       for r in run.regions]
            steps.append(ControlStep(run, regions))
            continue
        if isinstance(run, Op):
            needed.update(v for v in run.operands if is_data(v))
            steps.append(HostStep(run))
            continue
        step = _device_step(run, needed, func)
        if step is not None:
            needed.update(step.inputs)
            steps.append(step)
    return steps[::-1]


def _device_step(run: list[Op], needed: set[Value], func: Func) -> DeviceStep | None:
    """The segment of ``run`` producing the values of ``needed`` it defines (None when it
    defines none and has no effects)."""
    defined = [r for op in run for r in op.results]
    outputs = [v for v in defined if v in needed and is_data(v)]
    ops = _live(run, set(outputs))
    if not ops:
        return None
    inputs = _free_values(ops)
    for v in [v for v in inputs if not is_data(v)]:  # a token from outside: a fresh one
        token = Op("stablehlo.after_all", [], [v.type], {}, [], run[0].loc)
        token.results = [Value(v.type, token, 0, "token", run[0].loc)]
        _substitute(ops, v, token.results[0])
        ops.insert(0, token)
    inputs = [v for v in inputs if is_data(v)]
    ret = Op("func.return", list(outputs), [], {}, [], run[-1].loc)
    main = Func("main", "", [v.type for v in inputs], [None] * len(inputs),
                [v.type for v in outputs], [None] * len(outputs), {},
                Region([Block(args=inputs, ops=ops + [ret])]), func.loc)
    text = str(Module(None, {}, [main], func.loc))
    return DeviceStep(text, inputs, outputs)


def _live(run: list[Op], live: set[Value]) -> list[Op]:
    """The ops of ``run`` that compute ``live`` values or have effects, in order."""
    kept: list[Op] = []
    for op in reversed(run):
        effects = any(o.name.startswith(_EFFECTS) for o in walk(Region([Block(ops=[op])])))
        if effects or any(r in live for r in op.results):
            kept.append(op)
            live.update(_free_values([op]))
    return kept[::-1]


def _free_values(run: list[Op]) -> list[Value]:
    """Values ``run`` (nested regions included) reads but does not define, in order."""
    inner: set[Value] = set()
    free: dict[Value, None] = {}
    everything = walk(Region([Block(ops=run)]))
    for op in everything:
        inner.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                inner.update(block.args)
    for op in everything:
        for v in op.operands:
            if v not in inner:
                free.setdefault(v, None)
    return list(free)


def _substitute(ops: list[Op], old: Value, new: Value) -> None:
    """Replace reads of ``old`` by ``new`` in ``ops`` and their regions."""
    for op in walk(Region([Block(ops=ops)])):
        op.operands = [new if v is old else v for v in op.operands]
