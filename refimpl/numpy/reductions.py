"""Reductions: sum, prod, max, min, all, any, mean, var, std, arg{max,min},
the nan* variants, cumulative reductions, count_nonzero, ptp, average.

Common arguments, as in JAX: `axis` (None, an int or a tuple; negative
counts from the end), `keepdims`, `dtype`, `where` (a boolean mask;
masked-out elements count as the identity), `initial` (combined with the
result), `promote_integers` (sum/prod of small integers give the default
integer, as NumPy). `out` is rejected with NotImplementedError.

Each lowers as JAX's does: e.g. `sum` of f32[3] is one `reduce_sum[axes=(0,)]`,
`mean` is that sum followed by a `div` by the element count; float16 and
bfloat16 sums are computed in float32.
"""

import builtins
import math
import operator

import warnings

import numpy as np

from refimpl import dtypes, lax
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy.creation import (asarray, broadcast_to, ensure_arraylike, is_array,
                                    user_dtype)
from refimpl.numpy.manipulation import moveaxis, ravel
from refimpl.numpy.util import (check_arraylike, promote_dtypes_inexact, promote_dtypes_numeric,
                                 to_inexact_dtype)
from refimpl.numpy.ufuncs import isnan, where as _where

__all__ = ['sum', 'prod', 'max', 'min', 'amax', 'amin', 'all', 'any', 'mean', 'var', 'std',
           'argmax', 'argmin', 'nanargmax', 'nanargmin', 'nansum', 'nanprod', 'nanmax',
           'nanmin', 'nanmean', 'nanvar', 'nanstd', 'cumsum', 'cumprod', 'nancumsum',
           'nancumprod', 'cumulative_sum', 'cumulative_prod', 'count_nonzero', 'ptp',
           'average']


# --- the common reduction ---------------------------------------------------------------------

def _reduction_axes(a, axis):
  """`axis` as a tuple of distinct non-negative dims of `a` (all dims for None)."""
  if axis is None:
    return tuple(range(a.ndim))
  axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
  axes = tuple(canonicalize_axis(operator.index(ax), a.ndim) for ax in axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"duplicate value in 'axis': {axis}")
  return axes


def _promote_integer_dtype(dtype):
  """Small integers (and bool) as the default integer of their signedness."""
  if dtypes.is_bool(dtype):
    return dtypes.default_int_dtype()
  if dtypes.is_unsigned(dtype):
    return builtins.max(dtype, dtypes.canonicalize_dtype(np.uint64), key=lambda d: d.itemsize)
  if dtypes.is_integer(dtype):
    return builtins.max(dtype, dtypes.default_int_dtype(), key=lambda d: d.itemsize)
  return dtype


def _identity_value(dtype, value):
  """The scalar `value` (0, 1, ±inf, True) as `dtype`; ±inf saturates for integers."""
  if dtypes.is_bool(dtype):
    return np.array(value > 0, dtype)
  if np.isinf(value) and dtypes.is_integer(dtype):
    info = dtypes.iinfo(dtype)
    return np.array(info.min if value < 0 else info.max, dtype)
  return np.array(value, dtype)


def _upcast_f16(dtype):
  return np.dtype(np.float32) if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


# name -> (lax binary op name, reduce primitive function) per operand kind
_MONOIDS = {
    "add": ("add", lax.reduce_sum), "or": ("bitwise_or", lax.reduce_or),
    "mul": ("mul", lax.reduce_prod), "and": ("bitwise_and", lax.reduce_and),
    "max": ("max", lax.reduce_max), "min": ("min", lax.reduce_min),
}


def _reduction(a, name, monoid, init_value, *, bool_monoid=None, has_identity=True,
               preproc=None, upcast_f16=False, axis=None, dtype=None, out=None,
               keepdims=False, initial=None, where=None, promote_integers=False):
  """The shared reduction: convert, mask with `where`, reduce, apply `initial`."""
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
  check_arraylike(name, a)
  dtype = None if dtype is None else user_dtype(dtype, name)
  if initial is None and not has_identity and where is not None:
    raise ValueError(f"reduction operation {name} does not have an identity, so to use "
                     f"a where mask one has to specify 'initial'")
  a = a if is_array(a) else asarray(a)
  a = preproc(a) if preproc else a
  axes = _reduction_axes(a, axis)
  if initial is None and not has_identity and builtins.any(a.shape[d] == 0 for d in axes):
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
  result_dtype = a.dtype if dtype is None else dtype
  if dtype is None and promote_integers:
    result_dtype = _promote_integer_dtype(result_dtype)
  compute_dtype = _upcast_f16(result_dtype) if upcast_f16 else result_dtype
  a = lax.convert_element_type(a, compute_dtype)
  op_name, reducer = _MONOIDS[bool_monoid if dtypes.is_bool(compute_dtype) and bool_monoid
                              else monoid]
  if where is not None:
    a = _where(where, a, _identity_value(compute_dtype, init_value))
  result = reducer(a, axes)
  if initial is not None:
    initial = lax.convert_element_type(dtypes.check_python_int(initial), compute_dtype)
    if initial.shape != ():
      raise ValueError(f"initial value must be a scalar. Got array of shape {initial.shape}")
    result = getattr(lax, op_name)(initial, result)
  if keepdims:
    result = lax.expand_dims(result, axes)
  return lax.convert_element_type(result, result_dtype)


def _to_numeric(a):
  return promote_dtypes_numeric(a)[0]


def _to_bool(a):
  """The truth of each element for all/any (a complex element's is its real
  part's, as convert_element_type says; JAX does not warn of it here)."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
    return lax.convert_element_type(a, dtypes.bool_)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
  """Sum of elements. Booleans count as int32; small integers sum as int32 (uint32)."""
  return _reduction(a, "sum", "add", 0, bool_monoid="or", preproc=_to_numeric,
                    upcast_f16=True, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                    initial=initial, where=where, promote_integers=promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  """Product of elements (promoted as for `sum`)."""
  return _reduction(a, "prod", "mul", 1, bool_monoid="and", preproc=_to_numeric,
                    upcast_f16=True, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                    initial=initial, where=where, promote_integers=promote_integers)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum; NaN if any element is NaN. Empty reductions need `initial`."""
  return _reduction(a, "max", "max", -np.inf, has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where=where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum; NaN if any element is NaN. Empty reductions need `initial`."""
  return _reduction(a, "min", "min", np.inf, has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where=where)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):
  """Whether every element is nonzero (`reduce_and` of booleans)."""
  return _reduction(a, "all", "and", True, preproc=_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
  """Whether any element is nonzero (`reduce_or` of booleans)."""
  return _reduction(a, "any", "or", False, preproc=_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where=where)


# --- mean, var, std --------------------------------------------------------------------------

def _axis_size(a, axis):
  return math.prod(a.shape[d] for d in _reduction_axes(a, axis))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Sum divided by the element count (or the count of `where`); ints give float32."""
  check_arraylike("mean", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.mean is not supported.")
  a = a if is_array(a) else asarray(a)
  result_dtype = (to_inexact_dtype(a.dtype) if dtype is None else user_dtype(dtype, "mean"))
  compute_dtype = _upcast_f16(result_dtype) if dtypes.is_inexact(result_dtype) else result_dtype
  if where is None:
    normalizer = _axis_size(a, axis)
  else:
    normalizer = sum(broadcast_to(where, a.shape), axis, dtype=compute_dtype,
                     keepdims=keepdims)
  total = sum(a, axis, dtype=compute_dtype, keepdims=keepdims, where=where)
  result = lax.div(total, lax.convert_element_type(normalizer, compute_dtype))
  return lax.convert_element_type(result, result_dtype)


def _var_dtypes(a_dtype, dtype):
  """(computation dtype, result dtype) of var/std."""
  if dtype is not None:
    if not dtypes.is_complex(dtype) and dtypes.is_complex(a_dtype):
      raise ValueError("jax.numpy.var does not yet support real dtype parameters when "
                       "computing the variance of an array of complex values.")
    return _upcast_f16(dtype), dtype
  if not dtypes.is_inexact(a_dtype):
    return to_inexact_dtype(a_dtype), to_inexact_dtype(a_dtype)
  return _upcast_f16(a_dtype), dtypes.to_real_dtype(a_dtype)


_mean = mean   # for `var`, whose parameter `mean` hides the function


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
  """Mean squared deviation from the mean, divided by `N - ddof`; NaN if that is <= 0.
  `mean`, when given, is used as the mean (computed with keepdims=True) instead of
  computing it."""
  if correction is None:
    correction = ddof
  elif not isinstance(ddof, int) or ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  check_arraylike("var", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.var is not supported.")
  a = a if is_array(a) else asarray(a)
  dtype = None if dtype is None else user_dtype(dtype, "var")
  compute_dtype, dtype = _var_dtypes(a.dtype, dtype)
  a = lax.convert_element_type(a, compute_dtype)
  a_mean = (_mean(a, axis, dtype=compute_dtype, keepdims=True, where=where) if mean is None
            else lax.convert_element_type(asarray(mean), compute_dtype))
  centered = lax.sub(a, a_mean)
  if dtypes.is_complex(compute_dtype):
    centered = lax.real(lax.mul(centered, lax.conj(centered)))
    compute_dtype = centered.dtype
  else:
    centered = lax.square(centered)
  if where is None:
    normalizer = lax.convert_element_type(_axis_size(a, axis), compute_dtype)
  else:
    normalizer = sum(broadcast_to(where, a.shape), axis, dtype=compute_dtype,
                     keepdims=keepdims)
  normalizer = lax.sub(normalizer, lax.convert_element_type(correction, compute_dtype))
  total = sum(centered, axis, dtype=compute_dtype, keepdims=keepdims, where=where)
  result = lax.convert_element_type(lax.div(total, normalizer), dtype)
  return _where(normalizer > 0, result, np.nan)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
  """Square root of `var` (`mean` as there)."""
  if correction is None:
    correction = ddof
  elif not isinstance(ddof, int) or ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  check_arraylike("std", a)
  if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
    raise ValueError(f"dtype argument to jnp.std must be inexact; got {dtype}")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.std is not supported.")
  return lax.sqrt(var(a, axis=axis, dtype=dtype, correction=correction, keepdims=keepdims,
                      where=where, mean=mean))


# --- argmax / argmin -----------------------------------------------------------------------------

def _arg_reduction(name, lax_fn, a, axis, out, keepdims):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
  a = ensure_arraylike(name, a)
  if axis is None:
    dims = tuple(range(a.ndim))
    a, axis = ravel(a), 0
  else:
    axis = canonicalize_axis(axis, a.ndim)
    dims = (axis,)
  if a.shape[axis] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence")
  result = lax_fn(a, axis, dtypes.default_int_dtype())
  return lax.expand_dims(result, dims) if keepdims else result


def argmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum: the first one, or the first NaN if there is one."""
  return _arg_reduction("argmax", lax.argmax, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum: the first one, or the first NaN if there is one."""
  return _arg_reduction("argmin", lax.argmin, a, axis, out, keepdims)


def _nan_arg_reduction(name, arg_fn, fill, a, axis, out, keepdims):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
  a = ensure_arraylike(name, a)
  if not dtypes.is_inexact(a.dtype):
    return arg_fn(a, axis=axis, keepdims=keepdims)
  nan_mask = isnan(a)
  result = arg_fn(_where(nan_mask, fill, a), axis=axis, keepdims=keepdims)
  return _where(all(nan_mask, axis=axis, keepdims=keepdims), -1, result)


def nanargmax(a, axis=None, out=None, keepdims=None):
  """argmax ignoring NaNs. An all-NaN slice gives -1 (NumPy raises instead)."""
  return _nan_arg_reduction("nanargmax", argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
  """argmin ignoring NaNs. An all-NaN slice gives -1 (NumPy raises instead)."""
  return _nan_arg_reduction("nanargmin", argmin, np.inf, a, axis, out, keepdims)


# --- NaN-ignoring reductions -------------------------------------------------------------------

def _nan_reduction(a, name, reduction, init_value, nan_if_all_nan, axis=None,
                   keepdims=False, **kwargs):
  """`reduction` with NaNs replaced by its identity; all-NaN slices give NaN if asked."""
  check_arraylike(name, a)
  a = a if is_array(a) else asarray(a)
  if not dtypes.is_inexact(a.dtype):
    return reduction(a, axis=axis, keepdims=keepdims, **kwargs)
  nan_mask = isnan(a)
  out = reduction(_where(nan_mask, _identity_value(a.dtype, init_value), a), axis=axis,
                  keepdims=keepdims, **kwargs)
  if nan_if_all_nan:
    return _where(all(nan_mask, axis=axis, keepdims=keepdims),
                     np.array(np.nan, out.dtype), out)
  return out


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """Sum treating NaNs as zero."""
  return _nan_reduction(a, "nansum", sum, 0, False, axis=axis, keepdims=keepdims,
                        dtype=dtype, out=out, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """Product treating NaNs as one."""
  return _nan_reduction(a, "nanprod", prod, 1, False, axis=axis, keepdims=keepdims,
                        dtype=dtype, out=out, initial=initial, where=where)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum ignoring NaNs; an all-NaN slice gives NaN (unless `initial` is given)."""
  return _nan_reduction(a, "nanmax", max, -np.inf, initial is None, axis=axis,
                        keepdims=keepdims, out=out, initial=initial, where=where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum ignoring NaNs; an all-NaN slice gives NaN (unless `initial` is given)."""
  return _nan_reduction(a, "nanmin", min, np.inf, initial is None, axis=axis,
                        keepdims=keepdims, out=out, initial=initial, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
  """Mean of the non-NaN elements (NaN for an all-NaN slice)."""
  check_arraylike("nanmean", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanmean is not supported.")
  a = a if is_array(a) else asarray(a)
  if not dtypes.is_inexact(a.dtype):
    return mean(a, axis, dtype, out, keepdims, where=where)
  dtype = to_inexact_dtype(a.dtype) if dtype is None else user_dtype(dtype, "nanmean")
  count = sum(lax.bitwise_not(isnan(a)), axis=axis, dtype=dtype, keepdims=keepdims,
              where=where)
  return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), count)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  """Variance of the non-NaN elements (NaN where `count - ddof <= 0`); `mean`, when
  given, is their mean (computed with keepdims=True)."""
  check_arraylike("nanvar", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanvar is not supported.")
  a = a if is_array(a) else asarray(a)
  dtype = None if dtype is None else user_dtype(dtype, "nanvar")
  compute_dtype, dtype = _var_dtypes(a.dtype, dtype)
  a = lax.convert_element_type(a, compute_dtype)
  a_mean = (nanmean(a, axis, dtype=compute_dtype, keepdims=True, where=where) if mean is None
            else lax.convert_element_type(asarray(mean), compute_dtype))
  centered = _where(isnan(a), 0, lax.sub(a, a_mean))
  if dtypes.is_complex(centered.dtype):
    centered = lax.real(lax.mul(centered, lax.conj(centered)))
  else:
    centered = lax.square(centered)
  count = sum(lax.bitwise_not(isnan(a)), axis=axis, keepdims=keepdims, where=where)
  count = count - ddof
  empty = lax.le(count, lax.full_like(count, 0))
  total = _where(empty, np.nan, sum(centered, axis, keepdims=keepdims, where=where))
  divisor = _where(empty, 1, count)
  return lax.convert_element_type(
      lax.div(total, lax.convert_element_type(divisor, total.dtype)), dtype)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  """Square root of `nanvar` (`mean` as there)."""
  check_arraylike("nanstd", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanstd is not supported.")
  return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                         where=where, mean=mean))


# --- cumulative reductions --------------------------------------------------------------------

def _cumulative(name, lax_fn, a, axis, dtype, out, fill_nan=False, fill_value=0,
                promote_integers=False):
  """Runs `lax_fn` along one axis (of the flattened array when `axis` is None)."""
  check_arraylike(name, a)
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported")
  dtype = None if dtype is None else user_dtype(dtype, name)
  a = a if is_array(a) else asarray(a)
  if axis is None or a.ndim == 0:
    a = lax.reshape(a, (a.size,))
  axis = canonicalize_axis(0 if axis is None else axis, a.ndim)
  if fill_nan and dtypes.is_inexact(a.dtype):
    a = _where(isnan(a), np.array(fill_value, a.dtype), a)
  result_dtype = a.dtype if dtype is None else dtype
  if (dtype is None and promote_integers) or dtypes.is_bool(result_dtype):
    result_dtype = _promote_integer_dtype(result_dtype)
  result = lax_fn(lax.convert_element_type(a, result_dtype), axis)
  if dtype is not None and dtypes.is_bool(dtype):
    result = lax.convert_element_type(result, dtypes.bool_)
  return result


def cumsum(a, axis=None, dtype=None, out=None):
  """Running sums along `axis` (the flattened array by default); bool counts as int."""
  return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
  """Running products along `axis` (the flattened array by default)."""
  return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def nancumsum(a, axis=None, dtype=None, out=None):
  """cumsum treating NaNs as zero."""
  return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, fill_nan=True,
                     fill_value=0)


def nancumprod(a, axis=None, dtype=None, out=None):
  """cumprod treating NaNs as one."""
  return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, fill_nan=True,
                     fill_value=1)


def _cumulative_api(name, lax_fn, identity, x, axis, dtype, include_initial):
  x = ensure_arraylike(name, x)
  if x.ndim == 0:
    raise ValueError(f"The input must be non-scalar to take a cumulative "
                     f"{name.split('_')[1]}, however a scalar value or scalar array was "
                     f"given.")
  if axis is None:
    if x.ndim > 1:
      raise ValueError(f"The input array has rank {x.ndim}, however axis was not set to "
                       f"an explicit value. The axis argument is only optional for "
                       f"one-dimensional arrays.")
    axis = 0
  axis = canonicalize_axis(axis, x.ndim)
  out = _cumulative(name, lax_fn, x, axis, dtype, None, promote_integers=True)
  if include_initial:
    shape = list(x.shape)
    shape[axis] = 1
    out = lax.concatenate([lax.full(shape, identity, out.dtype), out], axis)
  return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative sum (integers promoted; optionally starting with 0)."""
  return _cumulative_api("cumulative_sum", lax.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative product (integers promoted; optionally starting with 1)."""
  return _cumulative_api("cumulative_prod", lax.cumprod, 1, x, axis, dtype, include_initial)


# --- counting, ranges, averages ----------------------------------------------------------------

def count_nonzero(a, axis=None, keepdims=False):
  """Number of nonzero elements (int32)."""
  a = ensure_arraylike("count_nonzero", a)
  return sum(lax.ne(a, np.zeros((), a.dtype)), axis=axis,
             dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
  """Range `max - min` along `axis`."""
  check_arraylike("ptp", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
  return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """Weighted mean; 1-D `weights` apply along a single `axis`.

  With `returned`, also gives the sum of the weights (broadcast to the result).
  """
  if weights is None:
    a = ensure_arraylike("average", a)
    a, = promote_dtypes_inexact(a)
    avg = mean(a, axis=axis, keepdims=keepdims)
    weights_sum = lax.full_like(avg, _axis_size(a, axis))
  else:
    check_arraylike("average", a, weights)
    a, weights = (asarray(x) for x in promote_dtypes_inexact(a, weights))
    if a.shape != weights.shape:
      if weights.ndim != 1:
        raise ValueError("1D weights expected when shapes of a and weights differ.")
      if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
      if np.ndim(axis) != 0:
        raise ValueError("Single axis expected when shapes of a and weights differ")
      axis = canonicalize_axis(axis, a.ndim)
      if weights.shape[0] != a.shape[axis]:
        raise ValueError("Length of weights not compatible with specified axis.")
      weights = broadcast_to(weights, (1,) * (a.ndim - 1) + weights.shape)
      weights = moveaxis(weights, -1, axis)
    weights_sum = sum(weights, axis=axis, keepdims=keepdims)
    avg = sum(a * weights, axis=axis, keepdims=keepdims) / weights_sum
  if returned:
    return avg, broadcast_to(weights_sum, avg.shape)
  return avg
