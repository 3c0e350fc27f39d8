"""`refimpl.scipy.stats.chi2`: the chi-square distribution, as `jax.scipy.stats.chi2`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import gammainc, gammaincc
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, df, loc=0, scale=1):
  """(df/2 - 1) log(y) - y/2 - lgamma(df/2) - df log(2)/2 - log(scale),
  y = (x - loc) / scale; -inf for x < loc."""
  x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
  one, two = const(x, 1), const(x, 2)
  y = standardize(x, loc, scale)
  half_df = lax.div(df, two)
  kernel = lax.sub(lax.mul(lax.sub(half_df, one), lax.log(y)), lax.div(y, two))
  normalizer = lax.neg(lax.add(lax.lgamma(half_df), lax.div(lax.mul(lax.log(two), df), two)))
  log_probs = lax.add(lax.sub(normalizer, lax.log(scale)), kernel)
  return where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, df, loc, scale))


def _incomplete_gamma(fn, x, df, loc, scale):
  """fn(df / 2, (x - loc) / (2 scale) clamped to [0, inf])."""
  two = const(scale, 2)
  y = lax.div(lax.sub(x, loc), lax.mul(scale, two))
  return fn(lax.div(df, two), lax.clamp(const(x, 0), y, const(x, np.inf)))


def cdf(x, df, loc=0, scale=1):
  """gammainc(df / 2, max(0, (x - loc) / scale) / 2)."""
  x, df, loc, scale = promote_args_inexact("chi2.cdf", x, df, loc, scale)
  return _incomplete_gamma(gammainc, x, df, loc, scale)


def logcdf(x, df, loc=0, scale=1):
  """log(cdf)."""
  return lax.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
  """gammaincc(df / 2, max(0, (x - loc) / scale) / 2)."""
  x, df, loc, scale = promote_args_inexact("chi2.sf", x, df, loc, scale)
  return _incomplete_gamma(gammaincc, x, df, loc, scale)


def logsf(x, df, loc=0, scale=1):
  """log(sf)."""
  return lax.log(sf(x, df, loc, scale))
