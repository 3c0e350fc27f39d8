"""Tests of refimpl/numpy/fft.py against numpy.fft."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.config import enable_x64
from conformance.families.fft import REAL, fft_1d_inputs, fft_nd_inputs

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]
HALVED = {"irfft", "hfft", "irfftn", "irfft2"}  # inputs holding half a spectrum
REAL_ONLY = {"rfft", "ihfft", "rfftn", "rfft2"}  # JAX rejects complex input


def wide(x):
  x = np.asarray(x)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def check(name, x, kwargs):
  actual = getattr(jnp.fft, name)(x, **kwargs)
  expected = getattr(np.fft, name)(wide(x), **kwargs)
  assert actual.shape == expected.shape
  assert actual.dtype == (np.complex64 if expected.dtype.kind == "c" else np.float32)
  np.testing.assert_allclose(wide(actual), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ONE_D)
@settings(max_examples=15)  # tests/test_conformance.py runs these against NumPy too
@given(data=st.data())
def test_one_dimensional_transforms(name, data):
  (x,), kwargs = data.draw(fft_1d_inputs(REAL if name in REAL_ONLY else [np.float32,
                                                                          np.complex64],
                                         halved=name in HALVED))
  check(name, x, kwargs)


@pytest.mark.parametrize("name", N_D)
@settings(max_examples=15)
@given(data=st.data())
def test_multidimensional_transforms(name, data):
  (x,), kwargs = data.draw(fft_nd_inputs(REAL if name in REAL_ONLY else [np.float32,
                                                                         np.complex64],
                                         two_axes=name.endswith("2"), halved=name in HALVED))
  check(name, x, kwargs)


@given(fft_nd_inputs(REAL))
def test_round_trips(inputs):
  (x,), kwargs = inputs
  axes = tuple(range(x.ndim)) if kwargs["axes"] is None else kwargs["axes"]
  norm = kwargs["norm"]
  np.testing.assert_allclose(jnp.fft.ifftn(jnp.fft.fftn(x, axes=axes, norm=norm), axes=axes,
                                           norm=norm), x, atol=1e-5)
  spectrum = jnp.fft.rfftn(x, axes=axes, norm=norm)
  assert spectrum.shape[axes[-1]] == x.shape[axes[-1]] // 2 + 1
  s = [x.shape[a] for a in axes]
  np.testing.assert_allclose(jnp.fft.irfftn(spectrum, s=s, axes=axes, norm=norm), x, atol=1e-5)


def test_more_than_three_axes_are_split():
  x = np.random.default_rng(0).normal(size=(2, 3, 2, 2, 3)).astype(np.float32)
  np.testing.assert_allclose(jnp.fft.fftn(x), np.fft.fftn(x), rtol=1e-5, atol=1e-5)
  spectrum = np.fft.rfftn(x)
  np.testing.assert_allclose(jnp.fft.irfftn(spectrum), np.fft.irfftn(spectrum), atol=1e-5)
  text = str(jax.make_jaxpr(jnp.fft.fftn)(x))
  assert text.count("= fft[") == 2 and "fft_lengths=(2, 3)" in text


def test_jaxpr_of_fft():
  text = str(jax.make_jaxpr(jnp.fft.fft)(np.ones(8, np.float32)))
  assert "convert_element_type[new_dtype=complex64" in text
  assert "fft[fft_lengths=(8,) fft_type=FftType.FFT]" in text
  text = str(jax.make_jaxpr(lambda x: jnp.fft.irfft(x, n=6, axis=0))(np.ones((3, 2),
                                                                           np.complex64)))
  assert "transpose[permutation=(1, 0)]" in text and "fft_type=FftType.IRFFT" in text


def test_frequencies_and_shifts():
  np.testing.assert_allclose(jnp.fft.fftfreq(5), np.fft.fftfreq(5))
  np.testing.assert_allclose(jnp.fft.fftfreq(6, d=0.5), np.fft.fftfreq(6, d=0.5))
  np.testing.assert_allclose(jnp.fft.rfftfreq(7, d=2.), np.fft.rfftfreq(7, d=2.))
  assert jnp.fft.fftfreq(4).dtype == np.float32
  assert jnp.fft.fftfreq(4, dtype=np.float16).dtype == np.float16
  x = np.arange(12).reshape(3, 4)
  np.testing.assert_array_equal(jnp.fft.fftshift(x), np.fft.fftshift(x))
  np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes=1), np.fft.ifftshift(x, axes=1))
  np.testing.assert_array_equal(jnp.fft.fftshift(x, axes=(0,)), np.fft.fftshift(x, axes=(0,)))
  with pytest.raises(ValueError, match="only takes an int"):
    jnp.fft.fftfreq([4])
  with pytest.raises(ValueError, match="only takes a single value"):
    jnp.fft.rfftfreq(4, d=[1.0])


def test_dtypes():
  assert jnp.fft.fft(np.arange(4)).dtype == np.complex64
  assert jnp.fft.irfft(np.ones(3, np.complex64)).dtype == np.float32
  assert jnp.fft.hfft(np.ones(3, np.float32)).dtype == np.float32
  with enable_x64():
    assert jnp.fft.fft(np.ones(4)).dtype == np.complex128
    np.testing.assert_allclose(jnp.fft.rfft(np.arange(5.)), np.fft.rfft(np.arange(5.)),
                               rtol=1e-13)


def test_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError, match="does not support multiple axes"):
    jnp.fft.fft(x, axis=(0, 1))
  with pytest.raises(ValueError, match="only supports 2 axes"):
    jnp.fft.fft2(x, axes=(0,))
  with pytest.raises(ValueError, match="repeated axes"):
    jnp.fft.fftn(x, axes=(0, 0))
  with pytest.raises(ValueError, match="Shape and axes have different lengths"):
    jnp.fft.fftn(x, s=(2,), axes=(0, 1))
  for bad in [dict(s=(-1,)), dict(s=(0,))]:
    with pytest.raises(ValueError, match="Shape should be positive"):
      jnp.fft.fftn(x, **bad)
  with pytest.raises(ValueError, match="Shape should be positive"):
    jnp.fft.rfft(x, n=0)
  with pytest.raises(ValueError, match="Invalid norm value"):
    jnp.fft.fft(x, norm="unitary")
  with pytest.raises(ValueError, match="only real valued inputs"):
    jnp.fft.rfft(x.astype(np.complex64))
  with pytest.raises(TypeError):
    jnp.fft.fft([1.0, 2.0])
