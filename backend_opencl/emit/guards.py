"""Run-time bounds guards (``--check-bounds``): the C checks and the sites they report.

The ``check-bounds{guards=true}`` pass marks what isl cannot prove safe (the ``guard``
attribute, :mod:`tensorlang.verify.bounds`); the emitter turns each mark into a check.
A failing check records the first violation of a launch in the kernel's hidden last
parameter ``global long* tlc_bounds`` (docs/abi.md, "Bounds guards") and skips the
access: a load yields zero, a store is dropped, a subview or expand becomes an *invalid*
view whose sizes are all zero (so guarded accesses through it fail too) and a collective
with an invalid operand or disagreeing sizes does nothing.  The host reads the record
after the launch and raises :class:`~tensorlang.diagnostics.BoundsError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorlang.diagnostics import Loc

PARAM = "tlc_bounds"
"""The C name of the hidden error-record parameter."""

RECORD_LONGS = 6
"""The record: claim (int in the first long), site, mode, a, b, c, work-group id."""

RANGE_CHECK = """bool @NAME@(global long* rec, int site, long mode, long lo, long size,
        long extent) {
    if (lo >= 0 && size >= 0 && lo <= extent && size <= extent - lo) return true;
    if (atomic_cmpxchg((volatile global int*)rec, 0, site + 1) == 0) {
        rec[1] = mode; rec[2] = lo; rec[3] = size; rec[4] = extent;
        rec[5] = (long)get_group_id(0);
    }
    return false;
}
"""
"""``[lo, lo + size)`` inside ``[0, extent)``, else record the first violation."""

EQUAL_CHECK = """bool @NAME@(global long* rec, int site, long which, long a, long b) {
    if (a == b) return true;
    if (atomic_cmpxchg((volatile global int*)rec, 0, site + 1) == 0) {
        rec[1] = which; rec[2] = a; rec[3] = b; rec[4] = 0;
        rec[5] = (long)get_group_id(0);
    }
    return false;
}
"""
"""``a == b`` (sizes that must agree), else record the first violation."""


@dataclass(frozen=True)
class GuardSite:
    """One guarded instruction: what the host needs to explain its violation.

    ``operand`` is the IR name of the checked memref; ``details`` has one entry per
    record ``mode``: ``"index"`` or ``"slice"`` for a subview's modes, the size pair's
    text for a collective (unused for loads, stores and expands).
    """

    kind: str
    loc: Loc
    operand: str
    rank: int = 1
    details: tuple[str, ...] = ()

    def message(self, mode: int, a: int, b: int, c: int) -> str:
        """The error message for a record ``(mode, a, b, c)`` of this site."""
        where = f"%{self.operand}" + (f", mode {mode}" if self.rank > 1 else "")
        if self.kind in ("load", "store"):
            return f"out-of-bounds {self.kind}: index {a} not in [0, {c}) ({where})"
        if self.kind == "subview":
            if b < 0:
                return f"out-of-bounds subview: negative size {b} ({where})"
            piece = f"index {a}" if self.details[mode] == "index" else f"slice [{a}, {a + b})"
            return f"out-of-bounds subview: {piece} not in [0, {c}) ({where})"
        if self.kind == "expand":
            return (f"invalid expand: the new sizes multiply to {a} but the mode has size {b} "
                    f"({where})")
        return f"{self.kind}: operand sizes disagree at run time: {self.details[mode]} " \
            f"({a} != {b})"
