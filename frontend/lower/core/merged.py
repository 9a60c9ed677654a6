"""The launches of a lowered plan merged, as the back end compiles them:
:func:`merged_launches` runs :mod:`frontend.lower.core.merge_launches` (one-work-group
runs, one after the other) and then :mod:`frontend.lower.core.merge_independent`
(independent runs, side by side)."""

from __future__ import annotations

import re
from dataclasses import replace

from frontend.lower.core.driver import Lowered
from frontend.lower.core.merge_independent import merge_independent
from frontend.lower.core.merge_launches import merge_launches


def merged_launches(lowered: Lowered) -> Lowered:
    """``lowered`` with its runs of one-work-group launches merged
    (:mod:`frontend.lower.core.merge_launches`), then its runs of independent launches
    side by side (:mod:`frontend.lower.core.merge_independent`).  The back end applies it to what it
    compiles and prints; the lowering's own output keeps a kernel per launch (what its
    tests look at)."""
    texts, steps = merge_launches(re.split(r"\n(?=func @)", lowered.kernels),
                                  lowered.plan.steps)
    texts, steps = merge_independent(texts, steps, lowered.plan.params)
    return replace(lowered, kernels="\n".join(texts), plan=replace(lowered.plan, steps=steps))
