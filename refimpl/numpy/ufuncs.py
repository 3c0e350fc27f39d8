"""Elementwise jnp functions (ufuncs), each promoting then calling lax."""

from refimpl import lax
from refimpl.numpy.util import promote_args, promote_args_inexact, check_arraylike

__all__ = ['add', 'subtract', 'multiply', 'negative', 'exp', 'sin', 'true_divide', 'less', 'greater', 'equal', "divide"]


def add(x, y):
  x, y = promote_args("add", x, y)
  return lax.add(x, y)


def subtract(x, y):
  x, y = promote_args("subtract", x, y)
  return lax.sub(x, y)


def multiply(x, y):
  x, y = promote_args("multiply", x, y)
  return lax.mul(x, y)


def negative(x):
  x, = promote_args("negative", x)
  return lax.neg(x)


def exp(x):
  x, = promote_args_inexact("exp", x)
  return lax.exp(x)


def sin(x):
  x, = promote_args_inexact("sin", x)
  return lax.sin(x)


def true_divide(x, y):
  raise NotImplementedError
divide = true_divide


def less(x, y):
  x, y = promote_args("less", x, y)
  return lax.lt(x, y)


def greater(x, y):
  x, y = promote_args("greater", x, y)
  return lax.gt(x, y)


def equal(x, y):
  x, y = promote_args("equal", x, y)
  return lax.eq(x, y)
