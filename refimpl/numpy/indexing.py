"""NumPy indexing for arrays: `x[idx]`, and functional updates `x.at[idx].set(y)`.

Lowering follows JAX's jnp:

* an index made only of integers (in bounds, or traced scalars) and
  contiguous or `::-1` slices lowers to `rev`, then `slice` (all starts
  static and non-negative) or `dynamic_slice` (negative or traced starts,
  wrapped as `select(i < 0, i + n, i)`), then `squeeze`;
* anything else (strided slices, `None`, integer arrays, masks, out-of-bounds
  integers) lowers to one `gather`, then `rev` for negative strides and
  `broadcast_in_dim` for `None`;
* every `.at[...]` update lowers to one scatter primitive.

Out of bounds: `x[i]` clamps (gather mode PROMISE_IN_BOUNDS, so
`arange(10)[11]` is 9 and `arange(10)[-11]` is 0 after wrapping to -1);
updates drop out-of-bounds windows (FILL_OR_DROP). `mode="clip"`,
`"fill"`/`"drop"` (with `fill_value` for `get`) and `"promise_in_bounds"`
choose otherwise. Negative indices count from the end unless
`wrap_negative_indices=False`.

Boolean masks must be concrete: they become integer indices via
`np.nonzero`, so the result shape is known. Under `jit` a traced mask raises
`NonConcreteBooleanIndexError`.
"""

import operator
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.errors import NonConcreteBooleanIndexError
from refimpl.numpy import ufuncs
from refimpl.numpy.creation import asarray, broadcast_arrays, broadcast_to, ones_like
from refimpl.numpy.util import promote_dtypes

__all__ = []  # the public entry points are `x[idx]` and `x.at`

_INDEX_DTYPE = dtypes.int32  # JAX's index dtype for every shape that fits in int32


# --- classifying index elements ------------------------------------------------------------

def _is_array(x):
  return isinstance(x, (core.Tracer, core.ConcreteArray, np.ndarray))


def _is_integer_index(i):
  """A static Python or NumPy integer (not a bool)."""
  return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _is_scalar(x):
  """A Python or NumPy scalar, or a rank-0 array."""
  return np.isscalar(x) or (_is_array(x) and np.ndim(x) == 0)


def _aval_or_none(x):
  try:
    return core.get_aval(x)
  except TypeError:
    return None


def _concrete_value(x):
  """The NumPy value of `x`, or None for a tracer whose value is unknown."""
  if isinstance(x, core.Tracer):
    return x.to_concrete_value()
  return np.asarray(x)


def _is_int_arraylike(x):
  return (_is_integer_index(x)
          or dtypes.is_integer(getattr(x, "dtype", np.bool_))
          or isinstance(x, (list, tuple)) and all(_is_int_arraylike(e) for e in x))


def _is_advanced_int_indexer(idx):
  """Whether `idx` (a tuple) uses NumPy advanced (integer array) indexing."""
  basic = lambda e: e is None or e is Ellipsis or isinstance(e, slice)
  if all(basic(e) or _is_scalar(e) and dtypes.is_integer(dtypes.dtype(e)) for e in idx):
    return False
  return all(basic(e) or _is_int_arraylike(e) for e in idx)


def normalize_index(index, axis_size):
  """Wraps a negative index (in [-n, 0)) to [0, n); unsigned ones cannot be negative."""
  index_dtype = dtypes.dtype(index)
  if dtypes.is_unsigned(index_dtype):
    return index
  if isinstance(index, (int, np.integer)):
    return index + axis_size if index < 0 else index
  size = np.asarray(axis_size, index_dtype)
  return lax.select(index < 0, lax.add(index, size), index)


def _canonicalize_tuple_index(ndim, idx):
  """Replaces `...` by full slices and pads with trailing full slices."""
  consumed = sum(not (e is None or e is Ellipsis or isinstance(e, bool)) for e in idx)
  if consumed > ndim:
    raise IndexError(f"Too many indices: {ndim}-dimensional array indexed with "
                     f"{consumed} regular {'index' if consumed == 1 else 'indices'}.")
  ellipses = [i for i, e in enumerate(idx) if e is Ellipsis]
  if len(ellipses) > 1:
    raise IndexError(f"Multiple ellipses (...) not supported: {list(map(type, idx))}.")
  colons = (slice(None),) * (ndim - consumed)
  if ellipses:
    return idx[:ellipses[0]] + colons + idx[ellipses[0] + 1:]
  return tuple(idx) + colons


# --- the slice fast path ---------------------------------------------------------------------

def _is_simple_reverse_slice(i):
  return (isinstance(i, slice) and i.start is i.stop is None
          and _is_integer_index(i.step) and i.step == -1)


def _is_contiguous_slice(i):
  return (isinstance(i, slice)
          and (i.start is None or _is_integer_index(i.start))
          and (i.stop is None or _is_integer_index(i.stop))
          and (i.step is None or _is_integer_index(i.step) and i.step == 1))


def _is_valid_integer_index_for_slice(i, size, mode):
  """A static in-bounds integer, or (default mode only) a scalar integer array."""
  if size == 0:
    return False
  if _is_integer_index(i):
    return -size <= i < size
  aval = _aval_or_none(i)
  return (mode is None and aval is not None and aval.shape == ()
          and dtypes.is_integer(aval.dtype))


def _attempt_rewriting_take_via_slice(arr, idx, mode):
  """`arr[idx]` via rev/slice/dynamic_slice/squeeze, or None if `idx` needs a gather."""
  idx = idx if isinstance(idx, tuple) else (idx,)
  shape = arr.shape
  if any(i is None for i in idx):
    return None
  if any(i is Ellipsis for i in idx):
    idx = _canonicalize_tuple_index(len(shape), idx)
  if len(idx) > len(shape):
    return None
  simple_revs = {i for i, ind in enumerate(idx) if _is_simple_reverse_slice(ind)}
  int_indices = {i for i, (ind, size) in enumerate(zip(idx, shape))
                 if _is_valid_integer_index_for_slice(ind, size, mode)}
  contiguous_slices = {i for i, ind in enumerate(idx) if _is_contiguous_slice(ind)}
  if len(simple_revs) + len(int_indices) + len(contiguous_slices) != len(idx):
    return None
  has_partial_slices = any(idx[i].indices(shape[i]) != (0, shape[i], 1)
                           for i in contiguous_slices)
  if simple_revs:
    arr = lax.rev(arr, tuple(sorted(simple_revs)))
    idx = tuple(slice(None) if i in simple_revs else ind for i, ind in enumerate(idx))
  if not (int_indices or has_partial_slices):
    return arr

  idx += (len(shape) - len(idx)) * (slice(None),)
  starts, sizes, allow_negative = [], [], []
  for ind, size in zip(idx, shape):
    if isinstance(ind, slice):
      start, stop, _ = ind.indices(size)
      starts.append(start)
      sizes.append(max(0, stop - start))
      allow_negative.append(False)
    else:
      starts.append(ind)
      sizes.append(1)
      allow_negative.append(not _is_integer_index(ind) or bool(ind < 0))
  if all(_is_integer_index(i) and i >= 0 for i in starts):
    arr = lax.slice(arr, starts, [s + n for s, n in zip(starts, sizes)])
  else:
    if len(starts) > 1:
      starts = promote_dtypes(*starts)  # dynamic_slice wants one index dtype
    arr = lax.dynamic_slice(arr, starts, sizes, allow_negative_indices=allow_negative)
  if int_indices:
    arr = lax.squeeze(arr, tuple(sorted(int_indices)))
  return arr


# --- preparing an index: lists, strings, boolean masks ------------------------------------------

def _eliminate_deprecated_list_indexing(idx):
  """`idx` as a tuple; a non-tuple sequence (a list) is a TypeError, as in JAX."""
  if isinstance(idx, tuple):
    return idx
  if isinstance(idx, Sequence) and not isinstance(idx, str):
    unpack = any(_is_array(i) and np.ndim(i) != 0 or isinstance(i, (Sequence, slice))
                 or i is Ellipsis or i is None for i in idx)
    fix = "arr[tuple(seq)]" if unpack else "arr[array(seq)]"
    raise TypeError(f"Using a non-tuple sequence for multidimensional indexing is not "
                    f"allowed; use `{fix}` instead of `arr[seq]`. See "
                    f"https://github.com/jax-ml/jax/issues/4564 for more information.")
  return (idx,)


def _is_boolean_index(i):
  aval = _aval_or_none(i)
  return (aval is not None and aval.dtype == dtypes.bool_
          or isinstance(i, list) and bool(i)
          and all(_is_scalar(e) and dtypes.dtype(e) == dtypes.bool_ for e in i))


def _expand_bool_indices(idx, shape):
  """Replaces concrete boolean masks by the integer arrays of `np.nonzero`.

  A scalar boolean stays a Python bool (it adds a dimension of size 1 or 0).
  """
  out = []
  total_dims = len(shape)
  if sum(e is Ellipsis for e in idx) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  if any(e is Ellipsis for e in idx):
    total_dims = sum(np.ndim(e) if _is_boolean_index(e) else 1 for e in idx
                     if e is not None and e is not Ellipsis)
  ellipsis_offset = newaxis_offset = 0
  for position, i in enumerate(idx):
    if _is_boolean_index(i):
      mask = _concrete_value(asarray(i) if isinstance(i, list) else i)
      if mask is None:
        raise NonConcreteBooleanIndexError(i)
      if mask.ndim == 0:
        out.append(bool(mask))
      else:
        start = len(out) + ellipsis_offset - newaxis_offset
        expected = shape[start:start + mask.ndim]
        if mask.ndim != len(expected):
          raise IndexError(f"too many boolean indices at index {position}: got mask of "
                           f"shape {mask.shape}, but only {len(expected)} dimensions "
                           f"remain.")
        if not all(s in (0, e) for s, e in zip(mask.shape, expected)):
          raise IndexError(f"boolean index did not match shape of indexed array in "
                           f"index {position}: got {mask.shape}, expected {expected}")
        out.extend(np.nonzero(mask))
    else:
      out.append(i)
    if i is Ellipsis:
      ellipsis_offset = len(shape) - total_dims - 1
    if i is None:
      newaxis_offset += 1
  return tuple(out)


def _prepare_index(idx, shape):
  """The tuple of index elements that `_index_to_gather` takes."""
  idx = _eliminate_deprecated_list_indexing(idx)
  if any(isinstance(i, str) for i in idx):
    raise TypeError(f"JAX does not support string indexing; got idx={idx}")
  return _expand_bool_indices(idx, shape)


# --- the general path: one gather ------------------------------------------------------------

class _Indexer(NamedTuple):
  """How `x[idx]` is computed as a gather (and `x.at[idx]` as a scatter).

  slice_shape: the shape of `x[idx]`. gather_slice_shape, gather_indices and
  dnums: the gather's arguments. unique_indices / indices_are_sorted: true
  when there are no advanced indices. reversed_y_dims: dimensions (of the
  gather output) to reverse for negative strides. newaxis_dims: dimensions
  of `x[idx]` added by `None`. scalar_bool_dims: dimensions to insert into
  `x` for scalar boolean indices.
  """
  slice_shape: tuple
  gather_slice_shape: tuple
  gather_indices: object
  dnums: lax.GatherDimensionNumbers
  unique_indices: bool
  indices_are_sorted: bool
  reversed_y_dims: tuple
  newaxis_dims: tuple
  scalar_bool_dims: tuple


def _is_static_slice_element(e):
  return e is None or not isinstance(e, core.Tracer) or e.to_concrete_value() is not None


def _index_to_gather(x_shape, idx, normalize_indices=True):
  """The `_Indexer` of `x[idx]` for an `x` of shape `x_shape` (NumPy semantics).

  Advanced (integer array) indices broadcast together; their result
  dimensions replace the first advanced index if the advanced indices are
  adjacent, and go first otherwise (integers count as advanced here).
  """
  idx = tuple(asarray(i, dtype=None if i else int) if isinstance(i, Sequence) else i
              for i in idx)
  for position, i in enumerate(idx):
    aval = _aval_or_none(i)
    if aval is not None and dtypes.is_inexact(aval.dtype):
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                      f"type {aval.dtype.name} at position {position}, indexer value {i}")

  # Adjacency is decided before `...` is expanded, as in NumPy.
  is_advanced = np.nonzero([isinstance(e, (int, np.integer)) or _is_array(e) or _is_scalar(e)
                            for e in idx])[0]
  advanced_axes_are_contiguous = bool(np.all(np.diff(is_advanced) == 1))

  idx = _canonicalize_tuple_index(len(x_shape), idx)

  scalar_bool_dims = tuple(n for n, i in enumerate(idx) if isinstance(i, bool))
  if scalar_bool_dims:
    idx = tuple(np.arange(int(i)) if isinstance(i, bool) else i for i in idx)
    x_shape = list(x_shape)
    for d in scalar_bool_dims:
      x_shape.insert(d, 1)
    x_shape = tuple(x_shape)

  advanced_indexes = None
  idx_advanced_axes = ()
  if _is_advanced_int_indexer(idx):
    idx_no_nones = [(i, e) for i, e in enumerate(idx) if e is not None]
    advanced_pairs = [(asarray(e), i, j) for j, (i, e) in enumerate(idx_no_nones)
                      if _is_scalar(e) or isinstance(e, Sequence) or _is_array(e)]
    if normalize_indices:
      advanced_pairs = [(normalize_index(e, x_shape[j]), i, j)
                        for e, i, j in advanced_pairs]
    advanced_indexes, idx_advanced_axes, x_advanced_axes = zip(*advanced_pairs)

  x_axis = 0            # current dimension of x
  y_axis = 0            # current dimension of x[idx], `None` dimensions included
  collapsed_y_axis = 0  # current dimension of the gather output (no `None` dimensions)
  offset_dims, collapsed_slice_dims, start_index_map = [], [], []
  gather_indices = []   # (index array, first gather-batch dimension it spans)
  gather_indices_shape = []
  slice_shape, newaxis_dims, reversed_y_dims, gather_slice_shape = [], [], [], []

  for idx_pos, i in enumerate(idx):
    if advanced_indexes is not None and (
        advanced_axes_are_contiguous and idx_pos == idx_advanced_axes[0]
        or not advanced_axes_are_contiguous and idx_pos == 0):
      advanced_arrays = broadcast_arrays(*advanced_indexes)
      shape = advanced_arrays[0].shape
      start_dim = len(gather_indices_shape)
      gather_indices += [(lax.convert_element_type(a, _INDEX_DTYPE), start_dim)
                         for a in advanced_arrays]
      gather_indices_shape += shape
      start_index_map += x_advanced_axes
      collapsed_slice_dims += x_advanced_axes
      slice_shape += shape
      y_axis += len(shape)
      collapsed_y_axis += len(shape)

    if idx_pos in idx_advanced_axes:
      x_axis += 1
      gather_slice_shape.append(1)
      continue

    aval = _aval_or_none(i)
    if aval is not None and aval.shape == () and dtypes.is_integer(aval.dtype):
      if x_shape[x_axis] == 0:
        raise IndexError(f"index is out of bounds for axis {x_axis} with size 0")
      i = normalize_index(i, x_shape[x_axis]) if normalize_indices else i
      gather_indices.append((lax.convert_element_type(i, _INDEX_DTYPE),
                             len(gather_indices_shape)))
      collapsed_slice_dims.append(x_axis)
      gather_slice_shape.append(1)
      start_index_map.append(x_axis)
      x_axis += 1
    elif i is None:
      slice_shape.append(1)
      newaxis_dims.append(y_axis)
      y_axis += 1
    elif isinstance(i, slice):
      if not all(_is_static_slice_element(e) for e in (i.start, i.stop, i.step)):
        raise IndexError(
            f"Array slice indices must have static start/stop/step to be used with "
            f"NumPy indexing syntax. Found slice({i.start}, {i.stop}, {i.step}). To "
            f"index a statically sized array at a dynamic position, try "
            f"lax.dynamic_slice/dynamic_update_slice (JAX does not support "
            f"dynamically sized arrays within JIT compiled functions).")
      static = slice(*(None if e is None else operator.index(e)
                       for e in (i.start, i.stop, i.step)))
      start, _, step = static.indices(x_shape[x_axis])
      slice_size = len(range(*static.indices(x_shape[x_axis])))
      slice_shape.append(slice_size)
      if step == 1:
        if slice_size != x_shape[x_axis]:  # a full slice needs no start index
          gather_indices.append((lax.convert_element_type(start, _INDEX_DTYPE),
                                 len(gather_indices_shape)))
          start_index_map.append(x_axis)
        gather_slice_shape.append(slice_size)
        offset_dims.append(collapsed_y_axis)
      else:
        positions = lax.add(np.asarray(start, _INDEX_DTYPE),
                            lax.mul(np.asarray(step, _INDEX_DTYPE),
                                    lax.iota(_INDEX_DTYPE, slice_size)))
        if step < 0:
          reversed_y_dims.append(collapsed_y_axis)
          positions = lax.rev(positions, (0,))
        gather_slice_shape.append(1)
        gather_indices.append((positions, len(gather_indices_shape)))
        start_index_map.append(x_axis)
        gather_indices_shape.append(slice_size)
        collapsed_slice_dims.append(x_axis)
      collapsed_y_axis += 1
      y_axis += 1
      x_axis += 1
    else:
      if aval is not None and not (dtypes.is_integer(aval.dtype) or aval.dtype == dtypes.bool_):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                        f"type {aval.dtype.name} at position {idx_pos}, indexer value {i}")
      raise IndexError(f"Indexing mode not yet supported. Got unsupported indexer at "
                       f"position {idx_pos}: {i!r}")

  if not gather_indices:
    gather_indices_array = np.zeros((0,), _INDEX_DTYPE)
  elif len(gather_indices) == 1:
    g, _ = gather_indices[0]
    gather_indices_array = lax.expand_dims(g, (g.ndim,))
  else:
    last_dim = len(gather_indices_shape)
    gather_indices_shape.append(1)
    gather_indices_array = lax.concatenate(
        [lax.broadcast_in_dim(g, gather_indices_shape, tuple(range(i, i + g.ndim)))
         for g, i in gather_indices], last_dim)

  dnums = lax.GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                     collapsed_slice_dims=tuple(sorted(collapsed_slice_dims)),
                                     start_index_map=tuple(start_index_map))
  return _Indexer(slice_shape=tuple(slice_shape),
                  gather_slice_shape=tuple(gather_slice_shape),
                  gather_indices=gather_indices_array, dnums=dnums,
                  unique_indices=advanced_indexes is None,
                  indices_are_sorted=advanced_indexes is None,
                  reversed_y_dims=tuple(reversed_y_dims),
                  newaxis_dims=tuple(newaxis_dims),
                  scalar_bool_dims=scalar_bool_dims)


def rewriting_take(arr, idx, indices_are_sorted=False, unique_indices=False, mode=None,
                   fill_value=None, normalize_indices=True):
  """`arr[idx]`, with gather's options (what `x.at[idx].get(...)` calls)."""
  if mode is not None:
    lax.GatherScatterMode.from_any(mode)  # an unknown mode raises, whichever path is taken
  if normalize_indices:
    result = _attempt_rewriting_take_via_slice(arr, idx, mode)
    if result is not None:
      return result
  idx = _prepare_index(idx, arr.shape)
  indexer = _index_to_gather(arr.shape, idx, normalize_indices)
  if fill_value is not None:
    value = _concrete_value(fill_value)
    if value is None:
      raise core.ConcretizationTypeError(
          fill_value, "The problem arose with the fill_value argument to indexed get().")
    if np.ndim(value) != 0:
      raise ValueError("fill_value argument to indexed get() must be a scalar")
    fill_value = value.item()
  y = arr
  if indexer.scalar_bool_dims:
    y = lax.expand_dims(y, indexer.scalar_bool_dims)
  if 0 in indexer.slice_shape:  # nothing to gather (e.g. zeros(0)[array([], int)])
    return lax.full_like(y, 0, shape=indexer.slice_shape)
  if mode is None:
    mode = lax.GatherScatterMode.PROMISE_IN_BOUNDS  # jnp indexing clamps by default
  if 0 not in np.shape(indexer.gather_indices):
    y = lax.gather(y, indexer.gather_indices, indexer.dnums, indexer.gather_slice_shape,
                   unique_indices=unique_indices or indexer.unique_indices,
                   indices_are_sorted=indices_are_sorted or indexer.indices_are_sorted,
                   mode=mode, fill_value=fill_value)
  if indexer.reversed_y_dims:
    y = lax.rev(y, indexer.reversed_y_dims)
  if indexer.newaxis_dims:
    y = lax.expand_dims(y, indexer.newaxis_dims)
  return y


def getitem(x, index):
  """`x[index]` with NumPy's basic and advanced indexing (see the module docstring)."""
  return rewriting_take(x, index)


# --- updates: x.at[idx] ------------------------------------------------------------------------

def _scatter_update(x, idx, y, scatter_op, indices_are_sorted, unique_indices, mode,
                    normalize_indices):
  """`x` after `x[idx] op= y`, computed functionally with `scatter_op`.

  `y` is promoted with `x`, broadcast to the shape of `x[idx]`, scattered,
  and the result cast back to `x`'s dtype and weak type. A `y` that `x`'s
  dtype cannot hold safely gives a FutureWarning, as in JAX.
  """
  x = asarray(x)
  if (isinstance(y, int) and dtypes.is_integer(x.dtype)
      and dtypes.iinfo(x.dtype).min <= y <= dtypes.iinfo(x.dtype).max):
    y = asarray(y, dtype=x.dtype)
  else:
    y = asarray(y)
  idx = _prepare_index(idx, x.shape)
  dtype, weak_type = x.dtype, x.weak_type
  if y.dtype != dtype and dtypes.result_type(y, dtype) != dtype:
    warnings.warn(f"scatter inputs have incompatible types: cannot safely cast value "
                  f"from dtype={y.dtype} to dtype={dtype} with "
                  f"jax_numpy_dtype_promotion='standard'. In future JAX releases this "
                  f"will result in an error.", FutureWarning, stacklevel=3)
  indexer = _index_to_gather(x.shape, idx, normalize_indices)
  if 0 in indexer.slice_shape:
    return x
  x, y = promote_dtypes(x, y)
  y = broadcast_to(y, indexer.slice_shape)
  y = lax.squeeze(y, indexer.newaxis_dims)
  if indexer.reversed_y_dims:
    y = lax.rev(y, indexer.reversed_y_dims)
  if indexer.scalar_bool_dims:
    x = lax.expand_dims(x, indexer.scalar_bool_dims)
  dnums = lax.ScatterDimensionNumbers(
      update_window_dims=indexer.dnums.offset_dims,
      inserted_window_dims=indexer.dnums.collapsed_slice_dims,
      scatter_dims_to_operand_dims=indexer.dnums.start_index_map)
  out = scatter_op(x, indexer.gather_indices, y, dnums,
                   indices_are_sorted=indexer.indices_are_sorted or indices_are_sorted,
                   unique_indices=indexer.unique_indices or unique_indices, mode=mode)
  out = lax.squeeze(out, indexer.scalar_bool_dims)
  return lax.convert_element_type(out, dtype, weak_type)


class IndexUpdateHelper:
  """`x.at`: index it (`x.at[idx]`) to get an `_IndexUpdateRef`.

  `x.at[idx].set(y)` is the functional form of `x[idx] = y`; likewise add,
  subtract, multiply (mul), divide, power, min, max, apply and get. Each
  returns a new array. Unlike NumPy's `x[idx] += y`, repeated indices all
  take effect. Keywords: `mode` (by default `get` clamps out-of-bounds
  indices and updates drop them; "clip" clamps, "drop"/"fill" drops or
  fills, "promise_in_bounds" is the caller's promise), `indices_are_sorted`
  and `unique_indices` (hints), `wrap_negative_indices` (default True), and
  for `get` `fill_value`.
  """

  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
  """An array and an index; its methods return updated copies of the array."""

  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array = array
    self.index = index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None, wrap_negative_indices=True):
    """`x[idx]`; out of bounds clamps by default, `mode="fill"` gives `fill_value`."""
    return rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                          normalize_indices=wrap_negative_indices)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    """`x[idx] = values` (`scatter`); for repeated indices one of the values wins."""
    return _scatter_update(self.array, self.index, values, lax.scatter,
                           indices_are_sorted, unique_indices, mode, wrap_negative_indices)

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """`func.at(x, idx)` for a unary `func`; repeated indices apply it repeatedly."""
    def scatter_apply(x, indices, y, dnums, **kwargs):
      return lax.scatter_apply(x, indices, func, dnums, update_shape=y.shape, **kwargs)
    zero = np.zeros((), self.array.dtype)
    return _scatter_update(self.array, self.index, zero, scatter_apply,
                           indices_are_sorted, unique_indices, mode, wrap_negative_indices)

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    """`x[idx] += values` (`scatter-add`); repeated indices accumulate."""
    return _scatter_update(self.array, self.index, values, lax.scatter_add,
                           indices_are_sorted, unique_indices, mode, wrap_negative_indices)

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True):
    """`x[idx] -= values` (`scatter-sub`); repeated indices accumulate."""
    return _scatter_update(self.array, self.index, values, lax.scatter_sub,
                           indices_are_sorted, unique_indices, mode, wrap_negative_indices)

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               wrap_negative_indices=True):
    """`x[idx] *= values` (`scatter-mul`); repeated indices accumulate."""
    return _scatter_update(self.array, self.index, values, lax.scatter_mul,
                           indices_are_sorted, unique_indices, mode, wrap_negative_indices)

  mul = multiply

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
             wrap_negative_indices=True):
    """`x[idx] /= values`, as JAX computes it: `x / ones_like(x).at[idx].multiply(values)`.

    The result has `jnp.divide`'s dtype (floating for integer `x`).
    """
    divisors = _scatter_update(ones_like(self.array), self.index, values,
                               lax.scatter_mul, indices_are_sorted, unique_indices, mode,
                               wrap_negative_indices)
    return ufuncs.divide(self.array, divisors)

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """`x[idx] **= values`, as JAX computes it: `x ** ones_like(x).at[idx].multiply(values)`."""
    exponents = _scatter_update(ones_like(self.array), self.index, values,
                                lax.scatter_mul, indices_are_sorted, unique_indices, mode,
                                wrap_negative_indices)
    return ufuncs.power(self.array, exponents)

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    """`x[idx] = minimum(x[idx], values)` (`scatter-min`); NaN wins."""
    return _scatter_update(self.array, self.index, values, lax.scatter_min,
                           indices_are_sorted, unique_indices, mode, wrap_negative_indices)

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          wrap_negative_indices=True):
    """`x[idx] = maximum(x[idx], values)` (`scatter-max`); NaN wins."""
    return _scatter_update(self.array, self.index, values, lax.scatter_max,
                           indices_are_sorted, unique_indices, mode, wrap_negative_indices)
