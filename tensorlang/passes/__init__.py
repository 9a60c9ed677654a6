"""Tensor-language passes: the registry and ``run_pipeline`` (used by ``tlc opt -p``).

Each pass lives in its own module and is registered here by name::

    run_pipeline(program, "insert-barrier", verify_each=True)
"""

from __future__ import annotations

from tensorlang.ir.core import Program
from tensorlang.passes.check_bounds import CheckBounds
from tensorlang.passes.dce import DeadCodeElimination
from tensorlang.passes.fuse_loops import FuseLoops
from tensorlang.passes.insert_barrier import InsertBarrier
from tensorlang.passes.lower_half_blas import LowerHalfBlas
from tensorlang.passes.manager import Pass, parse_pipeline, run_passes

REGISTRY: dict[str, type[Pass]] = {cls.name: cls for cls in (CheckBounds, InsertBarrier,
                                                             LowerHalfBlas, FuseLoops,
                                                             DeadCodeElimination)}
"""Pass name -> pass class."""

DEFAULT_PIPELINE = "check-bounds,lower-half-blas,fuse-loops,insert-barrier"
"""What the OpenCL back end runs before code generation."""

__all__ = ["DEFAULT_PIPELINE", "REGISTRY", "Pass", "parse_pipeline", "run_pipeline"]


def run_pipeline(program: Program, spec: str, verify_each: bool = False) -> None:
    """Run the comma-separated pipeline ``spec`` (``a,b{k=v}``) on ``program`` in place."""
    run_passes(program, parse_pipeline(spec, REGISTRY), verify_each)
