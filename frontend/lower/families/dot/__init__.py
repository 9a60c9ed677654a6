"""Matrix products: stablehlo.dot_general (:mod:`.general`), chlo.ragged_dot
(:mod:`.ragged`), the batching of a recurrence's products (:mod:`.batching`) and the
products loop bodies transpose, swapped (:mod:`.loop_transpose`)."""

from __future__ import annotations

from frontend.lower.families.dot import (  # noqa: F401 - importing a module registers it
    batching,
    general,
    loop_transpose,
    ragged,
)
