"""An attribute's Python value as a plain int, float, complex or list, checked.

``Attr.py`` gives numbers, lists and numpy arrays typed ``object``; these narrow them
(a TypeError when the value is not of the kind asked for).  :mod:`frontend.ir.attrs`
re-exports them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import SupportsComplex, SupportsFloat, SupportsIndex, SupportsInt


def as_int(value: object) -> int:
    """An attribute's Python value as an int (a TypeError when it is not a number)."""
    if type(value) is int:  # the common case, before the slow protocol check
        return value
    if not isinstance(value, SupportsInt):
        raise TypeError(f"expected an integer attribute, got {value!r}")
    return int(value)


def as_float(value: object) -> float:
    """An attribute's Python value as a float."""
    if type(value) is float:
        return value
    if not isinstance(value, SupportsFloat):
        raise TypeError(f"expected a float attribute, got {value!r}")
    return float(value)


def as_complex(value: object) -> complex:
    """An attribute's Python value as a complex number."""
    if not isinstance(value, (complex, SupportsComplex, SupportsFloat, SupportsIndex)):
        raise TypeError(f"expected a number, got {value!r}")
    return complex(value)


def as_ints(value: object) -> list[int]:
    """An attribute's Python value (a list, tuple or array of integers) as a list of ints."""
    if not isinstance(value, Iterable):
        raise TypeError(f"expected a list of integers, got {value!r}")
    return [as_int(v) for v in value]


def as_bools(value: object) -> list[bool]:
    """An attribute's Python value (a list or array of booleans) as a list of bools."""
    if not isinstance(value, Iterable):
        raise TypeError(f"expected a list of booleans, got {value!r}")
    return [bool(v) for v in value]
