"""Tests of refimpl/numpy/statistics.py against NumPy, plus JAX's own choices
(bincount's length=, clipping and dropping, dtypes, lowering, errors)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from refimpl.errors import ConcretizationTypeError
from conformance.strategies import FLOAT_DTYPES, arrays, dtype_and_array, shapes

FINITE = dict(allow_nan=False, allow_inf=False)


def _close(actual, expected, dtype=None, rtol=2e-5, atol=1e-5):
  """Same shape (and dtype, if given); values close, NaNs equal. Lists
  are compared element by element."""
  if isinstance(actual, (list, tuple)):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
      _close(a, e, dtype, rtol, atol)
    return
  expected = np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  if dtype is not None:
    assert actual.dtype == np.dtype(dtype), (actual.dtype, dtype)
  wide = np.complex128 if expected.dtype.kind == "c" or actual.dtype.kind == "c" else np.float64
  np.testing.assert_allclose(np.asarray(actual).astype(wide), expected.astype(wide),
                             rtol=rtol, atol=atol)


def _jaxpr(f, *args):
  return str(jax.make_jaxpr(f)(*args))


def small_floats(shape, dtype=np.float32):
  """Integer-valued floats in [-8, 8]: sums and differences are exact."""
  return hnp.arrays(dtype, shape, elements=st.integers(-8, 8).map(float))


# --- bincount ----------------------------------------------------------------------------------

@given(hnp.arrays(np.int32, shapes(1, 1), elements=st.integers(0, 9)), st.integers(0, 12),
       st.booleans(), st.data())
def test_bincount_matches_numpy(x, minlength, weighted, data):
  weights = data.draw(small_floats(x.shape)) if weighted else None
  expected = np.bincount(x, weights, minlength=minlength)
  _close(jnp.bincount(x, weights, minlength=minlength), expected,
         np.float32 if weighted else np.int32)
  f = jax.jit(lambda x, w: jnp.bincount(x, w, length=len(expected)))
  _close(f(x, weights), expected)


def test_bincount_clips_negatives_and_drops_beyond_length():
  x = jnp.array([-1, -1, 1, 3, 10])
  _close(jnp.bincount(x, length=5), [2, 1, 0, 1, 0], np.int32)
  _close(jnp.bincount(jnp.array([True, False, True])), [1, 2])
  _close(jnp.bincount(x, jnp.arange(5), length=2), [1, 2], np.int32)
  _close(jnp.bincount(jnp.array([], np.int32)), np.zeros(0))


def test_bincount_errors():
  with pytest.raises(TypeError, match="must have an integer type"):
    jnp.bincount(jnp.array([1.0]))
  with pytest.raises(ValueError, match="only 1-dimensional input supported"):
    jnp.bincount(jnp.ones((2, 2), int))
  with pytest.raises(ValueError, match="shape of weights must match shape of x"):
    jnp.bincount(jnp.array([1, 2]), jnp.ones(3))
  with pytest.raises(ConcretizationTypeError, match="pass a static `length` argument"):
    jax.jit(jnp.bincount)(jnp.array([1, 2]))
  assert "scatter-add" in _jaxpr(lambda x: jnp.bincount(x, length=3), np.ones(4, np.int32))


# --- histograms --------------------------------------------------------------------------------

@given(hnp.arrays(np.float32, shapes(1, 2, min_side=1),
                  elements=st.integers(-40, 40).map(lambda v: v / 4)),
       st.sampled_from([np.float32, np.float16, np.int32]), st.integers(1, 6), st.booleans(),
       st.booleans(), st.data())
def test_histogram_matches_numpy(x, dtype, bins, given_range, weighted, data):
  x = x.astype(dtype)
  hist_range = (-3.0, 5.0) if given_range else None
  weights = data.draw(small_floats(x.shape)) if weighted else None
  inexact = np.float16 if dtype == np.float16 else np.float32
  rtol, atol = (2e-3, 1e-2) if dtype == np.float16 else (1e-5, 1e-3)  # float16: a few ulps
  edges = jnp.histogram_bin_edges(x, bins, hist_range)
  _close(edges, np.histogram_bin_edges(x, bins, hist_range), inexact, rtol=rtol, atol=atol)
  # Counts agree with NumPy's for the same edges (rounding may move an edge by an ulp).
  counts, edges = jnp.histogram(x, bins, hist_range, weights)
  _close(edges, np.histogram_bin_edges(x, bins, hist_range), rtol=rtol, atol=atol)
  expected, _ = np.histogram(x, np.asarray(edges, np.float64), weights=weights)
  _close(counts, expected, np.float32 if weighted else inexact)
  density, edges = jnp.histogram(x, bins, hist_range, density=True)
  with np.errstate(invalid="ignore"):  # no value in range: 0 / 0
    expected, _ = np.histogram(x, np.asarray(edges, np.float64), density=True)
  _close(density, expected, rtol=10 * rtol)


@given(small_floats(st.tuples(st.integers(1, 6), st.integers(1, 3))), st.data())
def test_histogramdd_and_histogram2d_match_numpy(sample, data):
  n, d = sample.shape
  bins = data.draw(st.lists(st.integers(1, 4), min_size=d, max_size=d))
  ranges = [(-8.0, 8.0)] * d
  weights = data.draw(st.none() | small_floats((n,)))
  hist, edges = jnp.histogramdd(sample, bins, ranges, weights)
  expected, expected_edges = np.histogramdd(sample, bins, ranges, weights=weights)
  _close(hist, expected, np.float32 if weights is not None else np.int32)
  for e, ee in zip(edges, expected_edges):
    _close(e, ee, rtol=1e-6)
  density, _ = jnp.histogramdd(sample, bins, ranges, density=True)
  _close(density, np.histogramdd(sample, bins, ranges, density=True)[0], rtol=1e-4)
  if d == 2:
    h2, xe, ye = jnp.histogram2d(sample[:, 0], sample[:, 1], bins, ranges, weights)
    e2, exe, eye = np.histogram2d(sample[:, 0], sample[:, 1], bins, ranges, weights=weights)
    _close(h2, e2)
    _close(xe, exe)
    _close(ye, eye)


def test_histogram_examples_and_errors():
  a = jnp.array([1, 2, 3, 10, 11, 15, 19, 25])
  counts, edges = jnp.histogram(a, bins=8)
  _close(counts, [3, 0, 0, 2, 1, 0, 1, 1], np.float32)
  _close(edges, [1, 4, 7, 10, 13, 16, 19, 22, 25])
  _close(jnp.histogram(a, bins=jnp.array([0, 10, 20, 30]))[0], [3, 4, 1])
  _close(jnp.histogram_bin_edges(jnp.array([2.0, 2.0]), 2), [1.5, 2, 2.5])
  counts, x_edges, y_edges = jnp.histogram2d(a, a, bins=jnp.array([0, 10, 20, 30]))
  _close(counts, [[3, 0, 0], [0, 4, 0], [0, 0, 1]], np.int32)
  with pytest.raises(NotImplementedError, match="string values for `bins`"):
    jnp.histogram_bin_edges(a, bins="auto")
  with pytest.raises(TypeError, match="histogram requires ndarray or scalar arguments"):
    jnp.histogram(a, bins="auto")
  with pytest.raises(ValueError, match="`range` must be either None or a sequence"):
    jnp.histogram(a, range=(1, 2, 3))
  with pytest.raises(ValueError, match="weights should have the same shape as a"):
    jnp.histogram(a, weights=jnp.ones(3))
  with pytest.raises(ValueError, match="should be a bin for each dimension"):
    jnp.histogramdd(jnp.ones((4, 2)), bins=[2, 2, 2])
  with pytest.raises(ValueError, match="range must be a sequence of 2 pairs"):
    jnp.histogramdd(jnp.ones((4, 2)), range=[(0, 1)])
  with pytest.raises(ValueError, match="should have one weight for each sample"):
    jnp.histogramdd(jnp.ones((4, 2)), weights=jnp.ones(3))


# --- cov and corrcoef ----------------------------------------------------------------------------

@given(small_floats(shapes(1, 2, min_side=3)), st.booleans(), st.booleans(),
       st.sampled_from([None, 0, 1]), st.booleans(), st.data())
def test_cov_and_corrcoef_match_numpy(m, rowvar, bias, ddof, weighted, data):
  # At least 3 samples and ddof <= 1 keep the degrees of freedom positive (see
  # test_cov_examples_and_errors for the other case).
  n = m.shape[-1] if rowvar or m.ndim == 1 else m.shape[0]
  y = data.draw(st.none() | small_floats(m.shape))
  fweights = aweights = None
  if weighted:
    fweights = data.draw(hnp.arrays(np.int32, n, elements=st.integers(1, 3)))
    aweights = data.draw(hnp.arrays(np.float32, n, elements=st.sampled_from([0.5, 1., 2.])))
  with np.errstate(all="ignore"):
    expected = np.cov(m, y, rowvar, bias, ddof, fweights, aweights)
  _close(jnp.cov(m, y, rowvar, bias, ddof, fweights, aweights), expected, np.float32,
         rtol=1e-4, atol=1e-4)
  with np.errstate(all="ignore"):
    expected = np.corrcoef(m, y, rowvar)
  _close(jnp.corrcoef(m, y, rowvar), expected, rtol=1e-4, atol=1e-4)


def test_cov_examples_and_errors():
  _close(jnp.cov(jnp.array([[-1, 0, 1], [1, 0, -1]])), [[1, -1], [-1, 1]], np.float32)
  _close(jnp.cov(jnp.array([1.0, 2.0, 4.0])), np.cov([1.0, 2.0, 4.0]))
  _close(jnp.cov(jnp.zeros((0, 3))), np.zeros((0, 0)))
  # Non-positive degrees of freedom: JAX divides by them (NumPy uses 0 instead).
  _close(jnp.cov(jnp.array([1.0, 3.0]), ddof=3), -2.0)
  _close(jnp.corrcoef(jnp.array([1.0, 1.0, 1.0])), np.nan)
  _close(jnp.cov(jnp.array([[1.0, 2.0, 3.0]]), fweights=jnp.array([1, -2, 1])),
         np.cov([1.0, 2.0, 3.0], fweights=[1, 2, 1]))  # negative weights count as positive
  with pytest.raises(ValueError, match="m has more than 2 dimensions"):
    jnp.cov(jnp.ones((2, 2, 2)))
  with pytest.raises(RuntimeError, match="incompatible numbers of samples and fweights"):
    jnp.cov(jnp.ones((2, 3)), fweights=jnp.ones(2, int))
  with pytest.raises(TypeError, match="fweights must be integer"):
    jnp.cov(jnp.ones((2, 3)), fweights=jnp.ones(3))
  assert "dot_general" in _jaxpr(jnp.cov, np.ones((2, 3), np.float32))


# --- gradient, trapezoid, ediff1d, unwrap -----------------------------------------------------

@given(small_floats(shapes(1, 3, min_side=2)), st.data())
def test_gradient_matches_numpy(f, data):
  _close(jnp.gradient(f), np.gradient(f))
  axis = data.draw(st.integers(-f.ndim, f.ndim - 1))
  spacing = data.draw(st.sampled_from([0.5, 2.0]))
  _close(jnp.gradient(f, spacing, axis=axis), np.gradient(f, spacing, axis=axis))
  n = f.shape[axis]
  steps = data.draw(hnp.arrays(np.float32, n, elements=st.sampled_from([0.5, 1.0, 2.0])))
  coords = np.cumsum(steps).astype(np.float32)
  _close(jnp.gradient(f, coords, axis=axis), np.gradient(f, coords, axis=axis), rtol=1e-5)


def test_gradient_errors():
  assert jnp.gradient(jnp.arange(4.0), axis=()) == []
  with pytest.raises(ValueError, match="at least 2 elements are required"):
    jnp.gradient(jnp.ones(1))
  with pytest.raises(ValueError, match="Spacing arrays must have the same length"):
    jnp.gradient(jnp.ones(3), jnp.ones(2))
  with pytest.raises(NotImplementedError, match="'edge_order' argument"):
    jnp.gradient(jnp.ones(3), edge_order=2)
  with pytest.raises(TypeError, match="Invalid number of spacing arguments"):
    jnp.gradient(jnp.ones((3, 3)), 1.0, 2.0, 3.0)


@given(dtype_and_array(FLOAT_DTYPES[2:] + [np.int32], shape=shapes(1, 3), **FINITE),
       st.data())
def test_trapezoid_matches_numpy(dy, data):
  _, y = dy
  y = np.clip(y, -1e3, 1e3)
  axis = data.draw(st.integers(-y.ndim, y.ndim - 1))
  dx = data.draw(st.sampled_from([1.0, 0.5]))
  _close(jnp.trapezoid(y, dx=dx, axis=axis), np.trapezoid(y, dx=dx, axis=axis), rtol=1e-4,
         atol=1e-2)
  x = data.draw(small_floats(y.shape[axis]))
  _close(jnp.trapezoid(y, x, axis=axis), np.trapezoid(y, x, axis=axis), rtol=1e-4, atol=1e-2)
  x = data.draw(small_floats(y.shape))
  _close(jnp.trapezoid(y, x, axis=axis), np.trapezoid(y, x, axis=axis), rtol=1e-4, atol=1e-2)


@given(dtype_and_array([np.int32, np.float32, np.int8], shape=shapes(0, 3)), st.data())
def test_ediff1d_matches_numpy(dx, data):
  dtype, x = dx
  to_begin = data.draw(st.none() | arrays(dtype, shapes(0, 1)))
  to_end = data.draw(st.none() | arrays(dtype, shapes(0, 2)))
  with np.errstate(all="ignore"):
    expected = np.ediff1d(x, to_end, to_begin)
  _close(jnp.ediff1d(x, to_end, to_begin), expected, dtype)


@given(hnp.arrays(np.float32, shapes(1, 2), elements=st.floats(-20, 20, width=32)),
       st.data())
def test_unwrap_matches_numpy(p, data):
  axis = data.draw(st.integers(-p.ndim, p.ndim - 1))
  period = data.draw(st.sampled_from([2 * np.pi, 6.0, 360.0]))
  discont = data.draw(st.sampled_from([None, 4.0]))
  expected = np.unwrap(p, discont, axis, period=period)
  _close(jnp.unwrap(p, discont, axis, period=period), expected, np.float32, rtol=1e-5,
         atol=1e-4)


def test_unwrap_examples_and_errors():
  _close(jnp.unwrap(jnp.array([0, 3, -3, 0])), np.unwrap([0, 3, -3, 0]), np.float32)
  _close(jnp.unwrap(jnp.zeros((2, 0), int)), np.zeros((2, 0)), np.float32)
  with pytest.raises(ValueError, match="does not support complex inputs"):
    jnp.unwrap(jnp.ones(2, complex))


# --- interp ------------------------------------------------------------------------------------

@given(st.lists(st.integers(-8, 8), min_size=1, max_size=6, unique=True), st.data())
def test_interp_matches_numpy(xp, data):
  xp = np.sort(np.array(xp, np.float32))
  fp = data.draw(small_floats(len(xp)))
  x = data.draw(hnp.arrays(np.float32, shapes(0, 2), elements=st.floats(-10, 10, width=32)))
  left = data.draw(st.sampled_from([None, -100.0]))
  right = data.draw(st.sampled_from([None, 100.0]))
  _close(jnp.interp(x, xp, fp, left, right), np.interp(x, xp, fp, left, right), np.float32,
         rtol=1e-5, atol=1e-4)
  f = jax.jit(lambda x, xp, fp: jnp.interp(x, xp, fp, left, right))
  _close(f(x, xp, fp), np.interp(x, xp, fp, left, right), rtol=1e-5, atol=1e-4)
  unsorted = np.array(data.draw(st.permutations(list(xp))), np.float32)
  _close(jnp.interp(x, unsorted, fp, period=20.0), np.interp(x, unsorted, fp, period=20.0),
         rtol=1e-5, atol=1e-4)
  _close(jnp.interp(x, xp, fp.astype(np.complex64)), np.interp(x, xp, fp.astype(complex)),
         np.complex64, atol=1e-4)


def test_interp_extrapolates_and_errors():
  xp = jnp.arange(10.0)
  _close(jnp.interp(jnp.array([-10., 0.5, 10.]), xp, 2 * xp, left="extrapolate",
                    right="extrapolate"), [-20, 1, 20])
  _close(jnp.interp(jnp.array([1.0]), jnp.array([1.0, 1.0]), jnp.array([5.0, 7.0])), [5.0])
  with pytest.raises(ValueError, match="only valid string value of `left`"):
    jnp.interp(1.0, xp, xp, left="bad")
  with pytest.raises(ValueError, match="one-dimensional arrays of equal size"):
    jnp.interp(1.0, xp, xp[:3])
  with pytest.raises(ValueError, match="complex x values not supported"):
    jnp.interp(1j, xp, xp)
  with pytest.raises(ValueError, match="period must be a scalar"):
    jnp.interp(1.0, xp, xp, period=jnp.ones(2))


# --- allclose, array_equal, array_equiv ------------------------------------------------------

@given(dtype_and_array(FLOAT_DTYPES + [np.int32, np.bool_], shape=shapes(0, 2)), st.data(),
       st.booleans())
def test_comparisons_match_numpy(dx, data, equal_nan):
  dtype, x = dx
  y = x.copy()
  if x.size and data.draw(st.booleans()):
    y.flat[0] = data.draw(arrays(dtype, ()))
  other_shape = data.draw(st.sampled_from([x.shape, x.shape[1:], (1,) + x.shape, (7,)]))
  try:
    z = np.broadcast_to(y, other_shape)
  except ValueError:  # shapes that do not broadcast
    z = np.zeros(other_shape, dtype)
  wide = lambda a: a.astype(np.float64) if a.dtype == dtypes.bfloat16 else a
  assert bool(jnp.array_equal(x, y, equal_nan)) == np.array_equal(
      wide(x), wide(y), equal_nan=equal_nan and dtypes.is_inexact(dtype))
  assert bool(jnp.array_equiv(x, z)) == np.array_equiv(wide(x), wide(z))
  if dtype != np.bool_:
    result = jnp.allclose(x, y, equal_nan=equal_nan)
    assert result.dtype == np.bool_ and result.shape == ()
    assert bool(result) == np.allclose(wide(x), wide(y), equal_nan=equal_nan)


def test_comparison_examples():
  assert not jnp.array_equal(jnp.array([1, 2, 3]), jnp.array([1, 2]))
  assert jnp.array_equal(jnp.array([1, jnp.nan]), jnp.array([1, jnp.nan]), equal_nan=True)
  assert jnp.array_equiv(jnp.array([[1, 2], [1, 2]]), jnp.array([1, 2]))
  assert not jnp.array_equiv(jnp.array([1, 2, 3]), jnp.array([1, 2]))
  assert jnp.allclose(jnp.array([1e6, 2e6]), jnp.array([1.00001e6, 2.00002e6]), atol=1e3)
  with pytest.raises(TypeError, match="allclose requires ndarray or scalar arguments"):
    jnp.allclose([1.0], 1.0)
