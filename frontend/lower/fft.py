"""stablehlo.fft (FFT, IFFT, RFFT, IRFFT): a direct DFT, one work-item per output
element, summed in double precision over the operand's trailing ``len(fft_length)``
dimensions.

Every variant is ``out[b, p] = scale * sum_q w(q) x[b, q] exp(sign 2 pi i sum_j p_j q_j /
N_j)`` with ``N = fft_length``:

* FFT: sign -1, scale 1; IFFT: sign +1, scale 1 / prod(N);
* RFFT: a real ``x``, the result's last dimension is ``N_L / 2 + 1``;
* IRFFT: ``x`` holds the first ``N_L / 2 + 1`` entries of a Hermitian spectrum along the
  last dimension; the others are the conjugates of their mirror images, so the sum is the
  real part of the half sum with weight 2 on the terms whose mirror is missing
  (``0 < q_L`` and ``2 q_L != N_L``), 1 on the others.
"""

from __future__ import annotations

from math import pi, prod

from frontend.ir.core import Op
from frontend.lower import types
from frontend.lower.builder import IndexExpr, num_groups
from frontend.lower.driver import FuncLowering
from frontend.lower.fused import Fused
from frontend.lower.registry import kernel
from tensorlang.diagnostics import CompileError

_REAL = {"c32": "f32", "c64": "f64"}


@kernel("stablehlo.fft")
def fft(lw: FuncLowering, op: Op) -> None:
    """The DFT of every output element."""
    kind = str(op.attr("fft_type"))
    lengths = [int(n) for n in op.attr("fft_length")]  # type: ignore[union-attr]
    operand = op.operands[0]
    t_in, t_out = types.elem(operand), types.elem(op.result)
    if kind not in ("FFT", "IFFT", "RFFT", "IRFFT") or not 1 <= len(lengths) <= 3:
        raise CompileError.at(op.loc, f"'stablehlo.fft' {kind} over {len(lengths)} "
                              "dimensions is not supported yet")
    if t_in not in ("f32", "f64", "c32", "c64"):
        raise CompileError.at(op.loc, f"'stablehlo.fft' on {t_in} is not supported yet")
    out = lw.buffer_for(op.result)
    shape = types.shape(op.result)
    n = prod(shape)
    if n:
        with lw.kernel("fft") as (k, f):
            with k.elements(n) as i:
                idx = k.delinearize(i, shape)
                value = _dft(f, op, kind, lengths, idx, t_out)
                k.store(value, out, t_out, n, i)
        lw.launch_last(num_groups(n))
    lw.bind(op.result, out)


def _dft(f: Fused, op: Op, kind: str, lengths: list[int], idx: list[IndexExpr],
         t_out: str) -> str:
    """Output element ``idx``: nested loops over the summed dimensions."""
    k = f.k
    operand = op.operands[0]
    rank = len(lengths)
    q_shape = types.shape(operand)[-rank:]
    batch, p = idx[:-rank], idx[-rank:]
    sign = 1.0 if kind in ("IFFT", "IRFFT") else -1.0
    zero = k.const(0.0, "f64")

    def level(d: int, phase: str, qs: list[str], acc: list[str]) -> list[str]:
        with k.loop(0, q_shape[d], acc, ["f64", "f64"]) as loop:
            q = loop.var
            # (p_d q_d mod N_d) / N_d, exactly in integers first
            frac = k.irem(k.imul(p[d], q), lengths[d])
            step = k.arith("div", k.cast(k.idx(frac), "index", "f64"),
                           k.const(float(lengths[d]), "f64"), "f64")
            ph = k.arith("add", phase, step, "f64")
            if d + 1 < rank:
                loop.yields = level(d + 1, ph, [*qs, q], loop.carried)
            else:
                loop.yields = _term(f, op, kind, lengths, [*batch, *qs, q], ph, sign,
                                    loop.carried)
        return loop.results

    re, im = level(0, zero, [], [zero, zero])
    if kind in ("IFFT", "IRFFT"):
        scale = k.const(1.0 / prod(lengths), "f64")
        re, im = k.arith("mul", re, scale, "f64"), k.arith("mul", im, scale, "f64")
    if kind == "IRFFT":
        return k.cast(re, "f64", t_out)
    rt = _REAL[t_out]
    re, im = k.cast(re, "f64", rt), k.cast(im, "f64", rt)
    return k.emit(f"complex {re}, {im} : {t_out}")


def _term(f: Fused, op: Op, kind: str, lengths: list[int], q: list[IndexExpr], phase: str,
          sign: float, acc: list[str]) -> list[str]:
    """``acc + w x[q] exp(sign 2 pi i phase)`` as (re, im)."""
    k = f.k
    operand = op.operands[0]
    t = types.elem(operand)
    x = f.value(operand, q)
    if t.startswith("c"):
        rt = _REAL[t]
        xr = k.cast(k.math("real", x, None, t), rt, "f64")
        xi = k.cast(k.math("imag", x, None, t), rt, "f64")
    else:
        xr, xi = k.cast(x, t, "f64"), k.const(0.0, "f64")
    if kind == "IRFFT":
        ql, nl = q[-1], lengths[-1]
        single = k.arith("or", k.cmp("eq", k.idx(ql), k.const(0, "index"), "index"),
                         k.cmp("eq", k.idx(k.imul(ql, 2)), k.const(nl, "index"), "index"),
                         "i1")
        w = k.select(single, k.const(1.0, "f64"), k.const(2.0, "f64"), "f64")
        xr, xi = k.arith("mul", xr, w, "f64"), k.arith("mul", xi, w, "f64")
    angle = k.arith("mul", phase, k.const(sign * 2 * pi, "f64"), "f64")
    c, s = k.math("cos", angle, None, "f64"), k.math("sin", angle, None, "f64")
    re = k.arith("sub", k.arith("mul", xr, c, "f64"), k.arith("mul", xi, s, "f64"), "f64")
    im = k.arith("add", k.arith("mul", xr, s, "f64"), k.arith("mul", xi, c, "f64"), "f64")
    return [k.arith("add", acc[0], re, "f64"), k.arith("add", acc[1], im, "f64")]
