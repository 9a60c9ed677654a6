"""Helpers shared by the verifier families: located failures and shape arithmetic."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NoReturn

import numpy as np

from frontend.ir.core import Op, Region, Value
from frontend.ir.types import QuantizedType, TensorType, Type
from tensorlang.diagnostics import CompileError, note

Verifier = Callable[[Op], None]
VERIFIERS: dict[str, Verifier] = {}


def verifies(*names: str) -> Callable[[Verifier], Verifier]:
    """Register a verifier for the ops ``names`` (short names get ``stablehlo.``)."""

    def deco(fn: Verifier) -> Verifier:
        """Record ``fn`` under each name."""
        for n in names:
            VERIFIERS[n if "." in n else f"stablehlo.{n}"] = fn
        return fn

    return deco


def fail(op: Op, rule: str, message: str, value: Value | None = None) -> NoReturn:
    """Raise ``'op' (Cn): message`` at the op, with a note at ``value``'s definition."""
    notes = [note(value.loc, f"'%{value.name}' defined here")] if value is not None else []
    if op.origin is not None:
        notes.append(note(op.origin, "the operation comes from here"))
    prefix = f"'{op.name}' ({rule}): " if rule else f"'{op.name}': "
    raise CompileError.at(op.loc, prefix + message, *notes)


def constant_value(v: Value) -> np.ndarray | None:
    """The array of a value defined by ``stablehlo.constant``, else None."""
    owner = v.owner
    if isinstance(owner, Op) and owner.name == "stablehlo.constant":
        return getattr(owner.attrs.get("value"), "array", None)
    return None


def tensor(op: Op, v: Value | Type, what: str) -> TensorType:
    """``v``'s tensor type, or a failure naming ``what``."""
    t = v.type if isinstance(v, Value) else v
    if not isinstance(t, TensorType):
        fail(op, "", f"{what} must be a tensor, got {t}")
    return t


def dims(shape: Sequence[int | None]) -> str:
    """``2x?x3`` (``[]`` for rank 0)."""
    return "x".join("?" if d is None else str(d) for d in shape) if shape else "[]"


def dim_ok(a: int | None, b: int | None) -> bool:
    """Dimensions agree (a dynamic one agrees with anything)."""
    return a is None or b is None or a == b


def shapes_ok(a: Sequence[int | None], b: Sequence[int | None]) -> bool:
    """Same rank and agreeing dimensions."""
    return len(a) == len(b) and all(dim_ok(x, y) for x, y in zip(a, b, strict=False))


def types_ok(a: Type, b: Type) -> bool:
    """Types agree up to dynamic dimensions and bounds."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return a.element == b.element and shapes_ok(a.shape, b.shape)
    return a == b


def baseline_element(t: TensorType) -> object:
    """Element type with quantization parameters dropped (storage/expressed kept)."""
    e = t.element
    return (e.storage, e.expressed) if isinstance(e, QuantizedType) else e


def size(shape: Sequence[int | None]) -> int | None:
    """Number of elements, or None when a dimension is dynamic."""
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n


def in_range(op: Op, rule: str, name: str, values: Sequence[int], rank: int) -> None:
    """Every value in ``0 <= v < rank``."""
    for v in values:
        if not 0 <= v < rank:
            fail(op, rule, f"{name} value {v} is out of range [0, {rank})")


def unique(op: Op, rule: str, name: str, values: Sequence[int]) -> None:
    """No value repeats."""
    if len(set(values)) != len(values):
        fail(op, rule, f"{name} must be unique, got {list(values)}")


def region_results(op: Op, region: Region, what: str) -> list[Type]:
    """Types returned by ``region``'s ``stablehlo.return`` (a missing one is an error)."""
    block = region.block
    if not block.ops or block.ops[-1].name != "stablehlo.return":
        fail(op, "", f"{what} must end with stablehlo.return")
    return [v.type for v in block.ops[-1].operands]


def same_types(a: Sequence[Type], b: Sequence[Type]) -> bool:
    """Whether ``a`` and ``b`` are equally long and pairwise compatible (:func:`types_ok`)."""
    return len(a) == len(b) and all(types_ok(x, y) for x, y in zip(a, b, strict=False))


def list_attr(op: Op, name: str) -> list[object] | None:
    """Attribute ``name`` (an array or list) as a Python list; None when absent."""
    value = op.attr(name)
    if value is None:
        return None
    if not isinstance(value, Iterable):
        raise TypeError(f"'{op.name}': attribute {name!r} is not a list: {value!r}")
    return list(value)
