"""stablehlo.convolution as a direct, unrolled sum per output element, for short contractions.

The kernel walks the result's own row-major index space (:meth:`KernelBuilder.elements_nd`)
with its feature dimension split into (group, feature in group), so the innermost loop runs
along the result's contiguous dimension: along the features for NHWC (depthwise: input,
weights and result all contiguous there, so the loop vectorises), along the width for NCHW.
No index is divided.  Each element is the fully unrolled sum over the input features of
its group and the kernel window.  A tap that may fall into the padding (or between
lhs-dilated elements) reads the input at a clamped, in-bounds index and adds
``select(inside, x * w, 0)``; its condition depends only on the output's spatial indices,
so it is invariant along the features, and taps that are inside for every output position
(VALID windows, the interior rows of a padded one are not known statically) have no
condition at all.  f16/bf16 accumulate in f32.  Elementwise consumers of the result (bias,
activation) run in the same kernel on the element (:meth:`FuncLowering.epilogue`).

:mod:`.convolution` uses it when the contraction is short; its separate multiply and
add also round like XLA's CPU convolution (the gemm helpers let the OpenCL compiler
contract ``a*b + c`` into fma).
"""

from __future__ import annotations

import itertools

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, groups_nd
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.windows import all_of, tap_index, window_attrs

_WIDE = {"f16": "f32", "bf16": "f32"}
SPLIT = 16
"""With at least this many output features per group, the kernel walks (group, feature in
group) as two modes (the inner one long enough for the loop vectoriser), else the output
features as one mode (the group is a division by a constant)."""


def direct_convolution(lw: FuncLowering, op: Op) -> None:
    """out[b, o, x...] = sum over i, k... of lhs[b, g*I + i, x*s + k*d - pad] rhs[k..., i, o]
    (with batch groups: lhs[g * B' + b, i, ...])."""
    n = types.size(op.result)
    if n == 0:
        lw.bind(op.result, lw.buffer_for(op.result))
        return
    if lw.defer_to_epilogue(op):
        return
    epilogue = lw.epilogue(op.result)
    root = epilogue.root if epilogue is not None else op.result
    t, rt = types.elem(op.result), types.elem(root)
    out = lw.buffer_for(root)
    shape = types.shape(op.result)
    name = "conv" if epilogue is None else f"conv_{root.op.name.split('.')[-1]}"
    fd = op.conv_dims.out.index("f")
    groups = _groups(op)
    per = shape[fd] // groups
    split = groups > 1 and per >= SPLIT
    space = [*shape[:fd], groups, per, *shape[fd + 1:]] if split else shape
    with lw.kernel(name) as (k, f):
        with k.elements_nd(space) as idx:
            oidx = idx
            if split:
                oidx = [*idx[:fd], k.linear(idx[fd:fd + 2], [groups, per]), *idx[fd + 2:]]
            g = idx[fd] if split else k.idiv(oidx[fd], per)
            value = k.cast(_conv_sum(k, f, op, oidx, g), _WIDE.get(t, t), t)
            if epilogue is not None:
                f.bound[op.result] = value
                value = f.value(root, oidx)
                del f.bound[op.result]
            k.store(value, out, rt, n, k.linear(oidx, shape))
    lw.launch_last(groups_nd(space))
    lw.bind(root, out)


def _groups(op: Op) -> int:
    """The number of groups: feature or batch (at most one of them exceeds 1)."""
    return (op.int_attr("feature_group_count", 1)
            * op.int_attr("batch_group_count", 1))


def _conv_sum(k: KernelBuilder, f: Fused, op: Op, oidx: list[IndexExpr],
              g: IndexExpr) -> str:
    """The unrolled sum for the output element ``oidx`` of group ``g`` (input features
    outermost, then the window in row-major order)."""
    lhs, rhs = op.operand("lhs"), op.operand("rhs")
    dn = op.conv_dims
    ls, rs = types.shape(lhs), types.shape(rhs)
    acc_t = _WIDE.get(types.elem(op.result), types.elem(op.result))
    lsp, rsp, osp = dn.spatial(dn.lhs), dn.spatial(dn.rhs), dn.spatial(dn.out)
    win = window_attrs(op, len(lsp))
    batch_groups = op.int_attr("batch_group_count", 1)
    n_in = rs[dn.rhs.index("i")]
    window = [rs[d] for d in rsp]
    out_shape = types.shape(op.result)
    taps = [[tap_index(k, win, s, w, window[s], oidx[osp[s]], (ls[lsp[s]], out_shape[osp[s]]))
             for w in range(window[s])] for s in range(len(lsp))]
    lidx: list[IndexExpr] = [0] * len(ls)
    ridx: list[IndexExpr] = [0] * len(rs)
    ob = oidx[dn.out.index("b")]
    lidx[dn.lhs.index("b")] = (k.iadd(k.imul(g, ls[dn.lhs.index("b")] // batch_groups), ob)
                               if batch_groups > 1 else ob)
    ridx[dn.rhs.index("o")] = oidx[dn.out.index("f")]
    acc = k.const(0.0 if acc_t[0] in "fb" else (0j if acc_t[0] == "c" else 0), acc_t)
    zero = acc
    for fi in range(n_in):
        lidx[dn.lhs.index("f")] = fi if batch_groups > 1 else k.iadd(k.imul(g, n_in), fi)
        ridx[dn.rhs.index("i")] = fi
        for kw in itertools.product(*(range(n) for n in window)):
            conds: list[str | bool] = []
            for s, w in enumerate(kw):
                ridx[rsp[s]] = w
                lidx[lsp[s]], ok = taps[s][w]
                conds.append(ok)
            if False in conds:
                continue
            real = [c for c in conds if isinstance(c, str)]
            x = k.cast(f.value(lhs, lidx), types.elem(lhs), acc_t)
            y = k.cast(f.value(rhs, ridx), types.elem(rhs), acc_t)
            term = k.arith("mul", x, y, acc_t)
            if real:
                term = k.select(all_of(k, real), term, zero, acc_t)
            acc = k.arith("add", acc, term, acc_t)
    return acc
