"""The StableHLO IR: values, operations, blocks, regions, functions and modules.

Operations keep their operands (SSA :class:`Value` objects, each with a type), their
attributes (by name), their regions and their source location.  The op table in
:mod:`frontend.ir.ops` names operands so passes can write ``op.operand("lhs")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from frontend.ir.attrs import Attr, DictAttr
from frontend.ir.types import Type
from tensorlang.diagnostics import Loc


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
    def opdef(self) -> object:
        """The op-table entry (:class:`frontend.ir.ops.OpDef`), or None when unknown."""
        from frontend.ir.ops import OPS

        return OPS.get(self.name)

    def operand(self, name: str) -> Value:
        """The operand called ``name`` in the op table (non-variadic ones)."""
        return self.operand_group(name)[0]

    def operand_group(self, name: str) -> list[Value]:
        """The operands bound to the table's operand ``name`` (variadic ones give many)."""
        from frontend.ir.ops import operand_groups

        return operand_groups(self)[name]

    def attr(self, name: str, default: object = None) -> object:
        """The plain Python value of attribute ``name`` (``default`` when absent)."""
        a = self.attrs.get(name)
        return default if a is None else a.py

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

    def __str__(self) -> str:
        from frontend.syntax.printer import print_module

        return print_module(self)


def walk(region: Region) -> list[Op]:
    """Every operation in ``region``, nested ones included, in textual order."""
    out: list[Op] = []
    for block in region.blocks:
        for op in block.ops:
            out.append(op)
            for r in op.regions:
                out.extend(walk(r))
    return out
