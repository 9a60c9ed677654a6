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
from dataclasses import dataclass, field

from frontend.lower.core.merge_launches import (
    _BLAS,
    MAX_LINES,
    MAX_PARTS,
    Kernel,
    _renamed,
    _repeatable,
)
from tensorlang.plan import Free, Launch, Step, launches, with_nested

_GROUP_ID = re.compile(r"^(\s*)%(\w+) = group_id$", re.MULTILINE)
_UNMERGEABLE = re.compile(r"\b(?:alloca|num_groups)\b")


@dataclass
class _Part:
    """A launch of a run with the buffers it reads and writes."""

    launch: Launch
    reads: frozenset[int]
    writes: frozenset[int]


@dataclass
class _Run:
    """Consecutive independent launches, and the frees met among them."""

    parts: list[_Part] = field(default_factory=list)
    frees: list[Step] = field(default_factory=list)

    def conflicts(self, part: _Part) -> bool:
        """Whether ``part`` reads or writes what a part of the run writes, or writes what
        one reads."""
        return any(part.writes & (p.reads | p.writes) or part.reads & p.writes
                   for p in self.parts)


def merge_independent(texts: Sequence[str], steps: Sequence[Step], params: Sequence[int]
                      ) -> tuple[list[str], tuple[Step, ...]]:
    """The kernels and steps of a plan with its runs of independent launches merged side
    by side (the module docstring; ``params``: the plan's parameter buffers); kernels no
    longer launched are dropped."""
    kernels = {k.name: k for t in texts if (k := Kernel.parse(t)) is not None}
    merger = _Merger(kernels, frozenset(params),
                     Counter(s.kernel for s in launches(tuple(steps))))
    merged = merger.steps(steps)
    launched = {s.kernel for s in launches(merged)}
    kept = [t for t in texts if (k := Kernel.parse(t)) is None or k.name in launched]
    return kept + merger.made, merged


class _Merger:
    def __init__(self, kernels: dict[str, Kernel], params: frozenset[int],
                 uses: Counter[str]) -> None:
        self.kernels = kernels
        self.params = params
        self.uses = uses
        self.made: list[str] = []

    def steps(self, steps: Sequence[Step]) -> tuple[Step, ...]:
        out: list[Step] = []
        run = _Run()

        def flush() -> None:
            nonlocal run
            out.extend([self._merge(run.parts)] if len(run.parts) > 1
                       else [p.launch for p in run.parts])
            out.extend(run.frees)
            run = _Run()

        for step in steps:
            part = self._part(step) if isinstance(step, Launch) else None
            if part is not None:
                if run.parts and not self._fits(run, part):
                    flush()
                run.parts.append(part)
            elif isinstance(step, Free) and run.parts:
                run.frees.append(step)
            else:
                flush()
                out.append(with_nested(step, self.steps))
        flush()
        return tuple(out)

    def _part(self, launch: Launch) -> _Part | None:
        """``launch`` as a part of a run, or None when it cannot be one."""
        kernel = self.kernels.get(launch.kernel)
        if kernel is None or len(kernel.params) != len(launch.args) or launch.num_groups < 1 \
                or kernel.attributes or _UNMERGEABLE.search(kernel.body) \
                or (self.uses[launch.kernel] > 1 and not _repeatable(kernel)):
            return None
        loaded = _only_loaded(kernel)
        writes = frozenset(b for (name, _), b in zip(kernel.params, launch.args, strict=True)
                           if name not in loaded)
        if writes & self.params:
            return None
        return _Part(launch, frozenset(launch.args) - writes, writes)

    def _fits(self, run: _Run, part: _Part) -> bool:
        kernel = self.kernels[part.launch.kernel]
        first = self.kernels[run.parts[0].launch.kernel]
        lines = sum(self.kernels[p.launch.kernel].body.count("\n") + 1 for p in run.parts)
        return len(run.parts) < MAX_PARTS and lines + kernel.body.count("\n") < MAX_LINES \
            and bool(_BLAS.search(kernel.body)) == bool(_BLAS.search(first.body)) \
            and not run.conflicts(part)

    def _merge(self, parts: list[_Part]) -> Launch:
        """One kernel whose work-groups run the parts' (the module docstring), and its
        launch."""
        params: dict[int, str] = {}
        bodies = ["  %tlc_gid = group_id"]
        start = 0
        for k, part in enumerate(parts):
            kernel = self.kernels[part.launch.kernel]
            names = {}
            for (value, type_), buffer in zip(kernel.params, part.launch.args, strict=True):
                names[value] = f"b{buffer}"
                params.setdefault(buffer, type_)
            end = start + part.launch.num_groups
            body = _renamed(kernel.body, names, f"_{k}")
            bodies.append(_in_range(k, start, end, _shifted(body, f"%tlc_start{k}")))
            start = end
        name = f"{parts[0].launch.kernel}_side{len(self.made)}"
        header = ", ".join(f"%b{buffer}: {type_}" for buffer, type_ in params.items())
        self.made.append(f"func @{name}({header}) {{\n" + "\n".join(bodies) + "\n}\n")
        return Launch(name, tuple(params), start)


def _only_loaded(kernel: Kernel) -> set[str]:
    """The memref parameters ``kernel`` uses only as the memref of a ``load`` (a group's
    member, loaded, is a memref that may be written)."""
    found = set()
    for name, type_ in kernel.params:
        if not type_.startswith("memref"):
            continue
        uses = len(re.findall(rf"%{name}\b", kernel.body))
        loads = len(re.findall(rf"= load %{name}\[", kernel.body))
        if uses == loads:
            found.add(name)
    return found


def _shifted(body: str, start: str) -> str:
    """``body`` with each ``group_id`` counted from ``start`` (a value)."""
    return _GROUP_ID.sub(rf"\1%\2 = arith.sub %tlc_gid, {start} : index", body)


def _in_range(k: int, start: int, end: int, body: str) -> str:
    """Part ``k``'s body, run by the work-groups ``start <= g < end``."""
    indented = "\n".join("  " + line if line else line for line in body.split("\n"))
    return (f"  %tlc_start{k} = constant {start} -> index\n"
            f"  %tlc_end{k} = constant {end} -> index\n"
            f"  %tlc_from{k} = cmp.ge %tlc_gid, %tlc_start{k} : index\n"
            f"  %tlc_below{k} = cmp.lt %tlc_gid, %tlc_end{k} : index\n"
            f"  %tlc_in{k} = arith.and %tlc_from{k}, %tlc_below{k} : i1\n"
            f"  if %tlc_in{k} {{\n{indented}\n  }}")
