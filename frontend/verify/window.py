"""Windowed ops: num_windows arithmetic shared by convolution, reduce_window and
select_and_scatter, and the verifiers of the latter two."""

from __future__ import annotations

from collections.abc import Sequence

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.ir.types import IntegerType, TensorType, Type
from frontend.verify.common import dims, fail, region_results, shapes_ok, tensor, types_ok, verifies


def num_windows(size: int | None, window: int, stride: int, pad: tuple[int, int],
                base_dilation: int = 1, window_dilation: int = 1) -> int | None:
    """Number of window positions along one dimension (None for a dynamic size)."""
    if size is None:
        return None
    dilated_in = 0 if size == 0 else (size - 1) * base_dilation + 1
    padded = pad[0] + dilated_in + pad[1]
    dilated_window = 0 if window == 0 else (window - 1) * window_dilation + 1
    if padded <= 0 or dilated_window > padded:
        return 0
    return (padded - dilated_window) // stride + 1


def padding_of(op: Op, rank: int, rule: str) -> list[tuple[int, int]]:
    """The ``padding`` attribute as (low, high) pairs; absent means zeros."""
    a = op.attrs.get("padding")
    if a is None:
        return [(0, 0)] * rank
    if not isinstance(a, A.DenseElementsAttr) or a.array.shape != (rank, 2):
        shape = a.array.shape if isinstance(a, A.DenseElementsAttr) else "not a tensor"
        fail(op, rule, f"padding must have shape [{rank}, 2], got {shape}")
    return [(int(lo), int(hi)) for lo, hi in a.array.tolist()]


def sized(op: Op, name: str, rank: int, default: int, rules: tuple[str, str]) -> list[int]:
    """An i64 array attribute of ``rank`` positive entries (``default`` when absent)."""
    values = op.ints_attr(name, [default] * rank)
    if len(values) != rank:
        fail(op, rules[0], f"{name} must have {rank} entries, got {len(values)}")
    if any(v <= 0 for v in values):
        fail(op, rules[1], f"{name} must be positive, got {values}")
    return values


@verifies("reduce_window")
def verify_reduce_window(op: Op) -> None:
    """(C1)-(C16) of reduce_window."""
    inputs = [tensor(op, v, "input") for v in op.operand_group("inputs")]
    inits = [tensor(op, v, "init value") for v in op.operand_group("init_values")]
    if not inputs or len(inputs) != len(op.results):
        fail(op, "C1", "needs N > 0 inputs, N init values and N results")
    rank = inputs[0].rank
    for t, i in zip(inputs, inits, strict=False):
        if not shapes_ok(t.shape, inputs[0].shape):
            fail(op, "C2", f"input shapes differ: {dims(inputs[0].shape)} vs {dims(t.shape)}")
        if t.element != i.element:
            fail(op, "C3", f"input element type {t.element} differs from init's {i.element}")
    window = sized(op, "window_dimensions", rank, 1, ("C4", "C5"))
    strides = sized(op, "window_strides", rank, 1, ("C6", "C7"))
    base = sized(op, "base_dilations", rank, 1, ("C8", "C9"))
    wdil = sized(op, "window_dilations", rank, 1, ("C10", "C11"))
    pad = padding_of(op, rank, "C12")
    scalars = [TensorType((), t.element) for t in inits]
    args = [a.type for a in op.regions[0].block.args]
    got = region_results(op, op.regions[0], "body")
    if not (_all_ok(args, scalars * 2) and _all_ok(got, scalars)):
        fail(op, "C13", f"body must take ({', '.join(map(str, scalars * 2))}) and return "
                        f"({', '.join(map(str, scalars))})")
    want = tuple(num_windows(*x) for x in zip(inputs[0].shape, window, strides, pad, base,
                                              wdil, strict=True))
    for r, s in zip(op.result_types, scalars, strict=False):
        rt = tensor(op, r, "result")
        if not shapes_ok(want, rt.shape):
            fail(op, "C15", f"result shape must be {dims(want)}, got {dims(rt.shape)}")
        if rt.element != s.element:
            fail(op, "C16", f"result element type must be {s.element}, got {rt.element}")


def _all_ok(a: Sequence[Type], b: Sequence[Type]) -> bool:
    return len(a) == len(b) and all(types_ok(x, y) for x, y in zip(a, b, strict=True))


@verifies("select_and_scatter")
def verify_select_and_scatter(op: Op) -> None:
    """(C1)-(C12) of select_and_scatter."""
    operand = tensor(op, op.operands[0], "operand")
    source = tensor(op, op.operands[1], "source")
    init = tensor(op, op.operands[2], "init_value")
    if operand.element != source.element:
        fail(op, "C1", f"source element type {source.element} differs from operand's "
                       f"{operand.element}")
    if init.element != operand.element:
        fail(op, "C3", f"init_value element type {init.element} differs from operand's "
                       f"{operand.element}")
    rank = operand.rank
    window = sized(op, "window_dimensions", rank, 1, ("C4", "C5"))
    strides = sized(op, "window_strides", rank, 1, ("C6", "C7"))
    pad = padding_of(op, rank, "C8")
    want = tuple(num_windows(*x) for x in zip(operand.shape, window, strides, pad,
                                              strict=True))
    if not shapes_ok(want, source.shape):
        fail(op, "C2", f"source shape must be {dims(want)}, got {dims(source.shape)}")
    scalar = TensorType((), operand.element)
    select, scatter = op.regions
    if not (_all_ok([a.type for a in select.block.args], [scalar] * 2) and _all_ok(
            region_results(op, select, "select"), [TensorType((), IntegerType(1))])):
        fail(op, "C9", f"select must have type ({scalar}, {scalar}) -> tensor<i1>")
    if not (_all_ok([a.type for a in scatter.block.args], [scalar] * 2) and _all_ok(
            region_results(op, scatter, "scatter"), [scalar])):
        fail(op, "C10", f"scatter must have type ({scalar}, {scalar}) -> {scalar}")
    result = tensor(op, op.result_types[0], "result")
    if not shapes_ok(operand.shape, result.shape):
        fail(op, "C11", f"result shape must be {dims(operand.shape)}, got {dims(result.shape)}")
    if result.element != operand.element:
        fail(op, "C12", f"result element type must be {operand.element}")
