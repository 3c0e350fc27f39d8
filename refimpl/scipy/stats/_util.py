"""Helpers shared by the distributions of `refimpl.scipy.stats`."""

import numpy as np

from refimpl import lax
from refimpl.lax.rules import const
from refimpl.numpy import isnan, where

__all__ = ["const", "nan_unless_probability", "standardize"]


def standardize(x, loc, scale):
  """(x - loc) / scale, the argument of the standard distribution."""
  return lax.div(lax.sub(x, loc), scale)


def nan_unless_probability(q, value):
  """`value` where 0 <= q <= 1, NaN where q is outside [0, 1] or NaN (the ppfs)."""
  return where(isnan(q) | (q < 0) | (q > 1), np.nan, value)
