"""`refimpl.scipy.stats.multivariate_normal`, as `jax.scipy.stats.multivariate_normal`."""

import functools

import numpy as np

from refimpl import lax
from refimpl.lax import linalg
from refimpl.numpy import einsum, log, square, vectorize
from refimpl.numpy.util import promote_dtypes_inexact

_solve_lower = vectorize(functools.partial(linalg.triangular_solve, lower=True,
                                           transpose_a=True),
                         signature="(n,n),(n)->(n)")


def logpdf(x, mean, cov, allow_singular=None):
  """The log density of N(mean, cov) at x, batched over leading axes.

  A scalar `mean` makes a univariate normal with variance `cov`; a scalar `cov`
  with a vector `mean` is the covariance cov * I; otherwise `cov` must end in
  (n, n) (ValueError) and the density uses its Cholesky factor L: with
  y = L^-1 (x - mean), -|y|^2 / 2 - n log(2 pi) / 2 - sum(log diag L).
  `allow_singular` is not supported (NotImplementedError), as in JAX.
  """
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
  x, mean, cov = promote_dtypes_inexact(x, mean, cov)
  if not mean.shape:
    return -1 / 2 * square(x - mean) / cov - 1 / 2 * (log(2 * np.pi) + log(cov))
  n = mean.shape[-1]
  if not np.shape(cov):
    y = x - mean
    return (-1 / 2 * einsum("...i,...i->...", y, y) / cov
            - n / 2 * (log(2 * np.pi) + log(cov)))
  if cov.ndim < 2 or cov.shape[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes")
  factor = linalg.cholesky(cov)
  y = _solve_lower(factor, x - mean)
  return (-1 / 2 * einsum("...i,...i->...", y, y) - n / 2 * log(2 * np.pi)
          - log(factor.diagonal(axis1=-1, axis2=-2)).sum(-1))


def pdf(x, mean, cov):
  """exp(logpdf(x, mean, cov))."""
  return lax.exp(logpdf(x, mean, cov))
