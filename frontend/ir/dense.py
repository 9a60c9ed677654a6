"""The canonical text of dense element values (``DenseElementsAttr.__str__``).

A splat (every element the same bits) prints as one scalar, a large array as a
little-endian ``"0x..."`` blob, anything else as nested lists; floats print with the
shortest spelling that reads back as the same value, non-finite ones as hex bit
patterns.  Reading these bodies is :mod:`frontend.syntax.literals`.
"""

from __future__ import annotations

import numpy as np

from frontend.ir.types import (
    ComplexType,
    ElementType,
    FloatType,
    IntegerType,
    QuantizedType,
    TensorType,
)
from frontend.ir.values import as_complex, as_float, as_int

BLOB_THRESHOLD = 64
"""Arrays of more elements print as a ``"0x..."`` blob."""


def is_lazy_splat(array: np.ndarray) -> bool:
    """True for an array made by ``frontend.syntax.literals.splat`` (all strides zero, more
    than one element)."""
    return array.size > 1 and not any(array.strides)



def format_dense(array: np.ndarray, t: TensorType) -> str:
    """Canonical ``dense<...>`` text for ``array`` of type ``t``."""
    if array.size == 0:
        return "dense<>"
    if is_lazy_splat(array):
        return f"dense<{_scalar(array.flat[0], t.element)}>"
    flat = array.reshape(-1)
    if array.size > 1 and _same_bits(flat):
        return f"dense<{_scalar(flat[0], t.element)}>"
    if array.size == 1:
        return f"dense<{_nested(array, t.element)}>"
    if array.size > BLOB_THRESHOLD:
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
        return f'dense<"0x{data.hex().upper()}">'
    return f"dense<{_nested(array, t.element)}>"


def _same_bits(flat: np.ndarray) -> bool:
    raw = flat.view(np.uint8).reshape(flat.size, -1)
    return bool(np.all(raw == raw[0]))


def _nested(array: np.ndarray, e: ElementType) -> str:
    if array.ndim == 0:
        return _scalar(array[()], e)
    return "[" + ", ".join(_nested(sub, e) for sub in array) + "]"


def _scalar(x: object, e: ElementType) -> str:
    if isinstance(e, QuantizedType):
        e = e.storage
    if isinstance(e, ComplexType):
        c = as_complex(x)
        re_ = np.array(c.real).astype(e.element.dtype)
        im = np.array(c.imag).astype(e.element.dtype)
        return f"({_float(re_[()], e.element)}, {_float(im[()], e.element)})"
    if isinstance(e, FloatType):
        return _float(x, e)
    if isinstance(e, IntegerType) and e.is_bool:
        return "true" if bool(x) else "false"
    return str(as_int(x))


def _float(x: object, e: FloatType) -> str:
    v = as_float(x)
    if not np.isfinite(v) or e.name == "tf32":
        bits = np.array(x, e.dtype).view(f"u{e.dtype.itemsize}")
        if e.name == "tf32":
            return f"0x{int(bits) >> 13:X}" if not np.isfinite(v) else repr(v)
        return f"0x{int(bits):0{2 * e.dtype.itemsize}X}"
    if v == 0.0 and np.signbit(v):
        return "-0.0"
    if e.dtype in (np.float16, np.float32, np.float64):
        scalar = np.array(x, e.dtype)[()]
        assert isinstance(scalar, np.floating)
        if v == 0.0 or 1e-4 <= abs(v) < 1e16:
            text = np.format_float_positional(scalar, unique=True, trim="0")
        else:
            text = np.format_float_scientific(scalar, unique=True, trim="0")
    else:
        text = _shortest(v, e)
    return text if any(c in text for c in ".e") else text + ".0"


def _shortest(v: float, e: FloatType) -> str:
    """The shortest ``%g`` spelling that reads back as the same ``e`` value (bf16, f8...)."""
    target = np.array(v, e.dtype).tobytes()
    for digits in range(1, 18):
        text = f"{v:.{digits}g}"
        if np.array(float(text)).astype(e.dtype).tobytes() == target:
            return text
    return repr(v)
