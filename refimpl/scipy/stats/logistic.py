"""`refimpl.scipy.stats.logistic`: the logistic distribution, as `jax.scipy.stats.logistic`."""

from refimpl import lax
from refimpl.numpy import logaddexp
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.special import expit, logit
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, loc=0, scale=1):
  """-2 logaddexp(z / 2, -z / 2) - log(scale), z = (x - loc) / scale."""
  x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
  half_z = lax.div(standardize(x, loc, scale), const(x, 2))
  return lax.sub(lax.mul(const(x, -2), logaddexp(half_z, lax.neg(half_z))), lax.log(scale))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """expit((x - loc) / scale)."""
  x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
  return expit(standardize(x, loc, scale))


def sf(x, loc=0, scale=1):
  """expit(-(x - loc) / scale)."""
  x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
  return expit(lax.neg(standardize(x, loc, scale)))


def ppf(x, loc=0, scale=1):
  """logit(x) * scale + loc."""
  x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
  return lax.add(lax.mul(logit(x), scale), loc)


def isf(x, loc=0, scale=1):
  """-logit(x) * scale + loc."""
  x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
  return lax.add(lax.mul(lax.neg(logit(x)), scale), loc)
