"""Windowed ops: stablehlo.reduce_window (:mod:`.reduce_window`; prefix sums in
:mod:`.prefix_scan`) and select_and_scatter (:mod:`.select_and_scatter`)."""

from __future__ import annotations

from frontend.lower.families.window import (  # noqa: F401 - importing a module registers it
    reduce_window,
    select_and_scatter,
)
