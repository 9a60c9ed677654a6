"""The reference interpreter's ops (interpreter.print, interpreter.probe,
interpreter.run_parallel) and stablehlo.collective_reduce, which the interpret suite uses
but the spec does not define (its rules are all_reduce's); infeed/recv and outfeed/send."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import TensorType, TokenType
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


def _token_last(op: Op, types: list[object], what: str, rule: str = "") -> None:
    if not types or not isinstance(types[-1], TokenType):
        fail(op, rule, f"the last {what} must be !stablehlo.token")


@verifies("infeed", "recv")
def verify_receive(op: Op) -> None:
    """Takes a token; (C1)-(C3) of infeed, (C1)-(C4) of recv: tensors, then a token."""
    recv = op.name.endswith("recv")
    _token_last(op, [v.type for v in op.operands], "operand")
    _token_last(op, list(op.result_types), "result", "C4" if recv else "C3")
    for t in op.result_types[:-1]:
        if not isinstance(t, TensorType):
            fail(op, "C3" if recv else "C2", f"results before the token must be tensors, "
                                             f"got {t}")
    if recv:
        _channel_type(op, "HOST_TO_DEVICE")


@verifies("outfeed", "send")
def verify_send(op: Op) -> None:
    """Takes values and a token; the result is a token; send's (C1) channel type."""
    _token_last(op, [v.type for v in op.operands], "operand")
    _token_last(op, list(op.result_types), "result")
    if op.name.endswith("send"):
        _channel_type(op, "DEVICE_TO_HOST")


_CHANNEL_TYPES = {0: "CHANNEL_TYPE_INVALID", 1: "DEVICE_TO_DEVICE", 2: "DEVICE_TO_HOST",
                  3: "HOST_TO_DEVICE"}


def _channel_type(op: Op, host: str) -> None:
    """(C1): the channel type is ``host`` for host transfers, else DEVICE_TO_DEVICE."""
    handle = op.attr("channel_handle")
    if not isinstance(handle, dict) or not isinstance(handle.get("type"), int) or \
            not handle["type"]:
        return  # absent or 0 (unspecified)
    want = host if op.attr("is_host_transfer", False) else "DEVICE_TO_DEVICE"
    got = _CHANNEL_TYPES.get(handle["type"], str(handle["type"]))
    if got != want:
        fail(op, "C1", f"channel type must be {want}, got {got}")
