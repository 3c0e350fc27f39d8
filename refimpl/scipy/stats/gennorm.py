"""`refimpl.scipy.stats.gennorm`: the generalized normal distribution, density
beta / (2 Gamma(1 / beta)) exp(-|x|**beta), as `jax.scipy.stats.gennorm`."""

from refimpl import lax
from refimpl.numpy.util import promote_args_inexact


def logpdf(x, beta):
  """log(beta / 2) - lgamma(1 / beta) - |x|**beta."""
  x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
  return lax.log(.5 * beta) - lax.lgamma(1 / beta) - lax.abs(x) ** beta


def pdf(x, beta):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, beta))


def cdf(x, beta):
  """(1 + sign(x) igamma(1 / beta, |x|**beta)) / 2."""
  x, beta = promote_args_inexact("gennorm.cdf", x, beta)
  return .5 * (1 + lax.sign(x) * lax.igamma(1 / beta, lax.abs(x) ** beta))
