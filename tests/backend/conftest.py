"""Shared helpers for the OpenCL back-end tests (exposed as the ``h`` fixture).

Kernels of one test module are compiled together into one program (one OpenCL build),
so tests stay fast on PoCL.  Outputs are poisoned with NaN so unwritten elements fail.
"""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import numpy as np
import pytest

DTYPES = {"f32": np.float32, "f64": np.float64, "c32": np.complex64, "c64": np.complex128,
          "i32": np.int32, "i64": np.int64, "index": np.int64, "i16": np.int16,
          "i8": np.int8}
RTOL = {"f32": 2e-5, "c32": 2e-5, "f64": 1e-12, "c64": 1e-12}


def rand(rng: np.random.Generator, shape: tuple[int, ...], t: str) -> np.ndarray:
    """Random Fortran-ordered data of tensor-language type ``t``."""
    dtype = DTYPES[t]
    if t.startswith("c"):
        data = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    elif t.startswith("f"):
        data = rng.standard_normal(shape)
    else:
        data = rng.integers(-50, 50, size=shape)
    return np.asfortranarray(data.astype(dtype))


def poison(shape: tuple[int, ...], t: str) -> np.ndarray:
    """An output array full of NaN (or a sentinel for integers)."""
    dtype = DTYPES[t]
    fill = -123 if t.startswith("i") else np.nan
    return np.asfortranarray(np.full(shape, fill, dtype=dtype))


def scalar(rng: np.random.Generator, t: str) -> np.generic:
    """A random scalar of type ``t``."""
    return rand(rng, (1,), t)[0]


def close(got: np.ndarray, want: np.ndarray, t: str) -> None:
    """Assert ``got`` matches ``want`` relative to the size of ``want``."""
    assert not np.isnan(got).any(), "unwritten (NaN-poisoned) elements remain"
    if t.startswith("i"):
        np.testing.assert_array_equal(got, want)
        return
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=RTOL[t] * scale * 10)


def strided_view(rng: np.random.Generator, shape: tuple[int, ...], t: str,
                 pad: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(view, base): a view of ``shape`` inside a larger random Fortran array."""
    big = rand(rng, tuple(n + pad for n in shape), t)
    index = tuple(slice(1, 1 + n) for n in shape)
    return big[index], big


@pytest.fixture(scope="session")
def h() -> SimpleNamespace:
    """Helpers: rand, poison, scalar, close, strided_view, DTYPES."""
    return SimpleNamespace(rand=rand, poison=poison, scalar=scalar, close=close,
                           strided_view=strided_view, DTYPES=DTYPES)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from the test's name (reproducible, different per test)."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
