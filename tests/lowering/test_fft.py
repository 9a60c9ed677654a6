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


# Stockham lines (powers of two with odd and even log2, radices 3 5 7: 1200, 1000, 49,
# 210, 15), halved real lines, lines in global scratch (f64 2048, Bluestein's 4096 for
# the prime 1031), length 1 and 2, the direct DFT (17, 33), Bluestein (prime 97, 134 =
# 2 * 67), 2-D and 3-D mixes of them
MORE = [([512], (4, 512)), ([1], (3, 1)), ([2], (5, 2)), ([16, 32], (2, 16, 32)),
        ([4, 8, 2], (2, 4, 8, 2)), ([12, 8], (3, 12, 8)), ([2048], (2, 2048)),
        ([1200], (2, 1200)), ([64], (2, 3, 64)), ([100], (3, 100)), ([97], (2, 97)),
        ([3, 80], (2, 3, 80)), ([1000], (2, 1000)), ([49], (3, 49)), ([210], (2, 210)),
        ([15], (4, 15)), ([17, 33], (2, 17, 33)), ([134], (3, 134)), ([1031], (1, 1031)),
        ([6, 134, 5], (6, 134, 5))]


@pytest.mark.parametrize("lengths,shape", MORE)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_fft_lengths(lengths: list[int], shape: tuple[int, ...], dtype: type) -> None:
    test_fft_and_ifft(lengths, shape, dtype)


@pytest.mark.parametrize("lengths,shape", MORE + [([10, 4], (3, 10, 4)), ([4, 9], (4, 9))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_real_lengths(lengths: list[int], shape: tuple[int, ...], dtype: type) -> None:
    test_rfft_and_irfft(lengths, shape, dtype)


def test_irfft_ignores_imaginary_edges() -> None:
    """The imaginary parts of X[0] and X[n/2] do not reach the real result (numpy's
    irfft drops them too)."""
    spectrum = _complex((3, 9), np.complex128)
    got = run(_program("IRFFT", [16], (3, 9), np.complex128, (3, 16), np.float64),
              spectrum)[0]
    np.testing.assert_allclose(got, np.fft.irfft(spectrum, 16), rtol=1e-12, atol=1e-13)


def test_fft_fuses_producer_and_consumer() -> None:
    """The operand's producer is computed in the first pass; a consumer reads the result."""
    x = RNG.standard_normal((8, 256)).astype(np.float32)
    t_in, t_out = _tensor((8, 256), np.float32), _tensor((8, 129), np.complex64)
    text = module(f"(%x: {t_in}) -> {t_out}", f"""
  %0 = stablehlo.multiply %x, %x : {t_in}
  %1 = stablehlo.fft %0, type = RFFT, length = [256] : ({t_in}) -> {t_out}
  %2 = stablehlo.add %1, %1 : {t_out}
  return %2 : {t_out}""")
    want = 2 * np.fft.rfft(x.astype(np.float64) ** 2)
    np.testing.assert_allclose(run(text, x)[0], want, rtol=1e-5,
                               atol=1e-5 * np.abs(want).max())
