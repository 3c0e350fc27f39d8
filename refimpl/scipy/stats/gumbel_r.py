"""`refimpl.scipy.stats.gumbel_r`: the right-skewed Gumbel distribution, as
`jax.scipy.stats.gumbel_r`: cdf exp(-exp(-z)), z = (x - loc) / scale.
Every function gives NaN where scale <= 0."""

import numpy as np

from refimpl import lax
from refimpl.nn import log1mexp
from refimpl.numpy import where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import xlogy
from refimpl.scipy.stats._util import const
from refimpl.scipy.stats.gumbel_l import _gumbel


def logpdf(x, loc=0, scale=1):
  """-(z + exp(-z)) - log(scale)."""
  return _gumbel("gumbel_r.logpdf", x, loc, scale, lambda x, loc, scale, z: lax.add(
      xlogy(-1, scale), lax.neg(lax.add(z, lax.exp(lax.neg(z))))))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """-exp(-z)."""
  return _gumbel("gumbel_r.logcdf", x, loc, scale,
                 lambda x, loc, scale, z: lax.neg(lax.exp(lax.neg(z))))


def cdf(x, loc=0, scale=1):
  """exp(logcdf)."""
  return lax.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """1 - exp(-exp(-z)) (with -z computed as (loc - x) / scale)."""
  return _gumbel("gumbel_r.sf", x, loc, scale, lambda x, loc, scale, z: lax.sub(
      const(x, 1), lax.exp(lax.neg(lax.exp(lax.div(lax.sub(loc, x), scale))))))


def logsf(x, loc=0, scale=1):
  """log1mexp(exp(-z)): log(1 - exp(-exp(-z)))."""
  return _gumbel("gumbel_r.logsf", x, loc, scale,
                 lambda x, loc, scale, z: log1mexp(lax.exp(lax.div(lax.sub(loc, x), scale))))


def ppf(p, loc=0, scale=1):
  """loc - scale log(-log(p)); NaN unless 0 < p < 1."""
  p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
  ok = lax.bitwise_and(lax.gt(p, const(p, 0)), lax.lt(p, const(p, 1)))
  quantile = lax.sub(loc, lax.mul(scale, lax.log(xlogy(-1, p))))
  return where(ok, quantile, np.nan)
