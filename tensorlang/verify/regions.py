"""The verifier's walk: region kinds, SSA scoping and per-instruction dispatch.

Rules (docs/language-constraints.md, "Regions and SSA"):

- (R1) a collective instruction appears only in a collective region;
- (R2) an SPMD instruction appears only in an SPMD region;
- (R3) ``yield`` appears only as the last instruction of an ``if`` or ``for`` region;
- (S1) every use is dominated by its definition: the value is a function argument,
  an argument of an enclosing region, or a result of an earlier instruction of this
  or an enclosing region;
- (S2) every value is defined exactly once.

The function body is collective; parallel and foreach bodies are SPMD; if and for
bodies inherit the kind of their enclosing region.  Since no instruction opens a
collective region, a collective region is never nested in an SPMD one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tensorlang.diagnostics import Loc, note
from tensorlang.ir.core import Instruction, Region, Value
from tensorlang.ir.ops import RegionKind
from tensorlang.verify.errors import fail, value_name
from tensorlang.verify.structure import check_structure

Check = Callable[[Instruction], None]
"""A rule family's check of one instruction: raises CompileError when a rule is broken."""

_YIELD_PARENTS = ("if", "for")


@dataclass(frozen=True)
class Context:
    """Where a region sits.

    :arg spmd: the region is an SPMD region (else collective).
    :arg opener: the parallel or foreach that opened the SPMD region.
    :arg owner: the instruction whose region this is (None for a function body).
    """

    spmd: bool
    opener: Instruction | None = None
    owner: Instruction | None = None


class Walker:
    """Walks one function, checking scoping and region kinds and dispatching ``checks``."""

    def __init__(self, checks: dict[str, Check]) -> None:
        self.checks = checks
        self.defined: set[Value] = set()

    def define(self, value: Value, loc: Loc) -> None:
        """Record a definition of ``value`` (S2: only one)."""
        if value in self.defined:
            raise fail(loc, "SSA (S2)", f"value {value_name(value)} is defined more than once",
                       value)
        self.defined.add(value)

    def region(self, region: Region, ctx: Context, visible: set[Value]) -> None:
        """Check ``region`` whose enclosing scope makes ``visible`` available."""
        visible = set(visible)
        for arg in region.args:
            self.define(arg, region.loc)
            visible.add(arg)
        count = len(region.instructions)
        for index, inst in enumerate(region.instructions):
            self.instruction(inst, ctx, visible, last=index == count - 1)

    def instruction(self, inst: Instruction, ctx: Context, visible: set[Value],
                    last: bool) -> None:
        """Check ``inst`` and its regions; add its results to ``visible``."""
        check_structure(inst)
        _check_kind(inst, ctx)
        _check_yield_place(inst, ctx.owner, last)
        for value in inst.operand_values():
            if value not in visible:
                raise fail(inst, "S1", f"use of {value_name(value)} is not dominated by "
                           "its definition (it is defined later or in a region that does not "
                           "enclose this use)", value)
        check = self.checks.get(inst.name)
        if check is not None:
            check(inst)
        for rdef, region in zip(inst.op.regions, inst.regions, strict=False):
            if rdef.kind is RegionKind.SPMD:
                inner = Context(True, inst, inst)
            else:
                inner = Context(ctx.spmd, ctx.opener, inst)
            self.region(region, inner, visible)
        for result in inst.results:
            self.define(result, inst.loc)
            visible.add(result)


def _check_kind(inst: Instruction, ctx: Context) -> None:
    if inst.op.is_collective and ctx.spmd:
        opener = ctx.opener
        notes = (note(opener.loc, f"SPMD region opened by {opener.name} here"),) if opener else ()
        raise fail(inst, "R1", "a collective instruction must not appear in an SPMD region",
                   extra=notes)
    if inst.op.is_spmd and not ctx.spmd:
        raise fail(inst, "R2", "an SPMD instruction must appear in an SPMD region "
                   "(inside parallel or foreach)")


def _check_yield_place(inst: Instruction, owner: Instruction | None, last: bool) -> None:
    if inst.name != "yield":
        return
    if owner is None or owner.name not in _YIELD_PARENTS:
        raise fail(inst, "R3", "yield may only end the region of an if or for instruction")
    if not last:
        raise fail(inst, "R3", "yield must be the last instruction of its region")
