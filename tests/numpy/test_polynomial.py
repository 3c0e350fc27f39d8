"""Tests of refimpl/numpy/polynomial.py against NumPy, plus JAX's own choices
(inexact results, kept leading zeros, NaN roots for leading zeros, errors)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.errors import ConcretizationTypeError
from conformance.strategies import shapes


def _close(actual, expected, dtype=None, rtol=2e-5, atol=1e-5):
  """Same shape (and dtype, if given); values close, NaNs equal."""
  expected = np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  if dtype is not None:
    assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
  np.testing.assert_allclose(np.asarray(actual).astype(np.complex128),
                             expected.astype(np.complex128), rtol=rtol, atol=atol)


def coefficients(min_size=1, max_size=5, dtype=np.float32):
  """Small integer-valued coefficients: products and sums are exact."""
  return hnp.arrays(dtype, st.integers(min_size, max_size), elements=st.integers(-5, 5))


# --- vander and trim_zeros ---------------------------------------------------------------------

@given(hnp.arrays(st.sampled_from([np.int32, np.float32]), st.integers(0, 5),
                  elements=st.integers(-4, 4)), st.none() | st.integers(0, 5), st.booleans())
def test_vander_matches_numpy(x, n, increasing):
  expected = np.vander(x, n, increasing)
  _close(jnp.vander(x, n, increasing), expected, x.dtype)
  _close(jax.jit(jnp.vander, static_argnames=("N", "increasing"))(x, n, increasing),
         expected)


def test_vander_errors():
  with pytest.raises(ValueError, match="x must be a one-dimensional array"):
    jnp.vander(jnp.ones((2, 2)))
  with pytest.raises(ValueError, match="N must be nonnegative"):
    jnp.vander(jnp.ones(2), -1)


@given(hnp.arrays(np.int32, st.integers(0, 8), elements=st.sampled_from([0, 0, 1, -2])),
       st.sampled_from(["fb", "f", "b", "F", "B"]))
def test_trim_zeros_matches_numpy(filt, trim):
  _close(jnp.trim_zeros(filt, trim), np.trim_zeros(filt, trim), np.int32)


def test_trim_zeros_errors():
  with pytest.raises(ConcretizationTypeError, match="`filt` argument of trim_zeros"):
    jax.jit(jnp.trim_zeros)(jnp.array([0, 1, 0]))


# --- arithmetic ----------------------------------------------------------------------------------

@given(coefficients(dtype=np.int32), coefficients())
def test_polyadd_polysub_match_numpy(a1, a2):
  _close(jnp.polyadd(a1, a1[:2]), np.polyadd(a1, a1[:2]), np.int32)
  _close(jnp.polyadd(a1, a2), np.polyadd(a1, a2), np.float32)
  _close(jnp.polysub(a1, a2), np.polysub(a1, a2), np.float32)
  _close(jnp.polysub(a2, a1), np.polysub(a2, a1), np.float32)


def test_polyadd_examples():
  _close(jnp.polyadd(jnp.array([[2, 3, 1]]), jnp.array([[5, 7, 3], [8, 2, 6]])),
         [[5, 7, 3], [10, 5, 7]])
  _close(jnp.polysub(jnp.array([[5, 7, 9], [8, 6, 4]]), jnp.array([2])),
         [[5, 7, 9], [6, 4, 2]])


@given(coefficients(0, 5), coefficients(0, 5, np.int32))
def test_polymul_matches_numpy(a1, a2):
  # JAX keeps the leading zeros NumPy trims: the result is the full convolution.
  expected = np.convolve(a1 if a1.size else [0], a2 if a2.size else [0])
  _close(jnp.polymul(a1, a2), expected, np.float32)
  if a1.size and a2.size:
    _close(jnp.polymul(a1, a2, trim_leading_zeros=True), np.polymul(a1, a2))


@given(coefficients(1, 6), coefficients(1, 3))
def test_polydiv_matches_numpy(u, v):
  v[0] = v[0] if v[0] else 2  # a nonzero leading coefficient
  q, r = jnp.polydiv(u, v)
  expected_q, expected_r = np.polydiv(u.astype(np.float64), v.astype(np.float64))
  _close(q, expected_q, np.float32, rtol=1e-4, atol=1e-4)
  assert r.shape == u.shape  # JAX keeps the remainder's leading zeros
  _close(r[len(r) - len(expected_r):], expected_r, rtol=1e-4, atol=1e-4)
  _close(r[:len(r) - len(expected_r)], np.zeros(len(r) - len(expected_r)), atol=1e-4)


def test_polydiv_examples():
  q, r = jnp.polydiv(jnp.array([5, 7, 9]), jnp.array([4, 1]))
  _close(q, [1.25, 1.4375])
  _close(r, [0, 0, 7.5625])
  _close(jnp.polydiv(jnp.array([5, 7, 9]), jnp.array([4, 1]), trim_leading_zeros=True)[1],
         [7.5625])


# --- calculus and evaluation -----------------------------------------------------------------

@given(coefficients(1, 6, np.int32), st.integers(0, 3), st.data())
def test_polyder_polyint_match_numpy(p, m, data):
  _close(jnp.polyder(p, m), np.polyder(p, m), np.float32)
  k = data.draw(st.none() | st.just(3.0) | hnp.arrays(np.float32, m,
                                                       elements=st.integers(-3, 3)))
  expected = np.polyint(p, m, 0 if k is None else k)
  _close(jnp.polyint(p, m, k), expected, np.float32, rtol=1e-5)


def test_polyder_polyint_examples_and_errors():
  _close(jnp.polyder(jnp.array([2, -5, 3, -1]), 2), [12, -10], np.float32)
  _close(jnp.polyint(jnp.array([12, 12, 6]), m=2, k=jnp.array([4, 5])), [1, 2, 3, 4, 5])
  _close(jax.jit(jnp.polyint, static_argnames="m")(jnp.array([12., 12, 6]), m=1), [4, 6, 6, 0])
  with pytest.raises(ValueError, match="Order of derivative must be positive"):
    jnp.polyder(jnp.ones(3), -1)
  with pytest.raises(ValueError, match="Order of integral must be positive"):
    jnp.polyint(jnp.ones(3), -1)
  with pytest.raises(ValueError, match="k must be a scalar or a rank-1 array"):
    jnp.polyint(jnp.ones(3), 2, jnp.ones(3))


@given(coefficients(1, 5), hnp.arrays(np.float32, shapes(0, 2),
                                      elements=st.integers(-3, 3).map(float)))
def test_polyval_matches_numpy(p, x):
  expected = np.polyval(p.astype(np.float64), x)
  _close(jnp.polyval(p, x), expected, np.float32, rtol=1e-5)
  _close(jax.jit(jnp.polyval)(p, x), expected, rtol=1e-5)
  _close(jnp.polyval(p.astype(np.int32), 2), np.polyval(p, 2), np.float32)


def test_polyval_lowering_is_horner_in_a_scan():
  """As JAX: a scan over the coefficients (unroll=16) whose body is y * x + p."""
  jaxpr = jax.make_jaxpr(jnp.polyval)(np.ones(3, np.float32), np.ones(2, np.float32))
  inner = jaxpr.eqns[0].params["jaxpr"].jaxpr.eqns
  scan, = [e for e in inner if e.primitive.name == "scan"]
  assert scan.params["length"] == 3 and scan.params["unroll"] == 16
  assert [e.primitive.name for e in scan.params["jaxpr"].jaxpr.eqns] == ["mul", "add"]
  p, x = np.array([1., -2., 3.], np.float32), np.array([0.5, 2.], np.float32)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.polyval(p, x).sum())(x), 2 * x - 2)


# --- poly and roots ----------------------------------------------------------------------------

@given(hnp.arrays(st.sampled_from([np.int32, np.float32]), st.integers(0, 4),
                  elements=st.integers(-4, 4)))
def test_poly_matches_numpy(zeros):
  _close(jnp.poly(zeros), np.poly(zeros), np.float32)


def test_poly_examples():
  _close(jnp.poly(1), [1, -1], np.float32)
  _close(jnp.poly(jnp.array([2, 1 + 2j, 1 - 2j])), [1, -4, 9, -10], np.complex64)
  matrix = jnp.array([[2, 1, 5], [3, 4, 7], [1, 3, 5]])
  _close(jnp.poly(matrix), [1, -11, 9, -15], np.complex64, rtol=1e-5, atol=1e-4)
  with pytest.raises(ValueError, match="input must be 1d or non-empty square 2d array"):
    jnp.poly(jnp.ones((2, 3)))


@given(st.lists(st.integers(-4, 4), min_size=0, max_size=4, unique=True),
       st.integers(0, 2), st.sampled_from([1.0, -2.0]))
def test_roots_match_numpy(true_roots, leading_zeros, scale):
  p = np.concatenate([np.zeros(leading_zeros), scale * np.atleast_1d(np.poly(true_roots))]).astype(
      np.float32)
  found = jnp.roots(p)
  assert found.dtype == np.complex64
  _close(np.sort_complex(np.asarray(found)), np.sort_complex(np.roots(p).astype(complex)),
         atol=1e-3, rtol=1e-3)
  if len(p) > 1:  # under jit: the same roots, then NaN for each leading zero
    padded = np.asarray(jax.jit(lambda p: jnp.roots(p, strip_zeros=False))(p))
    assert padded.shape == (len(p) - 1,)
    assert np.isnan(padded[len(padded) - leading_zeros:]).all()
    _close(np.sort_complex(padded[:len(padded) - leading_zeros]),
           np.sort_complex(np.roots(p).astype(complex)), atol=1e-3, rtol=1e-3)


def test_roots_examples_and_errors():
  _close(jnp.roots(jnp.array([0, 1, 2])), [-2])
  _close(jnp.roots(jnp.array([0, 1, 2]), strip_zeros=False), [-2, complex(np.nan, np.nan)])
  _close(jnp.roots(jnp.array([3.0])), np.zeros(0), np.complex64)
  with pytest.raises(ValueError, match="Input must be a rank-1 array"):
    jnp.roots(jnp.ones((2, 2)))
  with pytest.raises(ConcretizationTypeError, match="pass strip_zeros=False"):
    jax.jit(jnp.roots)(jnp.array([0.0, 1.0, 2.0]))


# --- polyfit ----------------------------------------------------------------------------------

@given(st.lists(st.integers(-6, 6), min_size=2, max_size=6, unique=True),
       st.integers(0, 3), st.booleans(), st.data())
def test_polyfit_matches_numpy(xs, deg, two_columns, data):
  x = np.array(xs, np.float32)
  y_shape = (len(x), 2) if two_columns else (len(x),)
  y = data.draw(hnp.arrays(np.float32, y_shape, elements=st.integers(-5, 5).map(float)))
  w = data.draw(st.none() | hnp.arrays(np.float32, len(x), elements=st.sampled_from([1., 2.])))
  deg = min(deg, len(x) - 1)  # a well-posed fit
  expected = np.polyfit(x.astype(np.float64), y, deg, w=w)
  _close(jnp.polyfit(x, y, deg, w=w), expected, np.float32, rtol=1e-3, atol=1e-3)
  c, resids, rank, s, rcond = jnp.polyfit(x, y, deg, full=True)
  e_c, e_resids, e_rank, e_s, e_rcond = np.polyfit(x.astype(np.float64), y, deg, full=True)
  _close(c, e_c, rtol=1e-3, atol=1e-3)
  assert int(rank) == e_rank
  _close(s, e_s, rtol=1e-3, atol=1e-4)
  if len(x) > deg + 1:
    _close(resids, e_resids, rtol=1e-3, atol=1e-3)
  if len(x) > deg + 1 and not two_columns:  # (JAX scales every column's cov by column 0's)
    c, cov = jnp.polyfit(x, y, deg, cov=True)
    _, e_cov = np.polyfit(x.astype(np.float64), y, deg, cov=True)
    _close(cov, e_cov, rtol=1e-2, atol=1e-3)


def test_polyfit_errors():
  x = jnp.arange(4.0)
  with pytest.raises(ValueError, match="expected deg >= 0"):
    jnp.polyfit(x, x, -1)
  with pytest.raises(TypeError, match="expected 1D vector for x"):
    jnp.polyfit(jnp.ones((2, 2)), x, 1)
  with pytest.raises(TypeError, match="expected x and y to have same length"):
    jnp.polyfit(x, x[:3], 1)
  with pytest.raises(ValueError, match="number of data points must exceed order"):
    jnp.polyfit(x, x, 3, cov=True)
