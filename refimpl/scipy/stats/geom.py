"""`refimpl.scipy.stats.geom`: the geometric distribution on 1, 2, ..., as
`jax.scipy.stats.geom`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import exp, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import xlog1py
from refimpl.scipy.stats._util import const


def logpmf(k, p, loc=0):
  """(x - 1) log1p(-p) + log(p), x = k - loc; -inf for x <= 0 (x is not rounded)."""
  k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
  x = lax.sub(k, loc)
  log_probs = xlog1py(lax.sub(x, const(k, 1)), -p) + lax.log(p)
  return where(lax.le(x, const(k, 0)), -np.inf, log_probs)


def pmf(k, p, loc=0):
  """exp(logpmf)."""
  return exp(logpmf(k, p, loc))
