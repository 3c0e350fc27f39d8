"""`refimpl.scipy.stats.poisson`: the Poisson distribution, as `jax.scipy.stats.poisson`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import (
    arange, broadcast_shapes, broadcast_to, ceil, exp, floor, log, logical_or, ravel, reshape,
    round, sqrt, where, zeros_like)
from refimpl.numpy.creation import ensure_arraylike
from refimpl.numpy.util import promote_args_inexact, promote_dtypes_inexact
from refimpl.scipy.special import entr, gammaincc, gammaln, xlogy
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


def entropy(mu, loc=0):
  """The Shannon entropy -sum_k pmf(k) log pmf(k), as JAX computes it: 0 for mu = 0;
  for mu < 10 the sum over k < min(mu + 20, 35); for mu < 100 over
  k < min(mu + 10 sqrt(mu) + 20, 250); above, 0.5 log(2 pi e mu) - 1 / (12 mu).
  NaN for mu < 0; `loc` only broadcasts (the entropy does not depend on it)."""
  mu, loc = ensure_arraylike("poisson.entropy", mu, loc)
  mu, loc = promote_dtypes_inexact(mu, loc)
  mu_flat = ravel(mu)
  result = where(mu_flat == 0, zeros_like(mu_flat),
                 where(mu_flat < 10, _summed_entropy(mu_flat, 35, mu_flat + 20),
                       where(mu_flat < 100,
                             _summed_entropy(mu_flat, 250, mu_flat + 10 * sqrt(mu_flat) + 20),
                             0.5 * log(2 * np.pi * np.e * mu_flat) - 1.0 / (12 * mu_flat))))
  return broadcast_to(reshape(result, mu.shape), broadcast_shapes(mu.shape, loc.shape))


def _summed_entropy(mu, max_k, bound):
  """sum of entr(pmf(k, mu)) over k < min(ceil(bound), max_k), for 1-D mu."""
  k = arange(max_k, dtype=mu.dtype)[:, None]
  probs = where(k < ceil(bound)[None, :], pmf(k, mu, 0), 0.0)
  return entr(probs).sum(axis=0)
