"""StableHLO types: element types, tensors, tuples, tokens and function types.

Every type is a frozen dataclass whose ``str`` is its MLIR spelling, so the printer
and diagnostics share one rendering.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from numpy.typing import DTypeLike

_FLOAT_DTYPES: dict[str, DTypeLike] = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "tf32": np.float32,
    "bf16": ml_dtypes.bfloat16,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn,
    "f8E5M2": ml_dtypes.float8_e5m2,
    "f8E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "f8E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "f8E4M3B11FNUZ": ml_dtypes.float8_e4m3b11fnuz,
    "f8E4M3": ml_dtypes.float8_e4m3,
    "f8E3M4": ml_dtypes.float8_e3m4,
    "f8E8M0FNU": ml_dtypes.float8_e8m0fnu,
    "f6E2M3FN": ml_dtypes.float6_e2m3fn,
    "f6E3M2FN": ml_dtypes.float6_e3m2fn,
    "f4E2M1FN": ml_dtypes.float4_e2m1fn,
}
_FLOAT_BITS = {"f16": 16, "f32": 32, "f64": 64, "tf32": 19, "bf16": 16}
_SIGNED = {2: ml_dtypes.int2, 4: ml_dtypes.int4, 8: np.int8, 16: np.int16, 32: np.int32,
           64: np.int64}
_UNSIGNED = {2: ml_dtypes.uint2, 4: ml_dtypes.uint4, 8: np.uint8, 16: np.uint16,
             32: np.uint32, 64: np.uint64}
FLOAT_NAMES = frozenset(_FLOAT_DTYPES)


class Type:
    """Base class of every StableHLO type."""


@dataclass(frozen=True)
class IntegerType(Type):
    """``iN`` (signless, treated as signed; ``i1`` is boolean) or ``uiN``."""

    width: int
    unsigned: bool = False

    def __str__(self) -> str:
        return f"{'ui' if self.unsigned else 'i'}{self.width}"

    @property
    def is_bool(self) -> bool:
        """True for ``i1``."""
        return self.width == 1 and not self.unsigned

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype holding values of this type."""
        if self.is_bool:
            return np.dtype(np.bool_)
        table = _UNSIGNED if self.unsigned else _SIGNED
        return np.dtype(table[self.width])

    @property
    def bits(self) -> int:
        """Bit width."""
        return self.width


@dataclass(frozen=True)
class FloatType(Type):
    """A floating-point type such as ``f32``, ``bf16`` or ``f8E4M3FN``."""

    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def dtype(self) -> np.dtype:
        """The numpy (or ml_dtypes) dtype holding values of this type."""
        return np.dtype(_FLOAT_DTYPES[self.name])

    @property
    def bits(self) -> int:
        """Bit width (storage width for tf32 is 32)."""
        if self.name in _FLOAT_BITS:
            return _FLOAT_BITS[self.name]
        return int(self.name[1])


@dataclass(frozen=True)
class ComplexType(Type):
    """``complex<f32>`` or ``complex<f64>``."""

    element: FloatType

    def __str__(self) -> str:
        return f"complex<{self.element}>"

    @property
    def dtype(self) -> np.dtype:
        """complex64 or complex128."""
        return np.dtype(np.complex64 if self.element.name == "f32" else np.complex128)

    @property
    def bits(self) -> int:
        """Bit width of the pair."""
        return 2 * self.element.bits


@dataclass(frozen=True)
class IndexType(Type):
    """MLIR's ``index`` (appears in some shape computations)."""

    def __str__(self) -> str:
        return "index"

    @property
    def dtype(self) -> np.dtype:
        """int64."""
        return np.dtype(np.int64)


@dataclass(frozen=True)
class QuantizedType(Type):
    """``!quant.uniform<storage<min:max>:expressed[:axis], scales:zero_points>``.

    Unsigned storage prints as MLIR's quant dialect writes it (``u8``); ``ui8`` is
    read too."""

    storage: IntegerType
    expressed: FloatType
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None = None
    storage_min: int | None = None
    storage_max: int | None = None

    def __str__(self) -> str:
        storage = f"{'u' if self.storage.unsigned else 'i'}{self.storage.width}"
        if self.storage_min is not None:
            storage += f"<{self.storage_min}:{self.storage_max}>"
        head = f"{storage}:{self.expressed}"
        pairs = [_quant_pair(s, z) for s, z in zip(self.scales, self.zero_points, strict=False)]
        if self.axis is None:
            return f"!quant.uniform<{head}, {pairs[0]}>"
        return f"!quant.uniform<{head}:{self.axis}, {{{', '.join(pairs)}}}>"

    @property
    def dtype(self) -> np.dtype:
        """The storage type's dtype."""
        return self.storage.dtype


def _quant_pair(scale: float, zero_point: int) -> str:
    return repr(scale) if zero_point == 0 else f"{scale!r}:{zero_point}"


def _known(dim: int | None) -> int:
    if dim is None:
        raise TypeError("a dynamic dimension where a static one is expected")
    return dim


ElementType = IntegerType | FloatType | ComplexType | QuantizedType | IndexType


@dataclass(frozen=True)
class TensorType(Type):
    """``tensor<d0x...xE>``; ``None`` dimensions are dynamic (``?``), bounds optional."""

    shape: tuple[int | None, ...]
    element: ElementType
    bounds: tuple[int | None, ...] | None = None

    def __str__(self) -> str:
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        enc = ""
        if self.bounds is not None:
            enc = ", #stablehlo.bounds<" + ", ".join(
                "?" if b is None else str(b) for b in self.bounds) + ">"
        return f"tensor<{dims}{self.element}{enc}>"

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """True when no dimension is ``?``."""
        return None not in self.shape

    @property
    def static_shape(self) -> tuple[int, ...]:
        """The shape of a static tensor (a dynamic dimension is a compiler bug here)."""
        return tuple(_known(d) for d in self.shape)

    def with_shape(self, shape: tuple[int | None, ...]) -> TensorType:
        """The same element type with another shape (bounds dropped)."""
        return TensorType(tuple(shape), self.element)

    def with_element(self, element: ElementType) -> TensorType:
        """The same shape with another element type."""
        return TensorType(self.shape, element, self.bounds)


@dataclass(frozen=True)
class TupleType(Type):
    """``tuple<T0, T1, ...>``."""

    types: tuple[Type, ...]

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.types))}>"


@dataclass(frozen=True)
class TokenType(Type):
    """``!stablehlo.token``."""

    def __str__(self) -> str:
        return "!stablehlo.token"


@dataclass(frozen=True)
class FunctionType(Type):
    """``(inputs) -> results``."""

    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.inputs))}) -> {format_results(self.results)}"


def format_results(types: tuple[Type, ...] | list[Type]) -> str:
    """``T`` for one non-function result, ``(T0, T1)`` otherwise."""
    if len(types) == 1 and not isinstance(types[0], FunctionType):
        return str(types[0])
    return f"({', '.join(map(str, types))})"


def element_of(t: Type) -> ElementType | None:
    """The element type of a tensor, else None."""
    return t.element if isinstance(t, TensorType) else None


def is_float(e: object) -> bool:
    """True for floating-point element types."""
    return isinstance(e, FloatType)


def is_int(e: object) -> bool:
    """True for integer element types other than ``i1``."""
    return isinstance(e, IntegerType) and not e.is_bool


def is_bool(e: object) -> bool:
    """True for ``i1``."""
    return isinstance(e, IntegerType) and e.is_bool


def is_complex(e: object) -> bool:
    """True for complex element types."""
    return isinstance(e, ComplexType)


def base_element(e: ElementType) -> ElementType:
    """The expressed type of a quantized element type, else the type itself."""
    return e.expressed if isinstance(e, QuantizedType) else e
