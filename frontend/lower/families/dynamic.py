"""Dynamic ops whose shape operands are constants in the program: dynamic_pad,
dynamic_gather, real_dynamic_slice and dynamic_conv lower as pad, gather, slice and
convolution with the constants as attributes.  Shape operands computed at run time
raise a CompileError.

Also :func:`update_in_place`: a ``dynamic_update_slice`` whose operand buffer dies at the
update (a loop carry, :mod:`frontend.lower.families.control.flow`) writes only the slice into it."""

from __future__ import annotations

import dataclasses

import numpy as np

from frontend.ir.attrs import Attr, DenseArrayAttr, DenseElementsAttr
from frontend.ir.core import Op, Value
from frontend.ir.types import IntegerType, TensorType
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, groups_nd
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import KERNEL, elemental, kernel
from frontend.lower.families import scatter_gather, shape
from tensorlang.diagnostics import CompileError


def _static(op: Op, attrs: dict[str, Attr]) -> Op:
    """``op`` with some operands turned into attributes (what the static lowerings read);
    its operands and results are ``op``'s own."""
    return dataclasses.replace(op, attrs={**op.attrs, **attrs})


def _i64s(values: list[int]) -> DenseArrayAttr:
    return DenseArrayAttr("i64", tuple(values))


def constant_ints(op: Op, v: Value) -> list[int]:
    """The values of ``v`` when a ``stablehlo.constant`` defines it, else a CompileError."""
    owner = v.owner
    if not isinstance(owner, Op) or owner.name != "stablehlo.constant":
        raise CompileError.at(op.loc, f"'{op.name}' with shape operands computed at run time "
                              "is not supported yet")
    array = np.asarray(owner.dense_attr("value"))
    return [int(x) for x in array.reshape(-1)]


@elemental("stablehlo.dynamic_pad")
def dynamic_pad(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """pad with constant edge and interior padding."""
    low = constant_ints(op, op.operand("edge_padding_low"))
    interior = constant_ints(op, op.operand("interior_padding"))
    static = _static(op, {"edge_padding_low": _i64s(low), "interior_padding": _i64s(interior)})
    return shape.pad(f, static, idx)


@elemental("stablehlo.dynamic_gather")
def dynamic_gather(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """gather with constant slice sizes."""
    sizes = constant_ints(op, op.operand("slice_sizes"))
    return scatter_gather.gather(f, _static(op, {"slice_sizes": _i64s(sizes)}), idx)


@elemental("stablehlo.real_dynamic_slice")
def real_dynamic_slice(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """slice with constant start indices and strides (the limits fix the static shape)."""
    start = constant_ints(op, op.operand("start_indices"))
    strides = constant_ints(op, op.operand("strides"))
    static = _static(op, {"start_indices": _i64s(start), "strides": _i64s(strides)})
    return shape.slice_(f, static, idx)


@kernel("stablehlo.dynamic_conv")
def dynamic_conv(lw: FuncLowering, op: Op) -> None:
    """convolution with constant padding."""
    pad = np.asarray(constant_ints(op, op.operand("padding")), dtype=np.int64).reshape(-1, 2)
    padding = DenseElementsAttr(TensorType(pad.shape, IntegerType(64)), pad)
    KERNEL["stablehlo.convolution"](lw, _static(op, {"padding": padding}))


def update_in_place(lw: FuncLowering, op: Op, buffer: int) -> None:
    """``dynamic_update_slice`` ``op`` into ``buffer``, which holds its operand and which
    nothing reads afterwards: one kernel writes the update's elements at the (clamped)
    start indices, the rest of the buffer stays as it is."""
    update = op.operand("update")
    ushape, oshape = types.shape(update), types.shape(op.result)
    dtype, size = types.elem(op.result), types.size(op.result)
    with lw.kernel("update_in_place") as (k, f):
        with k.elements_nd(ushape) as idx:
            starts = scatter_gather._dynamic_starts(f, op, list(ushape))
            at = [k.iadd(s, i) for s, i in zip(starts, idx, strict=True)]
            k.store(f.value(update, idx), buffer, dtype, size, k.linear(at, oshape))
    lw.launch_last(groups_nd(ushape) if types.size(update) else 0)
