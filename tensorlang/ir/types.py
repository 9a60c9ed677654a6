"""Types of the tensor language: scalars, memrefs with strided layouts, groups, void.

Every type is a frozen dataclass; equal types compare equal, so
``memref<f32x5x6x7>`` and ``memref<f32x5x6x7,strided<1,5,30>>`` are the same value
(strides are always stored explicitly).  ``str(t)`` is the canonical spelling.
A dynamic mode, stride or offset (``?``) is ``DYNAMIC`` (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from math import prod

from tensorlang.shared import Shared

Dim = int | None
"""A static extent, or ``DYNAMIC`` (``None``) for ``?``."""

DYNAMIC: None = None


def dim_str(d: Dim) -> str:
    """A mode size or stride as the reference writes it."""
    return "?" if d is None else str(d)


def known_product(dims: tuple[Dim, ...]) -> int | None:
    """The product of ``dims``, or None when one is dynamic."""
    known = [d for d in dims if d is not None]
    return prod(known) if len(known) == len(dims) else None


class ScalarKind(Enum):
    """The family a scalar type belongs to."""

    INT = "int"
    FLOAT = "float"
    COMPLEX = "complex"


@dataclass(frozen=True, slots=True)
class ScalarType(Shared):
    """A scalar type: ``i1 i8 i16 i32 i64 index f32 f64 c32 c64`` and the extensions
    ``u8 u16 u32 u64`` (unsigned integers), ``f16`` and ``bf16`` (16-bit storage floats) and
    the narrow storage floats (:attr:`is_narrow`)."""

    name: str

    def __post_init__(self) -> None:
        assert self.name in _SCALAR_INFO, f"unknown scalar type {self.name}"

    @property
    def kind(self) -> ScalarKind:
        """Integer, floating point or complex."""
        return _SCALAR_INFO[self.name][0]

    @property
    def bits(self) -> int:
        """Width in bits (``index`` is 64 bits in this implementation)."""
        return _SCALAR_INFO[self.name][1]

    @property
    def is_int(self) -> bool:
        """True for i1..i64 and index."""
        return self.kind is ScalarKind.INT

    @property
    def is_unsigned(self) -> bool:
        """True for the unsigned integer types u8..u64."""
        return self.name in _UNSIGNED

    @property
    def is_signed_int(self) -> bool:
        """True for i8..i64 and index (two's complement, signed semantics)."""
        return self.is_int and not self.is_bool and not self.is_unsigned

    @property
    def is_half(self) -> bool:
        """True for the storage floats f16, bf16 and the narrow ones (:attr:`is_narrow`):
        stored as their bit patterns, computed in f32 and rounded to the type."""
        return self.name in ("f16", "bf16") or self.is_narrow

    @property
    def is_narrow(self) -> bool:
        """True for the 8-, 6- and 4-bit floats (one byte per element), named as
        ml_dtypes names them: ``f8e4m3fn f8e5m2 f8e4m3fnuz f8e5m2fnuz f8e4m3b11fnuz
        f8e4m3 f8e3m4 f8e8m0fnu f6e2m3fn f6e3m2fn f4e2m1fn``."""
        return self.kind is ScalarKind.FLOAT and self.bits == 8

    @property
    def is_float(self) -> bool:
        """True for f16, bf16, f32 and f64."""
        return self.kind is ScalarKind.FLOAT

    @property
    def is_complex(self) -> bool:
        """True for c32 and c64."""
        return self.kind is ScalarKind.COMPLEX

    @property
    def is_bool(self) -> bool:
        """True for i1, the type of conditions."""
        return self.name == "i1"

    def __str__(self) -> str:
        return self.name


_SCALAR_INFO: dict[str, tuple[ScalarKind, int]] = {
    "i1": (ScalarKind.INT, 1),
    "i8": (ScalarKind.INT, 8),
    "i16": (ScalarKind.INT, 16),
    "i32": (ScalarKind.INT, 32),
    "i64": (ScalarKind.INT, 64),
    "index": (ScalarKind.INT, 64),
    "u8": (ScalarKind.INT, 8),
    "u16": (ScalarKind.INT, 16),
    "u32": (ScalarKind.INT, 32),
    "u64": (ScalarKind.INT, 64),
    "f16": (ScalarKind.FLOAT, 16),
    "bf16": (ScalarKind.FLOAT, 16),
    **{name: (ScalarKind.FLOAT, 8) for name in (
        "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz", "f8e4m3b11fnuz", "f8e4m3", "f8e3m4",
        "f8e8m0fnu", "f6e2m3fn", "f6e3m2fn", "f4e2m1fn")},
    "f32": (ScalarKind.FLOAT, 32),
    "f64": (ScalarKind.FLOAT, 64),
    "c32": (ScalarKind.COMPLEX, 64),
    "c64": (ScalarKind.COMPLEX, 128),
}

_UNSIGNED = frozenset(("u8", "u16", "u32", "u64"))

SCALAR_TYPES: dict[str, ScalarType] = {name: ScalarType(name) for name in _SCALAR_INFO}
I1, I8, I16, I32, I64 = (SCALAR_TYPES[n] for n in ("i1", "i8", "i16", "i32", "i64"))
INDEX = SCALAR_TYPES["index"]
F32, F64, C32, C64 = (SCALAR_TYPES[n] for n in ("f32", "f64", "c32", "c64"))
U8, U16, U32, U64 = (SCALAR_TYPES[n] for n in ("u8", "u16", "u32", "u64"))
F16, BF16 = SCALAR_TYPES["f16"], SCALAR_TYPES["bf16"]


class AddressSpace(Enum):
    """Where a memref's memory lives."""

    GLOBAL = "global"
    LOCAL = "local"


def packed_strides(shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """The packed dense (column-major) strides of ``shape``: S1 = 1, Si = S(i-1) s(i-1)."""
    strides: list[Dim] = []
    stride: Dim = 1
    for size in shape:
        strides.append(stride)
        stride = None if stride is None or size is None else stride * size
    return tuple(strides)


@dataclass(frozen=True, slots=True)
class MemRefType(Shared):
    """``memref<elem x s1 x ... x sn [, strided<S1,...,Sn>] [, local|global]>``."""

    element: ScalarType
    shape: tuple[Dim, ...]
    strides: tuple[Dim, ...]
    addrspace: AddressSpace = AddressSpace.GLOBAL

    @classmethod
    def of(
        cls,
        element: ScalarType,
        shape: tuple[Dim, ...],
        strides: tuple[Dim, ...] | None = None,
        addrspace: AddressSpace = AddressSpace.GLOBAL,
    ) -> MemRefType:
        """A memref type; ``strides`` default to the packed dense layout."""
        shape = tuple(shape)
        return cls(element, shape, packed_strides(shape) if strides is None else tuple(strides),
                   addrspace)

    @property
    def order(self) -> int:
        """The number of modes (0 for a scalar memref)."""
        return len(self.shape)

    @property
    def is_packed(self) -> bool:
        """True when the strides are the packed dense default."""
        return self.strides == packed_strides(self.shape)

    @property
    def is_static(self) -> bool:
        """True when no mode size or stride is dynamic."""
        return None not in self.shape and None not in self.strides

    @property
    def dynamic_dims(self) -> tuple[Dim, ...]:
        """Dynamic entries, shape first then strides (the order of the kernel ABI)."""
        return tuple(d for d in self.shape + self.strides if d is None)

    def __str__(self) -> str:
        text = "memref<" + str(self.element) + "".join("x" + dim_str(s) for s in self.shape)
        if not self.is_packed:
            text += ",strided<" + ",".join(dim_str(s) for s in self.strides) + ">"
        if self.addrspace is AddressSpace.LOCAL:
            text += ",local"
        return text + ">"


@dataclass(frozen=True, slots=True)
class GroupType(Shared):
    """``group<memref-type [, offset: o]>``: a batch of pointers to memrefs."""

    memref: MemRefType
    offset: Dim = 0

    def __str__(self) -> str:
        text = f"group<{self.memref}"
        if self.offset != 0:
            text += f", offset: {dim_str(self.offset)}"
        return text + ">"


@dataclass(frozen=True, slots=True)
class VoidType(Shared):
    """``void``: the type of instructions that return nothing."""

    def __str__(self) -> str:
        return "void"


VOID = VoidType()

Type = ScalarType | MemRefType | GroupType | VoidType
"""Any tensor-language type."""

Number = bool | int | float | complex
"""The Python value of a scalar constant (a literal, the ``value`` of ``constant``)."""


def complex_part(t: ScalarType) -> ScalarType:
    """The type of a complex type's real and imaginary parts (``t`` itself when real)."""
    return {"c32": F32, "c64": F64}.get(t.name, t)


def complex_of(t: ScalarType) -> ScalarType | None:
    """The complex type whose parts have type ``t`` (f32 -> c32, f64 -> c64), else None."""
    return {"f32": C32, "f64": C64}.get(t.name)
