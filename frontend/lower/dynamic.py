"""Dynamic ops whose shape operands are constants in the program: dynamic_pad,
dynamic_gather, real_dynamic_slice and dynamic_conv lower as pad, gather, slice and
convolution with the constants as attributes.  Shape operands computed at run time
raise a CompileError.

Also :func:`update_in_place`: a ``dynamic_update_slice`` whose operand buffer dies at the
update (a loop carry, :mod:`frontend.lower.control`) writes only the slice into it."""

from __future__ import annotations

from typing import Any

import numpy as np

from frontend.ir.core import Op, Value
from frontend.lower import scatter_gather, shape, types
from frontend.lower.builder import IndexExpr, groups_nd
from frontend.lower.driver import FuncLowering
from frontend.lower.fused import Fused
from frontend.lower.registry import KERNEL, elemental, kernel
from tensorlang.diagnostics import CompileError


class _Static:
    """``op`` seen with some operands turned into attributes (what the static lowerings
    read through ``attr``)."""

    def __init__(self, op: Op, attrs: dict[str, object]) -> None:
        self._op = op
        self._attrs = attrs

    def attr(self, name: str, default: object = None) -> object:
        return self._attrs[name] if name in self._attrs else self._op.attr(name, default)

    @property
    def attrs(self) -> dict[str, object]:
        """The op's attributes and the static ones (with ``py`` and ``array``)."""
        return {**self._op.attrs, **{n: _Attr(v) for n, v in self._attrs.items()}}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._op, name)


class _Attr:
    """A static attribute value as the IR's attributes expose it."""

    def __init__(self, value: object) -> None:
        self.py = value
        self.array = np.asarray(value)


def constant_ints(op: Op, v: Value) -> list[int]:
    """The values of ``v`` when a ``stablehlo.constant`` defines it, else a CompileError."""
    owner = v.owner
    if not isinstance(owner, Op) or owner.name != "stablehlo.constant":
        raise CompileError.at(op.loc, f"'{op.name}' with shape operands computed at run time "
                              "is not supported yet")
    array = np.asarray(owner.attrs["value"].array)  # type: ignore[attr-defined]
    return [int(x) for x in array.reshape(-1)]


@elemental("stablehlo.dynamic_pad")
def dynamic_pad(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """pad with constant edge and interior padding."""
    low = constant_ints(op, op.operand("edge_padding_low"))
    interior = constant_ints(op, op.operand("interior_padding"))
    static = _Static(op, {"edge_padding_low": low, "interior_padding": interior})
    return shape.pad(f, static, idx)  # type: ignore[arg-type]


@elemental("stablehlo.dynamic_gather")
def dynamic_gather(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """gather with constant slice sizes."""
    sizes = constant_ints(op, op.operand("slice_sizes"))
    return scatter_gather.gather(f, _Static(op, {"slice_sizes": sizes}), idx)  # type: ignore


@elemental("stablehlo.real_dynamic_slice")
def real_dynamic_slice(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """slice with constant start indices and strides (the limits fix the static shape)."""
    start = constant_ints(op, op.operand("start_indices"))
    strides = constant_ints(op, op.operand("strides"))
    static = _Static(op, {"start_indices": start, "strides": strides})
    return shape.slice_(f, static, idx)  # type: ignore[arg-type]


@kernel("stablehlo.dynamic_conv")
def dynamic_conv(lw: FuncLowering, op: Op) -> None:
    """convolution with constant padding."""
    pad = np.asarray(constant_ints(op, op.operand("padding")), dtype=np.int64)
    KERNEL["stablehlo.convolution"](lw, _Static(op, {"padding": pad.reshape(-1, 2)}))  # type: ignore


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
