"""bitcast_convert between element types of different widths against numpy views
(little-endian)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import RNG, module, run
from tests.lowering.interpret_files import interpret_failures

_T = {np.uint8: "ui8", np.int8: "i8", np.uint16: "ui16", np.int16: "i16", np.float16: "f16",
      np.uint32: "ui32", np.int32: "i32", np.float32: "f32", np.uint64: "ui64",
      np.int64: "i64", np.float64: "f64", np.complex64: "complex<f32>",
      np.complex128: "complex<f64>", np.bool_: "i1"}


def _tensor(shape: tuple[int, ...], dtype: type) -> str:
    dims = "".join(f"{n}x" for n in shape)
    return f"tensor<{dims}{_T[dtype]}>"


def _program(src_shape: tuple[int, ...], src: type, dst_shape: tuple[int, ...],
             dst: type) -> str:
    ts, td = _tensor(src_shape, src), _tensor(dst_shape, dst)
    return module(f"(%x: {ts}) -> {td}", f"""
  %0 = stablehlo.bitcast_convert %x : ({ts}) -> {td}
  return %0 : {td}""")


# signalling NaNs of f16 (two), f32 and f64, each at an offset aligned to its width
_SIGNALLING = np.concatenate([np.array([0x7C01, 0xFD55], np.uint16).view(np.uint8),
                              np.array([0x7F800001], np.uint32).view(np.uint8),
                              np.array([0x7FF0000000000001], np.uint64).view(np.uint8)])


def _bits(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Random bit patterns, the first bytes set to signalling NaNs that must survive."""
    raw = RNG.integers(0, 256, size=(*shape, np.dtype(dtype).itemsize), dtype=np.uint8)
    flat = raw.reshape(-1)
    n = min(flat.size, _SIGNALLING.size)
    flat[:n] = _SIGNALLING[:n]
    return raw.view(dtype).reshape(shape)


PAIRS = [(np.uint64, np.uint8), (np.float64, np.int16), (np.int32, np.float16),
         (np.complex128, np.complex64), (np.float64, np.float32),
         (np.uint16, np.int8), (np.float32, np.uint16), (np.int64, np.int32)]


@pytest.mark.parametrize("wide,narrow", PAIRS)
def test_split_and_join(wide: type, narrow: type) -> None:
    ratio = np.dtype(wide).itemsize // np.dtype(narrow).itemsize
    x = _bits((2, 3), wide)
    got = run(_program((2, 3), wide, (2, 3, ratio), narrow), x)[0]
    np.testing.assert_array_equal(got.view(np.uint8).reshape(-1), x.view(np.uint8).reshape(-1))
    y = _bits((2, 3, ratio), narrow)
    back = run(_program((2, 3, ratio), narrow, (2, 3), wide), y)[0]
    np.testing.assert_array_equal(back.view(np.uint8).reshape(-1),
                                  y.view(np.uint8).reshape(-1))


def test_bits_of_i1() -> None:
    x = np.array([0x0123456789ABCDEF, 0xFEDCBA9876543210], np.uint64)
    got = run(_program((2,), np.uint64, (2, 64), np.bool_), x)[0]
    want = np.unpackbits(x.view(np.uint8), bitorder="little").reshape(2, 64).astype(bool)
    np.testing.assert_array_equal(got, want)
    back = run(_program((2, 64), np.bool_, (2,), np.uint64), want)[0]
    np.testing.assert_array_equal(back, x)


def test_interpret_bitcast_convert() -> None:
    assert interpret_failures("bitcast_convert") == {}
