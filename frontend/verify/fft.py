"""Verifier of the fft family: stablehlo.fft."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import ComplexType, FloatType, TensorType
from frontend.verify.common import (
    dims,
    fail,
    shapes_ok,
    tensor,
    verifies,
)


@verifies("fft")
def verify_fft(op: Op) -> None:
    """(C1)/(C3) fft_length size, (C2) element types, (C4) fft_length, (C5) shapes."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    length = op.ints_attr("fft_length", [])
    kind = op.attr("fft_type")
    if not 1 <= len(length) <= 3 or len(length) > t.rank:
        fail(op, "C3", f"fft_length must have 1 to 3 entries, at most rank {t.rank}")
    complex_in = isinstance(t.element, ComplexType)
    complex_out = isinstance(r.element, ComplexType)
    want = {"FFT": (True, True), "IFFT": (True, True), "RFFT": (False, True),
            "IRFFT": (True, False)}.get(str(kind))
    if want is not None and (complex_in, complex_out) != want:
        fail(op, "C2", f"{kind} maps {'complex' if want[0] else 'real'} to "
                       f"{'complex' if want[1] else 'real'}, got {t.element} -> {r.element}")
    if _component(t.element) != _component(r.element):
        fail(op, "C2", f"operand {t.element} and result {r.element} must have the same "
                       f"floating-point semantics")
    for real in (x for x in (t, r) if isinstance(x.element, FloatType)):
        if not shapes_ok(real.shape[-len(length):], tuple(length)):
            fail(op, "C4", f"the trailing dimensions of {real} must be fft_length {length}")
    if t.rank != r.rank:
        fail(op, "C5", f"result rank {r.rank} must equal operand rank {t.rank}")
    _check_fft_shape(op, t, r, str(kind))


def _component(e: object) -> object:
    return e.element if isinstance(e, ComplexType) else e


def _check_fft_shape(op: Op, t: TensorType, r: TensorType, kind: str) -> None:
    """(C5): shapes agree except the last dimension of RFFT/IRFFT's real side."""
    want = t.shape
    if kind in ("RFFT", "IRFFT") and t.rank:
        full, half = (t, r) if kind == "RFFT" else (r, t)
        last = full.shape[-1]
        size = None if last is None else (0 if last == 0 else last // 2 + 1)
        if not shapes_ok(half.shape[-1:], (size,)):
            fail(op, "C5", f"{kind} needs last dimension {dims([size])} on the complex "
                           f"side, got {dims(half.shape[-1:])}")
        want = t.shape[:-1] + r.shape[-1:]
    if not shapes_ok(want, r.shape):
        fail(op, "C5", f"result shape must be {dims(want)}, got {dims(r.shape)}")
