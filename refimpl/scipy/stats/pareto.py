"""`refimpl.scipy.stats.pareto`: the Pareto distribution, as `jax.scipy.stats.pareto`.

The support is x >= loc + scale; with y = (x - loc) / scale the cdf is 1 - y**-b.
"""

import numpy as np

from refimpl import lax
from refimpl.numpy import where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import const, nan_unless_probability, standardize


def _below_support(x, loc, scale):
  return lax.lt(x, lax.add(loc, scale))


def logpdf(x, b, loc=0, scale=1):
  """log(b / scale) - (b + 1) log(y); -inf below the support."""
  x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
  y = standardize(x, loc, scale)
  normalize_term = lax.log(lax.div(scale, b))
  log_probs = lax.neg(lax.add(normalize_term, lax.mul(lax.add(b, const(x, 1)), lax.log(y))))
  return where(_below_support(x, loc, scale), -np.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  """1 - y**-b; 0 below the support."""
  x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
  y = standardize(x, loc, scale)
  value = lax.sub(const(x, 1), lax.pow(y, lax.neg(b)))
  return where(_below_support(x, loc, scale), const(x, 0), value)


def logcdf(x, b, loc=0, scale=1):
  """log1p(-y**-b); -inf below the support."""
  x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
  y = standardize(x, loc, scale)
  value = lax.log1p(lax.neg(lax.pow(y, lax.neg(b))))
  return where(_below_support(x, loc, scale), -np.inf, value)


def logsf(x, b, loc=0, scale=1):
  """-b log(y); 0 below the support."""
  x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
  y = standardize(x, loc, scale)
  value = lax.neg(lax.mul(b, lax.log(y)))
  return where(_below_support(x, loc, scale), const(x, 0), value)


def sf(x, b, loc=0, scale=1):
  """exp(logsf): y**-b, 1 below the support."""
  return lax.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
  """loc + scale (1 - q)**(-1 / b); NaN for q outside [0, 1]."""
  q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
  one = const(q, 1)
  value = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(one, q), lax.neg(lax.div(one, b)))))
  return nan_unless_probability(q, value)
