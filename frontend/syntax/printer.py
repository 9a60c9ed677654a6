"""Canonical pretty printer: every op in its pretty form where the table has one, else
the generic form.  ``parse(print(m))`` gives back the same IR."""

from __future__ import annotations

from frontend.ir import attrs as A
from frontend.ir.core import Block, Func, Module, Op, Region, Value
from frontend.ir.ops import OPS
from frontend.ir.types import format_results
from frontend.syntax import custom, formats

SPLIT_MARKER = "// -----"


class Printer:
    """Prints one function at a time, numbering values ``%0, %1, ...`` and ``%argN``."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.next_value = 0
        self.next_arg = 0
        self.indent = ""
        self.lines: list[str] = []

    # -- value names ---------------------------------------------------------------------
    def name(self, v: Value) -> str:
        """The printed name of ``v`` (assigned on first sight)."""
        n = self.names.get(id(v))
        if n is None:
            n = self.names[id(v)] = f"%arg{self.next_arg}"
            self.next_arg += 1
        return n

    def decl(self, v: Value) -> str:
        """``%name: type``."""
        return f"{self.name(v)}: {v.type}"

    def alias(self, v: Value, same_as: Value) -> None:
        """Print ``v`` with the name of ``same_as``."""
        self.names[id(v)] = self.name(same_as)

    def _name_results(self, op: Op) -> str:
        if not op.results:
            return ""
        base = f"%{self.next_value}"
        self.next_value += 1
        if len(op.results) == 1:
            self.names[id(op.results[0])] = base
            return f"{base} = "
        for i, r in enumerate(op.results):
            self.names[id(r)] = f"{base}#{i}"
        return f"{base}:{len(op.results)} = "

    # -- ops and regions -----------------------------------------------------------------
    def op(self, op: Op) -> str:
        """One op (nested regions included), without leading indentation."""
        head = self._name_results(op)
        opdef = OPS.get(op.name)
        if opdef is None or opdef.syntax == "generic":
            body = self.generic(op)
            text = f"{head}{body}"
        else:
            if opdef.syntax.endswith("!"):
                body = custom.PRINTERS[opdef.syntax](op, self)
            else:
                body = formats.print_pretty(op, opdef, self.name)
            sep = "" if body.startswith("(") else " "
            text = f"{head}{op.name}{sep}{body}".rstrip()
        if op.src_loc is not None:
            text += f" {op.src_loc}"
        return text

    def generic(self, op: Op) -> str:
        """``"name"(operands) <{props}> ({regions}) {attrs} : (T) -> R``."""
        opdef = OPS.get(op.name)
        inherent = set(opdef.attrs) if opdef else set()
        props = [(k, v) for k, v in op.attrs.items() if k in inherent]
        rest = [(k, v) for k, v in op.attrs.items() if k not in inherent]
        text = f'"{op.name}"({", ".join(map(self.name, op.operands))})'
        if props:
            text += " <{" + ", ".join(A.entry_text(k, v) for k, v in props) + "}>"
        if op.regions:
            text += " (" + ", ".join(self.region_body(r) for r in op.regions) + ")"
        if rest:
            text += " {" + ", ".join(A.entry_text(k, v) for k, v in rest) + "}"
        ins = ", ".join(str(v.type) for v in op.operands)
        return f"{text} : ({ins}) -> {format_results(op.result_types)}"

    def region_body(self, region: Region, header: bool = True) -> str:
        """``{ ... }`` with the region's blocks at one more indentation level."""
        outer = self.indent
        self.indent = outer + "  "
        lines = ["{"]
        for i, block in enumerate(region.blocks):
            if header and (block.args or len(region.blocks) > 1) or i > 0:
                lines.append(f"{outer}{self._block_header(block, i)}")
            lines += [f"{self.indent}{self.op(o)}" for o in block.ops]
        self.indent = outer
        lines.append(f"{outer}}}")
        return "\n".join(lines)

    def _block_header(self, block: Block, index: int) -> str:
        args = ", ".join(map(self.decl, block.args))
        return f"^bb{index}({args}):" if block.args else f"^bb{index}:"

    # -- functions and modules -----------------------------------------------------------
    def func(self, f: Func, indent: str) -> str:
        """One ``func.func``."""
        self.names, self.next_value, self.next_arg = {}, 0, 0
        vis = f"{f.visibility} " if f.visibility else ""
        args = []
        for i, t in enumerate(f.arg_types):
            head = f"{self.name(f.args[i])}: " if f.body else ""
            loc = f.arg_locs[i] if i < len(f.arg_locs) else None
            args.append(f"{head}{t}" + _dict(f.arg_attrs[i]) + _dict(loc))
        text = f"{indent}func.func {vis}@{f.name}({', '.join(args)})"
        results = [f"{t}{_dict(a)}" for t, a in zip(f.result_types, f.result_attrs, strict=False)]
        if len(results) == 1 and f.result_attrs[0] is None:
            text += f" -> {results[0]}"
        elif results:
            text += f" -> ({', '.join(results)})"
        if f.attrs:
            text += " attributes {" + ", ".join(A.entry_text(k, v) for k, v in f.attrs.items())
            text += "}"
        if f.body is None:
            return text + _dict(f.src_loc)
        self.indent = indent
        body = self.region_body(f.body, header=len(f.body.blocks) > 1)
        return f"{text} {body}" + _dict(f.src_loc)


def _dict(d: A.Attr | None) -> str:
    return f" {d}" if d is not None else ""


def print_module(m: Module) -> str:
    """Canonical text of a module (or of every part of a split file)."""
    if m.parts:
        return f"\n\n{SPLIT_MARKER}\n\n".join(print_module(p).rstrip("\n") for p in m.parts) + "\n"
    aliases = "".join(f"{k} = {v}\n" for k, v in m.loc_aliases.items())
    return _module_body(m) + aliases


def _module_body(m: Module) -> str:
    printer = Printer()
    if not m.explicit:
        return "\n\n".join(printer.func(f, "") for f in m.funcs) + "\n"
    head = "module" + (f" @{m.name}" if m.name else "")
    if m.attrs:
        head += " attributes {" + ", ".join(A.entry_text(k, v) for k, v in m.attrs.items())
        head += "}"
    items = [f"  {d}" for d in m.decls] + [printer.func(f, "  ") for f in m.funcs]
    body = "\n".join(items)
    tail = _dict(m.src_loc)
    return f"{head} {{\n{body}\n}}{tail}\n" if items else f"{head} {{\n}}{tail}\n"


Module.printer = print_module
