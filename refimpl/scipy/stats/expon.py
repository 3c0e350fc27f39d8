"""`refimpl.scipy.stats.expon`: the exponential distribution, as `jax.scipy.stats.expon`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import where, zeros_like
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import nan_unless_probability


def logpdf(x, loc=0, scale=1):
  """-(x - loc) / scale - log(scale) for x >= loc, -inf below."""
  x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
  log_probs = lax.neg(lax.add(lax.div(lax.sub(x, loc), scale), lax.log(scale)))
  return where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """-expm1(-(x - loc) / scale) for x >= loc, 0 below."""
  x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
  neg_scaled_x = lax.div(lax.sub(loc, x), scale)
  return where(lax.lt(x, loc), zeros_like(neg_scaled_x), lax.neg(lax.expm1(neg_scaled_x)))


def logcdf(x, loc=0, scale=1):
  """log1p(-sf)."""
  return lax.log1p(lax.neg(sf(x, loc, scale)))


def logsf(x, loc=0, scale=1):
  """-(x - loc) / scale for x >= loc, 0 below."""
  x, loc, scale = promote_args_inexact("expon.sf", x, loc, scale)
  neg_scaled_x = lax.div(lax.sub(loc, x), scale)
  return where(lax.lt(x, loc), zeros_like(neg_scaled_x), neg_scaled_x)


def sf(x, loc=0, scale=1):
  """exp(logsf)."""
  return lax.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
  """loc - scale * log1p(-q); NaN for q outside [0, 1]."""
  q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
  return nan_unless_probability(q, lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))
