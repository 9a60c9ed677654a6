"""Matrix products: stablehlo.dot_general (:mod:`.general`), chlo.ragged_dot
(:mod:`.ragged`) and the batching of a recurrence's products (:mod:`.batching`)."""

from __future__ import annotations

from frontend.lower.families.dot import (  # noqa: F401 - importing a module registers it
    batching,
    general,
    ragged,
)
