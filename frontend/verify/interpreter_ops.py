"""The reference interpreter's ops (interpreter.print, interpreter.probe,
interpreter.run_parallel) and stablehlo.collective_reduce, which the interpret suite uses
but the spec does not define (its rules are all_reduce's)."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.verify.collective import verify_all_reduce
from frontend.verify.common import fail, types_ok, verifies

verifies("collective_reduce")(verify_all_reduce)


@verifies("interpreter.probe")
def verify_probe(op: Op) -> None:
    """A string probe_id; the result is the operand."""
    if not isinstance(op.attr("probe_id"), str) or not op.attr("probe_id"):
        fail(op, "", "probe_id must be a non-empty string")
    if not types_ok(op.operands[0].type, op.result_types[0]):
        fail(op, "", f"result type {op.result_types[0]} differs from the operand type "
                     f"{op.operands[0].type}")


@verifies("interpreter.run_parallel")
def verify_run_parallel(op: Op) -> None:
    """programs: a non-empty list (replicas) of equally long non-empty lists (partitions)
    of function symbols; infeed: a list of function symbols."""
    programs = op.attr("programs")
    rows = programs if isinstance(programs, (list, tuple)) else None
    if not rows or not all(isinstance(r, (list, tuple)) and r for r in rows) \
            or len({len(r) for r in rows}) != 1:
        fail(op, "", "programs must be a non-empty list of equally long non-empty lists of "
                     "function symbols")
    infeed = op.attr("infeed", [])
    if not isinstance(infeed, (list, tuple)):
        fail(op, "", "infeed must be a list of function symbols")
