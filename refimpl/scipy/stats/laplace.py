"""`refimpl.scipy.stats.laplace`: the Laplace distribution, as `jax.scipy.stats.laplace`."""

from refimpl import lax
from refimpl.numpy.util import promote_args_inexact
from refimpl.scipy.stats._util import const, standardize


def logpdf(x, loc=0, scale=1):
  """-|x - loc| / scale - log(2 scale)."""
  x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
  linear_term = lax.div(lax.abs(lax.sub(x, loc)), scale)
  return lax.neg(lax.add(linear_term, lax.log(lax.mul(const(x, 2), scale))))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """exp(z) / 2 for z = (x - loc) / scale <= 0, else 1 - exp(-z) / 2."""
  x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
  half = const(x, 0.5)
  z = standardize(x, loc, scale)
  return lax.select(lax.le(z, const(x, 0)), lax.mul(half, lax.exp(z)),
                    lax.sub(const(x, 1), lax.mul(half, lax.exp(lax.neg(z)))))
