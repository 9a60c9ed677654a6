"""Control flow: while (host loop, device loop, pointwise loop), if, case, tuples,
optimization barriers (:mod:`.flow`), chlo.scan (:mod:`.scan`), branches decided when
compiling (:mod:`.fold_branches`) and unrolled recurrences rolled (:mod:`.reroll`)."""

from __future__ import annotations

from frontend.lower.families.control import (  # noqa: F401 - importing a module registers it
    flow,
    fold_branches,
    reroll,
    scan,
)
