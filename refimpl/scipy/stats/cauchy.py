"""`refimpl.scipy.stats.cauchy`: the Cauchy distribution, as `jax.scipy.stats.cauchy`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import arctan
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, loc=0, scale=1):
  """-log(pi scale) - log1p(z**2), z = (x - loc) / scale."""
  x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
  z = standardize(x, loc, scale)
  normalize_term = lax.log(lax.mul(const(x, np.pi), scale))
  return lax.neg(lax.add(normalize_term, lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """1/2 + arctan((x - loc) / scale) / pi."""
  x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
  inverse_pi = lax.div(const(x, 1), const(x, np.pi))
  return lax.add(const(x, 0.5), lax.mul(inverse_pi, arctan(standardize(x, loc, scale))))


def logcdf(x, loc=0, scale=1):
  """log(cdf)."""
  return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """cdf(-x, -loc, scale)."""
  x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  """logcdf(-x, -loc, scale)."""
  x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def _tan_quantile(name, q, loc, scale, sign):
  """tan(sign * (pi q - pi / 2)) * scale + loc: ppf (sign 1) and isf (sign -1)."""
  q, loc, scale = promote_args_inexact(name, q, loc, scale)
  angle = lax.sub(lax.mul(const(q, np.pi), q), const(q, np.pi / 2))
  unscaled = lax.tan(angle if sign > 0 else lax.neg(angle))
  return lax.add(lax.mul(unscaled, scale), loc)


def ppf(q, loc=0, scale=1):
  """tan(pi q - pi / 2) * scale + loc."""
  return _tan_quantile("cauchy.ppf", q, loc, scale, 1)


def isf(q, loc=0, scale=1):
  """tan(pi / 2 - pi q) * scale + loc."""
  return _tan_quantile("cauchy.isf", q, loc, scale, -1)
