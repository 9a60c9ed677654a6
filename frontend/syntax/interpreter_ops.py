"""Pretty syntax of the reference interpreter's ``interpreter.probe``:
``interpreter.probe %x, probe_id = "name" : tensor<...>`` (the result has the operand's
type).  Registered in :data:`frontend.syntax.custom.PARSERS` / ``PRINTERS`` as ``probe!``."""

from __future__ import annotations

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.ir.ops import OpDef
from frontend.syntax.interface import OpParser, OpPrinter
from tensorlang.diagnostics import Loc


def parse_probe(p: OpParser, opdef: OpDef, loc: Loc) -> Op:
    """Parse ``%x, probe_id = "name" : type`` after the op name."""
    operand = p.use()
    p.expect(",")
    key = p.expect_kind("BARE", "'probe_id'")
    if key != "probe_id":
        p.error(f"expected 'probe_id', found '{key}'")
    p.expect("=")
    text = p.expect_kind("STRING", "a probe id string")
    attrs: dict[str, A.Attr] = {"probe_id": A.StrAttr(text[1:-1])}
    if p.at("{"):
        attrs.update(p.parse_attr_dict())
    p.expect(":", "':' and the operand type")
    tstart = p.start
    t = p.parse_type()
    p.check_types([operand], [t], p.loc(tstart, p.prev_end))
    return p.make_op(opdef.name, [operand], [t], attrs, [], loc)


def print_probe(op: Op, pr: OpPrinter) -> str:
    """The pretty ``probe`` syntax after the op name."""
    return (f"{pr.name(op.operands[0])}, probe_id = {op.attrs['probe_id']} : "
            f"{op.operands[0].type}")
