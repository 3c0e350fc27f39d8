"""`gaussian_kde` of `refimpl.scipy.stats`: Gaussian kernel density estimation, as JAX's.

The estimator is a frozen pytree (neff, dataset, weights, covariance and its
inverse are its leaves), so it passes through jit and vmap. Densities are
computed in whitened coordinates (the data times the Cholesky factor of the
inverse covariance). As in JAX, complex data, `integrate_box` (other than
`integrate_box_1d`) and `set_bandwidth` are not supported.
"""

import dataclasses
import functools
from typing import Any

import numpy as np

from refimpl import dtypes, lax, random
from refimpl.api import jit
from refimpl.numpy import (
    atleast_1d, atleast_2d, cov, diag, dot, exp, full, isscalar, log, power, prod, reshape, sqrt,
    square, squeeze, zeros)
from refimpl.numpy import linalg as numpy_linalg
from refimpl.numpy.util import check_arraylike, promote_dtypes_inexact
from refimpl.scipy import linalg
from refimpl.scipy.special import logsumexp, ndtr
from refimpl.tree_util import register_pytree_node_class
from refimpl.vectorize import vmap

__all__ = ["gaussian_kde"]


@register_pytree_node_class
@dataclasses.dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:
  """A Gaussian kernel density estimate of `dataset` (d variables by n points, or n
  points of one variable) with optional point `weights`. The kernel covariance is the
  weighted data covariance times factor**2, the factor being Scott's
  neff**(-1 / (d + 4)) (default), Silverman's (neff (d + 2) / 4)**(-1 / (d + 4)), a
  scalar `bw_method`, or bw_method(self); neff = 1 / sum(weights**2)."""

  neff: Any
  dataset: Any
  weights: Any
  covariance: Any
  inv_cov: Any

  def __init__(self, dataset, bw_method=None, weights=None):
    check_arraylike("gaussian_kde", dataset)
    dataset = atleast_2d(dataset)
    if dtypes.issubdtype(lax.dtype(dataset), np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if not dataset.size > 1:
      raise ValueError("`dataset` input should have multiple elements.")
    d, n = dataset.shape
    if weights is not None:
      check_arraylike("gaussian_kde", weights)
      dataset, weights = promote_dtypes_inexact(dataset, weights)
      weights = atleast_1d(weights)
      weights = weights / weights.sum()
      if weights.ndim != 1:
        raise ValueError("`weights` input should be one-dimensional.")
      if len(weights) != n:
        raise ValueError("`weights` input should be of length n")
    else:
      dataset, = promote_dtypes_inexact(dataset)
      weights = full(n, 1.0 / n, dtype=dataset.dtype)
    self._setattr("dataset", dataset)
    self._setattr("weights", weights)
    neff = self._setattr("neff", 1 / (weights ** 2).sum())

    bw_method = "scott" if bw_method is None else bw_method
    if isinstance(bw_method, str) and bw_method == "scott":
      factor = power(neff, -1. / (d + 4))
    elif isinstance(bw_method, str) and bw_method == "silverman":
      factor = power(neff * (d + 2) / 4.0, -1. / (d + 4))
    elif isscalar(bw_method) and not isinstance(bw_method, str):
      factor = bw_method
    elif callable(bw_method):
      factor = bw_method(self)
    else:
      raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")

    data_covariance = atleast_2d(cov(dataset, rowvar=1, bias=False, aweights=weights))
    self._setattr("covariance", data_covariance * factor ** 2)
    self._setattr("inv_cov", numpy_linalg.inv(data_covariance) / factor ** 2)

  def _setattr(self, name, value):
    object.__setattr__(self, name, value)
    return value

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    del aux_data
    kde = cls.__new__(cls)
    for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"), children):
      kde._setattr(name, value)
    return kde

  @property
  def d(self):
    return self.dataset.shape[0]

  @property
  def n(self):
    return self.dataset.shape[1]

  def evaluate(self, points):
    """The density at `points` (d by m, or m points when d is 1, or one d-vector)."""
    return self._kernel_sum("evaluate", points, in_log=False)

  def __call__(self, points):
    return self.evaluate(points)

  def integrate_gaussian(self, mean, cov):
    """The integral of the density times the Gaussian N(mean, cov)."""
    mean = atleast_1d(squeeze(mean))
    cov = atleast_2d(cov)
    if mean.shape != (self.d,):
      raise ValueError(f"mean does not have dimension {self.d}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"covariance does not have dimension {self.d}")
    chol, norm = _cho_factor_and_norm(self.covariance + cov)
    return _gaussian_kernel_convolve(chol, norm, self.dataset, self.weights, mean)

  @jit
  def integrate_box_1d(self, low, high):
    """The probability mass between the scalars `low` and `high` (d = 1 only)."""
    if self.d != 1:
      raise ValueError("integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("the limits of integration in integrate_box_1d must be scalars")
    sigma = squeeze(sqrt(self.covariance))
    low = squeeze((low - self.dataset) / sigma)
    high = squeeze((high - self.dataset) / sigma)
    return (self.weights * (ndtr(high) - ndtr(low))).sum()

  def integrate_kde(self, other):
    """The integral of the product of this density and `other` (same d)."""
    if other.d != self.d:
      raise ValueError("KDEs are not the same dimensionality")
    chol, norm = _cho_factor_and_norm(self.covariance + other.covariance)
    sm, lg = (self, other) if self.n < other.n else (other, self)
    convolve = functools.partial(_gaussian_kernel_convolve, chol, norm, lg.dataset, lg.weights)
    return (vmap(convolve, in_axes=1)(sm.dataset) * sm.weights).sum()

  @functools.partial(jit, static_argnames=("shape",))
  def resample(self, key, shape=()):
    """d by `shape` samples: data points drawn by weight plus kernel noise N(0, covariance)."""
    ind_key, eps_key = random.split(key)
    ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
    eps = random.multivariate_normal(eps_key, zeros(self.d, self.covariance.dtype),
                                     self.covariance, shape=shape, dtype=self.dataset.dtype).T
    return self.dataset[:, ind] + eps

  def pdf(self, x):
    """The density at `x` (as `evaluate`)."""
    return self.evaluate(x)

  def logpdf(self, x):
    """The log density at `x`, by logsumexp over the kernels."""
    return self._kernel_sum("logpdf", x, in_log=True)

  def _kernel_sum(self, name, points, in_log):
    check_arraylike(name, points)
    points = self._reshape_points(points)
    return _gaussian_kernel_eval(in_log, self.dataset.T, self.weights[:, None], points.T,
                                 self.inv_cov)[:, 0]

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    """Not supported: raises NotImplementedError (use `integrate_box_1d`)."""
    del low_bounds, high_bounds, maxpts
    raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

  def set_bandwidth(self, bw_method=None):
    """Not supported (the estimator is immutable): raises NotImplementedError."""
    del bw_method
    raise NotImplementedError("dynamically changing the bandwidth method is not supported")

  def _reshape_points(self, points):
    if dtypes.issubdtype(lax.dtype(points), np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex coordinates")
    points = atleast_2d(points)
    d, m = points.shape
    if d != self.d:
      if d == 1 and m == self.d:
        points = reshape(points, (self.d, 1))
      else:
        raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
    return points


def _cho_factor_and_norm(covariance):
  """The Cholesky factorization (cho_factor) of `covariance` and the Gaussian
  normalization 1 / ((2 pi)^(d/2) sqrt(det covariance))."""
  chol = linalg.cho_factor(covariance)
  norm = sqrt(2 * np.pi) ** covariance.shape[0] * prod(diag(chol[0]))
  return chol, 1.0 / norm


def _gaussian_kernel_convolve(chol, norm, target, weights, mean):
  """sum_i weights_i norm exp(-(t_i - mean)' C^-1 (t_i - mean) / 2), chol factoring C."""
  diff = target - mean[:, None]
  alpha = linalg.cho_solve(chol, diff)
  arg = 0.5 * (diff * alpha).sum(axis=0)
  return norm * (exp(-arg) * weights).sum()


@functools.partial(jit, static_argnums=0)
def _gaussian_kernel_eval(in_log, points, values, xi, precision):
  """For each row of xi: sum_j values_j N(xi; points_j, precision^-1) (its log with
  `in_log`, by logsumexp)."""
  points, values, xi, precision = promote_dtypes_inexact(points, values, xi, precision)
  d = points.shape[1]
  if xi.shape[1] != d:
    raise ValueError("points and xi must have same trailing dim")
  if precision.shape != (d, d):
    raise ValueError("precision matrix must match data dims")
  whitening = linalg.cholesky(precision, lower=True)
  points = dot(points, whitening)
  xi = dot(xi, whitening)
  log_norm = log(diag(whitening)).sum() - 0.5 * d * log(2 * np.pi)

  def kernel(x_test, x_train, y_train):
    arg = log_norm - 0.5 * square(x_train - x_test).sum()
    return log(y_train) + arg if in_log else y_train * exp(arg)

  reduce = logsumexp if in_log else (lambda v, axis: v.sum(axis=axis))
  reduced_kernel = lambda x: reduce(vmap(kernel, in_axes=(None, 0, 0))(x, points, values),
                                    axis=0)
  return vmap(reduced_kernel)(xi)
