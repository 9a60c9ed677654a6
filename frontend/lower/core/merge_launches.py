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
run, and runs are merged inside loops and branches too.  At most :data:`MAX_PARTS`
kernels and :data:`MAX_LINES` lines make one merged kernel (a very large kernel costs
seconds of PoCL's build time).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tensorlang.ir.ops import OPS
from tensorlang.plan import Free, Launch, Step, launches, with_nested

MAX_PARTS = 32
"""The most launches merged into one kernel."""
MAX_LINES = 400
"""The most lines of tensor language in one merged kernel."""

REPEATED_LINES = 40
"""A kernel the run launches already joins it again only when shorter than this and
without BLAS instructions (:func:`_repeatable`)."""
_BLAS = re.compile(r"^\s*(?:" + "|".join(sorted(n for n, d in OPS.items() if d.blas))
                   + r")\b", re.MULTILINE)

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


def merge_launches(texts: Sequence[str], steps: Sequence[Step]
                   ) -> tuple[list[str], tuple[Step, ...]]:
    """The kernels and steps of a plan with its runs of one-work-group launches merged;
    kernels no longer launched are dropped."""
    merger = _Merger({k.name: k for t in texts if (k := Kernel.parse(t)) is not None})
    merged = merger.steps(steps)
    launched = {s.kernel for s in launches(merged)}
    kept = [t for t in texts if (k := Kernel.parse(t)) is None or k.name in launched]
    return kept + merger.made, merged


class _Merger:
    def __init__(self, kernels: dict[str, Kernel]) -> None:
        self.kernels = kernels
        self.made: list[str] = []

    def steps(self, steps: Sequence[Step]) -> tuple[Step, ...]:
        out: list[Step] = []
        run: list[Launch] = []
        frees: list[Step] = []

        def flush() -> None:
            out.extend([self._merge(run)] if len(run) > 1 else run)
            out.extend(frees)
            run.clear()
            frees.clear()

        for step in steps:
            if isinstance(step, Launch) and self._mergeable(step):
                if run and not self._fits(run, step):
                    flush()
                run.append(step)
            elif isinstance(step, Free) and run:
                frees.append(step)
            else:
                flush()
                out.append(with_nested(step, self.steps))
        flush()
        return tuple(out)

    def _mergeable(self, launch: Launch) -> bool:
        kernel = self.kernels.get(launch.kernel)
        return launch.num_groups == 1 and kernel is not None \
            and len(kernel.params) == len(launch.args)

    def _fits(self, run: list[Launch], launch: Launch) -> bool:
        kernel = self.kernels[launch.kernel]
        lines = sum(self.kernels[r.kernel].body.count("\n") + 1 for r in run)
        return len(run) < MAX_PARTS and lines + kernel.body.count("\n") < MAX_LINES \
            and kernel.attributes == self.kernels[run[0].kernel].attributes \
            and (_repeatable(kernel) or all(r.kernel != launch.kernel for r in run))

    def _merge(self, run: list[Launch]) -> Launch:
        """One kernel doing what the launches of ``run`` did, and its launch."""
        params: dict[int, str] = {}
        bodies = []
        for part, launch in enumerate(run):
            kernel = self.kernels[launch.kernel]
            names = {}
            for (value, type_), buffer in zip(kernel.params, launch.args, strict=True):
                names[value] = f"b{buffer}"
                params.setdefault(buffer, type_)
            bodies.append(_renamed(kernel.body, names, f"_{part}"))
        name = f"{run[0].kernel}_merged{len(self.made)}"
        header = ", ".join(f"%b{buffer}: {type_}" for buffer, type_ in params.items())
        attributes = self.kernels[run[0].kernel].attributes
        self.made.append(f"func @{name}({header}){' ' + attributes if attributes else ''} "
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
