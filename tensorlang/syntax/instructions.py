"""Per-instruction syntax: one builder per grammar rule, from parse tree to IR.

Each builder resolves operands (desugaring literals with the type the instruction
gives them), checks every type written after ``:`` against the operand it annotates,
and returns an :class:`Instruction` without results (the :class:`Builder` types and
names them).
"""

from __future__ import annotations

from lark import Tree

from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import Slice
from tensorlang.ir.types import I1, INDEX, MemRefType
from tensorlang.syntax.builder import Builder, InstructionBuilder
from tensorlang.syntax.extensions import BUILDERS as EXTENSIONS
from tensorlang.syntax.modded import build_modded
from tensorlang.syntax.scope import Node, as_token
from tensorlang.syntax.typeparse import expect_memref, expect_scalar


def _alloca(b: Builder, node: Tree) -> Instruction:
    t = expect_memref(b.type(node.children[0], local_default=True), node.children[0], b.source)
    return b.make("alloca", node, {}, {"type": t})


def _barrier(b: Builder, node: Tree) -> Instruction:
    fences = {"fence_global": False, "fence_local": False}
    for mod in node.children:
        key = {".global": "fence_global", ".local": "fence_local"}.get(str(mod))
        if key is None or fences[key]:
            problem = "repeated" if key else "unknown"
            raise CompileError.at(b.loc(mod), f"{problem} barrier modifier '{mod}' (expected "
                                  "'.global' and/or '.local')")
        fences[key] = True
    return b.make("barrier", node, {}, fences)


def _cast(b: Builder, node: Tree) -> Instruction:
    operand, from_node, to_node = node.children
    from_type = expect_scalar(b.type(from_node), from_node, b.source)
    to_type = expect_scalar(b.type(to_node), to_node, b.source)
    value = b.value(operand, from_type, "the operand of cast")
    b.annotated(value, from_type, from_node)
    return b.make("cast", node, {"a": value}, {"from_type": from_type, "to_type": to_type})


def _constant(b: Builder, node: Tree) -> Instruction:
    literal, type_node = node.children
    t = expect_scalar(b.type(type_node), type_node, b.source)
    return b.make("constant", node, {}, {"value": b.literal_value(literal), "type": t})


def _memref_operand(b: Builder, token: Node, type_node: Tree) -> tuple[Value, MemRefType]:
    value = b.value(token, None, "a memref")
    t = expect_memref(b.type(type_node), type_node, b.source)
    return value, expect_memref(b.annotated(value, t, type_node), type_node, b.source)


def _dynamic(b: Builder, node: Node, dynamic: list[Value]) -> int | None:
    """A static integer, or None with the value appended to ``dynamic``."""
    if as_token(node).type == "INT":
        return b.int(node)
    dynamic.append(b.value(node, INDEX, "a size"))
    return None


def _expand(b: Builder, node: Tree) -> Instruction:
    token, mode_token, *dims, type_node = node.children
    mode = b.int(mode_token)
    dynamic: list[Value] = []
    shape = tuple(_dynamic(b, d, dynamic) for d in dims)
    value, t = _memref_operand(b, token, type_node)
    return b.make("expand", node, {"operand": value, "dynamic": dynamic},
                  {"mode": mode, "shape": shape, "type": t})


def _fuse(b: Builder, node: Tree) -> Instruction:
    token, first, last, type_node = node.children
    modes = {"from_mode": b.int(first), "to_mode": b.int(last)}
    value, t = _memref_operand(b, token, type_node)
    return b.make("fuse", node, {"operand": value}, {**modes, "type": t})


def _size(b: Builder, node: Tree) -> Instruction:
    token, mode_token, type_node = node.children
    mode = b.int(mode_token)
    value, t = _memref_operand(b, token, type_node)
    return b.make("size", node, {"operand": value}, {"mode": mode, "type": t})


def _indices(b: Builder, node: Tree | None) -> list[Value]:
    if node is None:
        return []
    return [b.value(child, INDEX, "an index") for child in node.children]


def _load(b: Builder, node: Tree) -> Instruction:
    token, indices, type_node = node.children
    value = b.value(token, None, "the operand of load")
    t = b.annotated(value, b.type(type_node), type_node)
    return b.make("load", node, {"operand": value, "indices": _indices(b, indices)},
                  {"type": t})


def _store(b: Builder, node: Tree) -> Instruction:
    stored, token, indices, type_node = node.children
    target = b.value(token, None, "a memref")
    t = expect_memref(b.type(type_node), type_node, b.source)
    value = b.value(stored, t.element, "the stored value")
    t = expect_memref(b.annotated(target, t, type_node), type_node, b.source)
    return b.make("store", node, {"value": value, "operand": target,
                                  "indices": _indices(b, indices)}, {"type": t})


def _subview(b: Builder, node: Tree) -> Instruction:
    token, *pieces, type_node = node.children
    dynamic: list[Value] = []
    slices = tuple(_slice(b, piece, dynamic) for piece in pieces if piece is not None)
    value, t = _memref_operand(b, token, type_node)
    return b.make("subview", node, {"operand": value, "dynamic": dynamic},
                  {"slices": slices, "type": t})


def _slice(b: Builder, piece: Tree, dynamic: list[Value]) -> Slice:
    if piece.data == "full_slice":
        return Slice(0, 0, full=True)
    offset_node, size_node = piece.children
    offset = _dynamic(b, offset_node, dynamic)
    size = 0 if size_node is None else _dynamic(b, size_node, dynamic)
    return Slice(offset, size)


def _lifetime_stop(b: Builder, node: Tree) -> Instruction:
    value = b.value(node.children[0], None, "a memref")
    return b.make("lifetime_stop", node, {"operand": value}, {})


def _nullary(b: Builder, node: Tree) -> Instruction:
    return b.make(str(node.children[0]), node, {}, {})


def _parallel(b: Builder, node: Tree) -> Instruction:
    return b.make("parallel", node, {}, {}, [b.region_of(node.children[0], [])])


def _foreach(b: Builder, node: Tree) -> Instruction:
    var, low, high, type_node, body = node.children
    t = b.loop_type(type_node)
    operands = {"from": b.bound(low, t, type_node, "the lower bound"),
                "to": b.bound(high, t, type_node, "the upper bound")}
    region = b.region_of(body, [b.new_value(var, t)])
    return b.make("foreach", node, operands, {"loop_type": t}, [region])


def _for(b: Builder, node: Tree) -> Instruction:
    var, low, high, step, type_node, init, types_node, body = node.children
    t = b.loop_type(type_node)
    operands: dict[str, object] = {
        "from": b.bound(low, t, type_node, "the lower bound"),
        "to": b.bound(high, t, type_node, "the upper bound"),
        "step": None if step is None else b.bound(step, t, type_node, "the step")}
    carried, values = _carried(b, node, init, types_node)
    operands["init"] = values
    region = b.region_of(body, [b.new_value(var, t), *carried])
    return b.make("for", node, operands, {"loop_type": t}, [region])


def _carried(b: Builder, node: Tree, init: Tree | None,
             types_node: Tree | None) -> tuple[list[Value], list[Value]]:
    """The loop-carried region arguments and their initial values."""
    items = [] if init is None else [i for i in init.children if i is not None]
    type_nodes = _type_nodes(types_node)
    if len(items) != len(type_nodes):
        where = (types_node if types_node is not None and type_nodes
                 else init if init is not None else node)
        raise CompileError.at(b.loc(where), f"the loop carries {len(items)} value"
                              f"{'s' * (len(items) != 1)} (init) but {len(type_nodes)} "
                              "result type" + "s" * (len(type_nodes) != 1) + " are given")
    args, values = [], []
    for item, type_node in zip(items, type_nodes, strict=True):
        t = expect_scalar(b.type(type_node), type_node, b.source)
        value = b.value(item.children[1], t, "a loop-carried value")
        b.annotated(value, t, type_node)
        args.append(b.new_value(item.children[0], t))
        values.append(value)
    return args, values


def _type_nodes(node: Tree | None) -> list[Tree]:
    return [] if node is None else [c for c in node.children if c is not None]


def _if(b: Builder, node: Tree) -> Instruction:
    cond, types_node, then_node, else_node = node.children
    types = tuple(expect_scalar(b.type(n), n, b.source) for n in _type_nodes(types_node))
    value = b.value(cond, I1, "the condition")
    regions = [b.region_of(then_node, [])]
    if else_node is not None:
        regions.append(b.region_of(else_node, []))
    return b.make("if", node, {"cond": value}, {"result_types": types}, regions)


def _yield(b: Builder, node: Tree) -> Instruction:
    values_node, types_node = node.children
    type_nodes = _type_nodes(types_node)
    types = tuple(expect_scalar(b.type(n), n, b.source) for n in type_nodes)
    operands = [] if values_node is None else values_node.children
    if len(operands) != len(types):
        raise CompileError.at(b.loc(node), f"yield has {len(operands)} value"
                              f"{'s' * (len(operands) != 1)} but {len(types)} type"
                              f"{'s' * (len(types) != 1)}")
    values = [b.value(o, t, "a yielded value") for o, t in zip(operands, types, strict=True)]
    for value, t, type_node in zip(values, types, type_nodes, strict=True):
        b.annotated(value, t, type_node)
    return b.make("yield", node, {"values": values}, {"types": types})


BUILDERS: dict[str, InstructionBuilder] = {
    "alloca": _alloca, "barrier": _barrier, "cast": _cast, "constant": _constant,
    "expand": _expand, "fuse": _fuse, "size": _size, "load": _load, "store": _store,
    "subview": _subview, "lifetime_stop": _lifetime_stop, "nullary": _nullary,
    "parallel": _parallel, "foreach": _foreach, "for_loop": _for, "if_inst": _if,
    "yield_inst": _yield, "modded": build_modded, **EXTENSIONS,
}
"""The builder of each instruction rule of the grammar (the extensions' included)."""
