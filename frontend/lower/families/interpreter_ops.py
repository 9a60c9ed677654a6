"""The reference interpreter's ops, infeed/outfeed, and collective_reduce in one process.

``interpreter.print``, ``stablehlo.outfeed`` and ``check.expect_serialized_eq``
materialize their operand and record a :class:`Record`
in ``FuncLowering.checks`` (as the ``check.*`` ops do, :mod:`frontend.lower.families.checks`): the
buffer becomes an extra result that ``tlc interpret`` (``backend_opencl/tools/interpret.py``)
prints, saves or compares after the run.  ``interpreter.probe`` records every execution
(each iteration of an enclosing loop) in a history buffer; its result is its operand.

``stablehlo.infeed`` takes the next arrays of the queue set with :func:`infeed_queue`
(``tlc interpret --infeed``, or the ``infeed`` functions of ``interpreter.run_parallel``):
they become constants of the compiled plan.  Tokens have no run-time value.

``stablehlo.collective_reduce`` (used by the interpret suite, not in the spec) reduces over
each process group into the group's first process; the others get zeros.  With one
process the group is that process, which is the root: the result is the operand.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from frontend.ir.core import Op
from frontend.ir.types import TensorType
from frontend.lower.core import types
from frontend.lower.core.builder import num_groups
from frontend.lower.core.driver import FuncLowering, constant_bytes
from frontend.lower.core.registry import kernel
from tensorlang.diagnostics import CompileError, Loc


@dataclass(frozen=True)
class Record:
    """An extra result for the interpreter: ``kind`` is ``print``, ``probe`` (its value is
    the history of ``iteration`` slots, the next record's value the count), ``outfeed``,
    ``serialized`` (check.expect_serialized_eq) or ``value`` (read by the record before);
    ``name`` the probe id, ``iteration`` the checked probe iteration."""

    kind: str
    name: str | None
    loc: Loc | None
    iteration: int = 0
    expected: None = None
    tolerance: None = None


_INFEED: ContextVar[list[np.ndarray] | None] = ContextVar("tlc_infeed", default=None)


@contextmanager
def infeed_queue(arrays: list[np.ndarray]) -> Iterator[list[np.ndarray]]:
    """Lowerings inside the block take ``stablehlo.infeed`` results from ``arrays`` (in
    order; the list is consumed)."""
    token = _INFEED.set(arrays)
    try:
        yield arrays
    finally:
        _INFEED.reset(token)


def _record(lw: FuncLowering, op: Op, kind: str, name: str | None = None,
            iteration: int = 0) -> None:
    for v in op.operands:
        if isinstance(v.type, TensorType):
            lw.checks.append((lw.materialize(v), Record(kind, name, op.loc, iteration)))


@kernel("interpreter.print")
def print_(lw: FuncLowering, op: Op) -> None:
    """Printed by the interpreter after the run."""
    _record(lw, op, "print")


PROBE_ITERATIONS = 256
"""Iterations a probe keeps (in a loop body; later ones overwrite the last), fewer for big
tensors (at most ``PROBE_BYTES`` in all)."""
PROBE_BYTES = 1 << 26


@kernel("interpreter.probe")
def probe(lw: FuncLowering, op: Op) -> None:
    """Every execution of the probe (each iteration of an enclosing loop) stores the
    operand into the next slot of a history buffer, counted in a device counter; both
    come back as extra results and the interpreter saves each iteration.  The result is
    the operand."""
    v = op.operands[0]
    buf = lw.materialize(v)
    n, t, shape = types.size(v), types.elem(v), types.shape(v)
    cap = max(1, min(PROBE_ITERATIONS, PROBE_BYTES // max(8 * n, 1)))
    hist = lw.new_buffer(t, (cap, *shape))
    # the second word only keeps this counter's initial bytes distinct from any other's
    counter = lw.new_buffer("i64", (2,), np.array([0, len(lw.buffers)], np.int64).tobytes())
    if n:
        with lw.kernel("probe") as (k, _):
            with k.elements(n) as i:
                count = k.to_index(k.load(counter, "i64", 2, 0), "i64")
                last = k.idx(cap - 1)
                slot = k.select(k.cmp("lt", count, last, "index"), count, last, "index")
                k.store(k.load(buf, t, n, i), hist, t, cap * n, k.iadd(k.imul(slot, n), i))
        lw.launch_last(num_groups(n))
    with lw.kernel("probe_count") as (k, _):
        with k.elements(1) as i:
            count = k.load(counter, "i64", 2, i)
            k.store(k.arith("add", count, k.const(1, "i64"), "i64"), counter, "i64", 2, i)
    lw.launch_last(1)
    lw.checks.append((hist, Record("probe", str(op.attr("probe_id")), op.loc, cap)))
    lw.checks.append((counter, Record("value", None, op.loc)))
    lw.bind(op.result, buf)


@kernel("check.expect_serialized_eq")
def expect_serialized_eq(lw: FuncLowering, op: Op) -> None:
    """Compared by the interpreter with probe ``probe_id``'s iteration ``iter``."""
    _record(lw, op, "serialized", str(op.attr("probe_id")), op.int_attr("iter", 0))


@kernel("stablehlo.outfeed")
def outfeed(lw: FuncLowering, op: Op) -> None:
    """Written by the interpreter after the run."""
    _record(lw, op, "outfeed")


@kernel("stablehlo.infeed")
def infeed(lw: FuncLowering, op: Op) -> None:
    """The next arrays of the infeed queue, as constants."""
    queue = _INFEED.get()
    for r in op.results:
        if not isinstance(r.type, TensorType):
            continue
        if queue is None:
            raise CompileError.at(op.loc, "'stablehlo.infeed' is not supported yet outside "
                                  "`tlc interpret` (which feeds it from --infeed)")
        if not queue:
            raise CompileError.at(op.loc, "'stablehlo.infeed' has no data left: give it "
                                  "with `tlc interpret --infeed FILE.npz` or an infeed "
                                  "function of interpreter.run_parallel")
        data = np.asarray(queue.pop(0))
        shape, dtype = tuple(types.shape(r)), types.elem(r)
        if data.shape != shape:
            raise CompileError.at(op.loc, f"'stablehlo.infeed': the infeed array has shape "
                                  f"{data.shape}, the result {shape}")
        lw.bind(r, lw.new_buffer(dtype, shape, constant_bytes(data, dtype)))


@kernel("stablehlo.collective_reduce")
def collective_reduce(lw: FuncLowering, op: Op) -> None:
    """One process: it is its group's root, so every result is its operand."""
    value = op.attrs.get("replica_groups")
    ids = np.asarray(getattr(value, "array", [[0]]), dtype=np.int64).reshape(-1)
    if len(set(ids[ids >= 0].tolist()) - {0}):
        raise CompileError.at(op.loc, "'stablehlo.collective_reduce' across more than one "
                              "process needs MPI (interpreter.run_parallel)")
    for r, v in zip(op.results, op.operands, strict=True):
        lw.bind(r, lw.materialize(v))
