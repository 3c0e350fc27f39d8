"""`refimpl.scipy.stats.norm`: the normal distribution, as `jax.scipy.stats.norm`.

Arguments are promoted with promote_args_inexact; cdf, logcdf and ppf are
special.ndtr, log_ndtr and ndtri of the standardized argument.
"""

import numpy as np

from refimpl import lax
from refimpl.numpy import asarray
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy import special
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, loc=0, scale=1):
  """-(log(2 pi scale**2) + (x - loc)**2 / scale**2) / 2."""
  x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
  scale_squared = lax.square(scale)
  log_normalizer = lax.log(lax.mul(const(x, 2 * np.pi), scale_squared))
  quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_squared)
  return lax.div(lax.add(log_normalizer, quadratic), const(x, -2))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """ndtr((x - loc) / scale)."""
  x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
  return special.ndtr(standardize(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """log_ndtr((x - loc) / scale), accurate far into the left tail."""
  x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
  return special.log_ndtr(standardize(x, loc, scale))


def ppf(q, loc=0, scale=1):
  """ndtri(q) * scale + loc, as an array of the default float type (as JAX)."""
  return asarray(special.ndtri(q) * scale + loc, float)


def sf(x, loc=0, scale=1):
  """cdf(-x, -loc, scale): 1 - cdf without its cancellation."""
  x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  """logcdf(-x, -loc, scale)."""
  x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
  """ppf(1 - q, loc, scale)."""
  return ppf(lax.sub(const(q, 1), q), loc, scale)
