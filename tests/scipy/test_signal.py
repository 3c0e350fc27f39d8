"""Tests of refimpl/scipy/signal.py against scipy.signal: the N-D and 2-D convolutions
and correlations in every mode (either input the larger), fftconvolve with axes,
detrend, stft, istft, csd and welch with their options; dtypes, JAX's errors and
restrictions, JAX's documented examples, and jit, vmap and grad."""

import warnings

import numpy as np
import pytest
import scipy.signal
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy import signal
from conformance import strategies as S

_MODES = st.sampled_from(["full", "same", "valid"])
_RTOL = {np.float32: 2e-4, np.float64: 1e-10}


def _pair(draw, ndim, real_only=False):
  """Two float arrays of rank `ndim`, one no larger than the other in every dimension."""
  small = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
  large = [s + draw(st.integers(0, 3)) for s in small]
  if draw(st.booleans()):
    small, large = large, small
  elements = st.floats(-4, 4)
  return (draw(S.arrays(np.float64, tuple(large), elements=elements)),
          draw(S.arrays(np.float64, tuple(small), elements=elements)))


def _close(actual, expected, dtype=np.float64, scale=1.0):
  np.testing.assert_allclose(np.asarray(actual), expected, rtol=_RTOL[dtype],
                             atol=_RTOL[dtype] * 10 * scale)


@given(data=st.data(), mode=_MODES, method=st.sampled_from(["auto", "direct", "fft"]))
def test_convolve_and_correlate_match_scipy(data, mode, method):
  a, b = _pair(data.draw, data.draw(st.integers(1, 3)))
  with enable_x64():
    _close(signal.convolve(a, b, mode, method=method), scipy.signal.convolve(a, b, mode))
    _close(signal.correlate(a, b, mode, method=method), scipy.signal.correlate(a, b, mode))


@given(data=st.data(), mode=_MODES)
def test_2d_convolve_and_correlate_match_scipy(data, mode):
  a, b = _pair(data.draw, 2)
  c = a + 1j * a[::-1]
  with enable_x64():
    _close(signal.convolve2d(a, b, mode), scipy.signal.convolve2d(a, b, mode))
    _close(signal.correlate2d(a, b, mode), scipy.signal.correlate2d(a, b, mode))
    _close(signal.correlate2d(c, b, mode), scipy.signal.correlate2d(c, b, mode))
    _close(signal.correlate2d(b, c, mode), scipy.signal.correlate2d(b, c, mode))


@given(data=st.data(), mode=_MODES)
def test_fftconvolve_over_axes_matches_scipy(data, mode):
  a = data.draw(S.arrays(np.float64, (2, data.draw(st.integers(1, 6))), elements=st.floats(-4, 4)))
  b = data.draw(S.arrays(np.float64, (2, data.draw(st.integers(1, a.shape[1]))),
                         elements=st.floats(-4, 4)))
  with enable_x64():
    _close(signal.fftconvolve(a, b, mode, axes=1), scipy.signal.fftconvolve(a, b, mode, axes=1))
    _close(signal.fftconvolve(a, b, mode, axes=[-1]), scipy.signal.fftconvolve(a, b, mode, axes=1))


def test_float32_and_complex_convolutions():
  rng = np.random.default_rng(0)
  a, b = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)
  out = signal.convolve(a, b)
  assert out.dtype == np.float32
  _close(out, scipy.signal.convolve(a.astype(np.float64), b), np.float32)
  c = (a + 1j * a[::-1]).astype(np.complex64)
  for method in ["direct", "fft"]:
    out = signal.correlate(c, b, method=method)
    assert out.dtype == np.complex64
    _close(out, scipy.signal.correlate(c.astype(np.complex128), b), np.float32)


def test_documented_examples():
  x, y = np.array([1, 2, 3, 2, 1]), np.array([1, 1, 1])
  for fn in (signal.convolve, signal.fftconvolve):
    out = fn(x, y, mode='full')
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [1., 3., 6., 7., 6., 3., 1.], atol=1e-6)
    np.testing.assert_allclose(fn(x, y, mode='same'), [3., 6., 7., 6., 3.], atol=1e-6)
    np.testing.assert_allclose(fn(x, y, mode='valid'), [6., 7., 6.], atol=1e-6)


def test_convolution_errors():
  a, b = np.ones((3, 2)), np.ones((2, 3))
  with pytest.raises(ValueError, match="smaller than the other in every dimension"):
    signal.convolve(a, b)
  with pytest.raises(ValueError, match="at least as large as the other"):
    signal.fftconvolve(a, b, mode="valid")
  with pytest.raises(ValueError, match="same number of dimensions"):
    signal.convolve(np.ones(3), a)
  with pytest.raises(ValueError, match="same dimensionality"):
    signal.fftconvolve(np.ones(3), a)
  with pytest.raises(ValueError, match="mode must be one of"):
    signal.convolve(a, a, mode="circular")
  with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
    signal.convolve(a, a, method="overlap-add")
  with pytest.raises(ValueError, match="zero-size arrays"):
    signal.convolve(np.ones(0), np.ones(2))
  with pytest.raises(NotImplementedError, match="boundary='fill', fillvalue=0"):
    signal.convolve2d(a, a, boundary="wrap")
  with pytest.raises(NotImplementedError, match="boundary='fill', fillvalue=0"):
    signal.correlate2d(a, a, fillvalue=1)
  with pytest.raises(ValueError, match="only supports 2-dimensional inputs"):
    signal.convolve2d(np.ones(3), np.ones(3))
  with pytest.raises(ValueError, match="mapped axes must have same shape"):
    signal.fftconvolve(np.ones((2, 3)), np.ones((3, 3)), axes=1)


@given(x=S.arrays(np.float64, (2, 12), elements=st.floats(-5, 5)),
       bp=st.integers(0, 12) | st.lists(st.integers(0, 12), min_size=1, max_size=2),
       axis=st.sampled_from([-1, 1]))
def test_detrend_matches_scipy(x, bp, axis):
  with enable_x64():
    _close(signal.detrend(x, axis=axis, bp=bp), scipy.signal.detrend(x, axis=axis, bp=bp),
           scale=10)
    _close(signal.detrend(x, axis=0, type="constant"),
           scipy.signal.detrend(x, axis=0, type="constant"))


def test_detrend_errors_and_dtype():
  assert signal.detrend(np.arange(6)).dtype == np.float32
  with pytest.raises(ValueError, match="Trend type must be"):
    signal.detrend(np.ones(4), type="quadratic")
  with pytest.raises(ValueError, match="Breakpoints must be non-negative"):
    signal.detrend(np.ones(4), bp=[6])
  with pytest.raises(NotImplementedError, match="overwrite_data"):
    signal.detrend(np.ones(4), overwrite_data=True)


_STFT_OPTIONS = st.fixed_dictionaries({}, optional={
    "noverlap": st.integers(0, 3), "nfft": st.integers(8, 10),
    "window": st.sampled_from(["hann", "hamming", ("tukey", 0.3)]),
    "return_onesided": st.booleans(), "boundary": st.sampled_from([None, "zeros", "even", "odd",
                                                                    "constant"]),
    "padded": st.booleans(), "detrend": st.sampled_from([False, "constant", "linear"])})


@given(x=S.arrays(np.float64, (2, 19), elements=st.floats(-5, 5)), nperseg=st.integers(4, 8),
       options=_STFT_OPTIONS, fs=st.sampled_from([1.0, 2.5]))
def test_stft_matches_scipy(x, nperseg, options, fs):
  with enable_x64():
    actual = signal.stft(x, fs, nperseg=nperseg, **options)
  expected = scipy.signal.stft(x, fs, nperseg=nperseg, **options)
  for a, e in zip(actual, expected):
    _close(a, e)


_PSD_OPTIONS = st.fixed_dictionaries({}, optional={
    "noverlap": st.integers(0, 3), "nfft": st.integers(8, 10),
    "window": st.sampled_from(["hann", "hamming"]), "return_onesided": st.booleans(),
    "detrend": st.sampled_from([False, "constant", "linear"]),
    "scaling": st.sampled_from(["density", "spectrum"]), "average": st.sampled_from(["mean",
                                                                                     "median"])})


@given(x=S.arrays(np.float64, (2, 24), elements=st.floats(-5, 5)),
       y=S.arrays(np.float64, (2, 21), elements=st.floats(-5, 5)), nperseg=st.integers(4, 8),
       options=_PSD_OPTIONS)
def test_welch_and_csd_match_scipy(x, y, nperseg, options):
  with enable_x64():
    welch, csd = signal.welch(x, nperseg=nperseg, **options), signal.csd(x, y, nperseg=nperseg,
                                                                          **options)
  for a, e in zip(welch, scipy.signal.welch(x, nperseg=nperseg, **options)):
    _close(a, e, scale=100)
  for a, e in zip(csd, scipy.signal.csd(x, y, nperseg=nperseg, **options)):
    _close(a, e, scale=100)


@given(x=S.arrays(np.float64, (2, 24), elements=st.floats(-5, 5)), nperseg=st.integers(4, 8),
       noverlap=st.integers(1, 3), window=st.sampled_from(["hann", "hamming"]))
def test_istft_matches_scipy_and_inverts_stft(x, nperseg, noverlap, window):
  # As in JAX, an odd nperseg needs nfft given: the inverse FFTs take nfft as passed.
  options = dict(nperseg=nperseg, noverlap=noverlap, window=window, nfft=nperseg)
  _, _, zxx = scipy.signal.stft(x, **options)
  with enable_x64():
    actual = signal.istft(zxx, **options)
  expected = scipy.signal.istft(zxx, **options)
  for a, e in zip(actual, expected):
    _close(a, e)
  np.testing.assert_allclose(np.asarray(actual[1])[:, :24], x, atol=1e-9)


def test_spectral_dtypes_and_warnings():
  x = np.sin(np.arange(32, dtype=np.float32))
  f, t, z = signal.stft(x, nperseg=8)
  assert (f.dtype, t.dtype, z.dtype) == (np.float32, np.float32, np.complex64)
  f, p = signal.welch(x.astype(np.int32), nperseg=8)
  assert (f.dtype, p.dtype) == (np.float32, np.float32)
  assert signal.csd(x, x, nperseg=8)[1].dtype == np.complex64
  with pytest.warns(UserWarning, match="nperseg=256 is greater than input_length=32"):
    assert signal.stft(x)[2].shape == (17, 3)
  with pytest.warns(UserWarning, match="switching to return_onesided=False"):
    assert signal.welch(x + 1j * x, nperseg=8)[0].shape == (8,)


def test_spectral_errors():
  x = np.ones(16)
  with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
    signal.welch(x, nperseg=4, noverlap=4)
  with pytest.raises(ValueError, match="nfft must be greater than or equal to nperseg"):
    signal.welch(x, nperseg=8, nfft=4)
  with pytest.raises(ValueError, match="Unknown boundary option"):
    signal.stft(x, nperseg=4, boundary="wrap")
  with pytest.raises(ValueError, match="Unknown scaling"):
    signal.welch(x, nperseg=4, scaling="power")
  with pytest.raises(ValueError, match='average must be "median" or "mean"'):
    signal.welch(x, nperseg=4, average="mode")
  with pytest.raises(ValueError, match="window is longer than input signal"):
    signal.welch(np.ones(3), window=np.ones(4))
  with pytest.raises(ValueError, match="Input stft must be at least 2d"):
    signal.istft(np.ones(4))
  with pytest.raises(ValueError, match="differing time and frequency axes"):
    signal.istft(np.ones((4, 4)), time_axis=0, freq_axis=0)


def test_jit_vmap_and_grad():
  rng = np.random.default_rng(1)
  a, b = rng.normal(size=(3, 6)).astype(np.float32), rng.normal(size=(3, 3)).astype(np.float32)
  conv = lambda u, v: signal.convolve(u, v, mode="same")
  np.testing.assert_allclose(jax.jit(conv)(a[0], b[0]), conv(a[0], b[0]), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(conv)(a, b), np.stack([conv(u, v) for u, v in zip(a, b)]),
                             rtol=1e-6)
  # The gradient of sum(convolve(a, b, 'full')) with respect to a is sum(b) everywhere.
  grad = jax.grad(lambda u: signal.convolve(u, b[0]).sum())(a[0])
  np.testing.assert_allclose(grad, np.full(6, b[0].sum()), rtol=1e-5)
  x = rng.normal(size=64).astype(np.float32)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    f, p = jax.jit(lambda v: signal.welch(v, nperseg=16))(x)
  np.testing.assert_allclose(p, signal.welch(x, nperseg=16)[1], rtol=1e-5)
