"""`refimpl.scipy.stats.dirichlet`: the Dirichlet distribution, as `jax.scipy.stats.dirichlet`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import all, concatenate, sum, where
from refimpl.numpy.util import promote_dtypes_inexact
from refimpl.scipy.special import gammaln, xlogy
from refimpl.scipy.stats._util import const


def logpdf(x, alpha):
  """sum((alpha - 1) log x) - sum(gammaln(alpha)) + gammaln(sum(alpha)) over axis 0.

  `alpha` must be 1-D with K entries and `x` must have K or K - 1 entries along
  its first axis (ValueError); with K - 1 the last is 1 minus their sum. Points
  off the simplex (an entry <= 0, or a sum more than 1e-6 from 1) give -inf.
  """
  x, alpha = promote_dtypes_inexact(x, alpha)
  if alpha.ndim != 1:
    raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
  if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("`x` must have either the same number of entries as `alpha` "
                     f"or one entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
  one = const(x, 1)
  if x.shape[0] != alpha.shape[0]:
    x = concatenate([x, lax.sub(one, x.sum(0, keepdims=True))], axis=0)
  normalize_term = sum(gammaln(alpha)) - gammaln(sum(alpha))
  if x.ndim > 1:
    alpha = lax.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
  log_probs = lax.sub(sum(xlogy(lax.sub(alpha, one), x), axis=0), normalize_term)
  on_simplex = all(x > 0, axis=0) & (abs(sum(x, axis=0) - 1) < 1e-6)
  return where(on_simplex, log_probs, -np.inf)


def pdf(x, alpha):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, alpha))
