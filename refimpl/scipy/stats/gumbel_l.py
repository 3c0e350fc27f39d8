"""`refimpl.scipy.stats.gumbel_l`: the left-skewed Gumbel distribution, as
`jax.scipy.stats.gumbel_l`: cdf 1 - exp(-exp(z)), z = (x - loc) / scale.
Every function gives NaN where scale <= 0."""

import numpy as np

from refimpl import lax
from refimpl.numpy import exp, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import xlog1py, xlogy
from refimpl.scipy.stats._util import const, standardize


def _gumbel(name, x, loc, scale, fn):
  """fn(x, z) after promotion, z the standardized x; NaN where scale <= 0."""
  x, loc, scale = promote_args_inexact(name, x, loc, scale)
  value = fn(x, loc, scale, standardize(x, loc, scale))
  return where(lax.gt(scale, const(scale, 0)), value, np.nan)


def logpdf(x, loc=0, scale=1):
  """z - exp(z) - log(scale)."""
  return _gumbel("gumbel_l.logpdf", x, loc, scale,
                 lambda x, loc, scale, z: lax.add(xlogy(-1, scale), lax.sub(z, lax.exp(z))))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """log(-expm1(-exp(z)))."""
  return _gumbel("gumbel_l.logcdf", x, loc, scale,
                 lambda x, loc, scale, z: lax.log(-lax.expm1(lax.neg(lax.exp(z)))))


def cdf(x, loc=0, scale=1):
  """exp(logcdf)."""
  return lax.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  """-exp(z)."""
  return _gumbel("gumbel_l.logsf", x, loc, scale,
                 lambda x, loc, scale, z: lax.neg(lax.exp(z)))


def sf(x, loc=0, scale=1):
  """exp(logsf)."""
  return exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  """loc + scale log(-log1p(-p)); NaN unless 0 < p < 1."""
  p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
  ok = lax.bitwise_and(lax.gt(p, const(p, 0)), lax.lt(p, const(p, 1)))
  quantile = lax.add(loc, lax.mul(scale, lax.log(xlog1py(-1, lax.neg(p)))))
  return where(ok, quantile, np.nan)
