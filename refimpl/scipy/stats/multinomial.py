"""`refimpl.scipy.stats.multinomial`: the multinomial distribution, as
`jax.scipy.stats.multinomial`."""

import numpy as np

from refimpl import dtypes, lax
from refimpl.numpy import equal, sum, where
from refimpl.numpy.util import promote_args_inexact, promote_args_numeric
from refimpl.scipy.special import gammaln, xlogy


def logpmf(x, n, p):
  """gammaln(n + 1) + sum(x log(p) - gammaln(x + 1)) over the last axis.

  `x` and `n` must be integers (ValueError). The result is -inf unless n equals
  the sum of all of `x` (JAX sums the whole array, not only the last axis).
  """
  p, = promote_args_inexact("multinomial.logpmf", p)
  x, n = promote_args_numeric("multinomial.logpmf", x, n)
  if not dtypes.issubdtype(x.dtype, np.integer):
    raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                     f"n.dtype={n.dtype}")
  x, n = x.astype(p.dtype), n.astype(p.dtype)
  log_probs = gammaln(n + 1) + sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
  return where(equal(sum(x), n), log_probs, -np.inf)


def pmf(x, n, p):
  """exp(logpmf)."""
  return lax.exp(logpmf(x, n, p))
