"""Host memory both runtimes use: aligned numpy arrays and the spans of strided arrays.

No device library is imported here (numpy only).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tensorlang.ir.types import MemRefType


def aligned_empty(nbytes: int, align: int) -> np.ndarray:
    """An uninitialized byte array of ``nbytes`` whose data is ``align``-byte aligned."""
    raw = np.empty(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + nbytes]


def static_layout(t: MemRefType) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and strides of a static memref type (AssertionError for a dynamic one:
    callers check ``t.is_static`` first)."""
    shape = tuple(n for n in t.shape if n is not None)
    strides = tuple(s for s in t.strides if s is not None)
    assert len(shape) == len(strides) == t.order, t
    return shape, strides


def span_elements(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements from the first to the last element of a strided array (0 if empty)."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))


def host_span(arr: np.ndarray, elements: int) -> np.ndarray:
    """A contiguous 1-D view of ``elements`` items starting at ``arr``'s first element."""
    if elements == arr.size and (arr.flags.f_contiguous or arr.flags.c_contiguous):
        return arr.ravel(order="K")  # a view: no copy for contiguous arrays
    return np.lib.stride_tricks.as_strided(arr, shape=(max(elements, 0),),
                                           strides=(arr.itemsize,), writeable=True)
