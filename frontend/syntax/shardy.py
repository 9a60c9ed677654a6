"""Shardy (``sdy``) syntax as JAX prints it around a computation.

Module level: ``sdy.mesh @name = <axes[, device_ids=[...]]> [{attrs}]``, kept as a
:class:`~frontend.ir.core.Decl` and printed back.

In function bodies: the sharding annotations ``sdy.sharding_constraint``,
``sdy.reshard``, ``sdy.sharding_group`` and ``sdy.propagation_barrier`` only say how a
value is laid out across devices (or group values for propagation); each is the
identity on values, so the parser binds its result to its operand and keeps no op
(a program runs on one device). Both op forms are read:

    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<4x3xf32>
    sdy.sharding_group %1 group_id=0 : tensor<4x3xf32>
    %1 = "sdy.sharding_constraint"(%0) <{sharding = #sdy.sharding<@mesh, [{}]>}>
        : (tensor<4x3xf32>) -> tensor<4x3xf32>

Other ``sdy`` ops (``manual_computation``, the explicit collectives that propagation
inserts) change what a program computes per device and are rejected.
"""

from __future__ import annotations

from dataclasses import dataclass

from frontend.ir import attrs as A
from frontend.ir.core import Decl, Value
from frontend.syntax.interface import OpParser


@dataclass(frozen=True)
class Annotation:
    """A Shardy op that is the identity on values: what its pretty form writes after
    the operand, and whether it has a result (its operand) or none."""

    operand_attr: str  # "" for a sharding written as <...>, else the `key=value` key
    has_result: bool


ANNOTATIONS = {
    "sdy.sharding_constraint": Annotation("", True),
    "sdy.reshard": Annotation("", True),
    "sdy.propagation_barrier": Annotation("allowed_direction", True),
    "sdy.sharding_group": Annotation("group_id", False),
}


def parse_mesh(p: OpParser) -> Decl:
    """``sdy.mesh @name = <[axes], device_ids=[...]> [{attrs}] [loc(...)]``; the mesh
    is kept as text, the attributes (jax adds ``stablehlo.mesh``) as a dictionary."""
    loc = p.loc()
    kind = p.advance()
    name = p.expect_kind("SYMBOL", "a mesh name")[1:]
    p.expect("=")
    if not p.at("<"):
        p.fail("'<' to start the mesh")
    body = " ".join(p.balanced().split())
    attrs = A.DictAttr(tuple(p.parse_attr_dict())) if p.at("{") else None
    return Decl(kind, name, body, loc, p.parse_trailing_loc(), attrs)


def parse_annotation(p: OpParser, name: str) -> list[Value]:
    """One annotation op (at its name, either form): the values its results stand for."""
    spec = ANNOTATIONS[name]
    operand = _generic(p, name, spec) if p.kind == "STRING" else _pretty(p, spec)
    return [operand] if spec.has_result else []


def _pretty(p: OpParser, spec: Annotation) -> Value:
    """``sdy.op %x <sharding>|key=value [{attrs}] : T`` (T: the operand's type)."""
    p.advance()
    operand = p.use()
    if spec.operand_attr:
        p.expect(spec.operand_attr)
        p.expect("=")
        if p.kind not in ("INT", "BARE"):
            p.fail(f"a value for '{spec.operand_attr}'")
        p.advance()
    elif p.at("<"):
        p.balanced()
    else:
        p.parse_attr()  # #sdy.sharding<...> or an alias of one
    if p.at("{"):
        p.parse_attr_dict()
    p.expect(":", "':' and the operand's type")
    tstart = p.start
    p.check_types([operand], [p.parse_type()], p.loc(tstart, p.prev_end))
    return operand


def _generic(p: OpParser, name: str, spec: Annotation) -> Value:
    """``"sdy.op"(%x) <{props}> {attrs} : (T) -> R`` (R: T, or nothing)."""
    start = p.start
    operands, _attrs, regions, ftype = p.generic_parts()
    if len(operands) != 1 or regions:
        p.error(f"'{name}' takes one operand and no regions", start, p.prev_end)
    want = (operands[0].type,) if spec.has_result else ()
    if tuple(ftype.results) != want:
        what = "the operand type as its result" if want else "no results"
        p.error(f"'{name}' must have {what}, got {ftype}", start, p.prev_end)
    return operands[0]
