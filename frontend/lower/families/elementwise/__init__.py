"""Elementwise ops: arithmetic, comparisons and conversions (:mod:`.arith`), math
functions (:mod:`.mathfns`), chlo.mulhi (:mod:`.mulhi`) and bitcast_convert
(:mod:`.bitcast`, registered after :mod:`.arith`'s same-width case, which it replaces)."""

from __future__ import annotations

from frontend.lower.families.elementwise import (  # noqa: F401 - importing a module registers it
    arith,
    bitcast,
    mathfns,
    mulhi,
)
