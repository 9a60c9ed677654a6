"""The tensor-language IR: values, instructions, regions, functions, programs.

An :class:`Instruction` is generic: its :class:`~tensorlang.ir.ops.OpDef` (from the
one table in ``ops.py``) says which named operands, attributes, results and regions
it has.  Operands are accessed by name (``inst.operand("A")`` or ``inst.A``),
attributes likewise (``inst.attr("trans_a")`` or ``inst.trans_a``); typed code uses
``inst.single("A")``, ``inst.variadic("indices")``, ``inst.optional("step")`` and
``inst.attr_of("type", MemRefType)``.

Values have identity semantics; their ``name`` is only a hint kept for printing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from tensorlang.diagnostics import UNKNOWN_LOC, Loc
from tensorlang.ir.types import MemRefType, ScalarType, Type

if TYPE_CHECKING:
    from tensorlang.ir.ops import OpDef

T = TypeVar("T")


class Value:
    """An SSA value: a function argument, an instruction result or a region argument."""

    __slots__ = ("type", "name", "loc", "owner")

    def __init__(self, type: Type, name: str = "", loc: Loc = UNKNOWN_LOC,
                 owner: Instruction | Region | Function | None = None) -> None:
        self.type = type
        self.name = name
        self.loc = loc
        self.owner = owner

    def __repr__(self) -> str:
        return f"Value(%{self.name or '?'}: {self.type})"

    @property
    def memref_type(self) -> MemRefType:
        """The type of a value the verifier knows to be a memref."""
        assert isinstance(self.type, MemRefType), f"{self!r} is not a memref"
        return self.type

    @property
    def scalar_type(self) -> ScalarType:
        """The type of a value the verifier knows to be a scalar."""
        assert isinstance(self.type, ScalarType), f"{self!r} is not a scalar"
        return self.type


OperandSlot = "Value | list[Value] | None"


@dataclass(eq=False)
class Instruction:
    """One instruction: an op from the table plus its operands, attributes, results, regions.

    ``operands`` maps each operand name of the op to a :class:`Value` (single),
    a list of values (variadic) or ``None`` (an absent optional operand).
    """

    op: OpDef
    operands: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    results: list[Value] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    loc: Loc = UNKNOWN_LOC
    parent: Region | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for result in self.results:
            result.owner = self
        for region in self.regions:
            region.parent = self

    @property
    def name(self) -> str:
        """The op's keyword, e.g. ``gemm``."""
        return self.op.name

    def operand(self, name: str) -> Any:
        """The operand slot ``name``: a value, a list of values or None."""
        return self.operands[name]

    def attr(self, name: str) -> Any:
        """The attribute ``name``."""
        return self.attrs[name]

    # Typed access (the parser and verifier guarantee the shapes of the slots, so a
    # mismatch is a compiler bug).  The names avoid every operand and attribute name of
    # the table, which ``inst.<name>`` reaches through ``__getattr__``.

    def single(self, name: str) -> Value:
        """The operand ``name`` of arity one."""
        slot = self.operands[name]
        assert isinstance(slot, Value), f"{self.name}: operand {name!r} is not one value"
        return slot

    def variadic(self, name: str) -> list[Value]:
        """The variadic operand ``name``."""
        slot = self.operands[name]
        assert isinstance(slot, list), f"{self.name}: operand {name!r} is not variadic"
        return slot

    def optional(self, name: str) -> Value | None:
        """The optional operand ``name`` (None when absent)."""
        slot = self.operands[name]
        assert slot is None or isinstance(slot, Value), f"{self.name}: operand {name!r}"
        return slot

    def attr_of(self, name: str, kind: type[T]) -> T:
        """The attribute ``name``, which must be a ``kind``."""
        value = self.attrs[name]
        assert isinstance(value, kind), f"{self.name}: attribute {name!r} is {value!r}"
        return value

    def __getattr__(self, name: str) -> Any:
        # Named access to operands and attributes: ``inst.A``, ``inst.trans_a``.
        if name.startswith("__"):
            raise AttributeError(name)
        operands = self.__dict__.get("operands", {})
        if name in operands:
            return operands[name]
        attrs = self.__dict__.get("attrs", {})
        if name in attrs:
            return attrs[name]
        raise AttributeError(f"{type(self).__name__} {self.__dict__.get('op')!r} has no {name!r}")

    def operand_values(self) -> Iterator[Value]:
        """Every operand value, in table order, variadic lists flattened."""
        for slot in self.operands.values():
            if isinstance(slot, list):
                yield from slot
            elif slot is not None:
                yield slot

    @property
    def result(self) -> Value:
        """The single result (for instructions that have exactly one)."""
        assert len(self.results) == 1, f"{self.name} has {len(self.results)} results"
        return self.results[0]

    def walk(self) -> Iterator[Instruction]:
        """This instruction and every instruction nested in its regions, pre-order."""
        yield self
        for region in self.regions:
            yield from region.walk()


@dataclass(eq=False)
class Region:
    """An ordered list of instructions, optionally with arguments (loop variables)."""

    instructions: list[Instruction] = field(default_factory=list)
    args: list[Value] = field(default_factory=list)
    loc: Loc = UNKNOWN_LOC
    parent: Instruction | Function | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for arg in self.args:
            arg.owner = self
        for inst in self.instructions:
            inst.parent = self

    def append(self, inst: Instruction) -> Instruction:
        """Append ``inst`` and make this region its parent."""
        inst.parent = self
        self.instructions.append(inst)
        return inst

    def walk(self) -> Iterator[Instruction]:
        """Every instruction in this region and nested ones, pre-order."""
        for inst in self.instructions:
            yield from inst.walk()


@dataclass(eq=False)
class Function:
    """``func @name(args) attributes { body }``: a kernel callable from the host."""

    name: str
    args: list[Value]
    body: Region
    work_group_size: tuple[int, int] | None = None
    subgroup_size: int | None = None
    loc: Loc = UNKNOWN_LOC

    def __post_init__(self) -> None:
        for arg in self.args:
            arg.owner = self
        self.body.parent = self

    def walk(self) -> Iterator[Instruction]:
        """Every instruction of the body, pre-order."""
        return self.body.walk()


@dataclass(eq=False)
class Program:
    """A translation unit: an ordered list of functions."""

    functions: list[Function] = field(default_factory=list)

    printer: ClassVar[Callable[[Program], str] | None] = None
    """What ``str(program)`` calls: :func:`tensorlang.syntax.printer.print_program`, which
    the printer module sets when it is loaded (``tensorlang/__init__.py`` loads it, so any
    import of the package does; the IR does not import its syntax)."""

    def function(self, name: str) -> Function:
        """The function called ``name`` (without ``@``)."""
        for func in self.functions:
            if func.name == name:
                return func
        raise KeyError(name)

    def __str__(self) -> str:
        printer = Program.printer
        assert printer is not None, "tensorlang.syntax.printer is not loaded"
        return printer(self)
