"""Tests of refimpl/scipy/fft.py: dct, dctn, idct and idctn against scipy.fft (types
and norms JAX supports, padding and truncation by n and s, axes), round trips,
dtypes, JAX's errors, and jit, vmap and grad."""

import numpy as np
import pytest
import scipy.fft
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy import fft
from conformance import strategies as S

# (rtol, atol) against SciPy in float64 for each input dtype.
_TOL = {np.float32: (1e-4, 1e-4), np.float64: (1e-11, 1e-11)}
_NORMS = st.sampled_from([None, "backward", "ortho"])


def _arrays(dtype, max_dims=3):
  shapes = S.shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=5)
  return shapes.flatmap(lambda shape: S.arrays(dtype, shape, elements=st.floats(-10, 10)))


def _check(actual, expected, dtype):
  rtol, atol = _TOL[dtype]
  assert np.asarray(actual).dtype == dtype
  np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data(), norm=_NORMS)
def test_dct_and_idct_match_scipy_along_an_axis(dtype, data, norm):
  x = data.draw(_arrays(dtype))
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  n = data.draw(st.none() | st.integers(1, 7))
  expected_dct = scipy.fft.dct(x.astype(np.float64), n=n, axis=axis, norm=norm)
  expected_idct = scipy.fft.idct(x.astype(np.float64), n=n, axis=axis, norm=norm)
  with enable_x64(dtype == np.float64):
    _check(fft.dct(x, n=n, axis=axis, norm=norm), expected_dct, dtype)
    _check(fft.idct(x, n=n, axis=axis, norm=norm), expected_idct, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(data=st.data(), norm=_NORMS)
def test_dctn_and_idctn_match_scipy(dtype, data, norm):
  x = data.draw(_arrays(dtype))
  axes = data.draw(st.none() | st.permutations(range(x.ndim)).flatmap(
      lambda p: st.integers(1, x.ndim).map(lambda k: tuple(p[:k]))))
  count = x.ndim if axes is None else len(axes)
  s = data.draw(st.none() | st.lists(st.integers(1, 6), min_size=count, max_size=count))
  x64 = x.astype(np.float64)
  with enable_x64(dtype == np.float64):
    _check(fft.dctn(x, s=s, axes=axes, norm=norm),
           scipy.fft.dctn(x64, s=s, axes=axes, norm=norm), dtype)
    _check(fft.idctn(x, s=s, axes=axes, norm=norm),
           scipy.fft.idctn(x64, s=s, axes=axes, norm=norm), dtype)


@given(x=_arrays(np.float64, max_dims=2), norm=_NORMS)
def test_idct_inverts_dct(x, norm):
  with enable_x64():
    np.testing.assert_allclose(fft.idct(fft.dct(x, norm=norm), norm=norm), x, atol=1e-10)
    np.testing.assert_allclose(fft.idctn(fft.dctn(x, norm=norm), norm=norm), x, atol=1e-10)


def test_s_without_axes_transforms_the_last_axes():
  x = np.arange(12.0).reshape(3, 4)
  with enable_x64():
    np.testing.assert_allclose(fft.dctn(x, s=[2]), scipy.fft.dctn(x, s=[2], axes=[1]),
                               atol=1e-12)
    np.testing.assert_allclose(fft.dctn(x, s=3), scipy.fft.dct(x, n=3, axis=-1), atol=1e-12)


def test_complex_inputs_transform_real_and_imaginary_parts():
  x = np.array([1 + 2j, -3j, 0.5, 4 - 1j], np.complex64)
  for fn in (fft.dct, fft.idct, fft.dctn, fft.idctn):
    out = fn(x)
    assert out.dtype == np.complex64
    np.testing.assert_allclose(out, fn(x.real) + 1j * np.asarray(fn(x.imag)), rtol=1e-6)


def test_dtypes_integer_inputs_give_the_default_float():
  assert fft.dct(np.arange(4)).dtype == np.float32
  assert fft.idct(np.arange(4)).dtype == np.float32
  np.testing.assert_allclose(fft.dct(np.arange(4)), scipy.fft.dct(np.arange(4.0)), rtol=1e-6)


def test_unsupported_type_and_norm_raise():
  x = np.ones(4, np.float32)
  for fn in (fft.dct, fft.dctn, fft.idct, fft.idctn):
    with pytest.raises(NotImplementedError, match="Only DCT type 2"):
      fn(x, type=3)
    with pytest.raises(ValueError, match="norm='forward' is not implemented"):
      fn(x, norm="forward")
  with pytest.raises(ValueError, match="s must have at most x.ndim"):
    fft.dctn(x, s=(2, 2))
  with pytest.raises(TypeError):
    fft.dct([1.0, 2.0])


def test_jit_vmap_and_grad():
  x = np.random.default_rng(0).normal(size=(3, 6)).astype(np.float32)
  np.testing.assert_allclose(jax.jit(fft.dctn)(x), fft.dctn(x), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(fft.dct)(x), fft.dct(x), rtol=1e-6)
  # The DCT is linear: the gradient of sum(dct(x) * c) is dct's transpose applied to c,
  # which for the orthonormal DCT is its inverse.
  c = np.arange(6.0, dtype=np.float32)
  grad = jax.grad(lambda v: (fft.dct(v, norm="ortho") * c).sum())(x[0])
  np.testing.assert_allclose(grad, scipy.fft.idct(c, norm="ortho"), rtol=1e-5, atol=1e-5)
