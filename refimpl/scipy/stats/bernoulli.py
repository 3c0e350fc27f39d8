"""`refimpl.scipy.stats.bernoulli`: the Bernoulli distribution, as `jax.scipy.stats.bernoulli`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import exp, isnan, logical_and, logical_or, select, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import xlog1py, xlogy
from refimpl.scipy.stats._util import const


def logpmf(k, p, loc=0):
  """x log(p) + (1 - x) log1p(-p), x = k - loc; -inf outside [0, 1] (x is not rounded)."""
  k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
  zero, one = const(k, 0), const(k, 1)
  x = lax.sub(k, loc)
  log_probs = xlogy(x, p) + xlog1py(lax.sub(one, x), -p)
  return where(logical_or(lax.lt(x, zero), lax.gt(x, one)), -np.inf, log_probs)


def pmf(k, p, loc=0):
  """exp(logpmf)."""
  return exp(logpmf(k, p, loc))


def _invalid(p, *args):
  """Where p is outside [0, 1] or p or any of `args` is NaN."""
  invalid = isnan(p) | (p < 0) | (p > 1)
  for arg in args:
    invalid = invalid | isnan(arg)
  return invalid


def cdf(k, p):
  """0 for k < 0, 1 - p for 0 <= k < 1, 1 for k >= 1; NaN for p outside [0, 1] or NaN."""
  k, p = promote_args_inexact("bernoulli.cdf", k, p)
  zero, one = const(k, 0), const(k, 1)
  conds = [_invalid(p, k), lax.lt(k, zero), logical_and(lax.ge(k, zero), lax.lt(k, one)),
           lax.ge(k, one)]
  return select(conds, [np.nan, zero, one - p, one])


def ppf(q, p):
  """0 for q <= 1 - p, else 1; NaN for q or p outside [0, 1] or NaN."""
  q, p = promote_args_inexact("bernoulli.ppf", q, p)
  zero, one = const(q, 0), const(q, 1)
  invalid = _invalid(p, q) | (q < zero) | (q > one)
  return where(invalid, np.nan, where(lax.le(q, one - p), zero, one))
