"""The StableHLO IR: values, operations, blocks, regions, functions and modules.

Operations keep their operands (SSA :class:`Value` objects, each with a type), their
attributes (by name), their regions and their source location.  The op table in
:mod:`frontend.ir.ops` names operands so passes can write ``op.operand("lhs")``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

import numpy as np

from frontend.ir.attrs import (
    Attr,
    ConvDimsAttr,
    DenseElementsAttr,
    DictAttr,
    StructAttr,
    as_bools,
    as_float,
    as_int,
    as_ints,
)
from frontend.ir.ops import OPS, OpDef, operand_groups
from frontend.ir.types import Type
from tensorlang.diagnostics import Loc

AttrT = TypeVar("AttrT", bound=Attr)


class Value:
    """An SSA value: an operation result or a block argument."""

    __slots__ = ("type", "owner", "index", "name", "loc")

    def __init__(self, type: Type, owner: Op | Block, index: int, name: str, loc: Loc) -> None:
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name
        self.loc = loc

    def __repr__(self) -> str:
        return f"<Value %{self.name}: {self.type}>"

    @property
    def op(self) -> Op:
        """The operation whose result this is (a compiler bug for a block argument)."""
        assert isinstance(self.owner, Op), f"%{self.name} is a block argument"
        return self.owner

    @property
    def defining_op(self) -> Op | None:
        """The operation whose result this is, or None for a block argument."""
        return self.owner if isinstance(self.owner, Op) else None


@dataclass(eq=False)
class Block:
    """A block: arguments and operations (the last is the terminator)."""

    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    label: str = ""


@dataclass(eq=False)
class Region:
    """A region: a list of blocks (StableHLO regions have one)."""

    blocks: list[Block] = field(default_factory=list)

    @property
    def block(self) -> Block:
        """The entry (and usually only) block."""
        return self.blocks[0]


@dataclass(eq=False)
class Op:
    """An operation such as ``stablehlo.add``."""

    name: str
    operands: list[Value]
    result_types: list[Type]
    attrs: dict[str, Attr]
    regions: list[Region]
    loc: Loc
    src_loc: Attr | None = None
    results: list[Value] = field(default_factory=list)
    origin: Loc | None = None

    @property
    def opdef(self) -> OpDef | None:
        """The op-table entry (:class:`frontend.ir.ops.OpDef`), or None when unknown."""
        return OPS.get(self.name)

    def operand(self, name: str) -> Value:
        """The operand called ``name`` in the op table (non-variadic ones)."""
        return self.operand_group(name)[0]

    def operand_group(self, name: str) -> list[Value]:
        """The operands bound to the table's operand ``name`` (variadic ones give many)."""
        return operand_groups(self.name, self.operands)[name]

    def attr(self, name: str, default: object = None) -> object:
        """The plain Python value of attribute ``name`` (``default`` when absent)."""
        a = self.attrs.get(name)
        return default if a is None else a.py

    # Typed access to attributes.  The verifier has checked their kinds, so a mismatch
    # here is a compiler bug (TypeError); an absent attribute without a default is a
    # KeyError.

    def attr_of(self, name: str, kind: type[AttrT]) -> AttrT:
        """The attribute ``name`` itself, which must be a ``kind``."""
        a = self.attrs[name]
        if not isinstance(a, kind):
            raise TypeError(f"'{self.name}': attribute {name!r} is a {type(a).__name__}, "
                            f"not a {kind.__name__}")
        return a

    def int_attr(self, name: str, default: int | None = None) -> int:
        """Attribute ``name`` as an int."""
        return as_int(self._py(name, default))

    def ints_attr(self, name: str, default: Sequence[int] | None = None) -> list[int]:
        """Attribute ``name`` (an array or list of integers) as a list of ints."""
        return as_ints(self._py(name, default))

    def bools_attr(self, name: str, default: Sequence[bool] | None = None) -> list[bool]:
        """Attribute ``name`` (an array of booleans) as a list of bools."""
        return as_bools(self._py(name, default))

    def float_attr(self, name: str, default: float | None = None) -> float:
        """Attribute ``name`` as a float."""
        return as_float(self._py(name, default))

    def str_attr(self, name: str, default: str | None = None) -> str:
        """Attribute ``name`` (a string, symbol or enum value) as a str."""
        return str(self._py(name, default))

    def bool_attr(self, name: str, default: bool = False) -> bool:
        """Attribute ``name`` as a bool (a unit attribute is True)."""
        return bool(self._py(name, default))

    def dense_attr(self, name: str) -> np.ndarray:
        """The array of the ``dense<...>`` attribute ``name``."""
        return self.attr_of(name, DenseElementsAttr).array

    def struct_ints(self, name: str, field: str) -> list[int]:
        """Field ``field`` (a list of ints, empty when absent) of struct attribute ``name``
        (``#stablehlo.dot<...>``, ``#stablehlo.gather<...>``, ...)."""
        return as_ints(self.attr_of(name, StructAttr).get(field, []))

    @property
    def conv_dims(self) -> ConvDimsAttr:
        """A convolution's ``dimension_numbers``."""
        return self.attr_of("dimension_numbers", ConvDimsAttr)

    def _py(self, name: str, default: object) -> object:
        a = self.attrs.get(name)
        if a is not None:
            return a.py
        if default is None:
            raise KeyError(f"'{self.name}' has no attribute {name!r}")
        return default

    @property
    def result(self) -> Value:
        """The single result."""
        assert len(self.results) == 1, self.name
        return self.results[0]


@dataclass(eq=False)
class Func:
    """``func.func``: signature with per-argument/result attributes and a body."""

    name: str
    visibility: str
    arg_types: list[Type]
    arg_attrs: list[DictAttr | None]
    result_types: list[Type]
    result_attrs: list[DictAttr | None]
    attrs: dict[str, Attr]
    body: Region | None
    loc: Loc
    arg_locs: list[Attr | None] = field(default_factory=list)
    src_loc: Attr | None = None

    @property
    def args(self) -> list[Value]:
        """The entry block's arguments."""
        return self.body.block.args if self.body else []


@dataclass(eq=False)
class Decl:
    """A module-level symbol other than a function: Shardy's ``sdy.mesh @name = <...>``.

    The body is kept as written (the mesh axes and device ids), with the attributes that
    follow it (jax's ``{stablehlo.mesh = {...}}``), and printed back.
    """

    kind: str
    name: str
    body: str
    loc: Loc
    src_loc: Attr | None = None
    attrs: DictAttr | None = None

    def __str__(self) -> str:
        parts = [f"{self.kind} @{self.name} = {self.body}", self.attrs, self.src_loc]
        return " ".join(str(x) for x in parts if x is not None)


@dataclass(eq=False)
class Module:
    """A module: functions by name.  A ``// -----`` split file has ``parts`` instead."""

    name: str | None
    attrs: dict[str, Attr]
    funcs: list[Func]
    loc: Loc
    parts: list[Module] = field(default_factory=list)
    explicit: bool = True
    loc_aliases: dict[str, Attr] = field(default_factory=dict)
    decls: list[Decl] = field(default_factory=list)
    src_loc: Attr | None = None

    def func(self, name: str) -> Func | None:
        """The function called ``name`` or None."""
        return next((f for f in self.funcs if f.name.strip('"') == name), None)

    printer: ClassVar[Callable[[Module], str] | None] = None
    """What ``str(module)`` calls: :func:`frontend.syntax.printer.print_module`, which the
    printer module sets when it is loaded (``frontend/__init__.py`` loads it, so any import
    of the package does; the IR does not import its syntax)."""

    def __str__(self) -> str:
        printer = Module.printer
        assert printer is not None, "frontend.syntax.printer is not loaded"
        return printer(self)


def walk(region: Region) -> list[Op]:
    """Every operation in ``region``, nested ones included, in textual order."""
    return [op for block in region.blocks for op in walk_ops(block.ops)]


def walk_ops(ops: Iterable[Op]) -> list[Op]:
    """``ops`` and every operation nested in their regions, in textual order."""
    out: list[Op] = []
    for op in ops:
        out.append(op)
        for r in op.regions:
            out.extend(walk(r))
    return out
