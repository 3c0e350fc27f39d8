"""Sample statistics of `refimpl.scipy.stats`: mode, rankdata and sem, as `jax.scipy.stats`.

All three are jitted with their options static. nan_policy 'propagate' is
the only one mode and rankdata implement ('omit' and 'raise' raise
NotImplementedError: under jit the presence of NaNs is not known); sem also
takes 'omit'.
"""

import functools
import math
from typing import NamedTuple

import numpy as np

from refimpl import dtypes, lax
from refimpl.api import jit
from refimpl.array import Array
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import (
    apply_along_axis, arange, argmax, array, atleast_1d, concatenate, empty_like, full_like,
    isnan, moveaxis, nanstd, nonzero, ravel, sqrt, unique)
from refimpl.numpy.util import check_arraylike, promote_args_inexact
from refimpl.vectorize import vmap

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ["propagate", "omit", "raise"]


def _check_nan_policy(nan_policy, raise_message):
  if nan_policy not in _NAN_POLICIES:
    raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                     "{'propagate', 'omit', 'raise'}")
  if nan_policy == "omit":
    raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
  if nan_policy == "raise":
    raise NotImplementedError(raise_message)


class ModeResult(NamedTuple):
  mode: Array
  count: Array


@functools.partial(jit, static_argnames=['axis', 'nan_policy', 'keepdims'])
def mode(a, axis=0, nan_policy="propagate", keepdims=False):
  """ModeResult(mode, count): the most frequent value along `axis` (None: of the
  flattened array), the smallest on ties, and its count; an empty slice gives
  (NaN, 0) in the default float."""
  check_arraylike("mode", a)
  x = atleast_1d(a)
  _check_nan_policy(nan_policy,
                    "In order to best JIT compile `mode`, we cannot know whether `x` contains "
                    "nans. Please check if nans exist in `x` outside of the `mode` function.")
  if axis is not None:
    axis = canonicalize_axis(axis, x.ndim)
  if axis is None:
    output_shape = (1,) * x.ndim if keepdims else ()
    axis, x = 0, x.ravel()
  elif keepdims:
    output_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape))
  else:
    output_shape = tuple(s for i, s in enumerate(x.shape) if i != axis)

  def mode_of_column(column):
    if column.size == 0:
      float_dtype = dtypes.default_float_dtype()
      return array(np.nan, dtype=float_dtype), array(0, dtype=float_dtype)
    vals, counts = unique(column, return_counts=True, size=column.size)
    return vals[argmax(counts)], counts.max()

  x = moveaxis(x, axis, 0)
  x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
  vals, counts = vmap(mode_of_column, in_axes=1)(x)
  return ModeResult(vals.reshape(output_shape), counts.reshape(output_shape))


def _invert_permutation(i):
  return empty_like(i).at[i].set(arange(i.size, dtype=i.dtype))


@functools.partial(jit, static_argnames=["method", "axis", "nan_policy"])
def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
  """Ranks (from 1, in the default float) of the data, flattened or along `axis`;
  ties get the average, 'min' or 'max' of their ranks, consecutive 'dense' ranks,
  or distinct 'ordinal' ranks in order of appearance. All NaN if any entry is NaN."""
  check_arraylike("rankdata", a)
  _check_nan_policy(nan_policy,
                    "In order to best JIT compile `rankdata`, we cannot know whether `x` "
                    "contains nans. Please check if nans exist in `x` outside of the "
                    "`rankdata` function.")
  if method not in ("average", "min", "max", "dense", "ordinal"):
    raise ValueError(f"unknown method '{method}'")
  if axis is not None:
    return apply_along_axis(rankdata, axis, a, method)

  a = ravel(a)
  out_dtype = dtypes.default_float_dtype()

  def ranks(a):
    arr, sorter = lax.sort_key_val(a, arange(a.size))
    inv = _invert_permutation(sorter)
    if method == "ordinal":
      return (inv + 1).astype(out_dtype)
    # obs marks the first of each run of equal sorted values; dense is the run number.
    obs = concatenate([array([True]), arr[1:] != arr[:-1]])
    dense = obs.cumsum()[inv]
    if method == "dense":
      return dense.astype(out_dtype)
    # count[r]: the number of values in the first r runs.
    count = nonzero(obs, size=arr.size + 1, fill_value=obs.size)[0].astype(out_dtype)
    if method == "max":
      return count[dense]
    if method == "min":
      return count[dense - 1] + 1
    return .5 * (count[dense] + count[dense - 1] + 1)

  return lax.cond(isnan(a).any(), lambda a: full_like(a, np.nan, out_dtype), ranks, a)


@functools.partial(jit, static_argnames=['axis', 'nan_policy', 'keepdims'])
def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
  """The standard error of the mean, std(a, ddof) / sqrt(n), along `axis` (None: all);
  nan_policy 'omit' leaves NaNs out of both the deviation and the count."""
  b, = promote_args_inexact("sem", a)
  if nan_policy == "propagate":
    size = b.size if axis is None else b.shape[axis]
    return b.std(axis, ddof=ddof, keepdims=keepdims) / sqrt(size).astype(b.dtype)
  if nan_policy == "omit":
    count = (~isnan(b)).sum(axis, keepdims=keepdims)
    return nanstd(b, axis, ddof=ddof, keepdims=keepdims) / sqrt(count).astype(b.dtype)
  raise ValueError(f"{nan_policy} is not supported")
