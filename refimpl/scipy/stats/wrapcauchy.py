"""`refimpl.scipy.stats.wrapcauchy`: the wrapped Cauchy distribution on [0, 2 pi],
density (1 - c**2) / (2 pi (1 + c**2 - 2 c cos x)), as `jax.scipy.stats.wrapcauchy`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import cos, log, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import const


def logpdf(x, c):
  """log(1 - c**2) - log(2 pi) - log(1 + c**2 - 2 c cos x); -inf for x outside
  [0, 2 pi], NaN unless 0 < c < 1."""
  x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
  inside = lax.ge(x, const(x, 0)) & lax.le(x, const(x, 2 * np.pi))
  value = log(1 - c * c) - log(2 * np.pi) - log(1 + c * c - 2 * c * cos(x))
  valid = lax.gt(c, const(c, 0)) & lax.lt(c, const(c, 1))
  return where(valid, where(inside, value, -np.inf), np.nan)


def pdf(x, c):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, c))
