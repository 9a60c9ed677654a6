"""Element types: StableHLO element types to tensor-language scalar names.

Tensor layout: a StableHLO ``tensor<d0 x ... x dn-1 x E>`` is row-major; the buffer that
holds it is the column-major memref with the modes reversed, ``memref<E x dn-1 x ... x d0>``
(the same bytes), and kernels usually take its flat view ``memref<E x N>``
(N = d0 * ... * dn-1) and compute row-major linear indices themselves.
"""

from __future__ import annotations

from math import prod

import numpy as np

from frontend.ir.core import Op, Value
from frontend.ir.types import (
    ComplexType,
    FloatType,
    IntegerType,
    QuantizedType,
    TensorType,
    Type,
)
from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.types import SCALAR_TYPES

_NATIVE_INT = {1: "i1", 8: "i8", 16: "i16", 32: "i32", 64: "i64"}
_NATIVE_FLOAT = {"f32": "f32", "f64": "f64"}
COMPLEX_PARTS = {"c32": "f32", "c64": "f64"}
"""The scalar type of a complex type's real and imaginary parts."""
_COMPLEX_OF = {part: c for c, part in COMPLEX_PARTS.items()}


def is_float(t: str) -> bool:
    """Whether scalar type ``t`` is a real float (bf16, f16-f64, the narrow f8/f6/f4)."""
    return t.startswith(("f", "bf"))


def scalar_name(element: object) -> str | None:
    """The tensor-language scalar type holding ``element``, or None when unsupported.

    2- and 4-bit integers live in bytes (i8/u8); :func:`narrow_bits` says how to wrap.
    Quantized elements are held as their storage integers (``frontend/lower/core/quant.py``).
    """
    if isinstance(element, QuantizedType):
        element = element.storage
    if isinstance(element, IntegerType) and element.width in (2, 4):
        return "u8" if element.unsigned else "i8"
    if isinstance(element, IntegerType):
        if element.unsigned:
            name = f"u{element.width}"
            return name if name in SCALAR_TYPES else None
        return _NATIVE_INT.get(element.width)
    if isinstance(element, FloatType):
        if element.name in _NATIVE_FLOAT:
            return _NATIVE_FLOAT[element.name]
        name = element.name.lower()  # f8E4M3FN -> f8e4m3fn (the narrow storage floats)
        return name if name in SCALAR_TYPES else None
    if isinstance(element, ComplexType):
        return _COMPLEX_OF.get(element.element.name)
    return None


def narrow_bits(value: Value) -> int | None:
    """The bit width of a sub-byte integer element type (wrap results to it), or None."""
    t = value.type
    e = t.element if isinstance(t, TensorType) else None
    if isinstance(e, QuantizedType):
        e = e.storage
    return e.width if isinstance(e, IntegerType) and e.width in (2, 4) else None


STORAGE_DTYPES = {"i8": np.int8, "u8": np.uint8}


def tensor_of(t: Type, loc: Loc | None) -> TensorType:
    """``t`` as a static tensor type, or a CompileError at ``loc``."""
    if not isinstance(t, TensorType):
        raise CompileError.at(loc, f"values of type {t} are not supported yet")
    if not t.is_static:
        raise CompileError.at(loc, f"dynamically shaped tensors ({t}) are not supported yet")
    return t


def elem(value: Value, loc: Loc | None = None) -> str:
    """The tensor-language scalar type name of ``value``'s elements."""
    t = tensor_of(value.type, loc or value.loc)
    name = scalar_name(t.element)
    if name is None:
        raise CompileError.at(loc or value.loc,
                              f"element type {t.element} is not supported yet")
    return name


def shape(value: Value) -> tuple[int, ...]:
    """The static row-major shape of ``value``."""
    return tensor_of(value.type, value.loc).static_shape


def elem_bytes(t: str) -> int:
    """Bytes of one element of scalar type ``t`` (i1 and sub-byte types: 1)."""
    bits = int("".join(ch for ch in t if ch.isdigit()) or 8)
    return max(1, bits // 8)


def size(value: Value) -> int:
    """The number of elements of ``value``."""
    return prod(shape(value))


def check_op_types(op: Op) -> None:
    """Raise a CompileError at ``op`` when one of its tensors has an unsupported type."""
    for v in list(op.operands) + list(op.results):
        if isinstance(v.type, TensorType):
            elem(v, op.loc)
