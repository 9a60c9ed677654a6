"""stablehlo.convolution as a direct loop per output element, for tiny contractions.

Each work-item computes one output element: a sequential loop over the input features of
its group and the kernel window, reading the (virtually) padded and lhs-dilated input.
f16/bf16 accumulate in f32.  :mod:`frontend.lower.conv` uses it when the contraction is
too short for a gemm to pay; its separate multiply and add also round like XLA's CPU
convolution (the gemm helpers let the OpenCL compiler contract ``a*b + c`` into fma).
"""

from __future__ import annotations

from math import prod

from frontend.ir.core import Op
from frontend.lower import types
from frontend.lower.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.driver import FuncLowering
from frontend.lower.reduce import _ints, _padding

_WIDE = {"f16": "f32", "bf16": "f32"}


def direct_convolution(lw: FuncLowering, op: Op) -> None:
    """out[b, o, x...] = sum over i, k... of lhs[b, g*I + i, x*s + k*d - pad] rhs[k..., i, o]
    (with batch groups: lhs[g * B' + b, i, ...])."""
    t = types.elem(op.result)
    dn = op.attrs["dimension_numbers"]
    out_shape = types.shape(op.result)
    n = prod(out_shape)
    out = lw.buffer_for(op.result)
    with lw.kernel("conv") as (k, f):
        with k.elements(n) as i:
            oidx = k.delinearize(i, out_shape)
            acc = _conv_sum(k, f, op, dn, oidx)
            k.store(k.cast(acc, _WIDE.get(t, t), t), out, t, n, i)
    lw.launch_last(num_groups(n))
    lw.bind(op.result, out)


def _conv_sum(k: KernelBuilder, f: object, op: Op, dn: object, oidx: list[IndexExpr]) -> str:
    lhs, rhs = op.operand("lhs"), op.operand("rhs")
    ls, rs = types.shape(lhs), types.shape(rhs)
    t = types.elem(op.result)
    acc_t = _WIDE.get(t, t)
    lsp, rsp, osp = dn.spatial(dn.lhs), dn.spatial(dn.rhs), dn.spatial(dn.out)  # type: ignore
    nsp = len(lsp)
    strides = _ints(op, "window_strides", nsp, 1)
    ldil, rdil = _ints(op, "lhs_dilation", nsp, 1), _ints(op, "rhs_dilation", nsp, 1)
    reverse = op.attr("window_reversal") or [False] * nsp
    pad = _padding(op, nsp)
    groups = int(op.attr("feature_group_count", 1))  # type: ignore[arg-type]
    batch_groups = int(op.attr("batch_group_count", 1))  # type: ignore[arg-type]
    n_in = rs[dn.rhs.index("i")]  # type: ignore[attr-defined]
    n_out = rs[dn.rhs.index("o")]  # type: ignore[attr-defined]
    o = oidx[dn.out.index("f")]  # type: ignore[attr-defined]
    g = k.idiv(o, n_out // groups) if groups > 1 else 0
    window = [rs[d] for d in rsp]
    zero = k.const(0.0 if acc_t[0] in "fb" else (0j if acc_t[0] == "c" else 0), acc_t)
    with k.loop(0, n_in * prod(window), [zero], [acc_t]) as loop:
        parts = k.delinearize(loop.var, [n_in, *window])
        fi, kw = parts[0], parts[1:]
        lidx: list[IndexExpr] = [0] * len(ls)
        ridx: list[IndexExpr] = [0] * len(rs)
        bg = k.idiv(o, n_out // batch_groups) if batch_groups > 1 else 0
        lidx[dn.lhs.index("b")] = k.iadd(k.imul(bg, ls[dn.lhs.index("b")] // batch_groups),  # type: ignore
                                         oidx[dn.out.index("b")])  # type: ignore[attr-defined]
        lidx[dn.lhs.index("f")] = k.iadd(k.imul(g, n_in), fi)  # type: ignore[attr-defined]
        ridx[dn.rhs.index("i")], ridx[dn.rhs.index("o")] = fi, o  # type: ignore[attr-defined]
        ok = k.const(True, "i1")
        for s in range(nsp):
            kk = k.isub(window[s] - 1, kw[s]) if reverse[s] else kw[s]
            ridx[rsp[s]] = kw[s]
            p = k.idx(k.isub(k.iadd(k.imul(oidx[osp[s]], strides[s]), k.imul(kk, rdil[s])),
                             pad[s][0]))
            q = k.arith("div", p, k.idx(ldil[s]), "index") if ldil[s] > 1 else p
            conds = [k.cmp("ge", p, k.idx(0), "index"), k.cmp("lt", q, k.idx(ls[lsp[s]]),
                                                               "index")]
            if ldil[s] > 1:
                conds.append(k.cmp("eq", k.arith("rem", p, k.idx(ldil[s]), "index"), k.idx(0),
                                   "index"))
            for c in conds:
                ok = k.arith("and", ok, c, "i1")
            lidx[lsp[s]] = k.select(conds[0], q, k.idx(0), "index")
        acc = loop.carried[0]

        def term() -> str:
            x = k.cast(f.value(lhs, lidx), types.elem(lhs), acc_t)  # type: ignore
            w = k.cast(f.value(rhs, ridx), types.elem(rhs), acc_t)  # type: ignore
            return k.arith("add", acc, k.arith("mul", x, w, acc_t), acc_t)

        loop.yields = [k.branch(ok, acc_t, term, lambda: acc)]
    return loop.results[0]
