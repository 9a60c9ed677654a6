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
lowered as the op itself (:data:`frontend.lower.core.inline.NATIVE_COMPOSITES`).

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
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, groups_nd, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.inline import NATIVE_COMPOSITES
from frontend.lower.core.registry import kernel
from frontend.lower.families.dot import general as dot
from frontend.verify.dot import ragged_dims, ragged_mode, verify_ragged_dot
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
    acc = _ACCUMULATE.get(t, t)
    gemm = _gemm_lowering(geo)
    if gemm is not None:
        target = out if acc == t else lw.new_buffer(acc, out_shape)
        gemm(lw, op, geo, (target, acc))
        if target != out:  # f16/bf16: products accumulated in f32, then rounded once
            _convert(lw, (target, acc), (out, t), prod(out_shape))
        return
    bufs = [lw.materialize(op.operand(n)) for n in ("lhs", "rhs", "group_sizes")]
    n_out = prod(out_shape)
    with lw.kernel("ragged_dot") as (k, _):
        with k.elements_nd(out_shape) as idx:
            value = _element(k, op, geo, bufs, list(idx))
            k.store(k.cast(value, acc, t), out, t, n_out, k.linear(idx, out_shape))
    lw.launch_last(groups_nd(out_shape))


def _gemm_lowering(geo: Geometry) -> Callable[..., None] | None:
    """The grouped-gemm lowering for ``geo``'s mode, or None for the per-element kernel."""
    if geo.mode == "contracting":
        return _contracting_gemm
    if geo.mode == "non_contracting" and geo.lf == [geo.ragged] and \
            prod(geo.lhs_shape[d] for d in geo.lc) != 0:
        return _grouped_gemm
    return None


TILE_ROWS = dot.TILE_M
"""Rows of a group per work-group of the grouped gemm."""


def _grouped_gemm(lw: FuncLowering, op: Op, geo: Geometry, into: tuple[int, str]) -> None:
    """The non-contracting mode when the ragged dimension is lhs's only free one: lhs as
    [B, M, K] and rhs as [G, B, K, N] (copied only when not laid out so), the result
    [B, M, N] zeroed, then one work-group per (batch element, tile of ``TILE_ROWS`` rows
    of one group): ``ceil(M / TILE_ROWS) + G`` tiles per batch element bound the tiles
    of all groups; a work-group finds its group and rows from the sizes (none: it does
    nothing) and runs a ``gemm`` on them with that group's rhs.  ``into``: the result
    buffer and the gemm's type (operands are converted to it)."""
    out, t = into
    lhs, rhs = op.operand("lhs"), op.operand("rhs")
    nb = prod(geo.lhs_shape[d] for d in geo.lb)
    m = geo.lhs_shape[geo.ragged]
    kk = prod(geo.lhs_shape[d] for d in geo.lc)
    n = prod(geo.rhs_shape[d] for d in geo.rf)
    assert geo.group_dim is not None, "the non-contracting mode has a group dimension"
    a = dot.canonical(lw, lhs, geo.lb + [geo.ragged] + geo.lc, t)
    b = dot.canonical(lw, rhs, [geo.group_dim] + geo.rb + geo.rc + geo.rf, t)
    dot.zero_fill(lw, out, t, nb * m * n)
    tiles = -(-m // TILE_ROWS) + geo.groups
    gs = lw.materialize(op.operand("group_sizes"))
    with lw.kernel("ragged_gemm") as (k, _):
        w = k.emit("group_id", "g")
        batch, tile = k.idiv(w, tiles), k.irem(w, tiles)
        sizes = _GroupSizes(k, op, geo, gs, batch)
        group, row0, rows = sizes.tile(tile, m)
        views = []
        for buf, (r, c, depth), index in ((b, (n, kk, geo.groups * nb), k.iadd(
                k.imul(group, nb), batch)), (a, (kk, m, nb), batch), (out, (n, m, nb), batch)):
            ssa, flat = k.param(buf, t, r * c * depth)
            full = k.emit(f"expand {ssa}[0 -> {r}x{c}x{depth}] : {flat}", "v")
            views.append(k.emit(f"subview {full}[:,:,{k.idx(index)}] : "
                                f"memref<{t}x{r}x{c}x{depth}>", "v"))
        part = [k.emit(f"subview {views[i]}[:,{row0}:{rows}] : "
                       f"memref<{t}x{r}x{m},strided<1,{r}>>", "v")
                for i, r in ((1, kk), (2, n))]
        one, zero = (k.const(x if t[0] in "fb" else int(x), t) for x in (1.0, 0.0))
        k.line(f"gemm.n.n {one}, {views[0]}, {part[0]}, {zero}, {part[1]} : {t}, "
               f"memref<{t}x{n}x{kk},strided<1,{n}>>, memref<{t}x{kk}x?,strided<1,{kk}>>, "
               f"{t}, memref<{t}x{n}x?,strided<1,{n}>>")
    lw.launch_last(nb * tiles)


def _contracting_gemm(lw: FuncLowering, op: Op, geo: Geometry,
                      into: tuple[int, str]) -> None:
    """The contracting mode: lhs as [B, M, K] and rhs as [B, K, N] with the ragged
    dimension outermost in K (so a group's part of K is one range), the result [G, B, M,
    N] zeroed, then one work-group per (group, batch element, tile of ``dot.TILE_M`` rows)
    running a ``gemm`` over its group's range of K (``into`` as for ``_grouped_gemm``)."""
    out, t = into
    nb = prod(geo.lhs_shape[d] for d in geo.lb)
    m = prod(geo.lhs_shape[d] for d in geo.lf)
    n = prod(geo.rhs_shape[d] for d in geo.rf)
    pos = geo.lc.index(geo.ragged)
    lc = [geo.lc[pos]] + geo.lc[:pos] + geo.lc[pos + 1:]
    rc = [geo.rc[pos]] + geo.rc[:pos] + geo.rc[pos + 1:]
    kk = prod(geo.lhs_shape[d] for d in lc)
    inner = kk // max(geo.lhs_shape[geo.ragged], 1)
    a = dot.canonical(lw, op.operand("lhs"), geo.lb + geo.lf + lc, t)
    b = dot.canonical(lw, op.operand("rhs"), geo.rb + rc + geo.rf, t)
    dot.zero_fill(lw, out, t, geo.groups * nb * m * n)
    tiles = -(-m // dot.TILE_M)
    gs = lw.materialize(op.operand("group_sizes"))
    with lw.kernel("ragged_gemm") as (k, _):
        w = k.emit("group_id", "g")
        group, rest = k.idiv(w, nb * tiles), k.irem(w, nb * tiles)
        batch, tile = k.idiv(rest, tiles), k.irem(rest, tiles)
        start, end = _GroupSizes(k, op, geo, gs, batch).bounds(group)
        k0 = k.arith("mul", start, k.idx(inner), "index")
        klen = k.arith("mul", k.arith("sub", end, start, "index"), k.idx(inner), "index")
        lo, size, size_text = dot._tile_size(k, m, tile)
        views = []
        for buf, (r, c, depth), index in (
                (b, (n, kk, nb), batch), (a, (kk, m, nb), batch),
                (out, (n, m, geo.groups * nb), k.iadd(k.imul(group, nb), batch))):
            ssa, flat = k.param(buf, t, r * c * depth)
            full = k.emit(f"expand {ssa}[0 -> {r}x{c}x{depth}] : {flat}", "v")
            views.append(k.emit(f"subview {full}[:,:,{k.idx(index)}] : "
                                f"memref<{t}x{r}x{c}x{depth}>", "v"))
        rv = k.emit(f"subview {views[0]}[:,{k0}:{klen}] : memref<{t}x{n}x{kk},strided<1,{n}>>",
                    "v")
        lv = k.emit(f"subview {views[1]}[{k0}:{klen},{lo}:{size}] : "
                    f"memref<{t}x{kk}x{m},strided<1,{kk}>>", "v")
        ov = k.emit(f"subview {views[2]}[:,{lo}:{size}] : memref<{t}x{n}x{m},strided<1,{n}>>",
                    "v")
        one, zero = (k.const(x if t[0] in "fb" else int(x), t) for x in (1.0, 0.0))
        k.line(f"gemm.n.n {one}, {rv}, {lv}, {zero}, {ov} : {t}, "
               f"memref<{t}x{n}x?,strided<1,{n}>>, memref<{t}x?x{size_text},strided<1,{kk}>>, "
               f"{t}, memref<{t}x{n}x{size_text},strided<1,{n}>>")
    lw.launch_last(geo.groups * nb * tiles)


def _convert(lw: FuncLowering, src: tuple[int, str], dst: tuple[int, str], n: int) -> None:
    """Buffer ``src`` converted into buffer ``dst`` (each with its element type)."""
    with lw.kernel("convert") as (k, _):
        with k.elements(n) as i:
            k.store(k.cast(k.load(src[0], src[1], n, i), src[1], dst[1]), dst[0], dst[1], n,
                    i)
    lw.launch_last(num_groups(n))


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
    batch_shape = [geo.lhs_shape[d] for d in geo.lb]
    sizes = _GroupSizes(k, op, geo, bufs[2], k.linear(batch, batch_shape))
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
        assert geo.group_dim is not None, "the non-contracting mode has a group dimension"
        rhs_idx[geo.group_dim] = group
        total = _contract(k, op, geo, bufs, (lhs_idx, rhs_idx), None)
        return k.select(valid, total, zero, acc)
    bounds = sizes.bounds(group_idx) if group_idx is not None else None
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
    """Reads of ``group_sizes`` (row ``batch``, the flat batch index, when it has batch
    dimensions) as indices, negative sizes counted as 0."""

    def __init__(self, k: KernelBuilder, op: Op, geo: Geometry, buf: int,
                 batch: IndexExpr) -> None:
        self.k, self.geo, self.buf = k, geo, buf
        v = op.operand("group_sizes")
        self.dtype, self.n = types.elem(v), max(types.size(v), 1)
        self.base: IndexExpr = k.imul(batch, geo.groups) if len(types.shape(v)) > 1 else 0

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

    def tile(self, tile: IndexExpr, m: int) -> tuple[str, str, str]:
        """Work-group tile ``tile``'s group, first row and row count (0 for a tile beyond
        the groups' tiles), tiles numbered group after group, ``ceil(size /
        TILE_ROWS)`` per group, rows clamped to ``[0, m)``."""
        k = self.k
        t, size_t = k.idx(tile), k.idx(TILE_ROWS)

        def step(j: str, carried: list[str]) -> list[str]:
            first, start, group, row0, end = carried
            size = self.size(j)
            count = k.arith("div", k.arith("add", size, k.idx(TILE_ROWS - 1), "index"),
                            size_t, "index")
            after = k.arith("add", first, count, "index")
            hit = k.arith("and", k.cmp("ge", t, first, "index"),
                          k.cmp("lt", t, after, "index"), "i1")
            lo = k.arith("add", start, k.arith("mul", k.arith("sub", t, first, "index"),
                                               size_t, "index"), "index")
            stop = k.arith("add", start, size, "index")
            return [after, stop, k.select(hit, j, group, "index"),
                    k.select(hit, lo, row0, "index"), k.select(hit, stop, end, "index")]

        zero = k.idx(0)
        _, _, group, row0, end = self._fold(self.geo.groups, [zero] * 5, step)
        limit = k.idx(m)

        def low(x: str, y: str) -> str:
            return k.select(k.cmp("lt", x, y, "index"), x, y, "index")

        row0 = low(row0, limit)
        end = low(low(end, limit), k.arith("add", row0, size_t, "index"))
        rows = k.arith("sub", end, row0, "index")
        rows = k.select(k.cmp("lt", rows, zero, "index"), zero, rows, "index")
        return group, row0, rows

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
        lists = [A.as_ints(_flat(x)) for x in numbers]
    except (TypeError, ValueError):
        return None
    fields = tuple((name, A.ListAttr(tuple(A.IntAttr(d) for d in dims)))
                   for name, dims in zip(_DIM_FIELDS, lists, strict=True))
    new = Op("chlo.ragged_dot", list(op.operands), list(op.result_types),
             {"ragged_dot_dimension_numbers": A.StructAttr("chlo.ragged_dot", fields)}, [],
             op.loc, op.src_loc, [], op.origin)
    new.results = list(op.results)
    try:
        verify_ragged_dot(new)
    except CompileError:
        return None
    return new


def _flat(x: object) -> list[object]:
    if hasattr(x, "tolist"):
        x = x.tolist()
    return [y for item in x for y in _flat(item)] if isinstance(x, list) else [x]


NATIVE_COMPOSITES["chlo.ragged_dot"] = from_composite
