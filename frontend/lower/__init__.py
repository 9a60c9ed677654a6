"""StableHLO to tensor language: kernels plus a host plan (see docs/lowering.md)."""

from __future__ import annotations

from frontend.lower.driver import Lowered, lower_function

__all__ = ["Lowered", "lower_function"]
