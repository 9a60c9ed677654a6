"""Betting on a plan's host decisions: branches and loop exits taken without waiting.

A host branch (``If``, ``Case``) or loop (``While``) reads its predicate back when the
queue reaches it: the device drains and the caller wakes (~40-100 us on PoCL, more than
the small kernels around it) before the commands after it are enqueued.  Two kinds of
decision are nearly always the same:

* **error checks**: a branch whose other branches all call the host (equinox's
  ``error_if``, which diffrax's solvers use: the callback raises).  The bet is the branch
  without callbacks.
* **a loop kernel's flag** (:mod:`frontend.lower.families.control.device_loop`: a launch
  runs up to 1024 iterations and leaves whether the loop goes on).  The bet is that the
  first launch finished the loop.

A call that bets enqueues the branch it bets on (or no relaunch) and goes on without
waiting.  After the call's one wait the predicates are checked (:meth:`Bet.won`): a bet is
placed only on a predicate no later step writes, and the runtime keeps its buffer until
the call ends.  When a bet lost, the call runs again without bets, and that decision is
not bet on again.  A betting call has no effect the caller can see: it runs
no callback (bets are placed only in plans whose every callback sits in a branch bet
against, and never inside loops), it binds the arguments afresh when it runs again, and
its kernels write no memory out of bounds whatever the values (bounds guards and checked
launches do not depend on a bet).  It also ends: a plan with a host loop whose trip count
is not a constant places no bets, since after a lost bet (an error check that failed)
such a loop could run on values the program never meant it to see.  The runtime places the bets
(:mod:`backend_opencl.runtime.opencl.frames`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import SupportsInt

from tensorlang.plan import Callback, Case, Copy, If, Launch, Step, While, decider, nested, taken

ENV = "TLC_SPECULATE"
"""Set to 0 to read every host decision when the queue reaches it (no bets)."""


@dataclass(frozen=True)
class Bet:
    """A decision bet on: ``step`` (a branch or a loop kernel's relaunch), decided by the
    one element of buffer ``pred``; ``expected``: the branch bet on (0 for a loop: its
    exit at the first check); ``number``: the bet's place among the plan's (what calls
    note, cheaper to hash than the step)."""

    step: If | Case | While
    pred: int
    expected: int
    number: int

    def won(self, value: SupportsInt) -> bool:
        """Whether the predicate's value ``value`` takes the decision bet on."""
        step = self.step
        if isinstance(step, While):
            return not int(value)
        return taken(step, value) == self.expected


def bets(steps: tuple[Step, ...], writes: Callable[[Step], frozenset[int]]
         ) -> dict[Step, Bet]:
    """The bets of a plan's ``steps`` by step (none when a callback could run in a call
    that bets); ``writes``: the buffers a launch, copy or callback writes.  A decision
    whose predicate a later step writes is not bet on."""
    found: dict[Step, Bet] = {}
    if not _place(steps, found):
        return {}
    spoiled: set[Step] = set()
    passed: dict[int, list[Step]] = {}  # predicate -> the bets on it already passed

    def walk(inner: tuple[Step, ...]) -> None:
        for step in inner:
            if isinstance(step, (Launch, Copy, Callback)):
                for bid in writes(step):
                    spoiled.update(passed.get(bid, ()))
            for sequence in nested(step):
                walk(sequence)
            if step in found:
                passed.setdefault(found[step].pred, []).append(step)

    walk(steps)
    return {step: bet for step, bet in found.items() if step not in spoiled}


def _place(steps: tuple[Step, ...], found: dict[Step, Bet]) -> bool:
    """Collect the bets of ``steps`` into ``found``; False when a callback would run in
    a call that bets."""
    for step in steps:
        if isinstance(step, Callback):
            return False
        if isinstance(step, (If, Case)):
            branches = nested(step)
            quiet = [b for b in branches if not _calls(b)]
            if len(branches) > 1 and len(quiet) == 1:
                found[step] = Bet(step, decider(step), branches.index(quiet[0]), len(found))
                branches = (quiet[0],)
            if not all(_place(b, found) for b in branches):
                return False
        elif isinstance(step, While):
            if _calls((step,)):
                return False
            if step.trips is None and _relaunch(step):
                found[step] = Bet(step, step.pred, 0, len(found))
            elif step.trips is None or step.trips.known() is None:
                return False  # after a lost bet its trips could be any number
    return True


def _calls(steps: tuple[Step, ...]) -> bool:
    """Whether ``steps`` (nested ones too) may call the host."""
    return any(isinstance(step, Callback) or any(_calls(inner) for inner in nested(step))
               for step in steps)


def _relaunch(step: While) -> bool:
    """Whether ``step`` is a loop kernel's relaunch: one launch as its condition and no
    body, or no condition and one launch as its body."""
    one = (len(step.cond), len(step.body)) in ((1, 0), (0, 1))
    return one and isinstance((step.cond or step.body)[0], Launch)
