"""Matrix products: stablehlo.dot_general (:mod:`.general`), chlo.ragged_dot
(:mod:`.ragged`), the batching of a recurrence's products (:mod:`.batching`) and the
products read transposed, swapped (:mod:`.transposed_products`), and the weights
loops read across their rows, transposed before the loop (:mod:`.pretranspose_weights`)."""

from __future__ import annotations

from frontend.lower.families.dot import (  # noqa: F401 - importing a module registers it
    batching,
    general,
    pretranspose_weights,
    ragged,
    transposed_products,
)
