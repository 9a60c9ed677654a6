"""check-bounds: reject subviews, loads and stores that isl proves out of bounds; with
``guards``, mark the accesses it cannot prove in bounds for run-time guards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tensorlang.ir.core import Program
from tensorlang.passes.manager import Pass
from tensorlang.verify.bounds import check_bounds, mark_guards


@dataclass(frozen=True)
class CheckBounds(Pass):
    """Static bounds checking with isl (see :mod:`tensorlang.verify.bounds`).

    ``guards`` (``check-bounds{guards=true}``, what ``--check-bounds`` runs): also set
    the ``guard`` attribute on every access isl cannot prove in bounds, which the OpenCL
    emitter turns into a run-time check (docs/abi.md, "Bounds guards").
    """

    name: ClassVar[str] = "check-bounds"
    guards: bool = False

    def run(self, program: Program) -> None:
        """Check every function; raise CompileError on an access proven out of bounds."""
        for func in program.functions:
            check_bounds(func)
            if self.guards:
                mark_guards(func)
