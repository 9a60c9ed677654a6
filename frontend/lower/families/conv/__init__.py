"""stablehlo.convolution: direct, implicit-gemm and shifted-row kernels chosen by
:mod:`.convolution`, and the channels-last rewrite (:mod:`.layout`)."""

from __future__ import annotations

from frontend.lower.families.conv import (  # noqa: F401 - importing a module registers it
    convolution,
    layout,
)
