"""Sorting, searching, quantiles and set operations, as `jax.numpy` has them.

Everything sorts with `lax.sort`, so the order is lax's sort order: floats
by value with -0.0 equal to 0.0 and NaNs last (as NumPy), complex numbers by
(real, imag). `searchsorted` compares in that same order, so it agrees with
`sort` on NaNs.

Data-dependent sizes: `unique` and the set operations return as many
elements as the data says, which needs concrete (not traced) inputs. Under
`jit` pass a static `size=`: the result then has exactly `size` elements,
truncated or padded with `fill_value` (by default the smallest result, as in
JAX; for `setdiff1d` 0). Without `size` a traced input raises
`ConcretizationTypeError`.

The functions JAX wraps in `jit` (sort, argsort, partition, quantile, ...)
are wrapped here too, so they appear in traced programs as `jit` equations.
"""

import functools
import math
import operator
from typing import NamedTuple

import numpy as np

from refimpl import dtypes, lax
from refimpl.api import jit
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy.creation import (arange, asarray, broadcast_to, concrete, ensure_arraylike,
                                    full, user_dtype)
from refimpl.numpy.manipulation import concatenate, diff, moveaxis, ravel, swapaxes
from refimpl.numpy.reductions import any as _any, cumsum, sum as _sum
from refimpl.numpy.ufuncs import isnan, where
from refimpl.numpy.util import check_arraylike, promote_dtypes, promote_dtypes_inexact
from refimpl.sharding import check_out_sharding
from refimpl.numpy.vectorize import vectorize

__all__ = ['sort', 'argsort', 'lexsort', 'partition', 'argpartition', 'sort_complex',
           'searchsorted', 'digitize', 'quantile', 'nanquantile', 'percentile',
           'nanpercentile', 'median', 'nanmedian', 'unique', 'unique_all', 'unique_counts',
           'unique_inverse', 'unique_values', 'intersect1d', 'setdiff1d', 'setxor1d',
           'union1d', 'isin']


def _const(x, value):
  """`value` as a NumPy scalar of x's dtype (a literal in a traced program)."""
  return np.array(value, dtypes.dtype(x))


def _index_iota(shape, dimension, dtype=None):
  return lax.broadcasted_iota(dtypes.default_int_dtype() if dtype is None else dtype, shape,
                              dimension)


# --- sort, argsort, lexsort ----------------------------------------------------------------

def _sort_axis(fun_name, arr, axis, kind, order):
  """Checks `kind`/`order` (unsupported) and resolves `axis` (None flattens)."""
  if kind is not None:
    raise TypeError(f"'kind' argument to {fun_name} is not supported. Use stable=True or "
                    "stable=False to specify sort stability.")
  if order is not None:
    raise TypeError(f"'order' argument to {fun_name} is not supported.")
  if axis is None:
    return ravel(arr), 0
  return arr, canonicalize_axis(axis, arr.ndim)


@functools.partial(jit, static_argnames=("axis", "kind", "order", "stable", "descending"))
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
  """A sorted copy of `a` along `axis` (None: flattened). NaNs sort last;
  `descending` reverses the ascending result."""
  arr, axis = _sort_axis("sort", ensure_arraylike("sort", a), axis, kind, order)
  result = lax.sort(arr, dimension=axis, is_stable=stable)
  return lax.rev(result, (axis,)) if descending else result


@functools.partial(jit, static_argnames=("axis", "kind", "order", "stable", "descending",
                                         "dtype"))
def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
  """Indices (of `dtype`, by default the default integer dtype) that sort `a`
  along `axis`: the values are sorted together with an iota. A stable
  descending sort keeps equal elements in their original order (it sorts the
  reversed array, then reverses back)."""
  arr, axis = _sort_axis("argsort", ensure_arraylike("argsort", a), axis, kind, order)
  iota = _index_iota(arr.shape, axis, None if dtype is None else user_dtype(dtype, "argsort"))
  if descending and stable:
    arr, iota = lax.rev(arr, (axis,)), lax.rev(iota, (axis,))
  _, indices = lax.sort_key_val(arr, iota, dimension=axis, is_stable=stable)
  return lax.rev(indices, (axis,)) if descending else indices


@functools.partial(jit, static_argnames=("axis",))
def lexsort(keys, axis=-1):
  """Indices sorting by several keys, the *last* key primary (NumPy's rule):
  one multi-key `lax.sort` of the reversed keys and an iota."""
  keys = tuple(keys)
  if not keys:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  keys = [ensure_arraylike("lexsort", k) for k in keys]
  if len({k.shape for k in keys}) > 1:
    raise ValueError("all keys need to be the same shape")
  if keys[0].ndim == 0:
    return asarray(0, dtype=dtypes.default_int_dtype())
  axis = canonicalize_axis(axis, keys[0].ndim)
  iota = _index_iota(keys[0].shape, axis)
  return lax.sort((*keys[::-1], iota), dimension=axis, num_keys=len(keys))[-1]


@jit
def sort_complex(a):
  """`a` sorted along its last axis, then converted to complex."""
  a = ensure_arraylike("sort_complex", a)
  complex_dtype = dtypes.canonicalize_dtype(dtypes.to_complex_dtype(a.dtype))
  return lax.convert_element_type(lax.sort(a), complex_dtype)


# --- partition -----------------------------------------------------------------------------

def _partition_setup(fun_name, a, kth, axis):
  arr = ensure_arraylike(fun_name, a)
  if dtypes.is_complex(arr.dtype):
    raise NotImplementedError(f"jnp.{fun_name} for complex dtype is not implemented.")
  axis = canonicalize_axis(axis, arr.ndim)
  kth = canonicalize_axis(kth, arr.shape[axis])
  return swapaxes(arr, axis, -1), kth, axis


def _reversed_order(arr):
  """`arr` mapped by an order-reversing function, so `top_k` of it finds the
  smallest elements: -arr, or -(arr + 1) for unsigned integers (0 maps to
  the largest value). As in JAX, -INT_MIN wraps to INT_MIN, so a signed
  INT_MIN is mistaken for the largest value (and the partition is wrong)."""
  if dtypes.is_unsigned(arr.dtype):
    return -(arr + 1)
  return -arr


@functools.partial(jit, static_argnames=("kth", "axis"))
def partition(a, kth, axis=-1):
  """A copy of `a` with the `kth` smallest element (along `axis`) at index
  kth, smaller-or-equal elements before it and larger-or-equal after.

  Two `top_k` calls: the kth+1 smallest (ascending) then the rest (largest
  first). Order is IEEE totalOrder (top_k's): a NaN with its sign bit set
  counts as smallest, unlike NumPy. Signed integer INT_MIN is mishandled as
  in JAX (see `_reversed_order`).
  """
  arr, kth, axis = _partition_setup("partition", a, kth, axis)
  smallest = lax.top_k(_reversed_order(arr), kth + 1)[0]
  bottom = (-smallest - 1) if dtypes.is_unsigned(arr.dtype) else -smallest
  top = lax.top_k(arr, arr.shape[-1] - kth - 1)[0]
  return swapaxes(lax.concatenate([bottom, top], arr.ndim - 1), -1, axis)


@functools.partial(jit, static_argnames=("kth", "axis"))
def argpartition(a, kth, axis=-1):
  """Indices partitioning `a` as `partition` does.

  The indices of the kth+1 smallest come from `top_k` of the reversed
  order; the rest are the positions not taken, found with `top_k` of a
  proxy array that is 0 at the taken positions and 1 elsewhere.
  """
  arr, kth, axis = _partition_setup("argpartition", a, kth, axis)
  bottom = lax.top_k(_reversed_order(arr), kth + 1)[1]
  batch = tuple(_index_iota(bottom.shape, d) for d in range(arr.ndim - 1))
  proxy = full(arr.shape, 1.0).at[batch + (bottom,)].set(0.0)
  top = lax.top_k(proxy, arr.shape[-1] - kth - 1)[1]
  return swapaxes(lax.concatenate([bottom, top], arr.ndim - 1), -1, axis)


# --- comparisons in the sort order (for searching) -----------------------------------------

def _total_order_int(x):
  """Integers that order like IEEE totalOrder on floats `x` (the bit trick of
  `refimpl.lax.sorting._total_order_key`, in lax operations)."""
  int_dtype = np.dtype(f"int{8 * np.dtype(x.dtype).itemsize}")
  bits = lax.bitcast_convert_type(x, int_dtype)
  flipped = lax.bitwise_xor(bits, _const(bits, np.iinfo(int_dtype).max))
  return lax.select(lax.lt(bits, _const(bits, 0)), flipped, bits)


def _order_keys(x):
  """Keys whose lexicographic order is the sort order of `x` (as lax.sort)."""
  if dtypes.is_complex(x.dtype):
    return [_total_order_int(lax.real(x)), _total_order_int(lax.imag(x))]
  if dtypes.is_float(x.dtype):
    x = lax.select(lax.eq(x, _const(x, 0)), lax.full_like(x, 0), x)
    x = lax.select(lax.ne(x, x), lax.full_like(x, np.nan), x)
    return [_total_order_int(x)]
  return [x]


def _keys_less(x_keys, y_keys, or_equal):
  """x < y (x <= y if `or_equal`) lexicographically by the keys, elementwise."""
  result = None
  for xk, yk in reversed(list(zip(x_keys, y_keys))):
    if result is None:
      result = lax.le(xk, yk) if or_equal else lax.lt(xk, yk)
    else:
      result = lax.bitwise_or(lax.lt(xk, yk), lax.bitwise_and(lax.eq(xk, yk), result))
  return result


def _searchsorted_scan(sorted_arr, query, side, dtype, unrolled):
  """Binary search, as JAX: for each query (vectorized over its elements) a
  `scan` of ceil(log2(n + 1)) bisection steps of the carry (low, high), the
  answer being the final `high`; `unrolled` unrolls the scan fully."""
  n = sorted_arr.shape[0]
  n_levels = int(np.ceil(np.log2(n + 1)))

  def search(q):
    def step(carry, _):
      low, high = carry
      mid = lax.div(lax.add(low, high), _const(low, 2))
      # 'left': the answer is at or before mid when q <= a[mid]; 'right': when q < a[mid]
      go_left = _keys_less(_order_keys(q), _order_keys(sorted_arr[mid]),
                           or_equal=side == "left")
      return (lax.select(go_left, low, mid), lax.select(go_left, mid, high)), ()

    init = (np.array(0, dtype), np.array(n, dtype))
    (_, high), _ = lax.scan(step, init, (), length=n_levels,
                            unroll=n_levels if unrolled else 1)
    return high

  return vectorize(search)(query)


def _searchsorted_compare_all(sorted_arr, query, side, dtype):
  """Counts, for each query q, the elements a with a < q ('left') or a <= q
  ('right') in the sort order: every pair compared."""
  shape = sorted_arr.shape + query.shape
  a_keys = [lax.broadcast_in_dim(k, shape, (0,)) for k in _order_keys(sorted_arr)]
  q_keys = [lax.broadcast_in_dim(k, shape, tuple(range(1, len(shape))))
            for k in _order_keys(query)]
  return _sum(_keys_less(a_keys, q_keys, or_equal=side == "right"), axis=0, dtype=dtype)


def _searchsorted_sort(sorted_arr, query, side, dtype):
  """Ranks: a query's rank among queries and `a` together, minus its rank
  among the queries, is the number of elements of `a` before it. Ties go
  after `a`'s elements for 'right' (queries placed last in a stable sort)."""
  def rank(x):
    iota = lax.iota(np.int32, x.shape[0])
    return lax.full_like(iota, 0).at[argsort(x)].set(iota)
  flat = ravel(query)
  if side == "left":
    index = rank(lax.concatenate([flat, sorted_arr], 0))[:flat.size]
  else:
    index = rank(lax.concatenate([sorted_arr, flat], 0))[sorted_arr.size:]
  found = lax.reshape(lax.sub(index, rank(flat)), query.shape)
  return lax.convert_element_type(found, dtype)


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


@functools.partial(jit, static_argnames=("side", "method"))
def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Where to insert `v` into sorted 1-D `a` to keep it sorted: for 'left'
  the first suitable index, for 'right' the last. int32 indices.

  Compares in the sort order (NaNs last). `method` only chooses how, as in
  JAX: 'scan' (the default) is a binary search in a `lax.scan` per query,
  'scan_unrolled' the same scan fully unrolled, 'compare_all' compares every
  pair and counts, 'sort' ranks by sorting. All give the same result.
  """
  if sorter is None:
    a, v = ensure_arraylike("searchsorted", a, v)
  else:
    a, v, sorter = ensure_arraylike("searchsorted", a, v, sorter)
  if side not in ("left", "right"):
    raise ValueError(f"{side!r} is an invalid value for keyword 'side'. "
                     "Expected one of ['left', 'right'].")
  if method not in _SEARCH_METHODS:
    raise ValueError(f"{method!r} is an invalid value for keyword 'method'. "
                     "Expected one of ['sort', 'scan', 'scan_unrolled', 'compare_all'].")
  if a.ndim != 1:
    raise ValueError("a should be 1-dimensional")
  a, v = promote_dtypes(a, v)
  if sorter is not None:
    a = a[sorter]
  dtype = np.int32 if a.shape[0] <= np.iinfo(np.int32).max // 2 else np.int64
  if a.shape[0] == 0:
    return lax.full_like(v, 0, dtype=dtype)
  search = {"scan": functools.partial(_searchsorted_scan, unrolled=False),
            "scan_unrolled": functools.partial(_searchsorted_scan, unrolled=True),
            "sort": _searchsorted_sort,
            "compare_all": _searchsorted_compare_all}[method]
  return search(a, v, side, dtype)


@functools.partial(jit, static_argnames=("right", "method"))
def digitize(x, bins, right=False, *, method=None):
  """The index of the bin each `x` falls in (NumPy's digitize): bins may be
  increasing or decreasing; `right` makes bins closed on the right."""
  x, bins = ensure_arraylike("digitize", x, bins)
  if bins.ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
  if bins.shape[0] == 0:
    return lax.full_like(x, 0, dtype=np.int32)
  side = "left" if right else "right"
  kwargs = {} if method is None else {"method": method}
  increasing = searchsorted(bins, x, side=side, **kwargs)
  decreasing = bins.shape[0] - searchsorted(lax.rev(bins, (0,)), x, side=side, **kwargs)
  return where(bins[-1] >= bins[0], increasing, decreasing)


# --- quantiles -----------------------------------------------------------------------------

_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check_quantile_args(name, out, overwrite_input):
  if overwrite_input or out is not None:
    raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                     "out != None")


def _quantile_axis(a, axis, keepdims):
  """Gathers the reduced axes of `a` into one: returns (a, axis, keepdims_shape).

  `keepdims_shape` is the shape the result (less q's dimension) takes with
  `keepdims` when that is not just the gathered axis kept with size 1.
  """
  if axis is None:
    return ravel(a), 0, (1,) * a.ndim if keepdims else None
  if isinstance(axis, tuple):
    axes = tuple(canonicalize_axis(ax, a.ndim) for ax in axis)
    if len(set(axes)) != len(axes):
      raise ValueError("repeated axis")
    kept = tuple(d for d in range(a.ndim) if d not in axes)
    merged = lax.reshape(a, tuple(a.shape[d] for d in kept) + (
        math.prod(a.shape[d] for d in axes),), kept + axes)
    shape = tuple(1 if d in axes else n for d, n in enumerate(a.shape))
    return merged, merged.ndim - 1, shape if keepdims else None
  return a, canonicalize_axis(axis, a.ndim), None


def _quantile(a, q, axis, method, keepdims, ignore_nan):
  """The q-th quantiles of `a` along `axis` (NumPy's definitions of `method`).

  The data are sorted; the quantile sits at the virtual index q*(n-1), n
  the number of (non-NaN, with `ignore_nan`) elements, between the
  elements at its floor and ceiling: 'linear' interpolates (as
  low*(1-w) + high*w, in q's dtype), 'lower'/'higher' take one, 'midpoint'
  averages them, 'nearest' takes the lower one when w <= 0.5 (NumPy rounds
  half to even instead). A NaN in a slice makes its quantiles NaN unless
  `ignore_nan`; an all-NaN slice gives NaN either way. The result has q's
  dimension first, then `a`'s without the reduced axes.
  """
  if method not in _QUANTILE_METHODS:
    raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', or "
                     "'nearest'")
  a, = promote_dtypes_inexact(a)
  if dtypes.is_complex(a.dtype):
    raise ValueError("quantile does not support complex input, as the operation is "
                     "poorly defined.")
  a, axis, keepdims_shape = _quantile_axis(a, axis, keepdims)
  if q.ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
  if ignore_nan:
    a = where(isnan(a), _const(a, np.nan), a)  # one NaN, positive: NaNs sort last
    n = _sum(lax.bitwise_not(isnan(a)), axis=axis, dtype=q.dtype, keepdims=True)
  else:
    a = where(_any(isnan(a), axis=axis, keepdims=True), _const(a, np.nan), a)
    n = lax.full(tuple(1 if d == axis else s for d, s in enumerate(a.shape)),
                 a.shape[axis], q.dtype)
  a = lax.sort(a, dimension=axis)
  # Every quantity below has q's dimension, then a's with the reduced axis of size 1.
  q_ndim, shape = q.ndim, q.shape + n.shape
  q = lax.broadcast_in_dim(q, shape, tuple(range(q_ndim)))
  n = lax.broadcast_in_dim(n, shape, tuple(range(q_ndim, len(shape))))
  position = lax.mul(q, lax.sub(n, _const(n, 1)))
  low, high = lax.floor(position), lax.ceil(position)
  high_weight = lax.sub(position, low)
  low_weight = lax.sub(_const(high_weight, 1), high_weight)
  last = lax.max(lax.sub(n, _const(n, 1)), _const(n, 0))
  low_value = _take_along(a, lax.clamp(_const(low, 0), low, last), axis)
  high_value = _take_along(a, lax.clamp(_const(high, 0), high, last), axis)
  if method == "linear":
    result = lax.add(lax.mul(lax.convert_element_type(low_value, q.dtype), low_weight),
                     lax.mul(lax.convert_element_type(high_value, q.dtype), high_weight))
  elif method == "lower":
    result = low_value
  elif method == "higher":
    result = high_value
  elif method == "nearest":
    result = lax.select(lax.le(high_weight, _const(high_weight, 0.5)), low_value, high_value)
  else:
    result = lax.mul(lax.add(low_value, high_value), _const(low_value, 0.5))
  return _quantile_shape(lax.convert_element_type(result, a.dtype), q_ndim, axis, keepdims,
                         keepdims_shape)


def _quantile_shape(result, q_ndim, axis, keepdims, keepdims_shape):
  """A quantile `result` (q's dimension, then `a`'s with the gathered `axis` of
  size 1) without that axis, or with the reduced axes kept as size 1."""
  if not keepdims:
    return lax.squeeze(result, (q_ndim + axis,))
  if keepdims_shape is not None:
    return lax.reshape(result, result.shape[:q_ndim] + keepdims_shape)
  return result


def _weighted_quantile(a, q, weights, axis, keepdims, ignore_nan):
  """The q-th quantiles of `a` along `axis` by the 'inverted_cdf' method with
  `weights` (broadcast to `a`'s shape), as NumPy defines it: along the sorted
  data, the first element at which the cumulative weight reaches q times the
  total (never one of the leading elements of weight zero). NaNs as in
  `_quantile` (with `ignore_nan` they weigh nothing)."""
  a, = promote_dtypes_inexact(a)
  if dtypes.is_complex(a.dtype):
    raise ValueError("quantile does not support complex input, as the operation is "
                     "poorly defined.")
  if q.ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
  weights = broadcast_to(asarray(weights), a.shape)
  weights, _, _ = _quantile_axis(weights, axis, keepdims)
  a, axis, keepdims_shape = _quantile_axis(a, axis, keepdims)
  nan = isnan(a)
  if ignore_nan:
    weights = where(nan, _const(weights, 0), weights)
  a, weights = lax.sort((a, weights), dimension=axis, num_keys=1)
  cdf = cumsum(weights, axis=axis, dtype=q.dtype)
  n = a.shape[axis]
  cdf = lax.div(cdf, lax.slice_in_dim(cdf, n - 1, n, axis=axis))
  q_ndim, shape = q.ndim, q.shape + cdf.shape
  q = lax.broadcast_in_dim(q, shape, tuple(range(q_ndim)))
  cdf = lax.broadcast_in_dim(cdf, shape, tuple(range(q_ndim, len(shape))))
  below = lax.bitwise_or(lax.lt(cdf, q), lax.eq(cdf, _const(cdf, 0)))
  index = _sum(below, axis=q_ndim + axis, keepdims=True, dtype=dtypes.default_int_dtype())
  result = _take_along(a, lax.min(index, _const(index, n - 1)), axis)
  if not ignore_nan:
    any_nan = _any(nan, axis=axis, keepdims=True)
    result = where(lax.broadcast_in_dim(any_nan, result.shape,
                                        tuple(range(q_ndim, result.ndim))),
                   _const(result, np.nan), result)
  return _quantile_shape(result, q_ndim, axis, keepdims, keepdims_shape)


def _take_along(a, index, axis):
  """The elements of `a` at (float, in-bounds) positions `index` along
  `axis`, where `index` has q's dimensions then a's with `axis` of size 1:
  one gather batched over a's other dimensions, shaped like `index`."""
  q_ndim = index.ndim - a.ndim
  others = tuple(d for d in range(a.ndim) if d != axis)
  dnums = lax.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
      operand_batching_dims=others,
      start_indices_batching_dims=tuple(q_ndim + d for d in others))
  index = lax.convert_element_type(index, dtypes.default_int_dtype())
  return lax.gather(a, lax.expand_dims(index, (index.ndim,)), dnums, (1,) * a.ndim,
                    mode="promise_in_bounds")


_QUANTILE_STATIC = ("axis", "overwrite_input", "keepdims", "method")


def _quantile_function(name, ignore_nan, scale):
  """quantile / nanquantile (scale 1) and percentile / nanpercentile (scale 100)."""
  def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    check_arraylike(name, a, q)
    _check_quantile_args(name, out, overwrite_input)
    q = asarray(q)
    if scale != 1:
      q, = promote_dtypes_inexact(q)
      q = lax.div(q, _const(q, scale))
    if weights is None:
      return _quantile(asarray(a), q, axis, method, keepdims, ignore_nan)
    if method != "inverted_cdf":
      raise ValueError("Weighted quantiles are only supported for method='inverted_cdf', "
                       f"got method={method!r}")
    check_arraylike(name, weights)
    return _weighted_quantile(asarray(a), q, weights, axis, keepdims, ignore_nan)

  def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, *, weights=None, out_sharding=None):
    check_out_sharding(out_sharding, f"jnp.{name}")
    return quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights)
  fn, static = ((percentile, _QUANTILE_STATIC + ("out_sharding",)) if name == "percentile"
                else (quantile, _QUANTILE_STATIC))
  what = "percentiles (q in [0, 100])" if scale != 1 else "quantiles (q in [0, 1])"
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = (f"The {what} of `a` along `axis`{', ignoring NaNs' if ignore_nan else ''}."
                f"\n\n  `q` is a scalar or 1-D; `method` is one of {_QUANTILE_METHODS}, "
                "defined in `_quantile`; with `weights` (broadcast to `a`'s shape), "
                "'inverted_cdf', defined in `_weighted_quantile`.")
  return jit(fn, static_argnames=static)


quantile = _quantile_function("quantile", False, 1)
nanquantile = _quantile_function("nanquantile", True, 1)
percentile = _quantile_function("percentile", False, 100)
nanpercentile = _quantile_function("nanpercentile", True, 100)


@functools.partial(jit, static_argnames=("axis", "overwrite_input", "keepdims"))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The median along `axis`: the 0.5 quantile by the 'midpoint' method."""
  check_arraylike("median", a)
  _check_quantile_args("median", out, overwrite_input)
  return _quantile(asarray(a), asarray(0.5), axis, "midpoint", keepdims, False)


@functools.partial(jit, static_argnames=("axis", "overwrite_input", "keepdims"))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The median along `axis` ignoring NaNs (NaN for an all-NaN slice)."""
  check_arraylike("nanmedian", a)
  _check_quantile_args("nanmedian", out, overwrite_input)
  return _quantile(asarray(a), asarray(0.5), axis, "midpoint", keepdims, True)


# --- selecting by a mask (static sizes) ----------------------------------------------------

_SIZE_HINT = ("To make jnp.{0}() compatible with JIT and other transforms, you can "
              "specify a concrete value for the size argument, which will determine the "
              "output size.")


def _selected(mask, size, fun_name, fill_index=0):
  """The indices of the True entries of 1-D `mask`: as a NumPy array of the
  concrete `mask` when `size` is None, else exactly `size` of them,
  truncated or padded with `fill_index` (traceable)."""
  if size is None:
    context = f"The error arose in jnp.{fun_name}(). " + _SIZE_HINT.format(fun_name)
    return np.flatnonzero(np.asarray(concrete(mask, context)))
  from refimpl.numpy.selection import flatnonzero  # selection imports this module
  return flatnonzero(mask, size=size, fill_value=fill_index)


def _fill_after(values, count, size, fill_value):
  """`values` (first axis of length `size`) with the entries from `count` on
  replaced by `fill_value`; unchanged when `size` or `fill_value` is None."""
  if size is None or fill_value is None:
    return values
  valid = lax.broadcast_in_dim(lax.lt(_index_iota((size,), 0), count), values.shape, (0,))
  return where(valid, values, asarray(fill_value, dtype=values.dtype))


def _fill_after_smallest(values, count, size, fill_value):
  """`_fill_after`, where `fill_value` None means the smallest valid value, the
  first of the sorted `values` (0 when there is none): JAX's default."""
  if size and fill_value is None:
    fill_value = where(lax.gt(count, _const(count, 0)), values[0], _const(values, 0))
  return _fill_after(values, count, size, fill_value)


# --- unique --------------------------------------------------------------------------------

def _unique_sorted(arr, equal_nan):
  """The slices of `arr` along axis 0 sorted, a mask of the first slice of
  each run of equal ones, and the sorting permutation.

  Slices compare lexicographically by their elements in the sort order. The
  sort is stable, so the first of a run is that slice's first occurrence.
  NaNs equal each other when `equal_nan`. Complex elements with a NaN part
  become NaN+0j first (as in JAX).
  """
  if dtypes.is_complex(arr.dtype):
    arr = where(isnan(arr), _const(arr, np.nan), arr)
  n = arr.shape[0]
  columns = lax.transpose(lax.reshape(arr, (n, math.prod(arr.shape[1:]))), (1, 0))
  iota = _index_iota((n,), 0)
  keys = [columns[i] for i in range(columns.shape[0])]
  perm = lax.sort((*keys, iota), num_keys=len(keys))[-1] if keys else iota
  aux = arr[perm]
  if n == 0:
    return aux, lax.full((0,), False), perm
  before, after = aux[:-1], aux[1:]
  differs = lax.ne(after, before)
  if equal_nan and dtypes.is_inexact(arr.dtype):
    both_nan = lax.bitwise_and(isnan(after), isnan(before))
    differs = lax.bitwise_and(differs, lax.bitwise_not(both_nan))
  differs = _any(differs, axis=tuple(range(1, arr.ndim)))
  return aux, lax.concatenate([lax.full((1,), True), differs], 0), perm


def _unique(arr, axis, return_index=False, return_inverse=False, return_counts=False,
            equal_nan=True, size=None, fill_value=None, fun_name="unique"):
  """`unique` of `arr` along `axis` (an int): see `unique`."""
  n = arr.shape[axis]
  if n == 0 and size and fill_value is None:
    raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, "
                     "fill_value must be specified")
  aux, first, perm = _unique_sorted(moveaxis(arr, axis, 0), equal_nan)
  chosen = _selected(first, size, fun_name)
  if n == 0 and size:
    values = full((size,) + aux.shape[1:], fill_value, aux.dtype)
  else:
    values = _fill_after(aux[chosen], _sum(first), size, fill_value)
  results = [moveaxis(values, 0, axis)]
  if return_index:
    results.append(perm[chosen] if n else perm)
  if return_inverse:
    inverse = lax.sub(cumsum(first, dtype=perm.dtype), _const(perm, 1))
    results.append(lax.full_like(perm, 0).at[perm].set(inverse))
  if return_counts:
    if n == 0:
      counts = perm
    elif size is None:
      counts = diff(asarray(np.append(chosen, n), dtype=perm.dtype))
    else:
      counts = diff(_selected(first, size + 1, fun_name, fill_index=n))
    results.append(counts)
  return results[0] if len(results) == 1 else tuple(results)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, size=None, fill_value=None, sorted=True):
  """The sorted unique elements of `ar` (flattened), or its unique slices
  along `axis`. `sorted` (NumPy's) is accepted and ignored: the values are
  always sorted, as in JAX.

  Optionally also: `return_index`, the index of each value's first
  occurrence; `return_inverse`, for each element the index of its value
  (shaped like `ar` when `axis` is None, else 1-D); `return_counts`, how
  often each value occurs. NaNs count as one value when `equal_nan`.

  With a static `size` the outputs have `size` entries: extra values are
  `fill_value` (default: the smallest unique value), extra indices point at
  that value's first occurrence, extra counts are 0. Without `size` the
  input must be concrete.
  """
  del sorted  # always sorted
  check_arraylike("unique", ar)
  if size is None:
    ar = concrete(ar, "The error arose for the first argument of jnp.unique(). "
                  + _SIZE_HINT.format("unique"))
  else:
    size = operator.index(concrete(size, "The error arose for the size argument of "
                                   "jnp.unique(). " + _SIZE_HINT.format("unique")))
  arr = asarray(ar)
  if axis is not None:
    return _unique(arr, canonicalize_axis(axis, arr.ndim), return_index, return_inverse,
                   return_counts, equal_nan, size, fill_value)
  result = _unique(ravel(arr), 0, return_index, return_inverse, return_counts, equal_nan,
                   size, fill_value)
  if return_inverse:
    i = 1 + return_index
    result = (*result[:i], lax.reshape(result[i], arr.shape), *result[i + 1:])
  return result


class _UniqueAllResult(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


class _UniqueCountsResult(NamedTuple):
  values: object
  counts: object


class _UniqueInverseResult(NamedTuple):
  values: object
  inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
  """(values, indices, inverse_indices, counts) of `unique`; NaNs all distinct."""
  check_arraylike("unique_all", x)
  return _UniqueAllResult(*unique(x, True, True, True, equal_nan=False, size=size,
                                  fill_value=fill_value))


def unique_counts(x, /, *, size=None, fill_value=None):
  """(values, counts) of `unique`; NaNs all distinct."""
  check_arraylike("unique_counts", x)
  return _UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False, size=size,
                                     fill_value=fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
  """(values, inverse_indices) of `unique`; NaNs all distinct."""
  check_arraylike("unique_inverse", x)
  return _UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False, size=size,
                                      fill_value=fill_value))


def unique_values(x, /, *, size=None, fill_value=None):
  """The sorted unique values of `x`; NaNs all distinct."""
  check_arraylike("unique_values", x)
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# --- set operations ------------------------------------------------------------------------

def _in1d(elements, test_elements, invert, method="auto"):
  """For each element of `elements` (flattened), whether it equals some test
  element (NaN equals nothing). 'auto'/'compare_all' compare every pair;
  'binary_search' and 'sort' look each element up in the sorted test
  elements. Same result either way."""
  elements, test_elements = promote_dtypes(ravel(elements), ravel(test_elements))
  if elements.size == 0 or test_elements.size == 0:
    return lax.full(elements.shape, bool(invert))
  if method in ("auto", "compare_all"):
    shape = elements.shape + test_elements.shape
    pairs = lax.eq(lax.broadcast_in_dim(elements, shape, (0,)),
                   lax.broadcast_in_dim(test_elements, shape, (1,)))
    found = _any(pairs, axis=1)
  elif method in ("binary_search", "sort"):
    test_elements = lax.sort(test_elements)
    found = lax.eq(elements, test_elements[searchsorted(test_elements, elements)])
  else:
    raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                     "'binary_search', 'sort', and 'auto'")
  return lax.bitwise_not(found) if invert else found


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Whether each element of `element` is in `test_elements` (shaped like
  `element`); `invert` negates. `assume_unique` is only a hint."""
  check_arraylike("isin", element, test_elements)
  found = _in1d(element, test_elements, invert, method)
  return lax.reshape(found, np.shape(element))


def _set_operands(fun_name, ar1, ar2, size, concrete_args):
  """The flattened, promoted operands and the size of a set operation.

  Without `size`, the arguments at `concrete_args` must be concrete.
  """
  check_arraylike(fun_name, ar1, ar2)
  context = f"The error arose in {fun_name}(). " + _SIZE_HINT.format(fun_name)
  if size is None:
    ar1, ar2 = (concrete(a, context) if i in concrete_args else a
                for i, a in enumerate((ar1, ar2)))
  else:
    size = operator.index(concrete(size, context))
  arr1, arr2 = promote_dtypes(ravel(asarray(ar1)), ravel(asarray(ar2)))
  return arr1, arr2, size


def _leading(values, count, size, fun_name):
  """The first `count` entries of `values`: all of them for a concrete count
  (size None), else exactly `size` entries (padding: 0)."""
  if size is None:
    context = f"The error arose in jnp.{fun_name}(). " + _SIZE_HINT.format(fun_name)
    return values[:int(concrete(count, context))]
  return values.at[arange(size)].get(mode="fill", fill_value=0)


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """The sorted unique values found in either array (both flattened)."""
  arr1, arr2, size = _set_operands("union1d", ar1, ar2, size, (0, 1))
  return _unique(concatenate([arr1, arr2]), 0, size=size, fill_value=fill_value,
                 fun_name="union1d")


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values of `ar1` not in `ar2`; with `assume_unique`,
  the elements of `ar1` not in `ar2` in their original order. With `size`,
  `fill_value` defaults to 0."""
  arr1, arr2, size = _set_operands("setdiff1d", ar1, ar2, size, (0,))
  if assume_unique:
    candidates, keep = arr1, lax.full(arr1.shape, True)
  else:
    candidates, keep, _ = _unique_sorted(arr1, equal_nan=True)
  keep = lax.bitwise_and(keep, _in1d(candidates, arr2, invert=True))
  if candidates.size == 0:
    return full(size or 0, 0 if fill_value is None else fill_value, arr1.dtype)
  values = candidates.at[_selected(keep, size, "setdiff1d", fill_index=candidates.size)]
  values = values.get(mode="fill", fill_value=0)
  return _fill_after(values, _sum(keep), size, 0 if fill_value is None else fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """The sorted unique values found in both arrays (flattened); NaN is in no
  intersection. `return_indices` also gives each value's first index in
  `ar1` and in `ar2`. With `size`, padded values are `fill_value` (default:
  the smallest value of the intersection, or 0) and padded indices are out
  of bounds (`ar1.size`, `ar2.size`). `assume_unique` is only a hint."""
  arr1, arr2, size = _set_operands("intersect1d", ar1, ar2, size, (0, 1))
  aux, first, perm = _unique_sorted(arr1, equal_nan=True)
  keep = lax.bitwise_and(first, _in1d(aux, arr2, invert=False))
  count = _sum(keep, dtype=dtypes.default_int_dtype())
  if arr1.size == 0 or arr2.size == 0:
    values = full(size or 0, 0 if fill_value is None else fill_value, arr1.dtype)
    no_index = full(size or 0, 0, dtypes.default_int_dtype())
    return (values, no_index + arr1.size, no_index + arr2.size) if return_indices else values
  chosen = _selected(keep, size, "intersect1d", fill_index=arr1.size)
  values = aux.at[chosen].get(mode="fill", fill_value=0)
  values = _fill_after_smallest(values, count, size, fill_value)
  if not return_indices:
    return values
  index1 = perm.at[chosen].get(mode="fill", fill_value=arr1.size)
  sorted2, order2 = lax.sort_key_val(arr2, _index_iota(arr2.shape, 0))
  index2 = order2[searchsorted(sorted2, values)]  # first occurrence: the sort is stable
  if size is not None:
    index2 = where(lax.lt(_index_iota((size,), 0), count), index2, arr2.size)
  return values, index1, index2


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values found in exactly one of the arrays (flattened).
  A NaN in each array appears twice (NaN equals nothing), as in NumPy. With
  `size`, `fill_value` defaults to the smallest value of the result (or 0).
  `assume_unique` is only a hint."""
  arr1, arr2, size = _set_operands("setxor1d", ar1, ar2, size, (0, 1))
  aux1, first1, _ = _unique_sorted(arr1, equal_nan=True)
  aux2, first2, _ = _unique_sorted(arr2, equal_nan=True)
  keep = concatenate([lax.bitwise_and(first1, _in1d(aux1, arr2, invert=True)),
                      lax.bitwise_and(first2, _in1d(aux2, arr1, invert=True))])
  count = _sum(keep, dtype=dtypes.default_int_dtype())
  if keep.size == 0:
    return full(size or 0, 0 if fill_value is None else fill_value, arr1.dtype)
  # the kept values first, in the sort order
  _, candidates = lax.sort((lax.bitwise_not(keep), concatenate([aux1, aux2])), num_keys=2)
  values = _leading(candidates, count, size, "setxor1d")
  return _fill_after_smallest(values, count, size, fill_value)
