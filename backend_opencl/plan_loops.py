"""Host loops of a plan that read nothing back per iteration.

A counted ``While`` (:class:`tensorlang.plan.TripCount`) reads its start and limit once,
when they live in buffers, computes the number of iterations and enqueues the body that
many times without waiting; its condition is never evaluated.  When the counter would
wrap around the loop runs as a plain ``While`` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensorlang.plan import Bound, TripCount

StepFn = Callable[[Any], None]


def counted(trips: TripCount, body: tuple[StepFn, ...], fallback: StepFn) -> StepFn:
    """The step function of a counted loop (``fallback`` runs it as a plain while)."""
    def run_counted(run: Any) -> None:
        n = trips.count(_value(run, trips.start), _value(run, trips.limit))
        if n is None:
            fallback(run)
            return
        for _ in range(n):
            for step in body:
                step(run)
    return run_counted


def _value(run: Any, bound: Bound) -> int:
    return bound.value if bound.buffer is None else int(run.scalar(bound.buffer))
