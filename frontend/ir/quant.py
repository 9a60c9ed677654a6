"""Rules of ``!quant.uniform`` element types and quantized tensor types (spec C1-C13).

The parser calls these as it reads a type, so a bad type is reported where it is
written.  Each check returns ``(rule, message)`` for the first broken rule, or None.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from frontend.ir.types import IntegerType, QuantizedType, TensorType

Problem = tuple[str, str] | None


def storage_range(storage: IntegerType) -> tuple[int, int]:
    """``(min_value, max_value)`` of an integer storage type."""
    if storage.unsigned:
        return 0, 2 ** storage.width - 1
    return -(2 ** (storage.width - 1)), 2 ** (storage.width - 1) - 1


def storage_bounds(q: QuantizedType) -> tuple[int, int]:
    """``(storage_min, storage_max)`` with the defaults of the storage type."""
    lo, hi = storage_range(q.storage)
    return (lo if q.storage_min is None else q.storage_min,
            hi if q.storage_max is None else q.storage_max)


def element_problem(q: QuantizedType) -> Problem:
    """The first of the element-type rules (C1)-(C11) that ``q`` breaks."""
    if q.storage.is_bool:
        return "C1", "storage type must be an integer type, got i1"
    return _storage_problem(q) or _scale_problem(q) or _zero_point_problem(q) or \
        _axis_problem(q)


def _storage_problem(q: QuantizedType) -> Problem:
    lo, hi = storage_range(q.storage)
    smin, smax = storage_bounds(q)
    if not lo <= smin <= hi:
        return "C1", f"storage_min {smin} is outside {q.storage}'s range [{lo}, {hi}]"
    if not lo <= smax <= hi:
        return "C2", f"storage_max {smax} is outside {q.storage}'s range [{lo}, {hi}]"
    if smin >= smax:
        return "C3", f"storage_min {smin} must be less than storage_max {smax}"
    return None


def _scale_problem(q: QuantizedType) -> Problem:
    for s in q.scales:
        if not math.isfinite(s):
            return "C6", f"scales must be finite, got {s}"
        if s <= 0:
            return "C5", f"scales must be positive, got {s}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cast = float(np.array(s, dtype=q.expressed.dtype))
        if not math.isfinite(cast) or cast <= 0:
            return "C4", f"scale {s} is not a positive finite {q.expressed} value"
    return None


def _zero_point_problem(q: QuantizedType) -> Problem:
    lo, hi = storage_range(q.storage)
    smin, smax = storage_bounds(q)
    for z in q.zero_points:
        if not lo <= z <= hi:
            return "C8", f"zero point {z} is outside {q.storage}'s range [{lo}, {hi}]"
        if not smin <= z <= smax:
            return "C7", f"zero point {z} is outside [storage_min, storage_max] = " \
                         f"[{smin}, {smax}]"
    if len(q.scales) != len(q.zero_points):
        return "C9", "scales and zero points differ in number"
    return None


def _axis_problem(q: QuantizedType) -> Problem:
    if q.axis is None and len(q.scales) != 1:
        return "C10", f"per-tensor quantization needs 1 scale, got {len(q.scales)}"
    if q.axis is not None and q.axis < 0:
        return "C11", f"quantization_dimension must be non-negative, got {q.axis}"
    return None


def tensor_problem(t: TensorType) -> Problem:
    """The quantized tensor rules (C12)-(C13) that ``t`` breaks."""
    q = t.element
    if not isinstance(q, QuantizedType) or q.axis is None:
        return None
    if q.axis >= t.rank:
        return "C12", f"quantization_dimension {q.axis} is out of range for rank {t.rank}"
    d = t.shape[q.axis]
    if d is not None and d != len(q.scales):
        return "C13", f"dimension {q.axis} has size {d} but there are {len(q.scales)} scales"
    return None


def quantized_element(t: object) -> QuantizedType | None:
    """The quantized element type of a tensor type ``t``, or None."""
    if isinstance(t, TensorType) and isinstance(t.element, QuantizedType):
        return t.element
    return None


def is_quantized(t: object) -> bool:
    """True for a tensor with a quantized element type."""
    return quantized_element(t) is not None


def is_per_axis(t: object) -> bool:
    """True for a per-axis quantized tensor."""
    q = quantized_element(t)
    return q is not None and q.axis is not None


def is_per_tensor(t: object) -> bool:
    """True for a per-tensor quantized tensor."""
    q = quantized_element(t)
    return q is not None and q.axis is None
