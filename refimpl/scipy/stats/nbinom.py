"""`refimpl.scipy.stats.nbinom`: the negative binomial distribution, as `jax.scipy.stats.nbinom`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import gammaln, xlogy
from refimpl.scipy.stats._util import const


def logpmf(k, n, p, loc=0):
  """gammaln(y + n) - gammaln(n) - gammaln(y + 1) + n log(p) + y log(1 - p), y = k - loc
  (the number of failures before the n-th success); -inf for k < loc."""
  k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
  one = const(k, 1)
  y = lax.sub(k, loc)
  comb_term = lax.sub(lax.sub(gammaln(lax.add(y, n)), gammaln(n)), gammaln(lax.add(y, one)))
  log_linear_term = lax.add(xlogy(n, p), xlogy(y, lax.sub(one, p)))
  return where(lax.lt(k, loc), -np.inf, lax.add(comb_term, log_linear_term))


def pmf(k, n, p, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, n, p, loc))
