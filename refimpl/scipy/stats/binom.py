"""`refimpl.scipy.stats.binom`: the binomial distribution, as `jax.scipy.stats.binom`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import logical_and, logical_or, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import gammaln, xlog1py, xlogy
from refimpl.scipy.stats._util import const


def logpmf(k, n, p, loc=0):
  """log C(n, y) + y log(p) + (n - y) log1p(-p), y = k - loc (gammaln for the binomial
  coefficient, so y need not be an integer); exactly 0 where y = n = 0 or the p terms
  vanish; -inf outside loc <= k < loc + n + 1."""
  k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
  y = lax.sub(k, loc)
  zero = const(y, 0)
  comb_term = lax.sub(gammaln(n + 1), lax.add(gammaln(y + 1), gammaln(n - y + 1)))
  log_linear_term = lax.add(xlogy(y, p), xlog1py(lax.sub(n, y), lax.neg(p)))
  log_probs = lax.add(comb_term, log_linear_term)
  exact = logical_or(logical_and(lax.eq(y, zero), lax.eq(n, zero)),
                     lax.eq(log_linear_term, zero))
  log_probs = where(exact, 0., log_probs)
  return where(lax.ge(k, loc) & lax.lt(k, loc + n + 1), log_probs, -np.inf)


def pmf(k, n, p, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, n, p, loc))
