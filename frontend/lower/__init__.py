"""StableHLO to tensor language: kernels plus a host plan (see docs/lowering.md).

:mod:`frontend.lower.core` is the machinery (driver, registry, kernel builder, fusion);
:mod:`frontend.lower.families` the op families, which register their lowerings in the
core's registry when imported.  Importing this package imports them all, so whichever
module of it is imported first, every lowering is registered before any is looked up.
"""

from __future__ import annotations

from frontend.lower import families  # noqa: F401 - the families register their lowerings
from frontend.lower.core.driver import Lowered, lower_function
from frontend.lower.core.merged import merged_launches

__all__ = ["Lowered", "lower_function", "merged_launches"]
