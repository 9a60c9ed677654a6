"""stablehlo.convolution as gemm: im2col patches times the weights.

With ``G`` groups (``feature_group_count`` or ``batch_group_count``; at most one of them
exceeds 1, as the spec requires), ``M`` = output batch x output positions, ``K`` = input
features per group x kernel window and ``Og`` output features per group:

* ``patches[G, M, K]``: the (virtually padded, lhs-dilated, window-reversed) input
  windows, zeros outside (producers of ``lhs`` fuse into the packing);
* ``weights[G, K, Og]``: ``rhs`` rearranged (``rhs`` itself when it is HWIO: ``K`` runs
  over the window, then the input features);
* ``out = patches @ weights``.  With one group and a ``[b, 0, 1, ..., f]`` result this is
  one kernel (:func:`frontend.lower.families.conv.gemm.implicit_gemm`: each work-group packs its
  tile of patches into local memory, runs the gemm into the result and then the result's
  elementwise consumers, see :func:`frontend.lower.families.dot.general.gemm_output`).
  Otherwise the
  patches go to a buffer (one fused kernel), :func:`frontend.lower.families.dot.general.gemm_kernel`
  multiplies (work-groups = group x tile of result rows) and one more kernel scatters
  the result.  f16/bf16 accumulate in f32.

Channels-last convolutions with stride 1 along the last spatial dimension and at least
:data:`conv_rows.MIN_FEATURES` input features skip the patches altogether: one gemm per
window tap over padded input rows in local memory (:mod:`conv_rows`).

Contractions shorter than ``DIRECT_K``, and depthwise windows up to ``DEPTHWISE_K`` taps,
use the direct kernel of :mod:`conv_direct`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, groups_nd
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused, plan_epilogue
from frontend.lower.core.registry import kernel
from frontend.lower.core.windows import all_of, tap_index, window_attrs
from frontend.lower.families.conv import rows as conv_rows
from frontend.lower.families.conv.direct import direct_convolution
from frontend.lower.families.conv.gemm import implicit_gemm, pool_planner, tile_rows
from frontend.lower.families.dot.general import gemm_kernel, gemm_output
from tensorlang.diagnostics import CompileError

_WIDE = {"f16": "f32", "bf16": "f32"}
DIRECT_K = 16
"""Contractions (input features per group x window) shorter than this use the direct loop
of :mod:`frontend.lower.families.conv.direct`: no im2col buffer for a tiny gemm, and its rounding
(separate multiply and add) matches XLA's where products cancel."""

DEPTHWISE_K = 64
"""Depthwise convolutions (one input feature per group) with windows up to this many taps
also use the direct kernel: its loop runs along the features, where a gemm per group has
one column per output feature (5x5 on 8x32x32x32: 19.8 -> 1.8 ms a call)."""

GROUP_O = 16
"""Grouped convolutions take the one-kernel path (work-group = group x tile) with at least
this many output features per group; with fewer (4), a gemm per work-group is too narrow
and the im2col buffer with one gemm per group was faster (56 against 103 ms for 32 groups
of 4 on 8x32x32x128, noisy)."""

Element = Callable[[KernelBuilder, Fused, list[IndexExpr]], str]


@dataclass(frozen=True)
class ConvShape:
    """The sizes of one convolution seen as ``G`` batched gemms."""

    groups: int
    feature_groups: bool
    out_batch: int
    out_spatial: list[int]
    in_features: int
    window: list[int]
    out_per_group: int

    @property
    def m(self) -> int:
        """Rows of each gemm: output batch x output positions."""
        return self.out_batch * prod(self.out_spatial)

    @property
    def k(self) -> int:
        """The contraction: input features of a group x kernel window."""
        return self.in_features * prod(self.window)


def conv_shape(op: Op) -> ConvShape:
    """The sizes of convolution ``op`` (:class:`ConvShape`); a CompileError when it has
    both feature and batch groups."""
    dn = op.conv_dims
    rs, os_ = types.shape(op.operand("rhs")), types.shape(op.result)
    fg = op.int_attr("feature_group_count", 1)
    bg = op.int_attr("batch_group_count", 1)
    if fg > 1 and bg > 1:
        raise CompileError.at(op.loc, "'stablehlo.convolution' with both feature and batch "
                              "groups is not supported")
    groups = fg * bg
    return ConvShape(groups, fg > 1, os_[dn.out.index("b")],
                     [os_[d] for d in dn.spatial(dn.out)],
                     rs[dn.rhs.index("i")],
                     [rs[d] for d in dn.spatial(dn.rhs)],
                     rs[dn.rhs.index("o")] // groups)


@kernel("stablehlo.convolution")
def convolution(lw: FuncLowering, op: Op) -> None:
    """out[b, o, x...] = sum over i, k... of lhs[b, g*I + i, x*s + k*d - pad] rhs[k..., i, o]."""
    t = types.elem(op.result)
    if t == "i1":
        raise CompileError.at(op.loc, "'stablehlo.convolution' on i1 is not supported yet")
    cs = conv_shape(op)
    if cs.k < DIRECT_K or (cs.feature_groups and cs.in_features == 1 and cs.k <= DEPTHWISE_K):
        direct_convolution(lw, op)
        return
    n = types.size(op.result)
    natural = _natural_out(op)
    direct = cs.groups == 1 and natural
    acc = _WIDE.get(t, t)
    nbytes = types.elem_bytes(acc)
    local = tile_rows(cs.k, cs.out_spatial, nbytes, 1, 0 if direct else cs.out_per_group)
    one_kernel = n > 0 and local > 0 and (cs.groups == 1 or cs.out_per_group >= GROUP_O)
    planner = pool_planner(cs.k, nbytes) if one_kernel and direct else plan_epilogue
    if (one_kernel or (n > 0 and direct)) and lw.defer_to_epilogue(op, planner):
        return
    sizes = (cs.groups, cs.m, cs.k, cs.out_per_group)
    if one_kernel and direct and _rows(lw, op, acc):
        conv_rows.shifted_gemms(lw, op, (cs.out_batch, cs.k, cs.out_per_group), acc,
                                _weights(lw, op, cs, acc), cs.out_spatial)
        return
    if one_kernel:
        implicit_gemm(lw, op, (cs.out_batch, cs.k, cs.out_per_group), acc,
                      (_patch_element(op, cs, acc), _weights(lw, op, cs, acc)), cs.out_spatial,
                      cs.groups)
        return
    if n > 0 and direct:
        patches, weights = _operands(lw, op, cs, acc)
        c, tail = gemm_output(lw, op.result, acc)
        gemm_kernel(lw, (patches, weights, c), acc, sizes, tail)
        return
    out = lw.buffer_for(op.result)
    lw.bind(op.result, out)
    if n > 0:
        patches, weights = _operands(lw, op, cs, acc)
        c = lw.new_buffer(acc, (cs.groups, cs.m, cs.out_per_group))
        gemm_kernel(lw, (patches, weights, c), acc, sizes)
        _unpack(lw, op, cs, c, out)


def _rows(lw: FuncLowering, op: Op, acc: str) -> bool:
    """Whether ``op`` takes :func:`conv_rows.shifted_gemms`: eligible, and its epilogue
    does not end in a pooling reduce_window (that stays on the im2col tile)."""
    plan = lw.epilogue(op.result)
    pooled = plan is not None and plan.root.op.name == "stablehlo.reduce_window"
    return not pooled and conv_rows.eligible(op, types.elem_bytes(acc))


def _operands(lw: FuncLowering, op: Op, cs: ConvShape, acc: str) -> tuple[int, int]:
    """The gemm's operands: the im2col patches and the weights."""
    patches = _pack(lw, "im2col", ([cs.groups], [cs.out_batch, *cs.out_spatial],
                                   [*cs.window, cs.in_features]), acc,
                    _patch_element(op, cs, acc))
    return patches, _weights(lw, op, cs, acc)


def _weights(lw: FuncLowering, op: Op, cs: ConvShape, acc: str) -> int:
    """The weights as [G, (w..., i), Og]: ``rhs``'s own buffer when it is [0, 1, ..., i, o]
    of the accumulation type with one group (HWIO), else a rearranged copy."""
    rhs = op.operand("rhs")
    labels = list(op.conv_dims.rhs)
    buf = lw.buffer_of(rhs)
    if (buf is not None and cs.groups == 1 and types.elem(rhs) == acc
            and labels == [*(str(i) for i in range(len(labels) - 2)), "i", "o"]):
        return buf
    return _pack(lw, "weights", ([cs.groups], [*cs.window, cs.in_features],
                                 [cs.out_per_group]), acc, _weight_element(op, cs, acc))


def _natural_out(op: Op) -> bool:
    """Whether the result's layout is [b, 0, 1, ..., f] (the gemm's [M, O] as it is)."""
    out = op.conv_dims.out
    return list(out) == ["b", *(str(i) for i in range(len(out) - 2)), "f"]


def _pack(lw: FuncLowering, hint: str, modes: tuple[list[int], ...], dtype: str,
          element: Element) -> int:
    """A new row-major buffer with ``element(k, f, idx)`` at every index; mode ``d`` has
    size ``prod(modes[d])``.  The kernel walks the finer index space of all the factors,
    so the element's ``delinearize`` of a mode into them needs no division."""
    shape = tuple(prod(m) for m in modes)
    fine = [n for m in modes for n in m]
    out = lw.new_buffer(dtype, shape)
    with lw.kernel(hint) as (k, f):
        with k.elements_nd(fine) as fidx:
            idx, at = [], 0
            for m in modes:
                idx.append(k.linear(fidx[at:at + len(m)], m))
                at += len(m)
            k.store(element(k, f, idx), out, dtype, prod(shape), k.linear(fidx, fine))
    lw.launch_last(groups_nd(fine) if prod(shape) else 0)
    return out


def _patch_element(op: Op, cs: ConvShape, acc: str) -> Element:
    """patches[g, (b, x...), (w..., i)] = the lhs element under kernel tap w, or 0: read at
    a clamped index and selected (:func:`conv_direct.tap_index`), so no branch."""
    lhs = op.operand("lhs")
    dn = op.conv_dims
    ls = types.shape(lhs)
    lsp = dn.spatial(dn.lhs)
    win = window_attrs(op, len(lsp))

    def element(k: KernelBuilder, f: Fused, idx: list[IndexExpr]) -> str:
        g, m, kk = idx
        b, *xs = k.delinearize(m, [cs.out_batch, *cs.out_spatial])
        *ws, fi = k.delinearize(kk, [*cs.window, cs.in_features])
        lidx: list[IndexExpr] = [0] * len(ls)
        grouped = k.imul(g, cs.out_batch if not cs.feature_groups else cs.in_features)
        lidx[dn.lhs.index("b")] = b if cs.feature_groups else k.iadd(grouped, b)
        lidx[dn.lhs.index("f")] = k.iadd(grouped, fi) if cs.feature_groups else fi
        conds = []
        for s, d in enumerate(lsp):
            lidx[d], ok = tap_index(k, win, s, ws[s], cs.window[s], xs[s],
                                    (ls[d], cs.out_spatial[s]))
            if ok is False:
                return k.const(_zero(acc), acc)
            if ok is not True:
                conds.append(ok)
        x = k.cast(f.value(lhs, lidx), types.elem(lhs), acc)
        return k.select(all_of(k, conds), x, k.const(_zero(acc), acc), acc) if conds else x

    return element


def _weight_element(op: Op, cs: ConvShape, acc: str) -> Element:
    """weights[g, (w..., i), o] = rhs[w..., i, g * Og + o]."""
    rhs = op.operand("rhs")
    dn = op.conv_dims
    rsp = dn.spatial(dn.rhs)

    def element(k: KernelBuilder, f: Fused, idx: list[IndexExpr]) -> str:
        g, kk, o = idx
        *ws, fi = k.delinearize(kk, [*cs.window, cs.in_features])
        ridx: list[IndexExpr] = [0] * len(types.shape(rhs))
        ridx[dn.rhs.index("i")] = fi
        ridx[dn.rhs.index("o")] = k.iadd(k.imul(g, cs.out_per_group), o)
        for s, d in enumerate(rsp):
            ridx[d] = ws[s]
        return k.cast(f.value(rhs, ridx), types.elem(rhs), acc)

    return element


def _unpack(lw: FuncLowering, op: Op, cs: ConvShape, c: int, out: int) -> None:
    """out[b, o, x...] = c[o / Og, (b, x...), o % Og], converted to the result type."""
    dn = op.conv_dims
    t, acc = types.elem(op.result), _WIDE.get(types.elem(op.result), types.elem(op.result))
    shape = types.shape(op.result)
    n = prod(shape)
    osp = dn.spatial(dn.out)
    with lw.kernel("conv_out") as (k, _):
        with k.elements_nd(shape) as idx:
            o = idx[dn.out.index("f")]
            m = k.linear([idx[dn.out.index("b")], *(idx[d] for d in osp)],
                         [cs.out_batch, *cs.out_spatial])
            at = k.linear([k.idiv(o, cs.out_per_group), m, k.irem(o, cs.out_per_group)],
                          [cs.groups, cs.m, cs.out_per_group])
            x = k.load(c, acc, cs.groups * cs.m * cs.out_per_group, at)
            k.store(k.cast(x, acc, t), out, t, n, k.linear(idx, shape))
    lw.launch_last(groups_nd(shape) if n else 0)


def _zero(t: str) -> object:
    return 0j if t[0] == "c" else (0.0 if t[0] in "fb" else 0)
