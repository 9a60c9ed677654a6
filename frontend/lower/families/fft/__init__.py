"""stablehlo.fft (:mod:`.transform`) through line kernels (:mod:`.line`)."""

from __future__ import annotations

from frontend.lower.families.fft import (  # noqa: F401 - importing a module registers it
    transform,
)
