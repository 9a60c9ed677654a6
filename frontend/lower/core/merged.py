"""The launches of a lowered plan merged, as the back end compiles them:
:func:`merged_launches` runs :mod:`frontend.lower.core.merge_launches` (one-work-group
runs, one after the other), :mod:`frontend.lower.core.merge_loop_kernels` (the run
after a loop kernel, into its launches) and then
:mod:`frontend.lower.core.merge_independent` (independent runs, side by side)."""

from __future__ import annotations

import re
from dataclasses import replace

from frontend.lower.core.driver import Lowered
from frontend.lower.core.merge_independent import merge_independent
from frontend.lower.core.merge_launches import merge_launches
from frontend.lower.core.merge_loop_kernels import merge_loop_kernels


def merged_launches(lowered: Lowered) -> Lowered:
    """``lowered`` with its runs of one-work-group launches merged
    (:mod:`frontend.lower.core.merge_launches`), the one after a loop kernel merged into
    its launches (:mod:`frontend.lower.core.merge_loop_kernels`), then its runs of
    independent launches side by side (:mod:`frontend.lower.core.merge_independent`).
    The back end applies it to what it compiles and prints; the lowering's own output
    keeps a kernel per launch (what its tests look at)."""
    texts, steps = merge_launches(re.split(r"\n(?=func @)", lowered.kernels),
                                  lowered.plan.steps)
    texts, steps = merge_loop_kernels(texts, steps)
    texts, steps = merge_independent(texts, steps, lowered.plan.params)
    return replace(lowered, kernels="\n".join(texts), plan=replace(lowered.plan, steps=steps))
