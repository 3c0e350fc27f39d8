"""`refimpl.scipy.stats.betabinom`: the beta-binomial distribution, as
`jax.scipy.stats.betabinom`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import logical_and, logical_or, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import betaln
from refimpl.scipy.stats._util import const


def logpmf(k, n, a, b, loc=0):
  """log C(n, y) + betaln(y + a, n - y + b) - betaln(a, b), y = floor(k) - loc, with
  log C(n, y) = -log1p(n) - betaln(n - y + 1, y + 1); exactly 0 where y = n = 0; -inf
  for y < -loc, y > n or y + a <= 0; NaN for n < 0, a <= 0 or b <= 0."""
  k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
  y = lax.sub(lax.floor(k), loc)
  one, zero = const(y, 1), const(y, 0)
  log_comb = lax.neg(lax.add(lax.log1p(n), betaln(lax.add(lax.sub(n, y), one),
                                                  lax.add(y, one))))
  beta_terms = lax.sub(betaln(lax.add(y, a), lax.add(lax.sub(n, y), b)), betaln(a, b))
  log_probs = lax.add(log_comb, beta_terms)
  log_probs = where(logical_and(lax.eq(y, zero), lax.eq(n, zero)), 0., log_probs)
  outside = logical_or(logical_or(lax.lt(y, lax.neg(loc)), lax.gt(y, n)),
                       lax.le(lax.add(y, a), zero))
  log_probs = where(outside, -np.inf, log_probs)
  invalid = logical_or(logical_or(lax.lt(n, zero), lax.le(a, zero)), lax.le(b, zero))
  return where(invalid, np.nan, log_probs)


def pmf(k, n, a, b, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, n, a, b, loc))
