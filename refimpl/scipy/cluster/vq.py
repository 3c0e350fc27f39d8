"""`refimpl.scipy.cluster.vq`: vector quantization, as `jax.scipy.cluster.vq`."""

import operator

from refimpl.numpy import argmin, linalg
from refimpl.numpy.util import check_arraylike, promote_dtypes_inexact
from refimpl.vectorize import vmap

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
  """(code, dist): for each observation (row of `obs`, or entry when both are 1-D) the
  index of the nearest code in `code_book` by Euclidean distance (the first on ties)
  and that distance. Inputs are promoted to an inexact dtype; `check_finite` is ignored."""
  del check_finite
  check_arraylike("scipy.cluster.vq.vq", obs, code_book)
  obs_arr, cb_arr = promote_dtypes_inexact(obs, code_book)
  if obs_arr.ndim != cb_arr.ndim:
    raise ValueError("Observation and code_book should have the same rank")
  if obs_arr.ndim == 1:
    obs_arr, cb_arr = obs_arr[..., None], cb_arr[..., None]
  if obs_arr.ndim != 2:
    raise ValueError("ndim different than 1 or 2 are not supported")
  dist = vmap(lambda ob: linalg.norm(ob[None] - cb_arr, axis=-1))(obs_arr)
  code = argmin(dist, axis=-1)
  return code, vmap(operator.getitem)(dist, code)
