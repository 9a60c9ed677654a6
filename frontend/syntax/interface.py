"""What the op syntaxes see of the parser and the printer.

The hand-written and format-string syntaxes of ops (:mod:`.custom`, :mod:`.custom_base`,
:mod:`.formats`, :mod:`.interpreter_ops`, :mod:`.regions`, :mod:`.shardy`) are called by
the parser and the printer and call back into them for values, regions and an op's
generic parts.  They are typed against :class:`OpParser` and :class:`OpPrinter`, which
:class:`frontend.syntax.parser.Parser` and :class:`frontend.syntax.printer.Printer`
implement, so they import neither of the modules that import them.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from frontend.ir import attrs as A
from frontend.ir.core import Block, Op, Region, Value
from frontend.ir.types import FunctionType, Type
from frontend.syntax.attrparse import AttrParser
from tensorlang.diagnostics import Loc


class OpParser(AttrParser):
    """The StableHLO parser as an op's syntax sees it: tokens, types and attributes
    (inherited), and the op-level parts below (:class:`frontend.syntax.parser.Parser`)."""

    @abstractmethod
    def parse_region(self, entry_block: Block | None = None,
                     implicit_args: list[tuple[str, Type, Loc]] | None = None) -> Region:
        """``{ [^bb0(args):] ops ... }``; ``implicit_args`` name the entry block's args."""
        raise NotImplementedError

    @abstractmethod
    def use(self) -> Value:
        """Consume a ``%value`` use and return the value it names."""
        raise NotImplementedError

    @abstractmethod
    def use_list(self) -> list[Value]:
        """``%a, %b, ...`` (stops before a ``,`` not followed by a value)."""
        raise NotImplementedError

    @abstractmethod
    def check_types(self, values: list[Value], types: list[Type] | tuple[Type, ...],
                    loc: Loc) -> None:
        """Report a mismatch between operands' types and the types written for them."""
        raise NotImplementedError

    @abstractmethod
    def generic_parts(self) -> tuple[list[Value], dict[str, A.Attr], list[Region],
                                     FunctionType]:
        """An op's operands, attributes, regions and function type in the generic form."""
        raise NotImplementedError

    @abstractmethod
    def make_op(self, name: str, operands: list[Value], result_types: list[Type],
                attrs: dict[str, A.Attr], regions: list[Region], loc: Loc) -> Op:
        """Build an op (normalising array-like attributes) and its result values."""
        raise NotImplementedError

    @abstractmethod
    def parse_trailing_loc(self) -> A.Attr | None:
        """An optional ``loc(...)``."""
        raise NotImplementedError


class OpPrinter(Protocol):
    """The StableHLO printer as an op's syntax sees it
    (:class:`frontend.syntax.printer.Printer`)."""

    indent: str
    """The indentation of the line being printed."""

    def name(self, v: Value) -> str:
        """The printed name of ``v`` (assigned on first sight)."""
        ...

    def decl(self, v: Value) -> str:
        """``%name: type``."""
        ...

    def alias(self, v: Value, same_as: Value) -> None:
        """Print ``v`` with the name of ``same_as``."""
        ...

    def region_body(self, region: Region, header: bool = True) -> str:
        """``{ ... }`` with the region's blocks at one more indentation level."""
        ...
