"""`refimpl.scipy.stats.poisson`: the Poisson distribution, as `jax.scipy.stats.poisson`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import exp, floor, logical_or, round, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import gammaincc, gammaln, xlogy
from refimpl.scipy.stats._util import const


def logpmf(k, mu, loc=0):
  """(k - loc) log(mu) - gammaln(k - loc + 1) - mu; -inf below loc and for non-integer k."""
  k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
  x = lax.sub(k, loc)
  log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
  return where(logical_or(lax.lt(x, const(k, 0)), lax.ne(round(k), k)), -np.inf, log_probs)


def pmf(k, mu, loc=0):
  """exp(logpmf)."""
  return exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  """gammaincc(floor(k - loc + 1), mu); 0 below loc."""
  k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
  zero = const(k, 0)
  x = lax.sub(k, loc)
  return where(lax.lt(x, zero), zero, gammaincc(floor(1 + x), mu))
