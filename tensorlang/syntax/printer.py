"""Print the IR as canonical tensor-language text: :func:`print_program`.

Regions are indented by two spaces, types are spelled ``str(t)``, and the printed
text parses back to the same IR (``tensorlang.ir.compare.programs_equal``).  Values
keep their names where those are valid identifiers and unique within the function;
the others get fresh numbers.  Forms: the ABNF's (``constant 1.0 -> f32``, no comma
after ``gemm.n.t``, ``:`` for a whole subview mode, ``yield :`` without values).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import Slice
from tensorlang.ir.types import INDEX, Dim, ScalarType, Type
from tensorlang.syntax.literals import literal_text

_IDENT = re.compile(r"[0-9]+|[A-Za-z][A-Za-z0-9_]*")
INDENT = "  "
"""One level of region indentation."""
LINE_WIDTH = 100
"""Longer function heads and BLAS instructions are broken over lines."""


def print_program(program: Program) -> str:
    """The canonical text of ``program``."""
    return "\n".join(print_function(func) for func in program.functions)


def print_function(func: Function) -> str:
    """The canonical text of one function, ending with a newline."""
    names = _names(func)
    args = [f"%{names[id(a)]}: {a.type}" for a in func.args]
    attrs = ""
    if func.work_group_size is not None:
        attrs += " work_group_size({},{})".format(*func.work_group_size)
    if func.subgroup_size is not None:
        attrs += f" subgroup_size({func.subgroup_size})"
    head = f"func @{func.name}(" + ", ".join(args) + ")" + attrs
    if len(head) + 2 > LINE_WIDTH and len(args) > 1:
        align = "\n" + " " * len(f"func @{func.name}(")
        head = f"func @{func.name}(" + ("," + align).join(args) + ")" + attrs
    printer = _Printer(names)
    return head + " " + printer.region(func.body, 0) + "\n"


def _all_values(func: Function) -> Iterator[Value]:
    yield from func.args
    yield from _region_values(func.body)


def _region_values(region: Region) -> Iterator[Value]:
    yield from region.args
    for inst in region.instructions:
        for sub in inst.regions:
            yield from _region_values(sub)
        yield from inst.results


def _names(func: Function) -> dict[int, str]:
    """A printable name per value: its own when valid and unique, else a fresh number."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    values = list(_all_values(func))
    for value in values:
        if _IDENT.fullmatch(value.name) and value.name not in taken:
            names[id(value)] = value.name
            taken.add(value.name)
    counter = 0
    for value in values:
        if id(value) not in names:
            while str(counter) in taken:
                counter += 1
            names[id(value)] = str(counter)
            taken.add(str(counter))
    return names


class _Printer:
    """Prints instructions and regions with the function's value names."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names

    def v(self, value: Value) -> str:
        """``%name`` of a value; a value not defined in the function (broken IR) still
        prints, as ``%undefined<n>``, so that the text shows where the IR is wrong."""
        name = self.names.get(id(value))
        if name is None:
            name = self.names[id(value)] = f"undefined{len(self.names)}"
        return "%" + name

    def vs(self, values: list[Value]) -> str:
        """Comma-separated names."""
        return ", ".join(self.v(value) for value in values)

    def region(self, region: Region, depth: int) -> str:
        """``{ ... }`` with the instructions indented one level deeper than ``depth``."""
        lines = ["{"]
        for inst in region.instructions:
            text = self.instruction(inst, depth + 1)
            lines.append(INDENT * (depth + 1) + text)
        lines.append(INDENT * depth + "}")
        return "\n".join(lines)

    def instruction(self, inst: Instruction, depth: int) -> str:
        """One instruction (without leading indentation; nested regions indented)."""
        body = _FORMS.get(inst.name, _nullary)(self, inst, depth)
        if inst.results:
            return f"{self.vs(inst.results)} = {body}"
        return body

    def dim(self, d: Dim, dynamic: Iterator[Value]) -> str:
        """A static integer, or the next dynamic operand."""
        return str(d) if d is not None else self.v(next(dynamic))


def _types(types: list[Type] | tuple[Type, ...]) -> str:
    return ", ".join(str(t) for t in types)


def _blas(p: _Printer, inst: Instruction, depth: int) -> str:
    mods = "".join("." + inst.attrs[k].value for k in ("trans_a", "trans_b") if k in inst.attrs)
    mods += ".atomic" if inst.attrs.get("atomic") else ""
    values = list(inst.operand_values())
    head, types = f"{inst.name}{mods} {p.vs(values)}", _types([v.type for v in values])
    if len(INDENT * depth + head + types) + 3 > LINE_WIDTH:
        return f"{head}\n{INDENT * depth}    : {types}"
    return f"{head} : {types}"


def _arith(p: _Printer, inst: Instruction, depth: int) -> str:
    key = "op" if inst.name == "arith" else "cond"
    values = list(inst.operand_values())
    return f"{inst.name}.{inst.attr(key).value} {p.vs(values)} : {inst.attr('type')}"


def _alloca(p: _Printer, inst: Instruction, depth: int) -> str:
    return f"alloca -> {inst.attr('type')}"


def _barrier(p: _Printer, inst: Instruction, depth: int) -> str:
    fences = inst.attr_of("fence_global", bool), inst.attr_of("fence_local", bool)
    return "barrier" + ".global" * fences[0] + ".local" * fences[1]


def _cast(p: _Printer, inst: Instruction, depth: int) -> str:
    return f"cast {p.v(inst.operand('a'))} : {inst.attr('from_type')} -> {inst.attr('to_type')}"


def _constant(p: _Printer, inst: Instruction, depth: int) -> str:
    return f"constant {literal_text(inst.attr('value'))} -> {inst.attr('type')}"


def _expand(p: _Printer, inst: Instruction, depth: int) -> str:
    dynamic = iter(inst.variadic("dynamic"))
    shape = " x ".join(p.dim(d, dynamic) for d in inst.attr("shape"))
    return (f"expand {p.v(inst.operand('operand'))}[{inst.attr('mode')} -> {shape}] : "
            f"{inst.attr('type')}")


def _fuse(p: _Printer, inst: Instruction, depth: int) -> str:
    return (f"fuse {p.v(inst.operand('operand'))}[{inst.attr('from_mode')},"
            f"{inst.attr('to_mode')}] : {inst.attr('type')}")


def _size(p: _Printer, inst: Instruction, depth: int) -> str:
    return f"size {p.v(inst.operand('operand'))}[{inst.attr('mode')}] : {inst.attr('type')}"


def _load(p: _Printer, inst: Instruction, depth: int) -> str:
    return (f"load {p.v(inst.operand('operand'))}[{p.vs(inst.operand('indices'))}] : "
            f"{inst.attr('type')}")


def _store(p: _Printer, inst: Instruction, depth: int) -> str:
    return (f"store {p.v(inst.operand('value'))}, {p.v(inst.operand('operand'))}"
            f"[{p.vs(inst.operand('indices'))}] : {inst.attr('type')}")


def _slice(p: _Printer, piece: Slice, dynamic: Iterator[Value]) -> str:
    if piece.full:
        return ":"
    offset = p.dim(piece.offset, dynamic)
    return offset if piece.size == 0 else f"{offset}:{p.dim(piece.size, dynamic)}"


def _subview(p: _Printer, inst: Instruction, depth: int) -> str:
    dynamic = iter(inst.variadic("dynamic"))
    slices = ", ".join(_slice(p, s, dynamic) for s in inst.attr("slices"))
    return f"subview {p.v(inst.operand('operand'))}[{slices}] : {inst.attr('type')}"


def _lifetime_stop(p: _Printer, inst: Instruction, depth: int) -> str:
    return f"lifetime_stop {p.v(inst.operand('operand'))}"


def _nullary(p: _Printer, inst: Instruction, depth: int) -> str:
    return inst.name


def _parallel(p: _Printer, inst: Instruction, depth: int) -> str:
    return "parallel " + p.region(inst.regions[0], depth)


def _loop_head(p: _Printer, inst: Instruction) -> str:
    var = inst.regions[0].args[0]
    bounds = [inst.operand("from"), inst.operand("to")]
    if inst.operands.get("step") is not None:
        bounds.append(inst.optional("step"))
    head = f"{inst.name} {p.v(var)} = {p.vs(bounds)}"
    loop_type = inst.attr_of("loop_type", ScalarType)
    return head if loop_type == INDEX else f"{head} : {loop_type}"


def _foreach(p: _Printer, inst: Instruction, depth: int) -> str:
    return _loop_head(p, inst) + " " + p.region(inst.regions[0], depth)


def _for(p: _Printer, inst: Instruction, depth: int) -> str:
    head = _loop_head(p, inst)
    init: list[Value] = inst.variadic("init")
    if init:
        carried = inst.regions[0].args[1:]
        pairs = ", ".join(f"{p.v(a)} = {p.v(v)}" for a, v in zip(carried, init, strict=True))
        head += f" init({pairs}) -> ({_types([v.type for v in init])})"
    return head + " " + p.region(inst.regions[0], depth)


def _if(p: _Printer, inst: Instruction, depth: int) -> str:
    text = f"if {p.v(inst.operand('cond'))}"
    types = inst.attr("result_types")
    if types:
        text += f" -> ({_types(types)})"
    text += " " + p.region(inst.regions[0], depth)
    if len(inst.regions) > 1:
        text += " else " + p.region(inst.regions[1], depth)
    return text


def _yield(p: _Printer, inst: Instruction, depth: int) -> str:
    values = inst.variadic("values")
    if not values:
        return "yield :"
    return f"yield {p.vs(values)} : {_types(inst.attr('types'))}"


def _math(p: _Printer, inst: Instruction, depth: int) -> str:
    values = list(inst.operand_values())
    return f"math.{inst.attr('fn')} {p.vs(values)} : {inst.attr('type')}"


def _select(p: _Printer, inst: Instruction, depth: int) -> str:
    values = [inst.operand(k) for k in ("cond", "a", "b")]
    return f"select {p.vs(values)} : {inst.attr('type')}"


def _bitcast(p: _Printer, inst: Instruction, depth: int) -> str:
    return (f"bitcast {p.v(inst.operand('a'))} : {inst.attr('from_type')} -> "
            f"{inst.attr('to_type')}")


def _complex(p: _Printer, inst: Instruction, depth: int) -> str:
    return f"complex {p.vs([inst.operand('re'), inst.operand('im')])} : {inst.attr('type')}"


def _foreach_nd(p: _Printer, inst: Instruction, depth: int) -> str:
    body = inst.regions[0]
    head = (f"foreach ({p.vs(body.args)}) = ({p.vs(inst.operand('from'))}), "
            f"({p.vs(inst.operand('to'))})")
    loop_type = inst.attr_of("loop_type", ScalarType)
    if loop_type != INDEX:
        head += f" : {loop_type}"
    return head + " " + p.region(body, depth)


_FORMS: dict[str, Callable[[_Printer, Instruction, int], str]] = {
    "alloca": _alloca, "axpby": _blas, "gemm": _blas, "gemv": _blas, "ger": _blas,
    "hadamard_product": _blas, "sum": _blas, "arith": _arith, "cmp": _arith,
    "barrier": _barrier, "cast": _cast, "constant": _constant, "expand": _expand,
    "fuse": _fuse, "size": _size, "load": _load, "store": _store, "subview": _subview,
    "lifetime_stop": _lifetime_stop, "parallel": _parallel, "foreach": _foreach,
    "for": _for, "if": _if, "yield": _yield, "math": _math, "select": _select,
    "bitcast": _bitcast, "complex": _complex, "foreach_nd": _foreach_nd,
}


Program.printer = print_program
