"""Finding and selecting elements: nonzero, take/put, compress, choose, select,
insert/delete, flat-index conversions and the index tricks (r_, c_, mgrid, ...).

Lowering follows JAX's jnp:

* `nonzero` (and `flatnonzero`, `argwhere`, one-argument `where`) counts
  with `cumsum`, then `bincount` (a `scatter-add`) and `cumsum` again;
* `take` and `take_along_axis` are one `gather` (out of bounds: filled, with
  NaN for inexact types by default); `put`, `place`, `put_along_axis`,
  `fill_diagonal` and `insert` are `scatter`s through `x.at[...]`;
* `select` is one `select_n` picking among the choices (the default first).

Functions whose output size depends on values (`nonzero`, `argwhere`,
`extract`, `compress`, `mask_indices`) take a static `size=` (and
`fill_value=` for the padding) to run under `jit`; without it a traced input
raises `ConcretizationTypeError`.
"""

import builtins
import functools
import operator

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.api import jit
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import reductions, sorting, statistics, ufuncs  # modules: import cycles
from refimpl.numpy.creation import (arange, array, asarray, broadcast_arrays, broadcast_to,
                                    concrete, ensure_arraylike, linspace, meshgrid,
                                    ones, user_dtype, zeros, zeros_like)
from refimpl.numpy.creation import indices as index_grids  # `indices` is a parameter name
from refimpl.numpy.indexing import normalize_index
from refimpl.numpy.manipulation import (atleast_1d, concatenate, diag_indices, expand_dims,
                                        moveaxis, ravel, stack, tile, transpose, vstack)
from refimpl.numpy.util import check_arraylike, promote_dtypes

__all__ = ['nonzero', 'flatnonzero', 'argwhere', 'extract', 'compress', 'select',
           'piecewise', 'take',
           'take_along_axis', 'put', 'put_along_axis', 'place', 'choose', 'fill_diagonal',
           'ix_', 'ravel_multi_index', 'unravel_index', 'mask_indices', 'delete', 'insert',
           'r_', 'c_', 's_', 'index_exp', 'mgrid', 'ogrid']


def _arrays(fun_name, args):
  """check_arraylike, then each argument as an Array (a list, whatever the count)."""
  check_arraylike(fun_name, *args)
  return [asarray(a) for a in args]


def _static_int(x, context):
  """`x` as a Python int; a traced value raises ConcretizationTypeError."""
  return operator.index(concrete(x, context))


def _tile_to_size(arr, size):
  """1-D `arr` repeated (tiled) and cut to length `size`."""
  if arr.size < size:
    arr = tile(arr, -(-size // arr.size))
  return arr[:size] if arr.size > size else arr


# --- nonzero and friends --------------------------------------------------------------------

def nonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of `a`, one index array per dimension.

  With a static `size`, the result has exactly `size` entries: extra ones are
  dropped, missing ones are padded with `fill_value` (default 0; a scalar, or
  a tuple with one scalar per dimension; as in JAX, an empty `a` pads with 0
  whatever `fill_value`). Without `size`, a traced `a` raises
  ConcretizationTypeError.
  """
  arr = ensure_arraylike("nonzero", a)
  if arr.ndim == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. "
                     "Use jnp.atleast_1d(scalar).nonzero() instead.")
  mask = arr if arr.dtype == dtypes.bool_ else arr != 0
  count = _static_int(reductions.sum(mask) if size is None else size,
                      "The size argument of jnp.nonzero must be statically specified to "
                      "use jnp.nonzero within JAX transformations.")
  if arr.size == 0 or count == 0:
    return tuple(zeros(count, int) for _ in arr.shape)
  flat_indices = reductions.cumsum(
      statistics.bincount(reductions.cumsum(mask), length=count))
  strides = (np.cumprod(arr.shape[::-1])[::-1] // arr.shape).astype(flat_indices.dtype)
  out = tuple((flat_indices // stride) % dim for stride, dim in zip(strides, arr.shape))
  if fill_value is not None:
    fills = fill_value if isinstance(fill_value, tuple) else arr.ndim * (fill_value,)
    if len(fills) != arr.ndim or any(np.shape(f) != () for f in fills):
      raise ValueError(f"fill_value must be a scalar or a tuple of length {arr.ndim}; "
                       f"got {fill_value}")
    padding = arange(count) >= reductions.sum(mask)
    out = tuple(ufuncs.where(padding, f, entry) for f, entry in zip(fills, out))
  return out


def flatnonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of the flattened `a` (see `nonzero`)."""
  return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """The indices of the nonzero elements as rows: shape (count or `size`, a.ndim)."""
  a = ensure_arraylike("argwhere", a)
  result = transpose(vstack(nonzero(atleast_1d(a), size=size, fill_value=fill_value)))
  if a.ndim == 0:
    return result[:0].reshape(result.shape[0], 0)
  return result.reshape(result.shape[0], a.ndim)


def extract(condition, arr, *, size=None, fill_value=0):
  """The elements of flattened `arr` where flattened `condition` is true (see
  `compress`; the longer of the two is truncated)."""
  check_arraylike("extract", condition, arr, fill_value)
  return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """The slices of `a` along `axis` (the flattened `a` by default) where 1-D
  `condition` is true.

  A `condition` shorter than the axis ignores the rest of `a`; a longer one
  must be false beyond it. With a static `size`, the selected slices come
  first (a stable descending argsort of the condition) and the result is
  padded with `fill_value`.
  """
  condition, arr, fill_value = ensure_arraylike("compress", condition, a, fill_value)
  condition = condition.astype(bool)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  if condition.ndim != 1:
    raise ValueError("condition must be a 1D array")
  if axis is None:
    axis, arr = 0, ravel(arr)
  else:
    arr = moveaxis(arr, axis, 0)
  condition, extra = condition[:arr.shape[0]], condition[arr.shape[0]:]
  arr = arr[:condition.shape[0]]
  if size is None:
    if reductions.any(extra):
      raise ValueError("condition contains entries that are out of bounds")
    result = arr[condition]
  elif not 0 <= size <= arr.shape[0]:
    raise ValueError(f"size must be positive and not greater than the size of the array "
                     f"axis; got size={size} for a.shape[axis]={arr.shape[0]}")
  else:
    mask = expand_dims(condition, range(1, arr.ndim))
    arr = ufuncs.where(mask, arr, array(fill_value, dtype=arr.dtype))
    result = arr[sorting.argsort(condition, stable=True, descending=True)][:size]
  return moveaxis(result, 0, axis)


def mask_indices(n, mask_func, k=0, *, size=None):
  """`nonzero(mask_func(ones((n, n)), k), size=size)`, e.g. with `triu`."""
  i, j = nonzero(mask_func(ones((n, n)), k), size=size)
  return i, j


# --- select and choose ----------------------------------------------------------------------

def select(condlist, choicelist, default=0):
  """At each position, the choice of the first true condition, else `default`.

  Lowers to one `select_n`: `argmax` over the stacked conditions (with an
  all-false row for the default in front) picks the case.
  """
  if len(condlist) != len(choicelist):
    raise ValueError(f"condlist must have length equal to choicelist "
                     f"({len(condlist)} vs {len(choicelist)})")
  if len(condlist) == 0:
    raise ValueError("condlist must be non-empty")
  check_arraylike("select", *condlist, *choicelist, default)
  condlist = [asarray(c) for c in condlist]
  choicelist = promote_dtypes(asarray(default), *(asarray(c) for c in choicelist))
  conditions = stack(broadcast_arrays(False, *condlist))
  which = reductions.argmax(conditions.astype(bool), axis=0)
  return lax.select_n(*broadcast_arrays(which, *choicelist))


def piecewise(x, condlist, funclist, *args, **kw):
  """At each position of `x`, `funclist[i](x, *args, **kw)` for the first
  true `condlist[i]`; with one more function than conditions the last is the
  default, otherwise the default is 0. A non-callable entry of `funclist`
  is a constant. Results are cast to `x`'s dtype.

  As JAX does, the branch index of each element is computed with `cumsum`
  and `argmax` over the conditions, and `lax.switch` (vectorized, so a
  `cond` batched into `select_n`) evaluates the functions.
  """
  check_arraylike("piecewise", x)
  nc, nf = len(condlist), len(funclist)
  if nf == nc + 1:
    funclist = funclist[-1:] + funclist[:-1]
  elif nf == nc:
    funclist = [0] + list(funclist)
  else:
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc+1} functions are "
                     f"expected; got {nf}")
  consts = {i: c for i, c in enumerate(funclist) if not callable(c)}
  funcs = {i: f for i, f in enumerate(funclist) if callable(f)}
  return _piecewise(asarray(x), asarray(condlist, dtype=bool), consts,
                    frozenset(funcs.items()), *args, **kw)


@functools.partial(jit, static_argnames=['funcs'])
def _piecewise(x, condlist, consts, funcs, *args, **kw):
  from refimpl.numpy.vectorize import vectorize
  funcs = dict(funcs)
  funclist = [consts.get(i, funcs.get(i)) for i in range(len(condlist) + 1)]
  indices = reductions.argmax(
      reductions.cumsum(concatenate([zeros_like(condlist[:1]), condlist], 0), 0), 0)
  dtype = x.dtype

  def call(f):
    return lambda x: f(x, *args, **kw).astype(dtype)

  def constant(v):
    return lambda x: array(v, dtype=dtype)

  branches = [call(f) if callable(f) else constant(f) for f in funclist]
  return vectorize(lax.switch, excluded=(1,))(indices, branches, x)


def choose(a, choices, out=None, mode="raise"):
  """`choices[a[idx]][idx]` at each position idx of the broadcast shape.

  `mode`: "raise" (a must be concrete and in range, else ValueError),
  "wrap" (a modulo the number of choices) or "clip".
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  a, *choices = _arrays("choose", (a, *choices))
  if not dtypes.is_integer(a.dtype):
    raise ValueError("`a` array must be integer typed")
  n = len(choices)
  if mode == "raise":
    value = concrete(a, "The error occurred because jnp.choose was jit-compiled with "
                        "mode='raise'. Use mode='wrap' or mode='clip' instead.")
    if np.any((value < 0) | (value >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    a = a % n
  elif mode == "clip":
    a = ufuncs.clip(a, 0, n - 1)
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  a, *choices = broadcast_arrays(a, *choices)
  return array(choices)[(a,) + index_grids(a.shape, sparse=True)]


# --- take and put ---------------------------------------------------------------------------

def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """The elements (slices along `axis`) of `a` at integer `indices`; one `gather`.

  `axis=None` takes from the flattened `a`. Negative indices count from the
  end. `mode`: "fill" (the default: out-of-bounds positions give
  `fill_value`, by default NaN, the lowest signed / highest unsigned
  integer, or True), "clip" or "wrap"; "raise" is not supported.
  """
  return _take(a, indices, None if axis is None else operator.index(axis), out, mode,
               unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
               fill_value=fill_value)


@functools.partial(jit, static_argnames=("axis", "mode", "unique_indices",
                                         "indices_are_sorted", "fill_value"))
def _take(a, indices, axis, out, mode, unique_indices, indices_are_sorted, fill_value):
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
  a, indices = ensure_arraylike("take", a, indices)
  if axis is None:
    a, axis = ravel(a), 0
  else:
    axis = canonicalize_axis(axis, a.ndim)
  if mode is None or mode == "fill":
    gather_mode = lax.GatherScatterMode.FILL_OR_DROP
    indices = ufuncs.where(indices < 0, indices + a.shape[axis], indices)
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
  elif mode == "wrap":
    indices = ufuncs.remainder(indices, np.array(a.shape[axis], indices.dtype))
    gather_mode = lax.GatherScatterMode.PROMISE_IN_BOUNDS
  elif mode == "clip":
    gather_mode = lax.GatherScatterMode.CLIP
  else:
    raise ValueError(f"Invalid mode '{mode}' for np.take")
  slice_sizes = list(a.shape)
  if slice_sizes[axis] == 0:
    if indices.size != 0:
      raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    return a
  if indices.size == 0:
    return lax.full_like(a, 0, shape=slice_sizes[:axis] + list(indices.shape)
                         + slice_sizes[axis + 1:])
  slice_sizes[axis] = 1
  index_dims = indices.ndim
  dnums = lax.GatherDimensionNumbers(
      offset_dims=tuple(range(axis)) + tuple(range(axis + index_dims,
                                                   a.ndim + index_dims - 1)),
      collapsed_slice_dims=(axis,), start_index_map=(axis,))
  return lax.gather(a, indices[..., None], dnums, slice_sizes, mode=gather_mode,
                    unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                    fill_value=fill_value)


@functools.partial(jit, static_argnames=("axis", "mode", "fill_value",
                                         "wrap_negative_indices"))
def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
  """`arr` indexed along `axis` by `indices` (same rank; the other dimensions
  broadcast), as one `gather` with batching dimensions.

  Negative indices count from the end if `wrap_negative_indices` (by default,
  unless mode="promise_in_bounds"); otherwise they are out of bounds.
  `mode` defaults to "fill" (out-of-bounds positions give `fill_value`);
  "clip" clamps; "one_hot" computes the result as a one-hot contraction.
  """
  a, indices = ensure_arraylike("take_along_axis", arr, indices)
  if not dtypes.is_integer(indices.dtype):
    raise TypeError(f"take_along_axis indices must be of integer type, got "
                    f"{indices.dtype}")
  if axis is None:
    if indices.ndim != 1:
      raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                       f"{indices.shape}")
    a, axis = ravel(a), 0
  rank = a.ndim
  if rank != indices.ndim:
    raise ValueError(f"indices and arr must have the same number of dimensions; "
                     f"{indices.ndim} vs. {a.ndim}")
  axis = canonicalize_axis(axis, rank)
  idx_shape = indices.shape
  indices = lax.convert_element_type(indices, np.int32)
  axis_size = a.shape[axis]
  arr_shape = a.shape[:axis] + (1,) + a.shape[axis + 1:]
  out_shape = np.broadcast_shapes(idx_shape, arr_shape)
  if axis_size == 0:
    return lax.full(out_shape, 0, a.dtype)
  if wrap_negative_indices is None:
    wrap_negative_indices = mode != "promise_in_bounds"
  if wrap_negative_indices:
    indices = normalize_index(indices, axis_size)
  if mode == "one_hot":
    return _take_along_axis_one_hot(a, indices, axis)

  index_dims = [i for i, n in enumerate(idx_shape) if i == axis or n != 1]
  gather_index_shape = tuple(out_shape[i] for i in index_dims) + (1,)
  offset_dims, slice_sizes, dims_to_squeeze = [], [], []
  start_index_map, collapsed_slice_dims = [], []
  operand_batching_dims, start_indices_batching_dims = [], []
  new_i = j = 0  # the dimension of the squeezed `a`, and of the gather indices
  for i in range(rank):
    if i == axis:
      gather_indices = lax.reshape(indices, gather_index_shape)
      slice_sizes.append(1)
      start_index_map.append(new_i)
      collapsed_slice_dims.append(new_i)
      new_i += 1
      j += 1
    elif idx_shape[i] == 1:  # take the whole of a's axis: no index needed
      offset_dims.append(i)
      slice_sizes.append(arr_shape[i])
      new_i += 1
    elif arr_shape[i] == 1:  # a broadcasts along this axis: squeeze it out
      dims_to_squeeze.append(i)
      j += 1
    else:  # equal sizes: a batching dimension of the gather
      slice_sizes.append(0 if arr_shape[i] == 0 else 1)
      operand_batching_dims.append(new_i)
      start_indices_batching_dims.append(j)
      new_i += 1
      j += 1
  a = lax.squeeze(a, dims_to_squeeze)
  dnums = lax.GatherDimensionNumbers(
      offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed_slice_dims),
      start_index_map=tuple(start_index_map),
      operand_batching_dims=tuple(operand_batching_dims),
      start_indices_batching_dims=tuple(start_indices_batching_dims))
  return lax.gather(a, gather_indices, dnums, tuple(slice_sizes),
                    mode="fill" if mode is None else mode, fill_value=fill_value)


def _take_along_axis_one_hot(a, indices, axis):
  """take_along_axis as a contraction of a one-hot mask of `indices` with `a`."""
  from refimpl.numpy.products import einsum
  hot_shape = (1,) * indices.ndim + (a.shape[axis],)
  hot = lax.eq(lax.expand_dims(indices, (indices.ndim,)),
               lax.broadcasted_iota(indices.dtype, hot_shape, indices.ndim))
  if a.ndim == 1:
    return einsum("...b,b->...", hot, a, preferred_element_type=a.dtype)
  labels = "".join(chr(ord("a") + i) for i in range(axis))
  return einsum(f"{labels}y...z,{labels}z...->{labels}y...", hot, a,
                precision=lax.Precision.HIGHEST, preferred_element_type=a.dtype)


def put(a, ind, v, mode=None, *, inplace=True):
  """A copy of `a` with the flat positions `ind` set to `v` (repeated as needed).

  `inplace=False` is required (JAX arrays are immutable). `mode`: None drops
  out-of-bounds indices, "clip" clamps them, "wrap" wraps them.
  """
  if inplace:
    raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  arr, ind, _ = ensure_arraylike("put", a, ind, v)
  ind = ind.ravel()
  v = ravel(v)
  if not arr.size or not ind.size or not v.size:
    return arr
  v = _tile_to_size(v, len(ind))
  if mode is None:
    scatter_mode = "drop"
  elif mode == "clip":
    ind = ufuncs.clip(ind, 0, arr.size - 1)
    scatter_mode = "promise_in_bounds"
  elif mode == "wrap":
    ind = ind % arr.size
    scatter_mode = "promise_in_bounds"
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
  return arr.at[unravel_index(ind, arr.shape)].set(v, mode=scatter_mode)


@functools.partial(jit, static_argnames=("axis", "inplace", "mode"))
def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
  """A copy of `arr` with `values` put at `indices` along `axis` (the inverse
  of `take_along_axis`); `inplace=False` is required."""
  if inplace:
    raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
                     "arrays are immutable. Pass inplace=False to instead return an "
                     "updated array.")
  arr, indices, values = ensure_arraylike("put_along_axis", arr, indices, values)
  original_shape = arr.shape
  flatten = axis is None
  if flatten:
    arr, axis = ravel(arr), 0
  if arr.ndim != indices.ndim:
    raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                     f"Got arr.ndim={arr.ndim} and indices.ndim={indices.ndim}.")
  try:
    values = broadcast_to(values, indices.shape)
  except ValueError:
    raise ValueError(f"put_along_axis argument 'values' must be broadcastable to "
                     f"'indices'. Got values.shape={values.shape} and "
                     f"indices.shape={indices.shape}.") from None
  idx = list(index_grids(arr.shape, sparse=True))
  idx[canonicalize_axis(axis, arr.ndim)] = indices
  result = arr.at[tuple(idx)].set(values, mode=mode)
  return result.reshape(original_shape) if flatten else result


def place(arr, mask, vals, *, inplace=True):
  """A copy of `arr` with the positions where `mask` is true set to `vals`,
  in order, repeated as needed; `inplace=False` is required."""
  data, mask, vals = ensure_arraylike("place", arr, mask, vals)
  vals = vals.ravel()
  if inplace:
    raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays "
                     "are immutable. Pass inplace=False to instead return an updated "
                     "array.")
  if data.size != mask.size:
    raise ValueError("place: arr and mask must be the same size")
  if not vals.size:
    raise ValueError("Cannot place values from an empty array")
  if not data.size:
    return data
  positions = nonzero(mask.ravel(), size=mask.size, fill_value=mask.size)[0]
  vals = _tile_to_size(vals, len(positions))
  return data.ravel().at[positions].set(vals, mode="drop").reshape(data.shape)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  """A copy of `a` with its main diagonal set to `val` (flattened and repeated
  as needed); `inplace=False` is required and `wrap=True` is not supported."""
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  a, val = ensure_arraylike("fill_diagonal", a, val)
  if a.ndim < 2:
    raise ValueError("array must be at least 2-d")
  if a.ndim > 2 and not all(n == a.shape[0] for n in a.shape[1:]):
    raise ValueError("All dimensions of input must be of equal length")
  n = builtins.min(a.shape)
  idx = diag_indices(n, a.ndim)
  return a.at[idx].set(val if val.ndim == 0 else _tile_to_size(val.ravel(), n))


# --- index conversions ----------------------------------------------------------------------

def ix_(*args):
  """An open mesh of 1-D integer sequences: args[i] reshaped along axis i."""
  args = _arrays("ix", args)
  n = len(args)
  output = []
  for i, a in enumerate(args):
    if a.ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                       f"{a.shape}")
    if a.dtype == dtypes.bool_:
      raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    shape = [1] * n
    shape[i] = a.shape[0]
    if a.size == 0:  # an integer index, as NumPy gives for empty sequences
      output.append(lax.full(shape, np.zeros((), dtypes.default_int_dtype())))
    else:
      output.append(lax.broadcast_in_dim(a, shape, (i,)))
  return tuple(output)


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
  """The flat indices of the index arrays `multi_index` into shape `dims`, of
  `dtype` (by default the promoted dtype of the indices).

  `mode`: "raise" (indices must be concrete and in bounds, else ValueError),
  "clip", "wrap" or "ignore" (no check). `order`: "C" (row-major) or "F".
  """
  if len(multi_index) != len(dims):
    raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
  dims = tuple(_static_int(d, "in `dims` argument of ravel_multi_index().") for d in dims)
  multi_index = _arrays("ravel_multi_index", multi_index)
  for index in multi_index:
    if mode == "raise":
      concrete(index, "The error occurred because ravel_multi_index was jit-compiled with "
                      "mode='raise'. Use mode='wrap' or mode='clip' instead.")
    if not dtypes.is_integer(index.dtype):
      raise TypeError("only int indices permitted")
  if dtype is not None:
    dtype = user_dtype(dtype, "ravel_multi_index")
    multi_index = [lax.convert_element_type(i, dtype) for i in multi_index]
  if mode == "raise":
    if any(np.any((np.asarray(i) < 0) | (np.asarray(i) >= d))
           for i, d in zip(multi_index, dims)):
      raise ValueError("invalid entry in coordinates array")
  elif mode == "clip":
    multi_index = [ufuncs.clip(i, 0, d - 1) for i, d in zip(multi_index, dims)]
  elif mode == "wrap":
    multi_index = [i % d for i, d in zip(multi_index, dims)]
  elif mode != "ignore":
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip' or 'ignore'")
  if order == "F":
    strides = np.cumprod((1,) + dims[:-1])
  elif order == "C":
    strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
  else:
    raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
  result = array(0, dtype=multi_index[0].dtype if multi_index else int)
  for i, stride in zip(multi_index, strides):
    result = result + i * int(stride)
  return result


def unravel_index(indices, shape):
  """The index arrays of flat `indices` into `shape` (row-major).

  Unlike NumPy, negative indices count from the end and out-of-bounds
  indices are clipped to the first or last position.
  """
  indices = ensure_arraylike("unravel_index", indices)
  shape = list(shape) if np.ndim(shape) else [shape]
  if any(np.ndim(s) != 0 for s in shape):
    raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
  out = [0] * len(shape)
  for i, s in reversed(list(enumerate(shape))):
    indices, out[i] = ufuncs.divmod(indices, s)
  too_high, too_low = indices > 0, indices < -1
  return tuple(ufuncs.where(too_high, s - 1, ufuncs.where(too_low, 0, i))
               for s, i in zip(shape, out))


# --- delete and insert ----------------------------------------------------------------------

def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """A copy of `arr` without the entries `obj` (an int, a slice, integer
  indices or a boolean mask) along `axis` (of the flattened `arr` by default).

  Integer-array indices must be concrete, unless `assume_unique_indices`
  promises they are distinct (then they may be traced).
  """
  a = ensure_arraylike("delete", arr)
  if axis is None:
    a, axis = ravel(a), 0
  axis = canonicalize_axis(axis, a.ndim)
  before = (slice(None),) * axis
  try:
    obj = operator.index(obj)
  except TypeError:
    pass
  else:  # one static index: concatenate the parts around it
    obj = canonicalize_axis(obj, a.shape[axis])
    return concatenate([a[before + (slice(0, obj),)], a[before + (slice(obj + 1, None),)]],
                       axis=axis)
  if isinstance(obj, slice):
    obj = arange(a.shape[axis])[obj]
    assume_unique_indices = True
  check_arraylike("delete", a, obj)
  if dtypes.is_integer(dtypes.dtype(obj)) and assume_unique_indices:
    n = a.shape[axis]
    obj = asarray(obj).ravel()
    obj = ufuncs.clip(ufuncs.where(obj < 0, obj + n, obj), 0, n)
    obj = sorting.sort(obj)
    obj = obj - arange(len(obj))
    kept = arange(n - obj.size)
    kept = kept + (kept[None, :] >= obj[:, None]).sum(0)
    return a[before + (kept,)]
  obj = np.asarray(concrete(obj, "'obj' array argument of jnp.delete()"))
  if dtypes.is_integer(obj.dtype):
    mask = np.ones(a.shape[axis], dtype=bool)
    mask[obj] = False
  elif obj.dtype == np.bool_:
    if obj.shape != (a.shape[axis],):
      raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                       "one-dimensional with length matching specified axis.")
    mask = ~obj
  else:
    raise ValueError(f"np.delete(arr, obj): got obj.dtype={obj.dtype}; must be integer "
                     f"or bool.")
  return a[before + (mask,)]


def insert(arr, obj, values, axis=None):
  """A copy of `arr` with `values` inserted before the indices `obj` (an int,
  a slice or 1-D integer indices) along `axis` (of the flattened `arr` by
  default). Lowers to two scatters into a zero array of the output shape.
  """
  a, _, values = ensure_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj,
                                  values)
  if axis is None:
    a, axis = ravel(a), 0
  axis = canonicalize_axis(concrete(axis, "axis argument of jnp.insert()"), a.ndim)
  if isinstance(obj, slice):
    positions = arange(*obj.indices(a.shape[axis]))
  else:
    positions = asarray(obj)
  if positions.ndim > 1:
    raise ValueError(f"jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                     f"scalar; got {obj}")
  if not dtypes.is_integer(positions.dtype):
    if positions.size == 0 and not isinstance(obj, (core.Tracer, core.ConcreteArray)):
      positions = positions.astype(int)
    else:
      raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
  values = array(values, ndmin=a.ndim, dtype=a.dtype, copy=False)
  if positions.size == 1:
    index = ravel(positions)[0]
    if positions.ndim == 0:
      values = moveaxis(values, 0, axis)
    positions = lax.full((values.shape[axis],), index)
  n_input = a.shape[axis]
  n_insert = np.broadcast_shapes(positions.shape, (values.shape[axis],))[0]
  out_shape = list(a.shape)
  out_shape[axis] += n_insert
  out = zeros_like(a, shape=tuple(out_shape))
  positions = ufuncs.where(positions < 0, positions + n_input, positions)
  positions = ufuncs.clip(positions, 0, n_input)
  values_ind = positions.at[sorting.argsort(positions)].add(
      arange(n_insert, dtype=positions.dtype))
  arr_mask = ones(n_input + n_insert, dtype=bool).at[values_ind].set(False)
  arr_ind = nonzero(arr_mask, size=n_input)[0]
  before = (slice(None),) * axis
  out = out.at[before + (values_ind,)].set(values)
  return out.at[before + (arr_ind,)].set(a)


# --- index tricks ---------------------------------------------------------------------------

def _grid_from_slice(s, op_name):
  """`arange(start, stop, step)`, or `linspace(start, stop, n)` for an imaginary step nj."""
  start = concrete(s.start, f"slice start of jnp.{op_name}") or 0
  stop = concrete(s.stop, f"slice stop of jnp.{op_name}")
  step = concrete(s.step, f"slice step of jnp.{op_name}") or 1
  if np.iscomplex(step):
    return linspace(start, stop, int(abs(step)))
  return arange(start, stop, step)


class _Mgrid:
  """`jnp.mgrid[start:stop:step, ...]`: a dense grid (`meshgrid`, indexing "ij",
  stacked). An imaginary step `nj` means n points with the stop included."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_from_slice(key, "mgrid")
    grids = promote_dtypes(*(_grid_from_slice(k, "mgrid") for k in key))
    grids = meshgrid(*grids, indexing="ij", sparse=False)
    return stack(grids, 0) if grids else arange(0)


class _Ogrid:
  """`jnp.ogrid[start:stop:step, ...]`: an open grid (a list of arrays that
  broadcast together); an imaginary step `nj` means n points, stop included."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_from_slice(key, "ogrid")
    grids = promote_dtypes(*(_grid_from_slice(k, "ogrid") for k in key))
    return meshgrid(*grids, indexing="ij", sparse=True)


class _AxisConcat:
  """Concatenates slices (as ranges), scalars and arrays along `axis`.

  An optional first string "axis,ndmin,trans1d" overrides the defaults;
  "r" or "c" turn a 1-D result into a row or a column.
  """

  axis = 0
  ndmin = 1
  trans1d = -1
  op_name = ""

  def __getitem__(self, key):
    items = key if isinstance(key, tuple) else (key,)
    params = [self.axis, self.ndmin, self.trans1d, -1]
    directive = items[0]
    if isinstance(directive, str):
      items = items[1:]
      if directive == "r":
        params[-1] = 0
      elif directive == "c":
        params[-1] = 1
      else:
        fields = directive.split(",")
        fields = fields + params[len(fields):] if len(fields) < 4 else fields[:3] + params[3:]
        try:
          params = [int(f) for f in fields]
        except ValueError as err:
          raise ValueError(f"could not understand directive {directive!r}") from err
    axis, ndmin, trans1d, matrix = params
    output = []
    for item in items:
      if isinstance(item, slice):
        part, item_ndim = _grid_from_slice(item, self.op_name), 0
      elif isinstance(item, str):
        raise ValueError("string directive must be placed at the beginning")
      else:
        part = array(item, copy=False)
        item_ndim = part.ndim
      part = array(part, copy=False, ndmin=ndmin)
      if trans1d != -1 and ndmin - item_ndim > 0:
        shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
        order = tuple(range(ndmin))
        part = transpose(part, order[shift:] + order[:shift])
      output.append(part)
    result = concatenate(tuple(output), axis=axis)
    if matrix != -1 and result.ndim == 1:
      result = expand_dims(result, matrix)
    return result

  def __len__(self):
    return 0


class RClass(_AxisConcat):
  """`jnp.r_[...]`: concatenation along the first axis (`jnp.r_[1:4, 0, x]`)."""
  axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
  """`jnp.c_[...]`: concatenation along the last axis, as at least 2-D columns."""
  axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


mgrid = _Mgrid()
ogrid = _Ogrid()
r_ = RClass()
c_ = CClass()
s_ = np.s_
index_exp = np.index_exp
