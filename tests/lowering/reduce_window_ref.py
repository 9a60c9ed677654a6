"""A numpy reference of stablehlo.reduce_window and StableHLO text builders for its tests."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from tests.lowering.conftest import module

ELEM = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32",
        np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.bool_): "i1",
        np.dtype(np.uint8): "ui8"}
BODY = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
        "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or}


@dataclass(frozen=True)
class Window:
    """reduce_window attributes (empty lists: the defaults)."""

    dims: Sequence[int]
    strides: Sequence[int] = ()
    base: Sequence[int] = ()
    wdil: Sequence[int] = ()
    pad: Sequence[tuple[int, int]] = field(default_factory=tuple)

    def filled(self) -> tuple[list[int], list[int], list[int], list[tuple[int, int]]]:
        """strides, base dilations, window dilations and padding with defaults."""
        n = len(self.dims)
        return (list(self.strides) or [1] * n, list(self.base) or [1] * n,
                list(self.wdil) or [1] * n, list(self.pad) or [(0, 0)] * n)


def reference(x: np.ndarray, init: object, body: str, win: Window) -> np.ndarray:
    """The spec's reduce_window: the base-dilated, padded input (holes and padding are
    ``init``), each window folded from ``init`` in row-major tap order."""
    strides, base, wdil, pad = win.filled()
    dil = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base, strict=True)]
    d = np.full(dil, init, x.dtype)
    d[tuple(slice(None, None, b) for b in base)] = x
    d = np.pad(d, pad, constant_values=init)
    spans = [(w - 1) * wd + 1 for w, wd in zip(win.dims, wdil, strict=True)]
    out_shape = [(n - s) // st + 1 if n >= s else 0
                 for n, s, st in zip(d.shape, spans, strides, strict=True)]
    out = np.full(out_shape, init, x.dtype)
    fold = BODY[body]
    for tap in itertools.product(*(range(w) for w in win.dims)):
        sl = tuple(slice(t * wd, t * wd + (o - 1) * st + 1, st) if o else slice(0, 0)
                   for t, wd, o, st in zip(tap, wdil, out_shape, strides, strict=True))
        out = fold(out, d[sl]).astype(x.dtype)
    return out


def _tensor(shape: Sequence[int], elem: str) -> str:
    return f"tensor<{''.join(f'{n}x' for n in shape)}{elem}>"


def _array(values: Sequence[int]) -> str:
    return f"array<i64: {', '.join(map(str, values))}>"


def program(shape: Sequence[int], out_shape: Sequence[int], elem: str, body: str,
            init: str, win: Window, epilogue: str = "") -> str:
    """@main(%x) = reduce_window(%x, constant ``init``) with ``body`` (an op name), then
    ``epilogue`` (an op name, applied to the result and itself: a fused consumer)."""
    strides, base, wdil, pad = win.filled()
    rank = len(shape)
    x, y, s = _tensor(shape, elem), _tensor(out_shape, elem), _tensor((), elem)
    pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in pad)
    attrs = (f"window_dimensions = {_array(win.dims)}, window_strides = {_array(strides)}, "
             f"base_dilations = {_array(base)}, window_dilations = {_array(wdil)}, "
             f"padding = dense<[{pads}]> : tensor<{rank}x2xi64>")
    text = f"""  %i = stablehlo.constant dense<{init}> : {s}
  %r = "stablehlo.reduce_window"(%x, %i) <{{{attrs}}}> ({{
  ^bb0(%a: {s}, %b: {s}):
    %c = stablehlo.{body} %a, %b : {s}
    stablehlo.return %c : {s}
  }}) : ({x}, {s}) -> {y}"""
    if epilogue:
        text += f"\n  %e = stablehlo.{epilogue} %r, %r : {y}"
    return module(f"(%x: {x}) -> {y}", f"{text}\n  return {'%e' if epilogue else '%r'} : {y}")
