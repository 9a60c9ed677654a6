"""stablehlo.reduce (:mod:`.reduction`): per-element, cooperative (:mod:`.coop`) and
row kernels (:mod:`.rows`)."""

from __future__ import annotations

from frontend.lower.families.reduce import (  # noqa: F401 - importing a module registers it
    reduction,
)
