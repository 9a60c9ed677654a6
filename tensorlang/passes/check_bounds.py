"""check-bounds: reject subviews, loads and stores that isl proves out of bounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tensorlang.ir.core import Program
from tensorlang.passes.manager import Pass
from tensorlang.verify.bounds import check_bounds


@dataclass(frozen=True)
class CheckBounds(Pass):
    """Static bounds checking with isl (see :mod:`tensorlang.verify.bounds`)."""

    name: ClassVar[str] = "check-bounds"

    def run(self, program: Program) -> None:
        """Check every function; raise CompileError on an access proven out of bounds."""
        for func in program.functions:
            check_bounds(func)
