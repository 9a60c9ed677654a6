"""Control flow: while (host loop, device loop, pointwise loop), if, case, tuples,
optimization barriers (:mod:`.flow`) and chlo.scan (:mod:`.scan`)."""

from __future__ import annotations

from frontend.lower.families.control import (  # noqa: F401 - importing a module registers it
    flow,
    reroll,
    scan,
)
