"""`refimpl.scipy.stats.t`: Student's t distribution, as `jax.scipy.stats.t`."""

import numpy as np

from refimpl import lax
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, df, loc=0, scale=1):
  """lgamma((df + 1) / 2) - lgamma(df / 2) - log(pi df scale**2) / 2
  - (df + 1) / 2 * log1p(z**2 / df), z = (x - loc) / scale."""
  x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
  two = const(x, 2)
  z = standardize(x, loc, scale)
  half_df = lax.div(df, two)
  half_df_plus_half = lax.add(half_df, const(x, 0.5))
  log_scale_term = lax.div(
      lax.log(lax.mul(lax.mul(lax.mul(scale, scale), const(x, np.pi)), df)), two)
  normalize_term = lax.sub(lax.add(lax.lgamma(half_df), log_scale_term),
                           lax.lgamma(half_df_plus_half))
  quadratic = lax.div(lax.mul(z, z), df)
  return lax.neg(lax.add(normalize_term, lax.mul(half_df_plus_half, lax.log1p(quadratic))))


def pdf(x, df, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, df, loc, scale))
