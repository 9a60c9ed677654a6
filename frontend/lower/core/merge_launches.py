"""Consecutive one-work-group launches of a plan merged into one kernel.

A lowered program launches a kernel per materialized value; around a loop or between
host branches many of them are tiny (a scalar's update, a 16-element mask: a diffrax
solve launches ~25 a call), and on PoCL each launch costs ~35 us of host time whatever
it computes.  :func:`merge_launches` replaces every run of consecutive launches of one
work-group each (``num_groups == 1``, the same function attributes) by one kernel whose
body is theirs in order: the parameters are the run's buffers (one per buffer, so a
kernel reading what an earlier one wrote reads the same parameter), each part's values
renamed apart.  The bodies are collective regions, so the insert-barrier pass puts a
barrier wherever a part reads memory an earlier part wrote, as between the phases of any
kernel; one work-group runs them in the order the launches had.

``Free`` steps inside a run move after the merged launch (a buffer freed between two
parts must not be reused while the kernel runs); copies, callbacks and control flow end a
run, and runs are merged inside loops and branches too.

Before that, a one-work-group launch moves up to the one-work-group launch before it
when only launches and frees it is independent of lie between (:func:`gathered`): a
network with batch normalisation computes each layer's scale ``gamma * rsqrt(var +
eps)`` in a launch of its own between two convolutions (MobileNetV2: 11 of them), which
then run as one launch and compile as one kernel.  At most :data:`MAX_PARTS`
kernels and :data:`MAX_LINES` lines make one merged kernel (a very large kernel costs
seconds of PoCL's build time).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from tensorlang.ir.ops import OPS
from tensorlang.plan import Free, Launch, Step, launches, with_nested

MAX_PARTS = 32
"""The most launches merged into one kernel."""
MAX_LINES = 1000
"""The most lines of tensor language in one merged kernel."""

REPEATED_LINES = 40
"""A kernel the run launches already joins it again only when shorter than this and
without BLAS instructions (:func:`_repeatable`)."""
_BLAS = re.compile(r"^\s*(?:" + "|".join(sorted(n for n, d in OPS.items() if d.blas))
                   + r")\b", re.MULTILINE)

_LOCAL_OR_COUNT = re.compile(r"\b(?:alloca|num_groups)\b")
_HEADER = re.compile(r"func @(\S+)\((.*?)\)([^{]*)\{\n(.*)\n\}\s*$", re.DOTALL)
_VALUE = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)")
_PARAM = re.compile(r"%(\w+): (.*?)(?=, %|$)", re.DOTALL)


@dataclass(frozen=True)
class Kernel:
    """One kernel's text taken apart: parameters ``(name, type)``, the attributes after
    the parameter list (``work_group_size(...)``) and the body."""

    name: str
    params: tuple[tuple[str, str], ...]
    attributes: str
    body: str

    @staticmethod
    def parse(text: str) -> Kernel | None:
        """``text`` taken apart, or None when it is not one plain function."""
        match = _HEADER.match(text.strip())
        if match is None:
            return None
        name, params, attributes, body = match.groups()
        return Kernel(name, tuple(_PARAM.findall(params)), attributes.strip(), body)

    def written(self, args: Sequence[int]) -> frozenset[int]:
        """The buffers a launch with ``args`` may write, read off the text conservatively:
        those of parameters other than memrefs used only as the memref of a ``load`` (a
        group's member, loaded, is a memref that may be written)."""
        return frozenset(b for (name, type_), b in zip(self.params, args, strict=True)
                         if not (type_.startswith("memref") and self._only_loaded(name)))

    def any_work_group(self) -> bool:
        """Whether the kernel runs in whatever work-group a merged kernel has: no function
        attributes (an explicit work-group size), no local memory (``alloca``) and no
        ``num_groups``."""
        return not self.attributes and not _LOCAL_OR_COUNT.search(self.body)

    def _only_loaded(self, name: str) -> bool:
        uses = len(re.findall(rf"%{name}\b", self.body))
        return uses == len(re.findall(rf"= load %{name}\[", self.body))


def merge_launches(texts: Sequence[str], steps: Sequence[Step]
                   ) -> tuple[list[str], tuple[Step, ...]]:
    """The kernels and steps of a plan with its runs of one-work-group launches merged;
    kernels no longer launched are dropped."""
    runs = _OneGroupRuns(texts)
    return runs.merged(texts, gathered(steps, runs))


def gathered(steps: Sequence[Step], runs: _OneGroupRuns) -> tuple[Step, ...]:
    """``steps`` with each one-work-group launch (a part of ``runs``) moved up to just
    after the one-work-group launch before it, where every step between is a launch or
    a free it is independent of; loops' and branches' steps alike."""
    out: list[Step] = []
    for step in steps:
        step = with_nested(step, lambda nested: gathered(nested, runs))
        if isinstance(step, Launch) and runs.part(step) is not None:
            out.insert(_joined_at(out, step, runs), step)
        else:
            out.append(step)
    return tuple(out)


def _joined_at(out: list[Step], launch: Launch, runs: _OneGroupRuns) -> int:
    """Where in ``out`` ``launch`` goes: after the last one-work-group launch when it
    may run before everything after that, else at the end."""
    uses = frozenset(launch.args)
    writes = runs.writes(launch)
    for at in range(len(out) - 1, -1, -1):
        step = out[at]
        if isinstance(step, Launch) and runs.part(step) is not None:
            return at + 1
        if isinstance(step, Free) and not uses & frozenset(step.buffers):
            continue
        if not isinstance(step, Launch) or runs.writes(step) & uses \
                or writes & frozenset(step.args):
            break
    return len(out)


P = TypeVar("P")
"""What a run is made of: a launch, or a launch with what :class:`RunMerger` needs of it."""


class RunMerger(Generic[P]):
    """Runs of consecutive launches merged into one kernel each, as a subclass decides:
    which launches can be parts (:meth:`part`), which join the run before them
    (:meth:`fits`) and what the merged kernel is (:meth:`merge`, appending its text to
    ``made``).  ``Free`` steps inside a run move after the merged launch (a buffer freed
    between two parts must not be reused while the kernel runs); any other step ends a
    run, and runs inside loops and branches merge too."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.kernels = {k.name: k for t in texts if (k := Kernel.parse(t)) is not None}
        self.made: list[str] = []

    def merged(self, texts: Sequence[str], steps: Sequence[Step]
               ) -> tuple[list[str], tuple[Step, ...]]:
        """The kernels and steps with the runs merged; kernels no longer launched are
        dropped."""
        merged = self.steps(steps)
        launched = {s.kernel for s in launches(merged)}
        kept = [t for t in texts if (k := Kernel.parse(t)) is None or k.name in launched]
        return kept + self.made, merged

    def steps(self, steps: Sequence[Step]) -> tuple[Step, ...]:
        """``steps`` with their runs merged."""
        out: list[Step] = []
        run: list[P] = []
        frees: list[Step] = []

        def flush() -> None:
            out.extend([self.merge(run)] if len(run) > 1 else map(self.launch, run))
            out.extend(frees)
            run.clear()
            frees.clear()

        for step in steps:
            part = self.part(step) if isinstance(step, Launch) else None
            if part is not None:
                if run and not self.fits(run, part):
                    flush()
                run.append(part)
            elif isinstance(step, Free) and run:
                frees.append(step)
            else:
                flush()
                out.append(with_nested(step, self.steps))
        flush()
        return tuple(out)

    def part(self, launch: Launch) -> P | None:
        """``launch`` as a part of a run, or None when it cannot be one."""
        raise NotImplementedError

    def launch(self, part: P) -> Launch:
        """The launch ``part`` stands for."""
        raise NotImplementedError

    def fits(self, run: list[P], part: P) -> bool:
        """Whether ``part`` joins ``run``."""
        raise NotImplementedError

    def merge(self, run: list[P]) -> Launch:
        """The launch of one kernel doing what ``run``'s launches did."""
        raise NotImplementedError

    def writes(self, launch: Launch) -> frozenset[int]:
        """The buffers ``launch`` may write (all its arguments when its kernel's text
        was not taken apart)."""
        kernel = self.readable(launch)
        return frozenset(launch.args) if kernel is None else kernel.written(launch.args)

    def readable(self, launch: Launch) -> Kernel | None:
        """The kernel ``launch`` runs, when its text was taken apart and takes the
        launch's arguments; else None."""
        kernel = self.kernels.get(launch.kernel)
        return kernel if kernel is not None and len(kernel.params) == len(launch.args) \
            else None

    def lines(self, run: Sequence[P]) -> int:
        """The lines of the run's kernels together."""
        return sum(self.kernels[self.launch(p).kernel].body.count("\n") + 1 for p in run)

    def renamed_apart(self, run: Sequence[P]) -> tuple[dict[int, str], list[str]]:
        """The run's buffers (each with its memref type) and its parts' bodies, each
        part's parameters named after their buffers and its other values renamed apart."""
        params: dict[int, str] = {}
        bodies = []
        for k, part in enumerate(run):
            launch = self.launch(part)
            kernel = self.kernels[launch.kernel]
            names = {}
            for (value, type_), buffer in zip(kernel.params, launch.args, strict=True):
                names[value] = f"b{buffer}"
                params.setdefault(buffer, type_)
            bodies.append(_renamed(kernel.body, names, f"_{k}"))
        return params, bodies


def header(params: dict[int, str]) -> str:
    """A merged kernel's parameter list: one per buffer, named after it."""
    return ", ".join(f"%b{buffer}: {type_}" for buffer, type_ in params.items())


def guarded(condition: str, body: str) -> str:
    """A part's ``body`` run under ``if`` the i1 value ``condition``."""
    indented = "\n".join("  " + line if line else line for line in body.split("\n"))
    return f"  if {condition} {{\n{indented}\n  }}"


class _OneGroupRuns(RunMerger[Launch]):
    """Runs of one-work-group launches, their bodies one after the other."""

    def part(self, launch: Launch) -> Launch | None:
        mergeable = launch.num_groups == 1 and self.readable(launch) is not None
        return launch if mergeable else None

    def launch(self, part: Launch) -> Launch:
        return part

    def fits(self, run: list[Launch], launch: Launch) -> bool:
        kernel = self.kernels[launch.kernel]
        return len(run) < MAX_PARTS and self.lines(run) + kernel.body.count("\n") < MAX_LINES \
            and kernel.attributes == self.kernels[run[0].kernel].attributes \
            and (_repeatable(kernel) or all(r.kernel != launch.kernel for r in run))

    def merge(self, run: list[Launch]) -> Launch:
        params, bodies = self.renamed_apart(run)
        name = f"{run[0].kernel}_merged{len(self.made)}"
        attributes = self.kernels[run[0].kernel].attributes
        self.made.append(f"func @{name}({header(params)}){' ' + attributes if attributes else ''} "
                         f"{{\n" + "\n".join(bodies) + "\n}\n")
        return Launch(name, tuple(params), 1)


def _repeatable(kernel: Kernel) -> bool:
    """Whether a run that launches ``kernel`` already may take it again: only a short
    kernel of element-wise code (a conversion launched twice in a row).  A longer one or
    a product is kept shared (the steps of an unrolled recurrence launch one kernel each,
    :mod:`frontend.lower.core.dedup`), where a copy per part would be built again."""
    return kernel.body.count("\n") < REPEATED_LINES and not _BLAS.search(kernel.body)


def _renamed(body: str, names: dict[str, str], suffix: str) -> str:
    """``body`` with its parameters renamed by ``names`` and every other value given
    ``suffix`` (the parts of a merged kernel define values of the same names)."""
    def rename(match: re.Match[str]) -> str:
        return "%" + names.get(match[1], match[1] + suffix)
    return _VALUE.sub(rename, body)
