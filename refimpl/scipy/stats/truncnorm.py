"""`refimpl.scipy.stats.truncnorm`: the normal distribution truncated to [a, b]
(in standard deviations from loc), as `jax.scipy.stats.truncnorm`. Every
function gives NaN where a >= b."""

import numpy as np

from refimpl import lax
from refimpl.numpy import (array, broadcast_arrays, exp, log1p, ones_like, select,
                           where)
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import log_ndtr, logsumexp, ndtr
from refimpl.scipy.stats import norm


def _log_diff(x, y):
  """log(exp(x) - exp(y))."""
  return logsumexp(array([x, y]), b=array([ones_like(x), -ones_like(y)]), axis=0)


def _log_gauss_mass(a, b):
  """log(ndtr(b) - ndtr(a)), in the left tail for both ends where possible
  (the interval is mirrored when a > 0), as log1p(-ndtr(a) - ndtr(-b)) when a
  <= 0 < b."""
  a, b = broadcast_arrays(array(a), array(b))
  left = _log_diff(log_ndtr(b), log_ndtr(a))
  right = _log_diff(log_ndtr(-a), log_ndtr(-b))
  central = log1p(-ndtr(a) - ndtr(-b))
  case_left, case_right = b <= 0, a > 0
  return select([case_left, case_right, ~(case_left | case_right)], [left, right, central])


def logpdf(x, a, b, loc=0, scale=1):
  """norm.logpdf(x, loc, scale) - log of the normal mass of [a, b]; -inf outside."""
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
  value = lax.sub(norm.logpdf(x, loc, scale), _log_gauss_mass(a, b))
  z = lax.div(lax.sub(x, loc), scale)
  value = where((z < a) | (z > b), -np.inf, value)
  return where(a >= b, np.nan, value)


def pdf(x, a, b, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  """log of the mass of [a, z] over that of [a, b], z = (x - loc) / scale: 0 for z >= b,
  -inf for z <= a, and log1p(-sf) where the result is above -0.1 (as SciPy)."""
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
  x, a, b = broadcast_arrays(x, a, b)
  z = lax.div(lax.sub(x, loc), scale)
  log_mass = _log_gauss_mass(a, b)
  log_cdf = _log_gauss_mass(a, z) - log_mass
  log_sf = _log_gauss_mass(z, b) - log_mass
  value = select([z >= b, z <= a, log_cdf > -0.1, z > a],
                 [0, -np.inf, log1p(-exp(log_sf)), log_cdf])
  return where(a >= b, np.nan, value)


def cdf(x, a, b, loc=0, scale=1):
  """exp(logcdf)."""
  return lax.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  """logcdf(-x, -b, -a, -loc, scale), by the symmetry of the normal."""
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
  """exp(logsf)."""
  return lax.exp(logsf(x, a, b, loc, scale))
