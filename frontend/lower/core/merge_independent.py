"""Consecutive independent launches of a plan merged side by side into one kernel.

An optimizer step updates every parameter, its two moments and a gradient apart, each
an element-wise kernel of its own (``train_mlp_adam``: 12 such launches in a row), and
a layer's gradients of weight and bias are independent too.  On PoCL every launch costs
~35 us of host time a call, and every kernel ~40 ms at its first launch (its work-group
function is generated, compiled and linked on its own), whatever it computes.

:func:`merge_independent` replaces each run of consecutive launches none of which
writes a buffer another one reads or writes by one launch of a kernel whose work-groups
are theirs laid end to end: work-group ``g`` runs the part whose range ``[start, end)``
holds it, as that part's work-group ``g - start``.  Nothing orders the parts, which is
why they must be independent; each part keeps its own work-group count, so the merged
launch spreads over the cores as theirs did, and one-work-group parts now run at once.

What a kernel writes is read off its text conservatively: a parameter only ever loaded
(``load %bN[...]``) is read, any other use (a store, a view, a collective's operand)
counts as a write.  Parameters of the plan (the caller's arrays, perhaps one array
behind several of them) are never written by a merged part.  A kernel the plan
launches elsewhere too joins only when short (:func:`merge_launches._repeatable`: a copy
per merged kernel is compiled again), and kernels with local memory, an explicit
work-group size, ``num_groups`` or a product beside element-wise code keep their launch.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from frontend.lower.core.merge_launches import (
    _BLAS,
    MAX_LINES,
    MAX_PARTS,
    RunMerger,
    _repeatable,
    guarded,
    header,
)
from tensorlang.plan import Launch, Step, launches

_GROUP_ID = re.compile(r"^(\s*)%(\w+) = group_id$", re.MULTILINE)


@dataclass(frozen=True)
class _Part:
    """A launch of a run with the buffers it reads and writes."""

    launch: Launch
    reads: frozenset[int]
    writes: frozenset[int]

    def conflicts(self, other: _Part) -> bool:
        """Whether this part reads or writes what ``other`` writes, or writes what it
        reads."""
        return bool(self.writes & (other.reads | other.writes) or self.reads & other.writes)


def merge_independent(texts: Sequence[str], steps: Sequence[Step], params: Sequence[int]
                      ) -> tuple[list[str], tuple[Step, ...]]:
    """The kernels and steps of a plan with its runs of independent launches merged side
    by side (the module docstring; ``params``: the plan's parameter buffers); kernels no
    longer launched are dropped."""
    uses = Counter(s.kernel for s in launches(tuple(steps)))
    return _IndependentRuns(texts, frozenset(params), uses).merged(texts, steps)


class _IndependentRuns(RunMerger[_Part]):
    """Runs of independent launches, side by side."""

    def __init__(self, texts: Sequence[str], params: frozenset[int], uses: Counter[str]
                 ) -> None:
        super().__init__(texts)
        self.params = params
        self.uses = uses

    def part(self, launch: Launch) -> _Part | None:
        kernel = self.readable(launch)
        if kernel is None or launch.num_groups < 1 or not kernel.any_work_group() \
                or (self.uses[launch.kernel] > 1 and not _repeatable(kernel)):
            return None
        writes = kernel.written(launch.args)
        if writes & self.params:
            return None
        return _Part(launch, frozenset(launch.args) - writes, writes)

    def launch(self, part: _Part) -> Launch:
        return part.launch

    def fits(self, run: list[_Part], part: _Part) -> bool:
        kernel = self.kernels[part.launch.kernel]
        first = self.kernels[run[0].launch.kernel]
        return len(run) < MAX_PARTS and self.lines(run) + kernel.body.count("\n") < MAX_LINES \
            and bool(_BLAS.search(kernel.body)) == bool(_BLAS.search(first.body)) \
            and not any(part.conflicts(p) for p in run)

    def merge(self, run: list[_Part]) -> Launch:
        """One kernel whose work-groups run the parts' (the module docstring), and its
        launch."""
        params, bodies = self.renamed_apart(run)
        ranged = ["  %tlc_gid = group_id"]
        start = 0
        for k, (part, body) in enumerate(zip(run, bodies, strict=True)):
            end = start + part.launch.num_groups
            ranged.append(_in_range(k, start, end, _shifted(body, f"%tlc_start{k}")))
            start = end
        name = f"{run[0].launch.kernel}_side{len(self.made)}"
        self.made.append(f"func @{name}({header(params)}) {{\n" + "\n".join(ranged) + "\n}\n")
        return Launch(name, tuple(params), start)


def _shifted(body: str, start: str) -> str:
    """``body`` with each ``group_id`` counted from ``start`` (a value)."""
    return _GROUP_ID.sub(rf"\1%\2 = arith.sub %tlc_gid, {start} : index", body)


def _in_range(k: int, start: int, end: int, body: str) -> str:
    """Part ``k``'s body, run by the work-groups ``start <= g < end``."""
    return (f"  %tlc_start{k} = constant {start} -> index\n"
            f"  %tlc_end{k} = constant {end} -> index\n"
            f"  %tlc_from{k} = cmp.ge %tlc_gid, %tlc_start{k} : index\n"
            f"  %tlc_below{k} = cmp.lt %tlc_gid, %tlc_end{k} : index\n"
            f"  %tlc_in{k} = arith.and %tlc_from{k}, %tlc_below{k} : i1\n"
            + guarded(f"%tlc_in{k}", body))
