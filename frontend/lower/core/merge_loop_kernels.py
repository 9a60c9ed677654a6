"""The one-work-group launch just after a loop kernel merged into its launches.

A small ``while`` runs as a loop kernel
(:mod:`frontend.lower.families.control.device_loop`): one work-group of one work-item
(``work_group_size(1,1)``), launched once when the trip count is known, else launched
again while the flag it leaves says the loop may go on.  What the loop leaves is usually
checked or reduced just after it (a diffrax adaptive solve: its steps counted and its
error checked; a scanned RNN: its last state through a dense layer), a launch of one
work-group costing ~20-40 us of host time a call on PoCL, more than its work.

:func:`merge_loop_kernels` appends that launch's kernel (the *epilogue*) to the loop
kernel; where the loop may be relaunched, its body runs under ``if`` the flag says the
loop ended, so that a launch leaving the loop to a relaunch does not run it.  A loop
built as a first kernel and a relaunched one (it initializes carried buffers) takes the
epilogue into both.  Any launch of one work-group of a one-work-item kernel counts as a
loop launched once.

The epilogue must be one work-group of a kernel with no function attributes (it takes
the loop kernel's work-group size; its collective code is written for any), no local
memory and no ``num_groups``, that does not write the flag (run before the flag's last
read, it could restart the loop) and is at most :data:`MAX_LINES` lines.  The launches
*before* a loop stay apart: merged under a flag of the first launch, a diffrax solve's
650-line prologue made PoCL's first launch of the loop kernel 1.2 s slower (the
combined one-work-item function compiles superlinearly) for ~10 us a call.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from frontend.lower.core.merge_launches import RunMerger, guarded, header
from tensorlang.plan import Free, Launch, Step, While, launches, with_nested

MAX_LINES = 250
"""The longest epilogue merged (PoCL's compile of a one-work-item function grows faster
than its length)."""

_ONE_WORK_ITEM = re.compile(r"work_group_size\(\s*1\s*,\s*1\s*\)")


@dataclass(frozen=True)
class _Loop:
    """A loop kernel's steps: its first launch and its relaunch (the same launch when
    the loop is one kernel), and the buffer of its flag (None for a loop launched
    once)."""

    first: Launch
    again: Launch
    flag: int | None

    @staticmethod
    def at(steps: Sequence[Step], i: int) -> tuple[_Loop, int] | None:
        """The loop kernel starting at ``steps[i]`` and how many steps it takes (a first
        kernel's ``Free`` steps before its relaunch's ``While`` too), or None."""
        step = steps[i]
        if isinstance(step, While) and step.trips is None and not step.body \
                and len(step.cond) == 1 and isinstance(step.cond[0], Launch):
            return _Loop(step.cond[0], step.cond[0], step.pred), 1
        if isinstance(step, Launch):
            j = i + 1
            while j < len(steps) and isinstance(steps[j], Free):
                j += 1
            after = steps[j] if j < len(steps) else None
            if isinstance(after, While) and after.trips is None and not after.cond \
                    and len(after.body) == 1 and isinstance(after.body[0], Launch):
                return _Loop(step, after.body[0], after.pred), j + 1 - i
        return None

    def steps(self, first: Launch, again: Launch) -> list[Step]:
        """This loop's steps with its launches replaced."""
        if self.flag is None:
            return [first]
        if self.first is self.again:
            return [While((again,), self.flag, ())]
        return [first, While((), self.flag, (again,))]


def merge_loop_kernels(texts: Sequence[str], steps: Sequence[Step]
                       ) -> tuple[list[str], tuple[Step, ...]]:
    """The kernels and steps with each loop kernel's epilogue merged into its launches
    (the module docstring); kernels no longer launched are dropped."""
    uses = Counter(s.kernel for s in launches(tuple(steps)))
    return _EpilogueMerger(texts, uses).merged(texts, steps)


class _EpilogueMerger(RunMerger[Launch]):
    """Finds the loop kernels of a plan's steps and appends their epilogues."""

    def __init__(self, texts: Sequence[str], uses: Counter[str]) -> None:
        super().__init__(texts)
        self.uses = uses
        """How many launches of each kernel the plan has: a loop kernel launched for two
        loops (dedup) keeps its launches, where a copy per epilogue would be built again."""

    def launch(self, part: Launch) -> Launch:
        return part

    def steps(self, steps: Sequence[Step]) -> tuple[Step, ...]:
        """``steps`` (nested ones too) with the loop kernels' epilogues merged in."""
        steps = [with_nested(s, self.steps) for s in steps]
        out: list[Step] = []
        i = 0
        while i < len(steps):
            found = self._loop_at(steps, i)
            epilogue, after = self._epilogue(steps, i + found[1], found[0].flag) if found \
                else (None, i)
            if found is None or epilogue is None or not self._readable(found[0]):
                out.append(steps[i])
                i += 1
                continue
            loop = found[0]
            frees = [s for s in steps[i:after] if isinstance(s, Free)]
            again = self._kernel(loop.again, epilogue, loop.flag)
            first = again if loop.first is loop.again \
                else self._kernel(loop.first, epilogue, loop.flag)
            out.extend(loop.steps(first, again))
            out.extend(frees)
            i = after + 1
        return tuple(out)

    def _loop_at(self, steps: Sequence[Step], i: int) -> tuple[_Loop, int] | None:
        """:meth:`_Loop.at`, or a one-work-group launch of a one-work-item kernel at
        ``steps[i]`` (a loop launched once)."""
        found = _Loop.at(steps, i)
        step = steps[i]
        if found is None and isinstance(step, Launch) and self._one_group(step) \
                and _ONE_WORK_ITEM.fullmatch(self.kernels[step.kernel].attributes):
            return _Loop(step, step, None), 1
        return found

    def _readable(self, loop: _Loop) -> bool:
        """Whether ``loop``'s launches are one work-group of kernels this pass can read,
        launched for this loop only."""
        return all(self._one_group(launch) and self.uses[launch.kernel] == 1
                   for launch in (loop.first, loop.again))

    def _one_group(self, launch: Launch) -> bool:
        return launch.num_groups == 1 and self.readable(launch) is not None

    def _epilogue(self, steps: Sequence[Step], i: int, flag: int | None
                  ) -> tuple[Launch | None, int]:
        """The launch at or after ``steps[i]`` (past ``Free`` steps) when it can be the
        epilogue of the loop before, whose flag is buffer ``flag`` (None: none), and its
        index.  One writing the flag cannot: run before the flag's last read, it could
        restart the loop."""
        while i < len(steps) and isinstance(steps[i], Free):
            i += 1
        step = steps[i] if i < len(steps) else None
        if not isinstance(step, Launch) or not self._one_group(step):
            return None, i
        kernel = self.kernels[step.kernel]
        fits = kernel.any_work_group() and kernel.body.count("\n") < MAX_LINES \
            and flag not in kernel.written(step.args)
        return (step if fits else None), i

    def _kernel(self, loop: Launch, epilogue: Launch, flag: int | None) -> Launch:
        """A kernel running ``loop`` then, when ``flag`` says the loop ended (always
        without a flag), ``epilogue``; its launch."""
        params, (body, tail) = self.renamed_apart([loop, epilogue])
        name = f"{loop.kernel}_ended{len(self.made)}"
        attributes = self.kernels[loop.kernel].attributes
        if flag is not None:
            tail = _once_ended(flag, params[flag], tail)
        self.made.append(f"func @{name}({header(params)}) {attributes} {{\n{body}\n"
                         f"{tail}\n}}\n")
        return Launch(name, tuple(params), 1)


def _once_ended(flag: int, type_: str, body: str) -> str:
    """``body`` run only when the loop's ``flag`` buffer (of memref type ``type_``) says
    it ended."""
    return (f"  %tlc_flag_at = constant 0 -> index\n"
            f"  %tlc_more = load %b{flag}[%tlc_flag_at] : {type_}\n"
            f"  %tlc_true = constant true -> i1\n"
            f"  %tlc_ended = arith.xor %tlc_more, %tlc_true : i1\n"
            + guarded("%tlc_ended", body))
