"""chlo.ragged_dot as one grouped kernel: every result element finds its group from the
group sizes and contracts over its own rows, so all groups run in one launch (no gemm per
group).

The modes of the CHLO definition, by where ``lhs_ragged_dimensions = [r]`` lies:

* **non-contracting** (mixture of experts: lhs ``[m, k]``, rhs ``[g, k, n]``, result
  ``[m, n]``): the rows along ``r`` are split into consecutive groups of
  ``group_sizes`` rows; row ``i`` of group ``j`` is multiplied by rhs's slice ``j`` of
  its ``rhs_group_dimensions``; rows beyond the sum of the sizes are zero.
* **contracting** (lhs ``[m, k]``, rhs ``[k, n]``, result ``[g, m, n]``): result slice
  ``j`` contracts only the indices of group ``j`` along ``r``.
* **batch** (``r`` a batching dimension): a dot_general; the sizes do not matter.

JAX exports ``jax.lax.ragged_dot`` for GPUs and TPUs as ``stablehlo.composite
"chlo.ragged_dot"`` whose decomposition multiplies group by group; such a composite is
lowered as the op itself (:data:`frontend.lower.inline.NATIVE_COMPOSITES`).

The result's dimensions are dot_general's (batch, lhs free, rhs free), preceded by the
group dimension in the contracting mode.  ``group_sizes`` is ``[g]``, or the lhs
batching dimensions then ``[g]`` (sizes per batch element).  Operands are materialized
once; f16/bf16 products accumulate in f32 (as dot_general).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.lower import types
from frontend.lower.builder import IndexExpr, KernelBuilder, groups_nd
from frontend.lower.driver import FuncLowering
from frontend.lower.inline import NATIVE_COMPOSITES
from frontend.lower.registry import kernel
from frontend.verify.chlo_ops import ragged_dims, ragged_mode
from tensorlang.diagnostics import CompileError

_ACCUMULATE = {"f16": "f32", "bf16": "f32"}


@dataclass(frozen=True)
class Geometry:
    """The dimension lists of a ragged_dot and the shapes they index."""

    lb: list[int]
    lc: list[int]
    lf: list[int]
    rb: list[int]
    rc: list[int]
    rf: list[int]
    group_dim: int | None
    ragged: int
    mode: str
    groups: int
    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]


def _geometry(op: Op) -> Geometry:
    d = ragged_dims(op)
    lhs, rhs = types.shape(op.operand("lhs")), types.shape(op.operand("rhs"))
    lb, rb = d["lhs_batching_dimensions"], d["rhs_batching_dimensions"]
    lc, rc = d["lhs_contracting_dimensions"], d["rhs_contracting_dimensions"]
    group = d["rhs_group_dimensions"]
    gs = types.shape(op.operand("group_sizes"))
    return Geometry(lb, lc, [i for i in range(len(lhs)) if i not in lb + lc], rb, rc,
                    [i for i in range(len(rhs)) if i not in rb + rc + group],
                    group[0] if group else None, d["lhs_ragged_dimensions"][0],
                    ragged_mode(op, d), gs[-1] if gs else 0, tuple(lhs), tuple(rhs))


@kernel("chlo.ragged_dot")
def ragged_dot(lw: FuncLowering, op: Op) -> None:
    """One kernel over the result elements (see the module docstring)."""
    t = types.elem(op.result)
    if t == "i1" or t.startswith("c"):
        raise CompileError.at(op.loc, f"'chlo.ragged_dot' on {t} is not supported yet")
    geo = _geometry(op)
    out_shape = list(types.shape(op.result))
    out = lw.buffer_for(op.result)
    lw.bind(op.result, out)
    if not prod(out_shape):
        return
    bufs = [lw.materialize(op.operand(n)) for n in ("lhs", "rhs", "group_sizes")]
    n_out = prod(out_shape)
    acc = _ACCUMULATE.get(t, t)
    with lw.kernel("ragged_dot") as (k, _):
        with k.elements_nd(out_shape) as idx:
            value = _element(k, op, geo, bufs, list(idx))
            k.store(k.cast(value, acc, t), out, t, n_out, k.linear(idx, out_shape))
    lw.launch_last(groups_nd(out_shape))


def _element(k: KernelBuilder, op: Op, geo: Geometry, bufs: list[int],
             idx: list[IndexExpr]) -> str:
    """Result element ``idx`` (in the accumulation type)."""
    t = types.elem(op.result)
    acc = _ACCUMULATE.get(t, t)
    group_idx: IndexExpr | None = None
    if geo.mode == "contracting":
        group_idx, idx = idx[0], idx[1:]
    nb, nlf = len(geo.lb), len(geo.lf)
    batch, lfree, rfree = idx[:nb], idx[nb:nb + nlf], idx[nb + nlf:]
    sizes = _GroupSizes(k, op, geo, bufs[2], batch)
    lhs_idx: list[IndexExpr] = [0] * len(geo.lhs_shape)
    rhs_idx: list[IndexExpr] = [0] * len(geo.rhs_shape)
    for dims, values in ((geo.lb, batch), (geo.lf, lfree)):
        for d, v in zip(dims, values, strict=True):
            lhs_idx[d] = v
    for dims, values in ((geo.rb, batch), (geo.rf, rfree)):
        for d, v in zip(dims, values, strict=True):
            rhs_idx[d] = v
    zero = k.const(0.0 if acc[0] in "fb" else 0, acc)
    if geo.mode == "non_contracting":
        row = lhs_idx[geo.ragged]
        group, valid = sizes.group_of(row)
        rhs_idx[geo.group_dim] = group  # type: ignore[index]
        total = _contract(k, op, geo, bufs, (lhs_idx, rhs_idx), None)
        return k.select(valid, total, zero, acc)
    bounds = sizes.bounds(group_idx) if geo.mode == "contracting" else None
    return _contract(k, op, geo, bufs, (lhs_idx, rhs_idx), bounds)


def _contract(k: KernelBuilder, op: Op, geo: Geometry, bufs: list[int],
              at: tuple[list[IndexExpr], list[IndexExpr]],
              ragged_bounds: tuple[str, str] | None) -> str:
    """Sum over the contracting dimensions of lhs[at[0]] * rhs[at[1]] (the ragged one
    only over ``ragged_bounds`` when given), one nested loop per dimension."""
    t = types.elem(op.result)
    acc = _ACCUMULATE.get(t, t)
    lhs_idx, rhs_idx = list(at[0]), list(at[1])
    lt, rt = types.elem(op.operand("lhs")), types.elem(op.operand("rhs"))
    nl, nr = prod(geo.lhs_shape), prod(geo.rhs_shape)

    def product() -> str:
        a = k.cast(k.load(bufs[0], lt, nl, k.linear(lhs_idx, geo.lhs_shape)), lt, acc)
        b = k.cast(k.load(bufs[1], rt, nr, k.linear(rhs_idx, geo.rhs_shape)), rt, acc)
        return k.arith("mul", a, b, acc)

    def level(i: int, running: str) -> str:
        if i == len(geo.lc):
            return k.arith("add", running, product(), acc)
        ld, rd = geo.lc[i], geo.rc[i]
        lo: IndexExpr = 0
        hi: IndexExpr = geo.lhs_shape[ld]
        if ragged_bounds is not None and ld == geo.ragged:
            lo, hi = ragged_bounds
        with k.loop(lo, hi, [running], [acc]) as loop:
            lhs_idx[ld] = rhs_idx[rd] = loop.var
            loop.yields = [level(i + 1, loop.carried[0])]
        return loop.results[0]

    return level(0, k.const(0.0 if acc[0] in "fb" else 0, acc))


class _GroupSizes:
    """Reads of ``group_sizes`` (row ``batch`` when it has batch dimensions) as indices,
    negative sizes counted as 0."""

    def __init__(self, k: KernelBuilder, op: Op, geo: Geometry, buf: int,
                 batch: list[IndexExpr]) -> None:
        self.k, self.geo, self.buf = k, geo, buf
        v = op.operand("group_sizes")
        self.dtype, self.n = types.elem(v), max(types.size(v), 1)
        shape = types.shape(v)
        batch_shape = [geo.lhs_shape[d] for d in geo.lb]
        self.base: IndexExpr = k.imul(k.linear(batch, batch_shape), geo.groups) \
            if len(shape) > 1 else 0

    def size(self, j: IndexExpr) -> str:
        """Group ``j``'s size as an index (at least 0)."""
        k = self.k
        raw = k.to_index(k.load(self.buf, self.dtype, self.n, k.iadd(self.base, j)),
                         self.dtype)
        zero = k.idx(0)
        return k.select(k.cmp("lt", raw, zero, "index"), zero, raw, "index")

    def _fold(self, hi: IndexExpr, inits: list[str],
              step: Callable[[str, list[str]], list[str]]) -> list[str]:
        with self.k.loop(0, hi, inits, ["index"] * len(inits)) as loop:
            loop.yields = step(loop.var, loop.carried)
        return loop.results

    def group_of(self, row: IndexExpr) -> tuple[str, str]:
        """The group holding ``row`` (clamped to the last) and whether one does."""
        k = self.k
        r = k.idx(row)

        def step(j: str, carried: list[str]) -> list[str]:
            end, count = carried
            end = k.arith("add", end, self.size(j), "index")
            passed = k.cmp("le", end, r, "index")
            return [end, k.select(passed, k.arith("add", count, k.idx(1), "index"), count,
                                  "index")]

        _, count = self._fold(self.geo.groups, [k.idx(0), k.idx(0)], step)
        valid = k.cmp("lt", count, k.idx(self.geo.groups), "index")
        last = k.idx(self.geo.groups - 1)
        return k.select(valid, count, last, "index"), valid

    def bounds(self, group: IndexExpr) -> tuple[str, str]:
        """``[start, end)`` of group ``group`` along the ragged dimension (clamped to it)."""
        k = self.k

        def step(j: str, carried: list[str]) -> list[str]:
            return [k.arith("add", carried[0], self.size(j), "index")]

        (start,) = self._fold(group, [k.idx(0)], step)
        end = k.arith("add", start, self.size(group), "index")
        limit = k.idx(self.geo.lhs_shape[self.geo.ragged])

        def clamp(x: str) -> str:
            return k.select(k.cmp("lt", x, limit, "index"), x, limit, "index")

        return clamp(start), clamp(end)


_DIM_FIELDS = ("lhs_batching_dimensions", "rhs_batching_dimensions",
               "lhs_contracting_dimensions", "rhs_contracting_dimensions",
               "lhs_ragged_dimensions", "rhs_group_dimensions")


def from_composite(op: Op) -> Op | None:
    """The ``chlo.ragged_dot`` op of a ``stablehlo.composite "chlo.ragged_dot"`` (JAX's
    export: ``ragged_dot_dimension_numbers`` as six integer arrays in the order of
    :data:`_DIM_FIELDS`), or None when its attributes do not read so."""
    attrs = op.attr("composite_attributes")
    numbers = attrs.get("ragged_dot_dimension_numbers") if isinstance(attrs, dict) else None
    if not isinstance(numbers, list) or len(numbers) != len(_DIM_FIELDS) \
            or len(op.operands) != 3 or len(op.results) != 1:
        return None
    try:
        lists = [[int(d) for d in _flat(x)] for x in numbers]
    except (TypeError, ValueError):
        return None
    fields = tuple((name, A.ListAttr(tuple(A.IntAttr(d) for d in dims)))
                   for name, dims in zip(_DIM_FIELDS, lists, strict=True))
    new = Op("chlo.ragged_dot", list(op.operands), list(op.result_types),
             {"ragged_dot_dimension_numbers": A.StructAttr("chlo.ragged_dot", fields)}, [],
             op.loc, op.src_loc, [], op.origin)
    new.results = list(op.results)
    try:
        from frontend.verify.chlo_ops import verify_ragged_dot

        verify_ragged_dot(new)
    except CompileError:
        return None
    return new


def _flat(x: object) -> list[object]:
    if hasattr(x, "tolist"):
        x = x.tolist()  # type: ignore[union-attr]
    return [y for item in x for y in _flat(item)] if isinstance(x, list) else [x]


NATIVE_COMPOSITES["chlo.ragged_dot"] = from_composite
