"""Dense element literals: ``dense<...>`` bodies to numpy arrays (printed back by
:mod:`frontend.ir.dense`).

Accepted bodies: a splat scalar, nested lists, ``dense<>`` (no elements), booleans,
decimal and hex-bit-pattern floats (also inside lists and ``(re, im)`` complex pairs),
and raw ``"0x..."`` blobs (little-endian, ``i1`` one byte per element, a one-element
blob is a splat).
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

from frontend.ir.types import (
    ComplexType,
    ElementType,
    FloatType,
    IndexType,
    IntegerType,
    QuantizedType,
    TensorType,
)

_SCALAR = re.compile(
    r"\s*(?:(\[)|(\])|(\()|(\))|(,)|(true|false)|(0x[0-9a-fA-F]+)"
    r"|([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan))|(\S))")


class LiteralError(ValueError):
    """A malformed literal; the parser turns it into a located diagnostic."""


def parse_body(body: str) -> tuple[tuple[int, ...] | None, list[object]]:
    """Split a list/scalar body into (shape or None for a splat, flat scalar tokens)."""
    flat: list[object] = []
    stack: list[int] = []
    dims: dict[int, int] = {}
    pair: list[str] | None = None
    for m in _SCALAR.finditer(body):
        lb, rb, lp, rp, _comma, boolean, hexa, num, bad = m.groups()
        if bad:
            raise LiteralError(f"unexpected '{bad}' in dense literal")
        if lb:
            if stack:
                stack[-1] += 1
            stack.append(0)
        elif rb:
            if not stack:
                raise LiteralError("unbalanced ']' in dense literal")
            _record(dims, len(stack) - 1, stack.pop())
        elif lp:
            pair = []
        elif rp:
            if pair is None or len(pair) != 2:
                raise LiteralError("a complex literal needs two parts: (re, im)")
            flat.append(tuple(pair))
            pair = None
            if stack:
                stack[-1] += 1
        elif pair is not None and (hexa or num):
            pair.append(hexa or num)
        elif boolean or hexa or num:
            if stack:
                stack[-1] += 1
            flat.append(boolean or hexa or num)
        elif not _comma and not m.group(0).strip() == "":
            raise LiteralError("malformed dense literal")
    if stack or pair is not None:
        raise LiteralError("unbalanced brackets in dense literal")
    return _shape(dims, body), flat


def _record(dims: dict[int, int], depth: int, count: int) -> None:
    if dims.setdefault(depth, count) != count:
        raise LiteralError("dense literal rows have different lengths")


def _shape(dims: dict[int, int], body: str) -> tuple[int, ...] | None:
    if not dims:
        return None
    shape = tuple(dims[d] for d in range(len(dims)))
    if 0 in shape:
        return shape[: shape.index(0) + 1]
    return shape


def to_array(shape: tuple[int, ...] | None, flat: list[object], t: TensorType) -> np.ndarray:
    """Numpy array of type ``t`` from :func:`parse_body`'s result; raises LiteralError."""
    want = _static_shape(t)
    if shape is not None and shape != want:
        if not (shape == (0,) and 0 in want):
            raise LiteralError(f"dense literal has shape {_dims(shape)} but the type is {t}")
    if shape is None and not flat:
        if 0 not in want:
            raise LiteralError(f"empty dense literal for non-empty type {t}")
        return np.zeros(want, element_dtype(t.element))
    values = convert(flat, t.element)
    if shape is None:
        return splat(values[0], want)
    return values.reshape(want)


def splat(value: object, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only array of ``shape`` filled with ``value``, without its elements in memory.

    A splat constant's type may be far larger than memory (``dense<1.0> :
    tensor<17179869184xf32>``); the broadcast view costs one element.
    """
    return np.broadcast_to(np.asarray(value), shape)


def _static_shape(t: TensorType) -> tuple[int, ...]:
    if not t.is_static:
        raise LiteralError(f"dense literal needs a static shape, got {t}")
    return t.static_shape


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def element_dtype(e: ElementType) -> np.dtype:
    """The numpy dtype for element type ``e``."""
    return e.dtype


def convert(flat: list[object], e: ElementType) -> np.ndarray:
    """Scalar tokens to a 1-D array of element type ``e``."""
    if isinstance(e, QuantizedType):
        e = e.storage
    if isinstance(e, (IntegerType, IndexType)):
        return _ints(flat, e)
    if isinstance(e, FloatType):
        return _floats(flat, e)
    if isinstance(e, ComplexType):
        pairs = [v for v in flat if isinstance(v, tuple)]
        if len(pairs) != len(flat):
            raise LiteralError(f"expected (re, im) pairs for {e}")
        re_ = _floats([v[0] for v in pairs], e.element)
        im = _floats([v[1] for v in pairs], e.element)
        out = np.empty(len(flat), e.dtype)
        out.real = re_
        out.imag = im
        return out
    raise LiteralError(f"no dense literals of element type {e}")


def _int_token(v: object) -> int:
    if isinstance(v, tuple):
        raise LiteralError("complex literal for a non-complex type")
    s = str(v)
    if s in ("true", "false"):
        return int(s == "true")
    if len(s.lstrip("+-").lstrip("0x")) > 40:  # beyond every type (and int()'s limit)
        raise LiteralError(f"integer {s[:20]}... ({len(s)} characters) is out of range")
    if s.startswith("0x"):
        return int(s, 16)
    try:
        return int(s)
    except ValueError:
        raise LiteralError(f"expected an integer, got '{s}'") from None


def _ints(flat: list[object], e: IntegerType | IndexType) -> np.ndarray:
    vals = [_int_token(v) for v in flat]
    width = 64 if isinstance(e, IndexType) else e.width
    unsigned = isinstance(e, IntegerType) and e.unsigned
    lo = 0 if unsigned else -(1 << (width - 1))
    hi = (1 << width) - 1
    if width == 1:
        lo = 0
    for v in vals:
        if not lo <= v <= hi:
            raise LiteralError(f"integer {v} does not fit in {e}")
    dtype = e.dtype
    if width == 1:
        return np.array(vals, np.bool_)
    if not unsigned:
        vals = [v - (1 << width) if v >= (1 << (width - 1)) else v for v in vals]
    return np.array(vals, np.int64 if not unsigned else np.uint64).astype(dtype)


def _floats(flat: list[object], e: FloatType) -> np.ndarray:
    dtype = e.dtype
    strs = [str(v) for v in flat]
    if any(isinstance(v, tuple) for v in flat):
        raise LiteralError(f"complex literal for {e}")
    if not any(s.startswith("0x") or s in ("true", "false") for s in strs):
        wide = np.array([float(s) for s in strs], np.float64)
        for k in np.flatnonzero(np.isinf(wide)):  # a finite literal beyond double's range
            if strs[k].lstrip("+-") != "inf":
                raise LiteralError(f"float literal {strs[k][:20]}... is out of range for {e}")
        with np.errstate(over="ignore", invalid="ignore"):
            out = wide.astype(dtype)
        _check_range(wide, out, e)
        return out
    return np.array([_float_scalar(s, e) for s in strs], dtype)


def _check_range(wide: np.ndarray, out: np.ndarray, e: FloatType) -> None:
    """Finite decimal literals must stay finite in the target type."""
    limit = float(ml_dtypes.finfo(out.dtype).max)
    with np.errstate(invalid="ignore"):
        bad = np.isfinite(wide) & ~np.isfinite(out.astype(np.float64)) & (abs(wide) > limit)
    if bad.any():
        raise LiteralError(f"float literal {float(wide[bad][0])!r} is out of range for {e}")


def _float_scalar(s: str, e: FloatType) -> object:
    if s in ("true", "false"):
        raise LiteralError(f"boolean literal for {e}")
    if not s.startswith("0x"):
        return _floats([s], e)[0]
    bits = int(s, 16)
    size = e.dtype.itemsize
    if e.name == "tf32":
        bits <<= 13
    if bits >= 1 << (8 * size):
        raise LiteralError(f"hex float {s} is wider than {e}")
    return np.frombuffer(bits.to_bytes(size, "little"), e.dtype)[0]


def from_blob(text: str, t: TensorType) -> np.ndarray:
    """A ``"0x..."`` blob (quotes included) to an array of type ``t``."""
    try:
        raw = bytes.fromhex(text[3:-1])
    except ValueError:
        raise LiteralError("malformed hex blob in dense literal") from None
    e = t.element.storage if isinstance(t.element, QuantizedType) else t.element
    dtype = e.dtype
    if len(raw) % dtype.itemsize:
        raise LiteralError(f"hex blob of {len(raw)} bytes is not a whole number of {e}")
    arr = np.frombuffer(raw, np.uint8 if dtype == np.bool_ else dtype.newbyteorder("<"))
    arr = arr.astype(dtype)
    want = _static_shape(t)
    size = int(np.prod(want, dtype=np.int64))
    if arr.size == 1 and size != 1:
        return splat(arr[0], want)
    if arr.size != size:
        raise LiteralError(f"hex blob has {arr.size} elements but {t} has {size}")
    return arr.reshape(want)
