"""stablehlo.batch_norm_inference (elemental), batch_norm_training and batch_norm_grad
(one work-item per feature sums over the other dimensions, then an elementwise kernel),
with the spec's formulas; f16/bf16 compute in f32."""

from __future__ import annotations

from collections.abc import Callable
from math import prod

import numpy as np

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental, kernel
from tensorlang.diagnostics import CompileError

_WIDE = {"f16": "f32", "bf16": "f32"}


def _types(op: Op) -> tuple[str, str]:
    """The element type and the type computed in."""
    t = types.elem(op.operand("operand"))
    if t[0] not in "fb":
        raise CompileError.at(op.loc, f"'{op.name}' on {t} is not supported yet")
    return t, _WIDE.get(t, t)


def _epsilon(op: Op) -> float:
    """The f32 attribute ``epsilon`` (rounded to f32 as the IR declares it)."""
    return float(np.float32(op.float_attr("epsilon")))


def _feature(op: Op) -> int:
    return op.int_attr("feature_index")


def _get(f: Fused, v: Value, idx: list[IndexExpr], wt: str) -> str:
    return f.k.cast(f.value(v, idx), types.elem(v), wt)


def _stddev(k: KernelBuilder, var: str, eps: float, wt: str) -> str:
    return k.math("sqrt", k.arith("add", var, k.const(eps, wt), wt), None, wt)


def _normalize(k: KernelBuilder, x: str, scale: str, offset: str, mean: str, var: str,
               eps: float, wt: str) -> str:
    """scale * (x - mean) / sqrt(var + eps) + offset."""
    norm = k.arith("div", k.arith("sub", x, mean, wt), _stddev(k, var, eps, wt), wt)
    return k.arith("add", k.arith("mul", scale, norm, wt), offset, wt)


@elemental("stablehlo.batch_norm_inference")
def batch_norm_inference(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Normalize with the given mean and variance."""
    t, wt = _types(op)
    c = [idx[_feature(op)]]
    x = _get(f, op.operand("operand"), idx, wt)
    scale, offset, mean, var = (_get(f, op.operand(n), c, wt)
                                for n in ("scale", "offset", "mean", "variance"))
    eps = _epsilon(op)
    return f.k.cast(_normalize(f.k, x, scale, offset, mean, var, eps, wt), wt, t)


Body = Callable[[list[IndexExpr], list[str]], list[str]]


def _per_feature(k: KernelBuilder, shape: tuple[int, ...], fi: int, feat: str,
                 inits: list[str], wt: str, body: Body) -> list[str]:
    """Sum ``body`` over every element whose feature index is ``feat``."""
    rest = [n for d, n in enumerate(shape) if d != fi]
    with k.loop(0, prod(rest), inits, [wt] * len(inits)) as loop:
        idx = k.delinearize(loop.var, rest)
        idx.insert(fi, feat)
        loop.yields = body(idx, loop.carried)
    return loop.results


def _elementwise(lw: FuncLowering, op: Op, out: int, fn: Callable[[Fused, list[IndexExpr]],
                                                                     str]) -> None:
    """Write ``fn(f, idx)`` for every element of the operand's shape into ``out``."""
    shape = types.shape(op.operand("operand"))
    n, t = prod(shape), types.elem(op.results[0])
    with lw.kernel("bn_out") as (k, f):
        with k.elements(n) as i:
            k.store(fn(f, k.delinearize(i, shape)), out, t, n, i)
    lw.launch_last(num_groups(n))


@kernel("stablehlo.batch_norm_training")
def batch_norm_training(lw: FuncLowering, op: Op) -> None:
    """Batch mean and (biased) variance per feature, then normalize."""
    t, wt = _types(op)
    x_v = op.operand("operand")
    shape, fi = types.shape(x_v), _feature(op)
    eps = _epsilon(op)
    count = prod(shape) // max(shape[fi], 1)
    out, mean_b, var_b = (lw.buffer_for(r) for r in op.results)
    with lw.kernel("bn_stats") as (k, f):
        with k.elements(shape[fi]) as c:
            zero, inv = k.const(0, wt), k.const(1.0 / max(count, 1), wt)
            (total,) = _per_feature(k, shape, fi, c, [zero], wt, lambda idx, acc: [
                k.arith("add", acc[0], _get(f, x_v, idx, wt), wt)])
            mean = k.arith("mul", total, inv, wt)

            def square(idx: list[IndexExpr], acc: list[str]) -> list[str]:
                d = k.arith("sub", _get(f, x_v, idx, wt), mean, wt)
                return [k.arith("add", acc[0], k.arith("mul", d, d, wt), wt)]

            (ss,) = _per_feature(k, shape, fi, c, [zero], wt, square)
            k.store(k.cast(mean, wt, t), mean_b, t, shape[fi], c)
            k.store(k.cast(k.arith("mul", ss, inv, wt), wt, t), var_b, t, shape[fi], c)
    lw.launch_last(num_groups(shape[fi]))
    for r, b in zip(op.results[1:], (mean_b, var_b), strict=True):
        lw.bind(r, b)

    def norm(f: Fused, idx: list[IndexExpr]) -> str:
        c = [idx[fi]]
        scale, offset, mu, var = (_get(f, v, c, wt) for v in (
            op.operand("scale"), op.operand("offset"), op.results[1], op.results[2]))
        y = _normalize(f.k, _get(f, x_v, idx, wt), scale, offset, mu, var, eps, wt)
        return f.k.cast(y, wt, t)

    _elementwise(lw, op, out, norm)
    lw.bind(op.results[0], out)


@kernel("stablehlo.batch_norm_grad")
def batch_norm_grad(lw: FuncLowering, op: Op) -> None:
    """Per-feature sums of grad_output and grad_output * centered, then grad_operand."""
    t, wt = _types(op)
    x_v, g_v = op.operand("operand"), op.operand("grad_output")
    mean_v, var_v, scale_v = (op.operand(n) for n in ("mean", "variance", "scale"))
    shape, fi = types.shape(x_v), _feature(op)
    eps = _epsilon(op)
    nf = shape[fi]
    count = prod(shape) // max(nf, 1)
    out, gscale, goffset = (lw.buffer_for(r) for r in op.results)
    sum_gc = lw.new_buffer(wt, (nf,))
    with lw.kernel("bn_grad_sums") as (k, f):
        with k.elements(nf) as c:
            mean = _get(f, mean_v, [c], wt)

            def body(idx: list[IndexExpr], acc: list[str]) -> list[str]:
                g = _get(f, g_v, idx, wt)
                centered = k.arith("sub", _get(f, x_v, idx, wt), mean, wt)
                return [k.arith("add", acc[0], g, wt),
                        k.arith("add", acc[1], k.arith("mul", g, centered, wt), wt)]

            zero = k.const(0, wt)
            sg, sgc = _per_feature(k, shape, fi, c, [zero, zero], wt, body)
            stddev = _stddev(k, _get(f, var_v, [c], wt), eps, wt)
            k.store(k.cast(sg, wt, t), goffset, t, nf, c)
            k.store(k.cast(k.arith("div", sgc, stddev, wt), wt, t), gscale, t, nf, c)
            k.store(sgc, sum_gc, wt, nf, c)
    lw.launch_last(num_groups(nf))
    lw.bind(op.results[1], gscale)
    lw.bind(op.results[2], goffset)

    def grad(f: Fused, idx: list[IndexExpr]) -> str:
        k, c = f.k, [idx[fi]]
        var = _get(f, var_v, c, wt)
        centered = k.arith("sub", _get(f, x_v, idx, wt), _get(f, mean_v, c, wt), wt)
        n = k.const(float(count), wt)
        i1 = k.arith("mul", _get(f, g_v, idx, wt), n, wt)
        i2 = _get(f, op.results[2], c, wt)
        i3 = k.load(sum_gc, wt, nf, idx[fi])
        i5 = k.arith("div", k.arith("mul", i3, centered, wt),
                     k.arith("add", var, k.const(eps, wt), wt), wt)
        i6 = k.arith("sub", k.arith("sub", i1, i2, wt), i5, wt)
        factor = k.arith("div", k.arith("div", _get(f, scale_v, c, wt),
                                        _stddev(k, var, eps, wt), wt), n, wt)
        return k.cast(k.arith("mul", factor, i6, wt), wt, t)

    _elementwise(lw, op, out, grad)
    lw.bind(op.results[0], out)
