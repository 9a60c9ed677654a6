"""Run a file of the StableHLO interpret suite (the logic is ``tlc interpret``'s:
:mod:`backend_opencl.tools.interpret`)."""

from __future__ import annotations

from backend_opencl.tools.interpret import compare, run_file

__all__ = ["compare", "run_file"]
