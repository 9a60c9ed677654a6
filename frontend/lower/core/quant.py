"""Quantized element types: stored as their storage integers, computed in float.

A ``tensor<... x !quant.uniform<i8:f32, scale:zero_point>>`` lives in a buffer of its
storage type (``types.scalar_name``), so results handed back are the storage integers.
Ops on quantized tensors follow the spec's ``dequantize_op_quantize``: every quantized
operand is dequantized, the op runs on the expressed (float) type, and a quantized
result is quantized again, all in the one kernel the op fuses into.

The lowering of ``op`` does this through a *shadow*: a copy of ``op`` whose quantized
operands are replaced by (synthetic, elemental) ``uniform_dequantize`` values and whose
quantized result types are replaced by their expressed types.  The op's own lowering
(elemental or kernel) then runs unchanged on floats:

* ``Fused._elemental`` asks :func:`requantizes` and calls :func:`lower_elemental`;
* ``FuncLowering.lower_op`` does the same for kernel ops with :func:`lower_kernel`.

Ops that only move elements (reshape, transpose, slice, gather, select, ...) keep the
storage integers when every quantized type they touch has the same parameters, and so do
control flow and the conversions between storage and quantized types.  Ops with a
computation region (reduce, sort, map, scatter, ...) on quantized tensors raise "not
supported yet".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

import ml_dtypes
import numpy as np

from frontend.ir.core import Block, Op, Value
from frontend.ir.quant import is_quantized, quantized_element, storage_bounds
from frontend.ir.types import QuantizedType, TensorType, Type
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.registry import ELEMENTAL, KERNEL
from tensorlang.diagnostics import CompileError

if TYPE_CHECKING:
    from frontend.lower.core.driver import FuncLowering
    from frontend.lower.core.fused import Fused


class Mode(Enum):
    """How an op's quantized values are lowered."""

    PLAIN = "no quantized values"
    STORAGE = "on the storage integers"
    REQUANTIZE = "dequantize, op in float, quantize"


_STORAGE_OPS = {
    "stablehlo.uniform_quantize", "stablehlo.uniform_dequantize", "stablehlo.bitcast_convert",
    "stablehlo.while", "stablehlo.if", "stablehlo.case", "func.call", "stablehlo.composite",
    "func.return", "stablehlo.return", "stablehlo.tuple", "stablehlo.get_tuple_element",
    "stablehlo.optimization_barrier", "stablehlo.custom_call",
}
"""Ops that handle quantized types themselves or only pass values around."""

_MOVING_OPS = {
    "stablehlo.constant", "stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim",
    "stablehlo.broadcast", "stablehlo.reshape", "stablehlo.dynamic_reshape",
    "stablehlo.transpose", "stablehlo.slice", "stablehlo.dynamic_slice",
    "stablehlo.real_dynamic_slice", "stablehlo.dynamic_update_slice", "stablehlo.reverse",
    "stablehlo.concatenate", "stablehlo.pad", "stablehlo.dynamic_pad", "stablehlo.gather",
    "stablehlo.dynamic_gather", "stablehlo.select", "stablehlo.all_gather",
    "stablehlo.all_to_all", "stablehlo.collective_broadcast", "stablehlo.collective_permute",
}
"""Ops whose result elements are operand elements: storage integers pass through when
the quantization parameters agree (per-axis: the quantized dimension may move)."""


def _values(op: Op) -> list[Value]:
    return [*op.operands, *op.results]


def mode(op: Op) -> Mode:
    """How ``op`` is lowered, or a CompileError at ``op`` when that is not supported yet."""
    quantized = [q for v in _values(op) if (q := quantized_element(v.type)) is not None]
    if not quantized:
        return Mode.PLAIN
    if op.name in _STORAGE_OPS or op.name.startswith("check."):
        return Mode.STORAGE
    if op.name in _MOVING_OPS and len({replace(q, axis=None) for q in quantized}) == 1:
        return Mode.STORAGE
    if op.regions:
        raise CompileError.at(op.loc, f"'{op.name}' on quantized tensors is not supported "
                              "yet")
    return Mode.REQUANTIZE


def requantizes(op: Op) -> bool:
    """True when ``op`` computes as dequantize, float op, quantize (raises when ``op``'s
    quantized values are not supported)."""
    return mode(op) is Mode.REQUANTIZE


# -- the shadow op ---------------------------------------------------------------------------

_SHADOWS: WeakKeyDictionary[Op, Op] = WeakKeyDictionary()
"""Elemental shadows, one per op: their values' identities key a kernel's memo."""
_DEQUANTIZED: WeakKeyDictionary[Op | Block, dict[int, Value]] = WeakKeyDictionary()


def expressed(t: Type) -> Type:
    """The tensor type of the float values of quantized tensor type ``t`` (else ``t``)."""
    if is_quantized(t):
        assert isinstance(t, TensorType) and isinstance(t.element, QuantizedType)
        return TensorType(t.shape, t.element.expressed, t.bounds)
    return t


def _synthetic(name: str, operand: Value, result_type: Type) -> Value:
    """The result of a new ``name`` op on ``operand`` (not part of any block)."""
    op = Op(name, [operand], [result_type], {}, [], operand.loc)
    op.results = [Value(result_type, op, 0, f"{operand.name}.{name.split('.')[-1]}",
                        operand.loc)]
    return op.result


def dequantized(v: Value, fresh: bool = False) -> Value:
    """A float value equal to ``uniform_dequantize(v)``; lazy, so it fuses where used.

    The same value is returned for the same ``v`` (so consumers in one kernel share the
    dequantized element) unless ``fresh``: kernel lowerings may bind what they materialize
    to it, and a binding made inside a region must not leak to a later kernel op."""
    if fresh:
        return _synthetic("stablehlo.uniform_dequantize", v, expressed(v.type))
    known = _DEQUANTIZED.setdefault(v.owner, {})
    if v.index not in known:
        known[v.index] = _synthetic("stablehlo.uniform_dequantize", v, expressed(v.type))
    return known[v.index]


def shadow(op: Op, fresh: bool = False) -> Op:
    """``op`` on the float values of its quantized operands, with float results."""
    if not fresh and op in _SHADOWS:
        return _SHADOWS[op]
    operands = [dequantized(v, fresh) if is_quantized(v.type) else v for v in op.operands]
    result_types = [expressed(t) for t in op.result_types]
    copy = Op(op.name, operands, result_types, op.attrs, op.regions, op.loc,
              origin=op.origin)
    copy.results = [Value(t, copy, i, r.name, r.loc)
                    for i, (t, r) in enumerate(zip(result_types, op.results, strict=True))]
    if not fresh:
        _SHADOWS[op] = copy
    return copy


def lower_elemental(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Element ``idx`` of ``op``'s result computed as dequantize, float op, quantize."""
    copy = shadow(op)
    x = ELEMENTAL[op.name](f, copy, idx)
    return quantize(f, x, op.result, idx) if is_quantized(op.result.type) else x


def lower_kernel(lw: FuncLowering, op: Op) -> None:
    """The kernel lowering of ``op`` run on floats; quantized results are quantized by one
    more (fused) kernel each."""
    copy = shadow(op, fresh=True)
    KERNEL[op.name](lw, copy)
    for result, float_result in zip(op.results, copy.results, strict=True):
        if is_quantized(result.type):
            quantized = _synthetic("stablehlo.uniform_quantize", float_result, result.type)
            lw.bind(result, lw.materialize(quantized))
        elif (buf := lw.buffer_of(float_result)) is not None:  # tokens have none
            lw.bind(result, buf)


# -- quantize and dequantize -----------------------------------------------------------------


def _element(v: Value) -> QuantizedType:
    t = v.type
    assert isinstance(t, TensorType) and isinstance(t.element, QuantizedType), t
    return t.element


def _expressed_name(q: QuantizedType) -> str:
    name = types.scalar_name(q.expressed)
    assert name is not None, q
    return name


def _wide_int(q: QuantizedType) -> str:
    """The integer type in which ``storage - zero_point`` cannot overflow."""
    return "i32" if q.storage.width <= 16 else "i64"


_TABLES: WeakKeyDictionary[FuncLowering, dict[tuple[object, ...], int]] = WeakKeyDictionary()


def _parameter(f: Fused, q: QuantizedType, values: Sequence[float | int], dtype: str,
               idx: Sequence[IndexExpr]) -> str:
    """The scale or zero point (``values``, one per slice) of element ``idx``: a constant,
    or for per-axis quantization a load from a constant table indexed by the slice."""
    k = f.k
    if len(set(values)) == 1:
        return k.const(values[0], dtype)
    assert q.axis is not None
    i = idx[q.axis]
    if isinstance(i, int):
        return k.const(values[i], dtype)
    tables = _TABLES.setdefault(f.lw, {})
    key = (dtype, tuple(values))
    if key not in tables:
        data = np.asarray(values, dtype=_NUMPY[dtype]).tobytes()
        tables[key] = f.lw.new_buffer(dtype, (len(values),), data)
    return k.load(tables[key], dtype, len(values), i)


_NUMPY: dict[str, type] = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32,
                           "f64": np.float64, "i32": np.int32, "i64": np.int64}


def dequantize(f: Fused, x: str, v: Value, idx: Sequence[IndexExpr]) -> str:
    """``(x - zero_point) * scale`` in the expressed type, for storage integer ``x`` of
    element ``idx`` of quantized ``v`` (the difference is taken in a wider integer)."""
    q = _element(v)
    k = f.k
    wide, e = _wide_int(q), _expressed_name(q)
    zero = _parameter(f, q, q.zero_points, wide, idx)
    diff = k.arith("sub", k.cast(x, types.elem(v), wide), zero, wide)
    scale = _parameter(f, q, q.scales, e, idx)
    return k.arith("mul", k.cast(diff, wide, e), scale, e)


def quantize(f: Fused, x: str, v: Value, idx: Sequence[IndexExpr]) -> str:
    """The storage integer of float ``x`` as element ``idx`` of quantized ``v``:
    ``round_nearest_even(clamp(storage_min, x / scale + zero_point, storage_max))``."""
    q = _element(v)
    k = f.k
    e, s = _expressed_name(q), types.elem(v)
    lo, hi = storage_bounds(q)
    scale = _parameter(f, q, q.scales, e, idx)
    zero = _parameter(f, q, [float(z) for z in q.zero_points], e, idx)
    y = k.arith("add", k.arith("div", x, scale, e), zero, e)
    y = _clamp(f, y, k.const(float(lo), e), k.const(float(hi), e), e)  # NaN stays NaN
    out = k.cast(k.math("roundeven", y, None, e), e, s)  # saturates; NaN gives 0
    if not (_exact(lo, e) and _exact(hi, e) and lo <= 0 <= hi):
        out = _clamp(f, out, k.const(lo, s), k.const(hi, s), s)
    return out


def _clamp(f: Fused, x: str, lo: str, hi: str, t: str) -> str:
    k = f.k
    x = k.select(k.cmp("lt", x, lo, t), lo, x, t)
    return k.select(k.cmp("gt", x, hi, t), hi, x, t)


def _exact(n: int, t: str) -> bool:
    """True when integer ``n`` converts to float type ``t`` exactly."""
    return int(np.asarray(n, dtype=_NUMPY[t]).astype(np.float64)) == n
