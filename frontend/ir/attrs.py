"""Attributes of StableHLO operations, functions and modules.

Each attribute is a frozen dataclass; ``str`` gives its canonical MLIR spelling and
``py`` a plain Python value (ints, lists, strings) for passes that walk the IR.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frontend.ir.dense import format_dense
from frontend.ir.types import TensorType, Type
from frontend.ir.values import as_bools as as_bools
from frontend.ir.values import as_complex as as_complex
from frontend.ir.values import as_float as as_float
from frontend.ir.values import as_int as as_int
from frontend.ir.values import as_ints as as_ints


class Attr:
    """Base class of every attribute."""

    @property
    def py(self) -> object:
        """A plain Python rendering of the attribute's value."""
        return self


@dataclass(frozen=True)
class IntAttr(Attr):
    """An integer, optionally typed: ``3 : i64``."""

    value: int
    type: Type | None = None

    def __str__(self) -> str:
        return str(self.value) if self.type is None else f"{self.value} : {self.type}"

    @property
    def py(self) -> int:
        """The value as plain Python."""
        return self.value


@dataclass(frozen=True)
class FloatAttr(Attr):
    """A float, optionally typed: ``1.0 : f32``."""

    value: float
    type: Type | None = None

    def __str__(self) -> str:
        text = float_text(self.value)
        return text if self.type is None else f"{text} : {self.type}"

    @property
    def py(self) -> float:
        """The value as plain Python."""
        return self.value


def float_text(value: float) -> str:
    """A float literal MLIR re-reads exactly (``nan``/``inf`` as f64 bit patterns)."""
    if np.isfinite(value):
        text = repr(float(value))
        return text if ("." in text or "e" in text) else text + ".0"
    return f"0x{np.array(value, np.float64).view(np.uint64):016X}"


@dataclass(frozen=True)
class BoolAttr(Attr):
    """``true`` or ``false``."""

    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"

    @property
    def py(self) -> bool:
        """The value as plain Python."""
        return self.value


@dataclass(frozen=True)
class StrAttr(Attr):
    """A string; ``text`` keeps the escaped spelling found between the quotes."""

    text: str

    def __str__(self) -> str:
        return f'"{self.text}"'

    @property
    def py(self) -> str:
        """The value as plain Python."""
        return self.text


@dataclass(frozen=True)
class UnitAttr(Attr):
    """A present-but-valueless attribute (``{foo}``)."""

    def __str__(self) -> str:
        return "unit"

    @property
    def py(self) -> bool:
        """The value as plain Python."""
        return True


@dataclass(frozen=True)
class SymbolRefAttr(Attr):
    """``@name`` (``name`` is spelled as in the source, quotes included if any)."""

    name: str

    def __str__(self) -> str:
        return f"@{self.name}"

    @property
    def py(self) -> str:
        """The value as plain Python."""
        return self.name.strip('"')


@dataclass(frozen=True)
class TypeAttr(Attr):
    """A type used as an attribute value."""

    type: Type

    def __str__(self) -> str:
        return str(self.type)

    @property
    def py(self) -> Type:
        """The value as plain Python."""
        return self.type


@dataclass(frozen=True)
class ListAttr(Attr):
    """``[a, b, ...]``."""

    items: tuple[Attr, ...]

    def __str__(self) -> str:
        return f"[{', '.join(map(str, self.items))}]"

    @property
    def py(self) -> list[object]:
        """The value as plain Python."""
        return [a.py for a in self.items]


@dataclass(frozen=True)
class DictAttr(Attr):
    """``{key = value, ...}`` in source order."""

    items: tuple[tuple[str, Attr], ...]

    def __str__(self) -> str:
        return "{" + ", ".join(entry_text(k, v) for k, v in self.items) + "}"

    @property
    def py(self) -> dict[str, object]:
        """The value as plain Python."""
        return {k: v.py for k, v in self.items}

    def get(self, key: str) -> Attr | None:
        """The attribute named ``key`` or None."""
        return next((v for k, v in self.items if k == key), None)


def entry_text(key: str, value: Attr) -> str:
    """``key = value`` (just ``key`` for unit attributes)."""
    return key if isinstance(value, UnitAttr) else f"{key} = {value}"


@dataclass(frozen=True)
class DenseArrayAttr(Attr):
    """``array<i64: 1, 2>``."""

    element: str
    values: tuple[int | float | bool, ...]

    def __str__(self) -> str:
        if not self.values:
            return f"array<{self.element}>"
        if self.element == "i1":
            body = ", ".join("true" if v else "false" for v in self.values)
        else:
            body = ", ".join(map(str, self.values))
        return f"array<{self.element}: {body}>"

    @property
    def py(self) -> list[int | float | bool]:
        """The value as plain Python."""
        return list(self.values)


@dataclass(frozen=True, eq=False)
class DenseElementsAttr(Attr):
    """``dense<...> : tensor<...>``; ``array`` has the tensor's shape and dtype."""

    type: TensorType
    array: np.ndarray

    def __str__(self) -> str:
        return f"{format_dense(self.array, self.type)} : {self.type}"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DenseElementsAttr) and self.type == other.type
                and self.array.tobytes() == other.array.tobytes())

    def __hash__(self) -> int:
        return hash((self.type, self.array.tobytes()))

    @property
    def py(self) -> np.ndarray:
        """The value as plain Python."""
        return self.array


@dataclass(frozen=True)
class DenseResourceAttr(Attr):
    """``dense_resource<name> : tensor<...>`` whose bytes were not in the file (elided)."""

    name: str
    type: TensorType

    def __str__(self) -> str:
        return f"dense_resource<{self.name}> : {self.type}"


@dataclass(frozen=True)
class EnumAttr(Attr):
    """``#stablehlo<comparison_direction LT>``: ``kind`` and ``value``."""

    kind: str
    value: str
    dialect: str = "stablehlo"

    def __str__(self) -> str:
        return f"#{self.dialect}<{self.kind} {self.value}>"

    @property
    def py(self) -> str:
        """The value as plain Python."""
        return self.value


@dataclass(frozen=True)
class StructAttr(Attr):
    """``#stablehlo.dot<lhs_contracting_dimensions = [1], ...>`` and its kin."""

    name: str
    fields: tuple[tuple[str, Attr], ...]

    def __str__(self) -> str:
        return f"#{self.name}<{', '.join(f'{k} = {v}' for k, v in self.fields)}>"

    @property
    def py(self) -> dict[str, object]:
        """The value as plain Python."""
        return {k: v.py for k, v in self.fields}

    def get(self, key: str, default: object = ()) -> object:
        """The Python value of field ``key``, or ``default`` when absent."""
        return next((v.py for k, v in self.fields if k == key), default)


@dataclass(frozen=True)
class ConvDimsAttr(Attr):
    """``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``: labels per dimension."""

    lhs: tuple[str, ...]
    rhs: tuple[str, ...]
    out: tuple[str, ...]

    def __str__(self) -> str:
        return f"#stablehlo.conv<{self.pretty()}>"

    def pretty(self) -> str:
        """The ``[b, 0, f]x[0, i, o]->[b, 0, f]`` form."""
        return "x".join(f"[{', '.join(d)}]" for d in (self.lhs, self.rhs)) + \
            f"->[{', '.join(self.out)}]"

    def spatial(self, labels: tuple[str, ...]) -> list[int]:
        """Positions of spatial dimensions 0, 1, ... in ``labels``."""
        digits = [lab for lab in labels if lab.isdigit()]
        return [labels.index(str(i)) for i in range(len(digits))]

    @property
    def py(self) -> dict[str, object]:
        """The value as plain Python."""
        return {"lhs": self.lhs, "rhs": self.rhs, "out": self.out}


@dataclass(frozen=True)
class OpaqueAttr(Attr):
    """An attribute kept as its source text (foreign dialect attributes, locations)."""

    text: str

    def __str__(self) -> str:
        return self.text

    @property
    def py(self) -> str:
        """The value as plain Python."""
        return self.text
