"""Tests of the sample statistics and estimator of refimpl/scipy/stats (mode, rankdata,
sem, gaussian_kde) and of poisson.entropy against scipy.stats: axes, keepdims, tie
methods, nan policies, bandwidths and weights, dtypes, JAX's errors and documented
values, and jit, vmap and grad."""

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy import stats
from conformance import strategies as S


def _small_integers(draw):
  shape = draw(S.shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
  return draw(S.arrays(np.int32, shape, elements=st.integers(0, 3)))


def _axis(draw, ndim):
  return draw(st.none() | st.integers(-ndim, ndim - 1))


@given(data=st.data(), keepdims=st.booleans(), as_float=st.booleans())
def test_mode_matches_scipy(data, keepdims, as_float):
  x = _small_integers(data.draw)
  x = x.astype(np.float32) if as_float else x
  axis = _axis(data.draw, x.ndim)
  actual = stats.mode(x, axis=axis, keepdims=keepdims)
  expected = scipy.stats.mode(x, axis=axis, keepdims=keepdims)
  assert actual.mode.dtype == x.dtype and actual.count.dtype == np.int32
  np.testing.assert_array_equal(actual.mode, expected.mode)
  np.testing.assert_array_equal(actual.count, expected.count)


@given(data=st.data(), method=st.sampled_from(["average", "min", "max", "dense", "ordinal"]))
def test_rankdata_matches_scipy(data, method):
  x = _small_integers(data.draw)
  axis = _axis(data.draw, x.ndim)
  actual = stats.rankdata(x, method, axis=axis)
  assert actual.dtype == np.float32
  np.testing.assert_array_equal(actual, scipy.stats.rankdata(x, method, axis=axis))


@given(data=st.data(), ddof=st.integers(0, 1), keepdims=st.booleans(),
       nan_policy=st.sampled_from(["propagate", "omit"]))
def test_sem_matches_scipy(data, ddof, keepdims, nan_policy):
  shape = data.draw(S.shapes(min_dims=1, max_dims=3, min_side=3, max_side=4))
  x = data.draw(S.arrays(np.float64, shape, elements=st.floats(-10, 10)))
  if nan_policy == "omit":
    x.ravel()[0] = np.nan
  axis = _axis(data.draw, x.ndim)
  with enable_x64():
    actual = stats.sem(x, axis=axis, ddof=ddof, nan_policy=nan_policy, keepdims=keepdims)
  expected = scipy.stats.sem(x, axis=axis, ddof=ddof, nan_policy=nan_policy, keepdims=keepdims)
  np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def test_statistics_edge_cases_and_errors():
  empty = stats.mode(np.zeros((0, 2)))
  assert np.isnan(empty.mode).all() and empty.mode.dtype == np.float32
  np.testing.assert_array_equal(empty.count, [0., 0.])
  np.testing.assert_array_equal(stats.mode(np.array([2, 1, 1, 2])).mode, 1)  # smallest on ties
  assert np.isnan(stats.rankdata(np.array([1.0, np.nan, 0.0]))).all()
  assert stats.sem(np.arange(4)).dtype == np.float32
  for fn in (stats.mode, stats.rankdata):
    with pytest.raises(ValueError, match="Illegal nan_policy value 'skip'"):
      fn(np.ones(3), nan_policy="skip")
    with pytest.raises(NotImplementedError, match="Logic for `nan_policy` of omit"):
      fn(np.ones(3), nan_policy="omit")
    with pytest.raises(NotImplementedError, match="In order to best JIT compile"):
      fn(np.ones(3), nan_policy="raise")
  with pytest.raises(ValueError, match="unknown method 'first'"):
    stats.rankdata(np.ones(3), "first")
  with pytest.raises(ValueError, match="raise is not supported"):
    stats.sem(np.ones(3), nan_policy="raise")


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("bw_method", [None, "scott", "silverman", 0.5])
@pytest.mark.parametrize("weighted", [False, True])
def test_gaussian_kde_matches_scipy(d, bw_method, weighted):
  rng = np.random.default_rng(d)
  dataset = rng.normal(size=(d, 8))
  weights = rng.uniform(0.1, 1, size=8) if weighted else None
  points = rng.normal(scale=2, size=(d, 3))
  reference = scipy.stats.gaussian_kde(dataset, bw_method, weights)
  with enable_x64():
    kde = stats.gaussian_kde(dataset, bw_method, weights)
    close = lambda a, e: np.testing.assert_allclose(a, e, rtol=1e-8, atol=1e-12)
    close(kde.neff, reference.neff)
    close(kde.covariance, reference.covariance)
    close(kde(points), reference(points))
    close(kde.logpdf(points), reference.logpdf(points))
    close(kde.integrate_gaussian(np.zeros(d), np.eye(d)),
          reference.integrate_gaussian(np.zeros(d), np.eye(d)))
    other = dataset[:, :4]
    close(kde.integrate_kde(stats.gaussian_kde(other)),
          reference.integrate_kde(scipy.stats.gaussian_kde(other)))
    if d == 1:
      close(kde.integrate_box_1d(-1.0, 2.0), reference.integrate_box_1d(-1.0, 2.0))


def test_gaussian_kde_callable_bandwidth_resample_and_errors():
  dataset = np.array([0.0, 1.0, 3.0, 4.5], np.float32)
  kde = stats.gaussian_kde(dataset, bw_method=lambda k: 1 / k.n)
  assert kde.d == 1 and kde.n == 4 and kde(1.0).dtype == np.float32
  np.testing.assert_allclose(kde.covariance, np.cov(dataset) / 16, rtol=1e-6)
  samples = kde.resample(jax.random.key(0), (1000,))
  assert samples.shape == (1, 1000)
  np.testing.assert_allclose(np.mean(samples), dataset.mean(), atol=0.2)
  with pytest.raises(NotImplementedError, match="does not support complex data"):
    stats.gaussian_kde(np.ones(3, np.complex64))
  with pytest.raises(ValueError, match="should have multiple elements"):
    stats.gaussian_kde(np.ones(1))
  with pytest.raises(ValueError, match="`weights` input should be of length n"):
    stats.gaussian_kde(dataset, weights=np.ones(3))
  with pytest.raises(ValueError, match="`bw_method` should be"):
    stats.gaussian_kde(dataset, bw_method="tophat")
  with pytest.raises(ValueError, match="points have dimension 2"):
    kde(np.ones((2, 2)))
  with pytest.raises(NotImplementedError, match="use `integrate_box_1d`"):
    kde.integrate_box([0.0], [1.0])
  with pytest.raises(NotImplementedError, match="dynamically changing the bandwidth"):
    kde.set_bandwidth("scott")


def test_gaussian_kde_is_a_pytree_under_jit_and_grad():
  kde = stats.gaussian_kde(np.array([0.0, 1.0, 3.0, 4.5], np.float32))
  points = np.array([0.5, 2.0], np.float32)
  np.testing.assert_allclose(jax.jit(lambda k, p: k(p))(kde, points), kde(points), rtol=1e-6)
  # d/dx log p(x) by central differences.
  grad = jax.grad(lambda x: kde.logpdf(x)[0])(np.float32(2.0))
  h = 1e-2
  fd = (kde.logpdf(2.0 + h)[0] - kde.logpdf(2.0 - h)[0]) / (2 * h)
  np.testing.assert_allclose(grad, fd, rtol=1e-3)


@given(mu=S.arrays(np.float64, (6,), elements=st.floats(0, 300)))
def test_poisson_entropy_matches_scipy(mu):
  with enable_x64():
    actual = stats.poisson.entropy(mu)
  # JAX truncates its sums at mu + 20 (mu < 10) and mu + 10 sqrt(mu) + 20, and uses the
  # two-term asymptotic series from 100 on: agreement to about 1e-6 relative.
  np.testing.assert_allclose(actual, scipy.stats.poisson.entropy(mu), rtol=2e-6, atol=1e-12)


def test_poisson_entropy_documented_values_dtypes_and_shapes():
  np.testing.assert_allclose(stats.poisson.entropy(5.0), 2.204394, rtol=1e-6)
  out = stats.poisson.entropy(np.array([1, 10, 100]))
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, [1.3048419, 2.561407, 3.7206903], rtol=2e-6)
  assert stats.poisson.entropy(0.0) == 0.0
  assert np.isnan(stats.poisson.entropy(-1.0))
  assert stats.poisson.entropy(np.ones((2, 1)), np.zeros(3)).shape == (2, 3)
  mu = np.array([0.5, 3.0, 40.0], np.float32)
  np.testing.assert_allclose(jax.vmap(stats.poisson.entropy)(mu), stats.poisson.entropy(mu),
                             rtol=1e-6)
