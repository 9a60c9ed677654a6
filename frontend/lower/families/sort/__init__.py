"""stablehlo.sort (:mod:`.sorting`) and chlo.top_k (:mod:`.top_k`)."""

from __future__ import annotations

from frontend.lower.families.sort import (  # noqa: F401 - importing a module registers it
    sorting,
    top_k,
)
