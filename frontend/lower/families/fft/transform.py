"""stablehlo.fft (FFT, IFFT, RFFT, IRFFT over 1-3 dimensions): one 1-D transform per
transformed dimension, each a kernel over every line along it (:mod:`fft_line`).

* FFT / IFFT: complex transforms along the last, then the earlier dimensions, through
  complex buffers of the result's type.
* RFFT: the real-to-complex transform along the last dimension (its ``n / 2 + 1``
  outputs), then complex transforms along the others.
* IRFFT: inverse complex transforms along the earlier dimensions of the half spectrum,
  then the Hermitian complex-to-real transform along the last one.

Inverse transforms scale each dimension by ``1 / n``, ``1 / prod(fft_length)`` in all.
"""

from __future__ import annotations

from math import prod

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import kernel
from frontend.lower.families.fft.line import LinePass, Source, line_kernel
from tensorlang.diagnostics import CompileError

_COMPLEX = {"f32": "c32", "f64": "c64"}


@kernel("stablehlo.fft")
def fft(lw: FuncLowering, op: Op) -> None:
    """The transform as a chain of line passes (see the module docstring)."""
    kind = str(op.attr("fft_type"))
    lengths = op.ints_attr("fft_length")
    operand = op.operands[0]
    t_in, t_out = types.elem(operand), types.elem(op.result)
    if kind not in ("FFT", "IFFT", "RFFT", "IRFFT") or not 1 <= len(lengths) <= 3:
        raise CompileError.at(op.loc, f"'stablehlo.fft' {kind} over {len(lengths)} "
                              "dimensions is not supported yet")
    if t_in not in ("f32", "f64", "c32", "c64"):
        raise CompileError.at(op.loc, f"'stablehlo.fft' on {t_in} is not supported yet")
    out = lw.buffer_for(op.result)
    if types.size(op.result):
        passes = _passes(kind, lengths, types.shape(operand), types.shape(op.result),
                         (t_in, t_out))
        _run(lw, operand, passes, out)
    lw.bind(op.result, out)


def _passes(kind: str, lengths: list[int], in_shape: tuple[int, ...],
            out_shape: tuple[int, ...], ts: tuple[str, str]) -> list[LinePass]:
    """The line passes of the transform, in order."""
    t_in, t_out = ts
    rank, last = len(in_shape), len(in_shape) - 1
    inverse = kind in ("IFFT", "IRFFT")
    dims = list(range(rank - len(lengths), rank))
    n_of = dict(zip(dims, lengths, strict=True))
    if kind in ("FFT", "IFFT"):
        return [LinePass("c2c", d, n_of[d], inverse, out_shape, t_in if d == last else t_out,
                         t_out) for d in reversed(dims)]
    if kind == "RFFT":
        c = _COMPLEX[t_in]
        return [LinePass("r2c", last, n_of[last], False, out_shape, t_in, c),
                *(LinePass("c2c", d, n_of[d], False, out_shape, c, c)
                  for d in reversed(dims[:-1]))]
    c = _COMPLEX[t_out]
    return [*(LinePass("c2c", d, n_of[d], True, in_shape, c, c) for d in reversed(dims[:-1])),
            LinePass("c2r", last, n_of[last], True, out_shape, c, t_out)]


def _run(lw: FuncLowering, operand: Value, passes: list[LinePass], out: int) -> None:
    """Launch the passes: the first reads the operand (its producers fuse), each later one
    the buffer before it; the last writes ``out``."""
    source: Source = _operand(operand)
    for i, p in enumerate(passes):
        target = out if i == len(passes) - 1 else lw.new_buffer(p.out_type, p.shape)
        line_kernel(lw, p, source, target)
        source = _buffer(target, p)


def _operand(v: Value) -> Source:
    return lambda f, idx: f.value(v, idx)


def _buffer(buf: int, p: LinePass) -> Source:
    def load(f: Fused, idx: list[IndexExpr]) -> str:
        return f.k.load(buf, p.out_type, prod(p.shape), f.k.linear(idx, p.shape))
    return load
