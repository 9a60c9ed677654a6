"""Tokens and collectives for one process (one replica, one partition).

Tokens carry no data: ``after_all`` and ``create_token`` lower to nothing (their results
are the token buffer, ``FuncLowering.token``). With a single process every collective's
group is that process alone, so the spec's results are:
``all_reduce`` / ``all_gather`` / ``reduce_scatter`` / ``all_to_all`` /
``collective_broadcast``: the operands; ``collective_permute``: the operand when the
process sends to itself, else zeros; ``replica_id`` / ``partition_id``: 0.
"""

from __future__ import annotations

import numpy as np

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental, kernel
from tensorlang.diagnostics import CompileError


@kernel("stablehlo.after_all", "stablehlo.create_token")
def token(lw: FuncLowering, op: Op) -> None:
    """Tokens have no run-time representation."""


@elemental("stablehlo.replica_id", "stablehlo.partition_id", cheap=True)
def process_id(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """The only process is number 0."""
    return f.k.const(0, types.elem(op.result))


def _ids(op: Op, name: str) -> np.ndarray:
    """The process ids of attribute ``name`` (padding -1 dropped)."""
    value = op.attr(name)
    if value is None:
        return np.zeros(0, dtype=np.int64)
    ids = np.asarray(getattr(value, "array", value), dtype=np.int64).reshape(-1)
    return ids[ids >= 0]


def _one_process(op: Op) -> None:
    """A CompileError unless ``op`` runs within one process."""
    ids = _ids(op, "replica_groups")
    if len(set(ids.tolist()) - {0}) or (op.attr("split_count") not in (None, 1)):
        raise CompileError.at(op.loc, f"'{op.name}' across more than one process is not "
                              "supported yet")
    for v, r in zip(op.operands, op.results, strict=False):
        if types.shape(v) != types.shape(r):
            raise CompileError.at(op.loc, f"'{op.name}' changing the shape is not "
                                  "supported yet")


@kernel("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
        "stablehlo.all_to_all", "stablehlo.collective_broadcast")
def identity_collective(lw: FuncLowering, op: Op) -> None:
    """One process: every result is its operand."""
    _one_process(op)
    for r, v in zip(op.results, op.operands[:len(op.results)], strict=True):  # no root
        lw.bind(r, lw.materialize(v))


@kernel("stablehlo.collective_permute")
def collective_permute(lw: FuncLowering, op: Op) -> None:
    """One process: the operand when the pairs send 0 to 0, zeros when nothing arrives."""
    pairs = _ids(op, "source_target_pairs").reshape(-1, 2)
    if len(set(pairs.reshape(-1).tolist()) - {0}):
        raise CompileError.at(op.loc, f"'{op.name}' across more than one process is not "
                              "supported yet")
    (v,) = op.operands
    if len(pairs):
        lw.bind(op.result, lw.materialize(v))
        return
    out = lw.buffer_for(op.result)
    n, t = types.size(op.result), types.elem(op.result)
    with lw.kernel("zeros") as (k, _):
        with k.elements(n) as i:
            k.store(k.const(0, t), out, t, n, i)
    lw.launch_last(num_groups(n))
    lw.bind(op.result, out)
