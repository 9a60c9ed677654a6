"""JAX ``shard_map`` exports in Shardy form, run as one process per device.

``jax.jit(jax.shard_map(f, mesh, in_specs, out_specs))`` exports a global-view ``@main``
whose body is one ``sdy.manual_computation``: its region is the per-device program
(explicit collectives over device ids), its ``in_shardings`` / ``out_shardings`` say how
global arrays split over the mesh axes.  :func:`from_shardy` turns such a module into a
per-device module (``mhlo.num_partitions`` = the mesh's devices) plus the shardings;
:class:`ShardedProgram` slices this rank's shard of each global input, runs the
per-device program and all-gathers the outputs back into global arrays on every rank.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from backend_opencl.distributed.program import RankProgram

_MESH = re.compile(r"sdy\.mesh\s+@([\w.$-]+)\s*=\s*<\s*\[(.*?)\]")
_AXIS = re.compile(r'"([^"]+)"\s*=\s*(\d+)')
_MC = "sdy.manual_computation("

Spec = list[list[str]]
"""Per dimension, the mesh axes it is split over (major first; empty: replicated)."""

@dataclass
class ManualProgram:
    """A Shardy module as a per-device module and the shardings of its inputs/outputs."""

    text: str
    axes: list[tuple[str, int]]
    in_specs: list[Spec]
    out_specs: list[Spec]

    @property
    def devices(self) -> int:
        """The number of devices (processes) of the mesh."""
        return math.prod(size for _, size in self.axes)


def is_shardy(text: str) -> bool:
    """True for a module holding an ``sdy.manual_computation``."""
    return _MC in text


def _matching(text: str, start: int, open_: str, close: str) -> int:
    """The index just past the bracket closing the one at ``start``."""
    depth = 0
    i = start
    in_string = False
    while i < len(text):
        c = text[i]
        if c == '"':
            in_string = not in_string
        elif not in_string and c == open_:
            depth += 1
        elif not in_string and c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise TlcError("error: sdy.manual_computation: unbalanced brackets")


def _specs(text: str) -> list[Spec]:
    """``[<@mesh, [{"x"}, {}]>, ...]`` as per-dimension axis lists."""
    out = []
    for m in re.finditer(r"<\s*@[\w.$-]+\s*,\s*\[(.*?)\]\s*(?:,[^>]*)?>", text):
        dims = re.findall(r"\{([^}]*)\}", m.group(1))
        out.append([re.findall(r'"([^"]+)"', d) for d in dims])
    return out


def from_shardy(text: str) -> ManualProgram:
    """The per-device program of a ``jit(shard_map(...))`` export (a TlcError when the
    module is not of that shape)."""
    mesh = _MESH.search(text)
    if mesh is None:
        raise TlcError("error: sdy.manual_computation without an sdy.mesh")
    axes = [(n, int(s)) for n, s in _AXIS.findall(mesh.group(2))]
    at = text.index(_MC)
    head = text[at:]
    ins = head.index("in_shardings=")
    ins_end = _matching(head, head.index("[", ins), "[", "]")
    outs = head.index("out_shardings=")
    outs_end = _matching(head, head.index("[", outs), "[", "]")
    manual = re.search(r"manual_axes\s*=\s*\{([^}]*)\}", head)
    manual_axes = re.findall(r'"([^"]+)"', manual.group(1)) if manual else []
    if sorted(manual_axes) != sorted(n for n, _ in axes):
        raise TlcError("error: sdy.manual_computation must be manual over every mesh axis "
                       f"(manual_axes {manual_axes}, mesh {[n for n, _ in axes]})")
    args_start = head.index("(", max(ins_end, outs_end, manual.end() if manual else 0))
    args_end = _matching(head, args_start, "(", ")")
    body_start = head.index("{", args_end)
    body_end = _matching(head, body_start, "{", "}")
    body = head[body_start + 1:body_end - 1]
    rets = re.search(r"sdy\.return\s+(.*?)\s*:\s*(.*?)\s*$", body, re.S | re.M)
    if rets is None:
        raise TlcError("error: sdy.manual_computation: no sdy.return")
    body = body[:rets.start()] + f"return {rets.group(1)} : {rets.group(2)}" + \
        body[rets.end():]
    result_types = rets.group(2).strip()
    devices = math.prod(size for _, size in axes)
    per_device = (f"module @per_device attributes {{mhlo.num_partitions = {devices} : i32, "
                  f"mhlo.num_replicas = 1 : i32}} {{\n  func.func @main"
                  f"{head[args_start:args_end]} -> ({result_types}) {{{body}}}\n}}\n")
    _check_main(text, at, at + body_end)
    return ManualProgram(per_device, axes, _specs(head[ins:ins_end]),
                         _specs(head[outs:outs_end]))


def _check_main(text: str, at: int, region_end: int) -> None:
    """``@main`` must be the manual computation of its arguments, returning its results
    in order (anything else would need the global-view ops run around it)."""
    main = re.search(r"func\.func\s+(?:public\s+)?@main\s*\(", text)
    if main is None or main.end() > at:
        raise TlcError("error: sdy.manual_computation must be in @main")
    params = text[main.end() - 1:_matching(text, main.end() - 1, "(", ")")]
    names = re.findall(r"(%[\w.$-]+)\s*:", params)
    call = text[at + len(_MC) - 1:_matching(text, at + len(_MC) - 1, "(", ")")]
    result = re.search(r"(%[\w.$-]+)(?::\d+)?\s*=\s*$", text[:at])
    tail = [line.strip() for line in text[region_end:].splitlines() if line.strip()]
    ret = tail[1] if len(tail) > 1 else ""
    returned = re.findall(r"%[\w.$#-]+", ret.split(":")[0])
    ok = result is not None and re.findall(r"%[\w.$-]+", call) == names and \
        ret.startswith(("return", "func.return")) and \
        all(r.split("#")[0] == result.group(1) and r.endswith(f"#{i}") or
            (len(returned) == 1 and r == result.group(1)) for i, r in enumerate(returned))
    before = text[main.end():at].split("\n", 1)  # the signature's line, then the op's
    alone = len(before) == 2 and re.fullmatch(r"\s*%[\w.$-]+(?::\d+)?\s*=\s*", before[1])
    if not ok or not alone:
        raise TlcError("error: only a @main that is one sdy.manual_computation of its "
                       "arguments, returning its results, is supported (jit(shard_map(f)))")


def shard_slices(program: ManualProgram, spec: Spec, shape: tuple[int, ...],
                 rank: int) -> tuple[slice, ...]:
    """The part of a global array of ``shape`` that device ``rank`` holds."""
    coords = dict(zip([n for n, _ in program.axes],
                      np.unravel_index(rank, [s for _, s in program.axes]), strict=True))
    sizes = dict(program.axes)
    out = []
    for d, n in enumerate(shape):
        dim_axes = spec[d] if d < len(spec) else []
        count = math.prod(sizes[a] for a in dim_axes)
        index = 0
        for a in dim_axes:
            index = index * sizes[a] + int(coords[a])
        if n % count:
            raise TlcError(f"error: dimension {d} of size {n} does not split over "
                           f"{count} devices ({dim_axes})")
        step = n // count
        out.append(slice(index * step, (index + 1) * step))
    return tuple(out)


class ShardedProgram:
    """A Shardy program on this rank: global numpy arrays in, global arrays out."""

    def __init__(self, program: ManualProgram, inner: RankProgram) -> None:
        self.program = program
        self.inner = inner  # the per-device RankProgram
        self.ctx = inner.ctx
        self.stats = inner.stats

    def compile(self) -> ShardedProgram:
        """Build the per-device program's kernels now."""
        self.inner.compile()
        return self

    def __call__(self, *inputs: ArrayLike) -> list[np.ndarray | None]:
        """Slice, run, gather."""
        rank = self.ctx.grid.rank
        if len(inputs) != len(self.program.in_specs):
            raise TlcError(f"error: the program takes {len(self.program.in_specs)} inputs, "
                           f"{len(inputs)} were given")
        local = [np.ascontiguousarray(np.asarray(x)[shard_slices(
            self.program, spec, np.shape(x), rank)])
            for x, spec in zip(inputs, self.program.in_specs, strict=True)]
        outs = self.inner(*local)
        everyone = list(range(self.ctx.grid.size))
        return [None if y is None else self._gather(y, spec, everyone)
                for y, spec in zip(outs, self.program.out_specs, strict=True)]

    def _gather(self, y: np.ndarray, spec: Spec, group: list[int]) -> np.ndarray:
        if not any(spec):
            return y
        parts = self.ctx.transport.allgather(group, y)
        shape = list(y.shape)
        sizes = dict(self.program.axes)
        for d, dim_axes in enumerate(spec):
            shape[d] *= math.prod(sizes[a] for a in dim_axes)
        out = np.empty(shape, dtype=y.dtype)
        for r in group:
            out[shard_slices(self.program, spec, tuple(shape), r)] = parts[r]
        return out
