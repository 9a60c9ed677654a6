"""The ``alpha * value + beta * out`` update shared by every BLAS-like collective.

``beta = 0`` never reads the output (so NaNs in it do not propagate); ``.atomic``
updates go through the prelude's compare-and-swap helpers.
"""

from __future__ import annotations

from dataclasses import dataclass

from backend_opencl.emit import prelude
from backend_opencl.emit.cnames import zero
from backend_opencl.emit.unit import Unit
from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.types import Number, ScalarType

_ATOMIC_TYPES = ("i32", "i64", "index", "f32", "f64", "c32", "c64")


@dataclass(frozen=True)
class Scale:
    """alpha or beta: its C expression and, when known at compile time, its value."""

    expr: str
    value: Number | None = None

    def is_value(self, number: int) -> bool:
        """True when known to equal ``number``."""
        return self.value is not None and complex(self.value) == number


def mul(t: ScalarType, a: str, b: str) -> str:
    """``a * b`` in type ``t``."""
    return f"{prelude.cmul(t.name)}({a}, {b})" if t.is_complex else f"{a} * {b}"


def madd(t: ScalarType, a: str, b: str, c: str) -> str:
    """``a * b + c`` (written so the compiler contracts it, never ``fma()``)."""
    return f"{mul(t, a, b)} + {c}"


def scaled(t: ScalarType, alpha: Scale, value: str) -> str:
    """``alpha * value``."""
    return value if alpha.is_value(1) else mul(t, alpha.expr, value)


def _is_zero(t: ScalarType, beta: Scale) -> str:
    return f"({beta.expr}.x == 0 && {beta.expr}.y == 0)" if t.is_complex else \
        f"{beta.expr} == {zero(t)}"


def update(t: ScalarType, out: str, value: str, beta: Scale) -> str:
    """A statement performing ``out = value + beta * out`` (plain)."""
    if beta.is_value(0):
        return f"{out} = {value};"
    if beta.is_value(1):
        return f"{out} = {value} + {out};"
    return f"{out} = {_is_zero(t, beta)} ? {value} : {madd(t, beta.expr, out, value)};"


def atomic_update(unit: Unit, t: ScalarType, space: str, out: str, value: str, beta: Scale,
                  loc: Loc) -> str:
    """A statement performing ``out = value + beta * out`` as one atomic update."""
    if t.name not in _ATOMIC_TYPES:
        raise CompileError.at(loc, f".atomic is not supported for {t} (use i32, i64, f32, "
                              "f64, c32 or c64)")
    mode = "store" if beta.is_value(0) else "add" if beta.is_value(1) else "axpby"
    if t.name == "c64":
        if mode == "axpby":
            raise CompileError.at(loc, ".atomic on c64 needs beta to be the constant 0 or 1")
        unit.need(f"atomic:{mode}:f64:{space}")
    unit.need(f"atomic:{mode}:{t.name}:{space}")
    if t.name in ("f64", "c64"):
        unit.need("fp64")
    extra = f", {beta.expr}" if mode == "axpby" else ""
    return f"{prelude.atomic_name(mode, t.name, space)}(&{out}, {value}{extra});"
