"""`refimpl.scipy.stats.beta`: the beta distribution, as `jax.scipy.stats.beta`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import logical_or, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import betainc, betaln, xlog1py, xlogy
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, a, b, loc=0, scale=1):
  """(a - 1) log(y) + (b - 1) log1p(-y) - betaln(a, b) - log(scale), y = (x - loc) / scale;
  -inf outside [loc, loc + scale], NaN where a, b or scale is <= 0."""
  x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
  one = const(x, 1)
  y = standardize(x, loc, scale)
  log_linear_term = lax.add(xlogy(lax.sub(a, one), y), xlog1py(lax.sub(b, one), lax.neg(y)))
  log_probs = lax.sub(lax.sub(log_linear_term, betaln(a, b)), lax.log(scale))
  outside = logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
  result = where(outside, -np.inf, log_probs)
  zero = const(a, 0)
  invalid = lax.le(a, zero) | lax.le(b, zero) | lax.le(scale, zero)
  return where(invalid, np.nan, result)


def pdf(x, a, b, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, a, b, loc, scale))


def _unit(x, loc, scale):
  """(x - loc) / scale clamped to [0, 1]."""
  return lax.clamp(const(x, 0), standardize(x, loc, scale), const(x, 1))


def cdf(x, a, b, loc=0, scale=1):
  """betainc(a, b, y), y = (x - loc) / scale clamped to [0, 1]."""
  x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
  return betainc(a, b, _unit(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """log(cdf)."""
  return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  """betainc(b, a, 1 - y), y = (x - loc) / scale clamped to [0, 1]."""
  x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
  return betainc(b, a, 1 - _unit(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """log(sf)."""
  return lax.log(sf(x, a, b, loc, scale))
