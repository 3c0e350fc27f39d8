"""`refimpl.scipy.stats.uniform`: the uniform distribution on [loc, loc + scale]."""

import numpy as np

from refimpl import lax
from refimpl.numpy import array, logical_or, select, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import nan_unless_probability


def logpdf(x, loc=0, scale=1):
  """-log(scale) on [loc, loc + scale], -inf outside."""
  x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
  outside = logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
  return where(outside, -np.inf, lax.neg(lax.log(scale)))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """0 below loc, 1 above loc + scale, (x - loc) / scale between (NaN for NaN x)."""
  x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
  end = lax.add(loc, scale)
  conds = [lax.lt(x, loc), lax.gt(x, end), lax.ge(x, loc) & lax.le(x, end)]
  values = [array(0, x.dtype), array(1, x.dtype), lax.div(lax.sub(x, loc), scale)]
  return select(conds, values)


def ppf(q, loc=0, scale=1):
  """loc + scale * q; NaN for q outside [0, 1]."""
  q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
  return nan_unless_probability(q, lax.add(loc, lax.mul(scale, q)))
