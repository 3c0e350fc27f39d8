"""`refimpl.scipy.stats.vonmises`: the von Mises distribution, density
exp(kappa cos x) / (2 pi I0(kappa)), as `jax.scipy.stats.vonmises`."""

import numpy as np

from refimpl import lax
from refimpl.numpy import cos, log, where
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import const


def logpdf(x, kappa):
  """kappa (cos x - 1) - log(2 pi i0e(kappa)), for any real x (not reduced to
  [-pi, pi]); NaN unless kappa > 0."""
  x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
  value = kappa * (cos(x) - 1) - log(2 * np.pi * lax.bessel_i0e(kappa))
  return where(lax.gt(kappa, const(kappa, 0)), value, np.nan)


def pdf(x, kappa):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, kappa))
