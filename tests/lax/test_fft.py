"""Tests of refimpl/lax/fft.py: the fft primitive against np.fft."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import lax
from refimpl.config import enable_x64
from conformance import strategies as S
from conformance.families.fft import lax_fft_inputs, numpy_lax_fft


@given(lax_fft_inputs())
def test_fft_matches_numpy(inputs):
  (x,), kwargs = inputs
  y = lax.fft(x, **kwargs)
  expected = numpy_lax_fft(x, **kwargs)
  real_out = kwargs["fft_type"] == lax.FftType.IRFFT
  assert y.dtype == (np.float32 if real_out else np.complex64)
  assert y.shape == expected.shape
  np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-5)


@given(st.integers(1, 3).flatmap(lambda rank: S.bounded_arrays(
    np.float32, S.shapes(min_dims=rank, max_dims=3, min_side=1, max_side=6)).map(
        lambda x: (x, tuple(x.shape[x.ndim - rank:])))))
def test_round_trips(inputs):
  x, lengths = inputs
  spectrum = lax.fft(x, lax.FftType.RFFT, lengths)
  np.testing.assert_allclose(lax.fft(spectrum, lax.FftType.IRFFT, lengths), x, atol=1e-5)
  z = lax.fft(x, "fft", lengths)
  np.testing.assert_allclose(lax.fft(z, "ifft", lengths), x, atol=1e-5)


def test_exact_values():
  x = np.array([1, 2, 3, 4], np.float32)
  np.testing.assert_allclose(lax.fft(x, "fft", (4,)), [10, -2 + 2j, -2, -2 - 2j])
  np.testing.assert_allclose(lax.fft(x, "rfft", (4,)), [10, -2 + 2j, -2])
  np.testing.assert_allclose(lax.fft(np.array([10, -2 + 2j, -2], np.complex64), "irfft", (4,)),
                             x)
  # irfft ignores the imaginary parts of the zero and n/2 frequencies
  np.testing.assert_allclose(lax.fft(np.array([10 + 5j, -2 + 2j, -2 + 7j], np.complex64),
                                     "irfft", (4,)), x)


def test_dtype_conversion():
  assert lax.fft(np.arange(4), "fft", (4,)).dtype == np.complex64
  assert lax.fft(np.arange(4), "rfft", (4,)).dtype == np.complex64
  assert lax.fft(np.ones(4, np.float32), "ifft", (4,)).dtype == np.complex64
  with enable_x64():
    assert lax.fft(np.ones(4), "fft", (4,)).dtype == np.complex128
    assert lax.fft(np.ones(4), "rfft", (4,)).dtype == np.complex128
    assert lax.fft(np.ones(3, np.complex128), "irfft", (4,)).dtype == np.float64
  x = np.ones((2, 3), np.float32)
  assert lax.fft(x, "fft", ()).dtype == np.complex64  # no transform, only the conversion


def test_zero_length_transforms():
  assert lax.fft(np.zeros((2, 0), np.complex64), "fft", (0,)).shape == (2, 0)
  np.testing.assert_array_equal(lax.fft(np.zeros((2, 0), np.float32), "rfft", (0,)),
                                np.zeros((2, 1)))


def test_errors():
  with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
    lax.fft(np.ones(4, np.complex64), "rfft", (4,))
  with pytest.raises(ValueError, match="Unknown FFT type"):
    lax.fft(np.ones(4, np.complex64), "dct", (4,))
  with pytest.raises(ValueError, match="minor dimensions must be equal"):
    lax.fft(np.ones(4, np.complex64), "fft", (5,))
  with pytest.raises(ValueError, match="at least as many input dimensions"):
    lax.fft(np.ones(4, np.complex64), "fft", (1, 4))
  with pytest.raises(ValueError, match="1 to 3"):
    lax.fft(np.ones((1, 1, 1, 4), np.complex64), "fft", (1, 1, 1, 4))
  with pytest.raises(ValueError, match="RFFT input must be float32 or float64"):
    lax.fft_p.bind(np.ones(4, np.float16), fft_type=lax.FftType.RFFT, fft_lengths=(4,))


def test_jaxpr_prints_the_enum():
  text = str(jax.make_jaxpr(lambda x: lax.fft(x, lax.FftType.FFT, (8,)))(
      np.ones(8, np.complex64)))
  assert "fft[fft_lengths=(8,) fft_type=FftType.FFT] a" in text
  assert str(lax.FftType.IRFFT) == "FftType.IRFFT" and lax.FftType.IRFFT == 3
