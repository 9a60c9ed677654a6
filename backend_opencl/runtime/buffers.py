"""Device arrays for the host-plan executor: allocation, upload, download and copies.

Booleans live in byte arrays viewed as ``bool`` (pyopencl cannot create bool arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array


def alloc(device: Any, dtype: np.dtype, n: int, poison: bool = False) -> Any:
    """A flat device array of ``max(n, 1)`` elements: uninitialized, or all bytes 0xFF
    when ``poison`` (tests use it to catch elements a kernel forgets to write)."""
    dtype = np.dtype(dtype)
    raw = cl_array.empty(device.queue, (max(n, 1) * dtype.itemsize,), np.uint8)
    if poison:
        raw.set(np.full(raw.shape, 0xFF, np.uint8))
    return raw.view(dtype)


def upload(device: Any, host: np.ndarray) -> Any:
    """A flat device array holding ``host``'s elements in row-major order."""
    flat = np.ascontiguousarray(host).reshape(-1)
    arr = alloc(device, flat.dtype, flat.size)
    if flat.size:
        arr.set(flat)
    return arr


def write(arr: Any, host: np.ndarray) -> None:
    """Copy ``host``'s elements (row-major, ``arr``'s dtype and size) into device array
    ``arr`` without waiting: ``host`` must stay alive until the queue has run the copy."""
    flat = np.ascontiguousarray(host).reshape(-1)
    if flat.size:
        arr.set(flat, async_=True)


def download(arr: Any, n: int) -> np.ndarray:
    """The first ``n`` elements of a flat device array."""
    return arr.get()[:n].copy()


def copy(device: Any, dst: Any, src: Any) -> None:
    """Copy ``src``'s elements into ``dst`` on the device."""
    cl.enqueue_copy(device.queue, dst.base_data, src.base_data,
                    byte_count=min(dst.nbytes, src.nbytes))
