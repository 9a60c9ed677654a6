"""stablehlo.uniform_quantize and uniform_dequantize as elemental ops; how other ops run on
quantized tensors is :mod:`frontend.lower.core.quant`'s."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.quant import is_quantized
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.fused import Fused
from frontend.lower.core.quant import dequantize, quantize
from frontend.lower.core.registry import elemental


@elemental("stablehlo.uniform_dequantize")
def uniform_dequantize(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """The float value of a quantized element."""
    (x,) = f.operands(op, idx)
    return dequantize(f, x, op.operand("operand"), idx)


@elemental("stablehlo.uniform_quantize")
def uniform_quantize(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Quantize a float element, or requantize a quantized one (through its float)."""
    src = op.operand("operand")
    (x,) = f.operands(op, idx)
    if is_quantized(src.type):
        x = dequantize(f, x, src, idx)
    return quantize(f, x, op.result, idx)
