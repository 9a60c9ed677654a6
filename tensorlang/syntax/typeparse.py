"""Types from the parse tree: scalar, memref (shape, strided layout, address space), group.

Every type read is checked with :func:`tensorlang.verify.types.check_type` (the
verifier's well-formedness rules) when that module is available.
"""

from __future__ import annotations

from lark import Tree

from tensorlang.diagnostics import CompileError, Source
from tensorlang.ir.types import (
    SCALAR_TYPES,
    VOID,
    AddressSpace,
    Dim,
    GroupType,
    MemRefType,
    ScalarType,
    Type,
)
from tensorlang.syntax.literals import parse_int
from tensorlang.syntax.scope import Node, as_token, loc_of


def build_type(node: Tree, source: Source, *, local_default: bool = False) -> Type:
    """The type written at ``node``; ``local_default`` makes a memref without address
    space local (the reading of ``alloca -> memref<...>``)."""
    if node.data == "scalar_type":  # always well-formed
        return SCALAR_TYPES[str(node.children[0])]
    t: Type
    if node.data == "void_type":
        t = VOID
    elif node.data == "memref_type":
        t = _memref(node, source, local_default)
    else:
        t = _group(node, source)
    check(t, node, source)
    return t


def check(t: Type, node: Tree, source: Source) -> None:
    """Raise if ``t`` (written at ``node``) breaks a type restriction of the reference."""
    loc = loc_of(node, source)
    try:
        from tensorlang.verify.types import check_type
    except ModuleNotFoundError as error:  # the verifier is optional while it is written
        if not (error.name or "").startswith("tensorlang.verify"):
            raise
    else:
        check_type(t, loc)
    memref = t.memref if isinstance(t, GroupType) else t
    if isinstance(memref, MemRefType) and len(memref.strides) != memref.order:
        raise CompileError.at(loc, f"the strided layout of {node_text(node, source)} has "
                              f"{len(memref.strides)} strides but the memref has order "
                              f"{memref.order}")


def node_text(node: Tree, source: Source) -> str:
    """The source text of ``node`` (for messages)."""
    meta = node.meta
    return source.text[meta.start_pos:meta.end_pos] if not meta.empty else "?"


def dim(node: Node, source: Source) -> Dim:
    """A mode size, stride or offset (a token): an integer or ``?`` (dynamic)."""
    token = as_token(node)
    if token.type == "QMARK":
        return None
    return parse_int(str(token), loc_of(token, source))


def _memref(node: Tree, source: Source, local_default: bool) -> MemRefType:
    element = SCALAR_TYPES[str(node.children[0])]
    *dims, layout, space = node.children[1:]
    shape = tuple(dim(d, source) for d in dims)
    strides = None
    if layout is not None:
        strides = tuple(dim(d, source) for d in layout.children if d is not None)
    if space is not None:
        addrspace = AddressSpace(str(space))
    else:
        addrspace = AddressSpace.LOCAL if local_default else AddressSpace.GLOBAL
    return MemRefType.of(element, shape, strides, addrspace)


def _group(node: Tree, source: Source) -> GroupType:
    memref_node, offset = node.children
    memref = _memref(memref_node, source, False)
    return GroupType(memref, 0 if offset is None else dim(offset, source))


def expect_scalar(t: Type, node: Tree, source: Source, what: str = "a scalar type") -> ScalarType:
    """``t`` when it is a scalar type, else an error at ``node``."""
    if not isinstance(t, ScalarType):
        raise CompileError.at(loc_of(node, source), f"expected {what}, found {t}")
    return t


def expect_memref(t: Type, node: Tree, source: Source) -> MemRefType:
    """``t`` when it is a memref type, else an error at ``node``."""
    if not isinstance(t, MemRefType):
        raise CompileError.at(loc_of(node, source), f"expected a memref type, found {t}")
    return t
