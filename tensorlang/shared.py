"""A mixin for immutable values that copies share instead of duplicating."""

from __future__ import annotations

from typing import Any


class Shared:
    """Frozen dataclasses derive from this: a copy of an immutable value is the value
    itself, so ``copy.deepcopy`` of a program (each compile copies it before the back
    end's passes) shares its types, source locations and instruction definitions
    instead of duplicating them."""

    __slots__ = ()

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self
