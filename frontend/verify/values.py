"""Ops that make values or move them: constant, ids, rng, tokens, infeed/outfeed,
send/recv and the quantization conversions."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import (
    FloatType,
    IntegerType,
    QuantizedType,
    TensorType,
    TokenType,
    is_int,
)
from frontend.verify.common import dims, fail, shapes_ok, tensor, verifies
from frontend.verify.quant import check_uniform_quantize


@verifies("constant")
def verify_constant(op: Op) -> None:
    """(C1) type(value) = type(output)."""
    value = op.attrs["value"]
    t = getattr(value, "type", None)
    if t != op.result_types[0]:
        fail(op, "C1", f"value has type {t} but the result is {op.result_types[0]}")


@verifies("replica_id", "partition_id")
def verify_ids(op: Op) -> None:
    """The result is tensor<ui32>."""
    want = TensorType((), IntegerType(32, unsigned=True))
    if op.result_types[0] != want:
        fail(op, "", f"result must be {want}, got {op.result_types[0]}")


@verifies("after_all")
def verify_after_all(op: Op) -> None:
    """Operands and result are tokens."""
    for v in op.operands:
        if not isinstance(v.type, TokenType):
            fail(op, "", f"inputs must be !stablehlo.token, got {v.type}", v)
    if not isinstance(op.result_types[0], TokenType):
        fail(op, "", f"result must be !stablehlo.token, got {op.result_types[0]}")


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


@verifies("rng")
def verify_rng(op: Op) -> None:
    """(C1) element types agree, (C2) NORMAL needs floats, (C3) shape operand size."""
    a, b = tensor(op, op.operands[0], "a"), tensor(op, op.operands[1], "b")
    shape = tensor(op, op.operands[2], "shape")
    r = tensor(op, op.result_types[0], "result")
    if not a.element == b.element == r.element:
        fail(op, "C1", f"a, b and result element types differ: {a.element}, {b.element}, "
                       f"{r.element}")
    if op.attr("rng_distribution") == "NORMAL" and not isinstance(a.element, FloatType):
        fail(op, "C2", f"NORMAL distribution needs a float element type, got {a.element}")
    if shape.rank != 1 or not is_int(shape.element):
        fail(op, "C3", f"shape must be a 1-D integer tensor, got {shape}")
    if shape.shape[0] is not None and shape.shape[0] != r.rank:
        fail(op, "C3", f"shape has {shape.shape[0]} entries for a result of rank {r.rank}")


@verifies("uniform_quantize")
def verify_uniform_quantize(op: Op) -> None:
    """(C1) shape kept, (C2) the result's expressed type."""
    t, r = tensor(op, op.operands[0], "operand"), tensor(op, op.result_types[0], "result")
    if not shapes_ok(t.shape, r.shape):
        fail(op, "C1", f"result shape {dims(r.shape)} differs from operand shape "
                       f"{dims(t.shape)}")
    check_uniform_quantize(op, t, r)


@verifies("uniform_dequantize")
def verify_uniform_dequantize(op: Op) -> None:
    """(C1) shape kept, (C2) result element = the operand's expressed type."""
    t, r = tensor(op, op.operands[0], "operand"), tensor(op, op.result_types[0], "result")
    if not shapes_ok(t.shape, r.shape):
        fail(op, "C1", f"result shape {dims(r.shape)} differs from operand shape "
                       f"{dims(t.shape)}")
    if not isinstance(t.element, QuantizedType):
        fail(op, "", f"operand element type must be quantized, got {t.element}")
    if r.element != t.element.expressed:
        fail(op, "C2", f"result element type must be {t.element.expressed}, got {r.element}")
