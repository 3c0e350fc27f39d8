"""`refimpl.scipy.stats.gamma`: the gamma distribution, as `jax.scipy.stats.gamma`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import gammainc, gammaincc, gammaln, xlogy
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, a, loc=0, scale=1):
  """(a - 1) log(y) - y - gammaln(a) - log(scale), y = (x - loc) / scale; -inf for
  x < loc (y is replaced by 1 there, so the gradient stays finite)."""
  x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
  ok = lax.ge(x, loc)
  one = const(x, 1)
  y = where(ok, standardize(x, loc, scale), one)
  log_linear_term = lax.sub(xlogy(lax.sub(a, one), y), y)
  shape_terms = lax.add(gammaln(a), lax.log(scale))
  return where(ok, lax.sub(log_linear_term, shape_terms), -np.inf)


def pdf(x, a, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  """gammainc(a, y), y = (x - loc) / scale clamped to [0, inf]."""
  x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
  return gammainc(a, lax.clamp(const(x, 0), standardize(x, loc, scale), const(x, np.inf)))


def logcdf(x, a, loc=0, scale=1):
  """log(cdf)."""
  return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  """gammaincc(a, y), y = (x - loc) / scale; 1 for y < 0."""
  x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
  y = standardize(x, loc, scale)
  return where(lax.lt(y, const(y, 0)), 1, gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
  """log(sf)."""
  return lax.log(sf(x, a, loc, scale))
