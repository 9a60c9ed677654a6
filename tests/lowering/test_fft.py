"""stablehlo.fft (FFT, IFFT, RFFT, IRFFT over 1-3 dimensions) against numpy.fft."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import RNG, module, run
from tests.lowering.interpret_files import interpret_failures

_T = {np.float32: "f32", np.float64: "f64", np.complex64: "complex<f32>",
      np.complex128: "complex<f64>"}


def _tensor(shape: tuple[int, ...], dtype: type) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{_T[dtype]}>"


def _program(kind: str, lengths: list[int], in_shape: tuple[int, ...], in_t: type,
             out_shape: tuple[int, ...], out_t: type) -> str:
    ti, to = _tensor(in_shape, in_t), _tensor(out_shape, out_t)
    return module(f"(%x: {ti}) -> {to}", f"""
  %0 = stablehlo.fft %x, type = {kind}, length = {lengths} : ({ti}) -> {to}
  return %0 : {to}""")


def _complex(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


CASES = [([8], (3, 8)), ([5, 6], (2, 5, 6)), ([3, 4, 5], (3, 4, 5)), ([7], (7,))]


@pytest.mark.parametrize("lengths,shape", CASES)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_fft_and_ifft(lengths: list[int], shape: tuple[int, ...], dtype: type) -> None:
    x = _complex(shape, dtype)
    axes = tuple(range(-len(lengths), 0))
    tol = 1e-5 if dtype is np.complex64 else 1e-12
    for kind, ref in (("FFT", np.fft.fftn), ("IFFT", np.fft.ifftn)):
        got = run(_program(kind, lengths, shape, dtype, shape, dtype), x)[0]
        want = ref(x.astype(np.complex128), axes=axes)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("lengths,shape", CASES + [([6], (2, 6))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rfft_and_irfft(lengths: list[int], shape: tuple[int, ...], dtype: type) -> None:
    cdtype = np.complex64 if dtype is np.float32 else np.complex128
    axes = tuple(range(-len(lengths), 0))
    tol = 1e-5 if dtype is np.float32 else 1e-12
    x = RNG.standard_normal(shape).astype(dtype)
    half = (*shape[:-1], shape[-1] // 2 + 1)
    got = run(_program("RFFT", lengths, shape, dtype, half, cdtype), x)[0]
    want = np.fft.rfftn(x.astype(np.float64), axes=axes)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    spectrum = _complex(half, cdtype)
    got = run(_program("IRFFT", lengths, half, cdtype, shape, dtype), spectrum)[0]
    want = np.fft.irfftn(spectrum.astype(np.complex128), s=lengths, axes=axes)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_fft_of_empty_batch() -> None:
    x = np.zeros((0, 4), np.complex64)
    got = run(_program("FFT", [4], (0, 4), np.complex64, (0, 4), np.complex64), x)[0]
    assert got.shape == (0, 4)


def test_interpret_fft() -> None:
    assert interpret_failures("fft") == {}
