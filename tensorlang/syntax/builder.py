"""Building the IR from the parse tree: functions, regions, names, literals, results.

The :class:`Builder` walks the tree top-down so that names resolve in order: each
region opens a scope, region arguments are defined inside it, and an instruction's
results are defined after the instruction (and its regions) are built.  Literal
operands are desugared into ``constant`` instructions inserted just before the
instruction that uses them; per-instruction syntax lives in
:mod:`tensorlang.syntax.instructions`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from lark import Token, Tree

from tensorlang.diagnostics import CompileError, Diagnostic, Loc, Source, note
from tensorlang.ir import infer
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS, OpDef
from tensorlang.ir.types import INDEX, MemRefType, Number, ScalarType, Type
from tensorlang.syntax.literals import parse_int, parse_number
from tensorlang.syntax.scope import Node, Scope, as_token, as_tokens, as_tree, loc_of
from tensorlang.syntax.typeparse import build_type, expect_scalar

MAX_DEPTH = 40
"""Regions nest at most this deep (deeper nesting is rejected, not a Python crash); the
passes, the scheduler and the code generator recurse per level, so every program the
parser accepts also compiles (tests/backend/test_op_table_builds.py)."""


class Builder:
    """Turns the parse tree of one source into a :class:`Program`.

    :arg builders: the builder of each instruction rule of the grammar, by rule name
        (:data:`tensorlang.syntax.instructions.BUILDERS`).
    """

    def __init__(self, source: Source, builders: Mapping[str, InstructionBuilder]) -> None:
        self.source = source
        self.builders = builders
        self.scope = Scope()
        self.region: Region | None = None
        self.depth = 0

    # -- locations, types ------------------------------------------------------------

    def loc(self, node: Node) -> Loc:
        """The source range of ``node``."""
        return loc_of(node, self.source)

    def type(self, node: Tree, *, local_default: bool = False) -> Type:
        """The type written at ``node`` (checked for well-formedness)."""
        return build_type(node, self.source, local_default=local_default)

    def int(self, node: Node) -> int:
        """The integer constant at ``node`` (a token)."""
        return parse_int(str(as_token(node)), self.loc(node))

    # -- program structure -----------------------------------------------------------

    def program(self, tree: Tree) -> Program:
        """The program of the ``start`` tree."""
        functions: dict[str, Function] = {}
        for node in tree.children:
            func = self.function(node)
            if func.name in functions:
                raise CompileError.at(func.loc, f"redefinition of function '@{func.name}'",
                                      note(functions[func.name].loc,
                                           "previous definition is here"))
            functions[func.name] = func
        return Program(list(functions.values()))

    def function(self, node: Tree) -> Function:
        """One ``func @name(args) attributes { body }``."""
        name_token, *rest = node.children
        body_node = rest.pop()
        self.scope = Scope()
        args = [self.define(arg.children[0], self.type(arg.children[1]))
                for arg in _args(rest)]
        func = Function(str(name_token)[1:], args, Region(), loc=self.loc(name_token))
        for attr in rest:
            if isinstance(attr, Tree) and attr.data in ("work_group_size", "subgroup_size"):
                self._function_attr(func, attr)
        func.body = self.region_of(body_node, [])
        func.body.parent = func
        return func

    def _function_attr(self, func: Function, attr: Tree) -> None:
        values = tuple(self.int(t) for t in attr.children)
        if attr.data == "work_group_size":
            if func.work_group_size is not None:
                raise CompileError.at(self.loc(attr), "work_group_size is given twice")
            func.work_group_size = (values[0], values[1])
        else:
            if func.subgroup_size is not None:
                raise CompileError.at(self.loc(attr), "subgroup_size is given twice")
            func.subgroup_size = values[0]

    def region_of(self, node: Tree, args: list[Value]) -> Region:
        """The region ``{ ... }`` at ``node``; ``args`` are visible inside it only."""
        region = Region(args=args, loc=self.loc(node))
        if self.depth >= MAX_DEPTH:
            raise CompileError.at(region.loc, f"regions are nested more than {MAX_DEPTH} deep")
        outer = self.region
        self.region = region
        self.depth += 1
        self.scope.push()
        try:
            for arg in args:
                self.scope.define(arg)
            for inst_node in node.children:
                self.instruction(inst_node)
        finally:
            self.scope.pop()
            self.region = outer
            self.depth -= 1
        return region

    def define(self, node: Node, t: Type) -> Value:
        """A new value called ``node`` (a ``%name`` token) of type ``t``, visible from now on."""
        value = Value(t, str(as_token(node))[1:], self.loc(node))
        self.scope.define(value)
        return value

    def new_value(self, node: Node, t: Type) -> Value:
        """A region argument for ``node`` (a ``%name`` token): visible once
        :meth:`region_of` enters its region."""
        return Value(t, str(as_token(node))[1:], self.loc(node))

    # -- instructions ----------------------------------------------------------------

    def instruction(self, node: Tree) -> None:
        """Build the instruction at ``node`` and append it to the current region."""
        names, body = node.children
        body = as_tree(body)
        inst = self.builders[body.data](self, body)
        self._results(inst, [] if names is None else as_tokens(as_tree(names).children))
        assert self.region is not None
        self.region.append(inst)

    def make(self, op: str, node: Tree, operands: Mapping[str, object],
             attrs: Mapping[str, object], regions: list[Region] | None = None) -> Instruction:
        """An instruction of ``op`` located at its keyword (the first token of ``node``)."""
        opdef: OpDef = OPS[op]
        return Instruction(opdef, dict(operands), dict(attrs), regions=regions or [],
                           loc=self._keyword_loc(node))

    def _keyword_loc(self, node: Tree) -> Loc:
        whole = self.loc(node)
        if whole.end_line != whole.line:  # stop at the end of the first line
            text, start = self.source.text, node.meta.start_pos
            end = text.find("\n", start)
            length = (len(text) if end < 0 else end) - start
            return Loc(whole.file, whole.line, whole.col, whole.line, whole.col + length,
                       whole.source)
        return whole

    def _results(self, inst: Instruction, names: list[Token]) -> None:
        types = infer.result_types(inst)
        if len(names) != len(types):
            raise CompileError.at(inst.loc, _count_message(inst, len(names), len(types)))
        for token, t in zip(names, types, strict=True):
            value = self.define(token, t)
            value.owner = inst
            inst.results.append(value)

    # -- operands --------------------------------------------------------------------

    def value(self, node: Node, expected: Type | None, what: str) -> Value:
        """The operand at ``node``: a named value, or a literal of type ``expected``."""
        if isinstance(node, Token):
            name = str(node)[1:]
            found = self.scope.visible(name)  # located only for the error
            return found if found is not None else self.scope.lookup(name, self.loc(node))
        return self.literal(node, expected, what)

    def literal(self, node: Tree, expected: Type | None, what: str) -> Value:
        """Desugar the literal at ``node`` into a constant of type ``expected``."""
        loc = self.loc(node)
        if not isinstance(expected, ScalarType):
            wanted = f"a value of type {expected}" if expected is not None else "a value"
            raise CompileError.at(loc, f"a literal cannot be used as {what}: {wanted} is "
                                  "needed")
        inst = Instruction(OPS["constant"], {}, {"value": _coerce(self.literal_value(node),
                                                                  expected), "type": expected},
                           loc=loc)
        result = Value(expected, "", loc, inst)
        inst.results.append(result)
        assert self.region is not None
        self.region.append(inst)
        return result

    def literal_value(self, node: Tree) -> Number:
        """The Python value of a ``literal`` node (bool, int, float or complex)."""
        tokens = node.children
        if len(tokens) == 2:
            real, imag = (float(parse_number(str(t), self.loc(t))) for t in tokens)
            return complex(real, imag)
        token = as_token(tokens[0])
        if token.type == "BOOL":
            return str(token) == "true"
        return parse_number(str(token), self.loc(token))

    def annotated(self, value: Value, t: Type, type_node: Tree) -> Type:
        """The type written at ``type_node`` must equal ``value``'s actual type.

        A memref written without address space stands for the operand's (the sample
        annotates a local ``alloca`` as ``memref<f32x16x8>``).  Returns the actual type.
        """
        if (isinstance(t, MemRefType) and isinstance(value.type, MemRefType)
                and type_node.children[-1] is None):
            t = replace(t, addrspace=value.type.addrspace)
        if value.type != t:
            raise CompileError.at(self.loc(type_node), f"type mismatch: '%{value.name}' has "
                                  f"type {value.type}, but {t} is written here",
                                  note(value.loc, "value defined here"))
        return t


    def loop_type(self, type_node: Tree | None) -> ScalarType:
        """The type of a loop written at ``type_node``: an integer type, ``index`` if
        none is written."""
        if type_node is None:
            return INDEX
        t = expect_scalar(self.type(type_node), type_node, self.source, "an integer type")
        if not t.is_int:
            raise CompileError.at(self.loc(type_node), f"expected an integer type, found {t}")
        return t

    def bound(self, node: Node, t: ScalarType, type_node: Tree | None, what: str) -> Value:
        """A bound or step of a loop of type ``t`` (:meth:`loop_type` of ``type_node``)."""
        value = self.value(node, t, what)
        if type_node is not None:
            self.annotated(value, t, type_node)
        elif value.type != t:
            raise CompileError.at(self.loc(node), f"type mismatch: {what} '%{value.name}' has "
                                  f"type {value.type}, but the loop type is {t} (the default; "
                                  f"write ': {value.type}' after the bounds)",
                                  *_defined(value))
        return value


InstructionBuilder = Callable[[Builder, Tree], Instruction]
"""Builds the instruction of one grammar rule (without its results)."""


def _defined(value: Value) -> tuple[Diagnostic, ...]:
    return (note(value.loc, "value defined here"),) if value.loc.line > 0 else ()


def _args(nodes: list[Node]) -> list[Tree]:
    return [n for n in nodes if isinstance(n, Tree) and n.data == "arg"]


def _coerce(value: Number, t: ScalarType) -> Number:
    """Integer literals stand for floats and complex numbers too (``alpha = 1``)."""
    if isinstance(value, bool):
        return value
    if t.is_float and isinstance(value, int):
        return float(value)
    if t.is_complex and isinstance(value, int | float):
        return complex(value)
    return value


def _count_message(inst: Instruction, given: int, wanted: int) -> str:
    if wanted == 0:
        return f"'{inst.name}' does not return a value"
    if given == 0 and wanted == 1:
        return f"the result of '{inst.name}' must be assigned to a value ('%name = ...')"
    return f"'{inst.name}' returns {wanted} value{'s' * (wanted != 1)} but {given} " \
        f"name{'s are' if given != 1 else ' is'} given"
