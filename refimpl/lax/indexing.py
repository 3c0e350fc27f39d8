"""Indexing primitives: slice, dynamic_slice, dynamic_update_slice, gather, scatter.

Out-of-bounds behaviour is part of each primitive's semantics and is stated
in its reference rule:

* `slice` has static bounds, checked by its shape rule: never out of bounds.
* `dynamic_slice` / `dynamic_update_slice` clamp each start index so that
  the whole slice fits: `clamp(0, start, dim - size)`. Negative starts are
  not wrapped by the primitives (the `lax.*` functions wrap them first when
  `allow_negative_indices` is true, as JAX's do).
* `gather` and the `scatter` family follow their `GatherScatterMode`.

Index operands may have any integer dtype; out-of-range arithmetic is done on
Python integers, so large indices never wrap around.

Derivatives (as JAX's rules): indices have none. slice, dynamic_slice and
gather are linear, transposed by pad, dynamic_update_slice and scatter-add;
dynamic_update_slice, scatter-add/-sub and (with unique indices) scatter are
linear in operand and updates together; the transposes keep the `mode`.
The rules of scatter, scatter-mul and scatter-min/-max are at the end.

Batching (as JAX's rules): slice takes the batch axis whole; gather and
scatter put batch axes first and fold the batch into their dimension
numbers (an unbatched side gets one more window or index-batch dimension,
both batched a pair of `operand_batching_dims`); dynamic_slice and
dynamic_update_slice batch as the gather and scatter (mode CLIP) they are
special cases of.
"""

import enum
import functools
import math
from typing import NamedTuple

import numpy as np

from refimpl import core, dtypes
from refimpl.core import Primitive, ShapedArray
from refimpl.interpreters import ad, batching
from refimpl.lax import elementwise, shapes
from refimpl.lax.rules import ANY, EXTENDED, NUMBER, check_dtype, check_same_dtypes

__all__ = [
    'slice', 'slice_in_dim', 'index_in_dim',
    'dynamic_slice', 'dynamic_slice_in_dim', 'dynamic_index_in_dim',
    'dynamic_update_slice', 'dynamic_update_slice_in_dim',
    'dynamic_update_index_in_dim',
    'GatherDimensionNumbers', 'GatherScatterMode', 'gather', 'index_take',
    'ScatterDimensionNumbers', 'scatter', 'scatter_add', 'scatter_sub',
    'scatter_mul', 'scatter_min', 'scatter_max', 'scatter_apply',
    'slice_p', 'dynamic_slice_p', 'dynamic_update_slice_p', 'gather_p', 'scatter_p',
    'scatter_add_p', 'scatter_sub_p', 'scatter_mul_p', 'scatter_min_p', 'scatter_max_p',
]

_slice = slice  # the builtin, which `lax.slice` below shadows


def _shape(x):
  return core.get_aval(x).shape


def _clamp(low, value, high):
  return low if value < low else high if value > high else value


# --- slice --------------------------------------------------------------------

slice_p = Primitive("slice")


@slice_p.def_impl
def _slice_reference(operand, *, start_indices, limit_indices, strides):
  """`operand[start:limit:stride, ...]` with static, in-bounds bounds.

  Shape rule: one start, limit (and stride, if not None) per dimension, with
  `0 <= start <= limit <= dim` and strides >= 1; result dim i is
  `ceil((limit[i] - start[i]) / stride[i])`. Dtype and weak type are the
  operand's. Bounds are static, so nothing is ever out of bounds.
  """
  strides = strides or (1,) * operand.ndim
  return operand[tuple(_slice(s, l, st) for s, l, st
                       in zip(start_indices, limit_indices, strides))]


@slice_p.def_abstract_eval
def _slice_shape_rule(operand, *, start_indices, limit_indices, strides):
  if operand.ndim != len(start_indices):
    raise TypeError(f"slice start_indices must have length equal to the number of "
                    f"dimensions of the operand, got indices {start_indices} for "
                    f"operand shape {operand.shape}.")
  if len(start_indices) != len(limit_indices):
    raise TypeError(f"slice limit_indices must have the same length as start_indices, "
                    f"got start_indices {start_indices} and limit_indices {limit_indices}.")
  if any(l > d for l, d in zip(limit_indices, operand.shape)):
    raise TypeError(f"slice limit_indices must be less than or equal to operand shape, "
                    f"got limit_indices {limit_indices} for operand shape {operand.shape}.")
  if any(s < 0 for s in start_indices):
    raise TypeError(f"slice start_indices must be greater than or equal to zero, "
                    f"got start_indices of {start_indices}.")
  if any(l < s for s, l in zip(start_indices, limit_indices)):
    raise TypeError(f"slice limit_indices must be greater than or equal to "
                    f"start_indices, got start_indices {start_indices} and "
                    f"limit_indices {limit_indices}.")
  strides = strides or (1,) * operand.ndim
  if len(strides) != operand.ndim:
    raise TypeError(f"slice strides must have length equal to the number of "
                    f"dimensions of the operand, got strides {strides} for operand "
                    f"shape {operand.shape}.")
  if any(s <= 0 for s in strides):
    raise TypeError(f"slice strides must be positive, got {strides}")
  shape = [-(-(l - s) // st) for s, l, st in zip(start_indices, limit_indices, strides)]
  return operand.update(shape=shape)


def slice(operand, start_indices, limit_indices, strides=None):
  """`operand[start_indices[0]:limit_indices[0]:strides[0], ...]` (static bounds)."""
  return slice_p.bind(operand, start_indices=core.canonicalize_shape(start_indices),
                      limit_indices=core.canonicalize_shape(limit_indices),
                      strides=None if strides is None else core.canonicalize_shape(strides))


def _slice_transpose(ct, operand, *, start_indices, limit_indices, strides):
  # ct goes back where it was read: zeros before, after, and between strided elements.
  shape = operand.aval.shape
  strides = strides or (1,) * len(shape)
  ends = [s + (n - 1) * st + 1 if n else s  # one past the last element read
          for s, n, st in zip(start_indices, _shape(ct), strides)]
  config = [(s, d - e, st - 1) for s, d, e, st in zip(start_indices, shape, ends, strides)]
  return [shapes.pad(ct, np.zeros((), core.get_aval(ct).dtype), config)]


ad.deflinear2(slice_p, _slice_transpose)


def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
  # the batch axis is taken whole, and stays where it is
  (operand,), (d,) = args, dims
  insert = lambda bounds, value: bounds[:d] + (value,) + bounds[d:]
  strides = None if strides is None else insert(strides, 1)
  return slice(operand, insert(start_indices, 0), insert(limit_indices, _shape(operand)[d]),
               strides), d


batching.primitive_batchers[slice_p] = _slice_batch


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
  """`lax.slice` along one `axis`; None bounds mean the whole axis, negative ones wrap."""
  shape = _shape(operand)
  size = shape[axis]
  start = 0 if start_index is None else int(start_index)
  limit = size if limit_index is None else int(limit_index)
  start, limit = (start + size if start < 0 else start), (limit + size if limit < 0 else limit)
  starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
  starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
  return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
  """`operand[..., index]` along `axis` (static; negative wraps; out of range raises IndexError)."""
  index, axis = int(index), int(axis)
  size = _shape(operand)[axis]
  wrapped = index + size if index < 0 else index
  if not 0 <= wrapped < size:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
  result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return result if keepdims else shapes.squeeze(result, (axis,))


# --- dynamic_slice --------------------------------------------------------------

dynamic_slice_p = Primitive("dynamic_slice")


@dynamic_slice_p.def_impl
def _dynamic_slice_reference(operand, *start_indices, slice_sizes):
  """The block of shape `slice_sizes` of `operand` starting at `start_indices`.

  Out of bounds: each start is clamped so the block fits,
  `start = clamp(0, start, dim - size)`; a negative start is clamped to 0
  (it is not wrapped). Shape rule: one scalar start per dimension, all of the
  same integer dtype, and `0 <= slice_sizes[i] <= dim i`. The result has
  shape `slice_sizes` and the operand's dtype and weak type.
  """
  starts = [_clamp(0, int(s), d - n)
            for s, d, n in zip(start_indices, operand.shape, slice_sizes)]
  return operand[tuple(_slice(s, s + n) for s, n in zip(starts, slice_sizes))]


def _check_start_indices(name, operand, start_indices):
  if len(start_indices) != operand.ndim:
    raise TypeError(f"{name} start_indices must have length equal to the number of "
                    f"dimensions of the operand, got {len(start_indices)} indices for "
                    f"operand shape {operand.shape}.")
  if any(i.ndim != 0 for i in start_indices):
    raise TypeError(f"start_indices arguments to {name} must be scalars, got indices "
                    f"{', '.join(map(str, start_indices))}")
  if any(i.dtype != start_indices[0].dtype or not dtypes.is_integer(i.dtype)
         for i in start_indices):
    raise TypeError(f"index arguments to {name} must be integers of the same type, "
                    f"got: {', '.join(i.dtype.name for i in start_indices)}")


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_shape_rule(operand, *start_indices, slice_sizes):
  _check_start_indices("dynamic_slice", operand, start_indices)
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"dynamic_slice slice_sizes must have the same length as "
                    f"start_indices, got start_indices length {len(start_indices)} "
                    f"and slice_sizes {slice_sizes}.")
  if any(n > d for n, d in zip(slice_sizes, operand.shape)):
    raise TypeError(f"slice slice_sizes must be less than or equal to operand shape, "
                    f"got slice_sizes {slice_sizes} for operand shape {operand.shape}.")
  if any(n < 0 for n in slice_sizes):
    raise TypeError(f"slice slice_sizes must be greater than or equal to zero, "
                    f"got slice_sizes of {slice_sizes}.")
  return operand.update(shape=slice_sizes)


def _wrap_start_indices(operand, start_indices, allow_negative_indices):
  """Start indices for dynamic_(update_)slice, negative ones wrapped where allowed.

  Python and NumPy integers are wrapped right away and become constants of
  their canonical dtype; traced ones get `select(i < 0, i + dim, i)`.
  Unsigned indices cannot be negative and are left alone.
  """
  shape = _shape(operand)
  if not isinstance(start_indices, (tuple, list)):
    if np.ndim(start_indices) != 1:
      raise ValueError(f"Slice indices must be a 1D sequence, got {np.shape(start_indices)}")
    start_indices = list(start_indices)
  if len(start_indices) != len(shape):
    raise ValueError(f"Length of slice indices must match number of operand "
                     f"dimensions ({len(start_indices)} vs {shape})")
  if isinstance(allow_negative_indices, bool):
    allow_negative_indices = [allow_negative_indices] * len(shape)
  result = []
  for i, dim, allow_negative in zip(start_indices, shape, allow_negative_indices):
    index_dtype = dtypes.dtype(i)
    if dtypes.is_unsigned(index_dtype):
      result.append(i)
    elif isinstance(i, (int, np.integer)):
      if i < 0 and not allow_negative:
        raise ValueError(f"Index {i} is out of bounds for dimension {dim} if "
                         "allow_negative_indices=False")
      result.append(elementwise.convert_element_type(i + dim if i < 0 else i, index_dtype))
    elif allow_negative:
      dim = elementwise.convert_element_type(dim, index_dtype)
      is_negative = elementwise.lt(i, elementwise.convert_element_type(0, index_dtype))
      result.append(elementwise.select(is_negative, elementwise.add(i, dim), i))
    else:
      result.append(i)
  return result


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  """The block of size `slice_sizes` at (possibly traced) `start_indices`.

  Negative starts count from the end when `allow_negative_indices` (a bool
  or one per dimension); then starts are clamped so the block fits.
  """
  starts = _wrap_start_indices(operand, start_indices, allow_negative_indices)
  return dynamic_slice_p.bind(operand, *starts,
                              slice_sizes=core.canonicalize_shape(slice_sizes))


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
  # ct written into zeros at the same (clamped) place
  zeros = ad.zeros_like_aval(operand.aval)
  return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


# The start indices are integers: only the operand has a tangent.
ad.defjvp(dynamic_slice_p, lambda t, operand, *starts, slice_sizes:
          dynamic_slice_p.bind(t, *starts, slice_sizes=slice_sizes))
ad.deftranspose(dynamic_slice_p, _dynamic_slice_transpose)


def _batch_start_indices(starts, dims):
  """The scalar start indices of dynamic_(update_)slice as one index vector:
  (n,), unbatched, or (size, n) with batch dim 0 if any start is batched."""
  if not starts:
    return np.zeros((0,), np.int32), batching.not_mapped
  size = next((_shape(s)[0] for s, d in zip(starts, dims) if d is not batching.not_mapped),
              None)
  if size is None:
    return shapes.concatenate([shapes.broadcast(s, (1,)) for s in starts], 0), batching.not_mapped
  columns = [shapes.broadcast_in_dim(s, (size, 1), () if d is batching.not_mapped else (0,))
             for s, d in zip(starts, dims)]
  return shapes.concatenate(columns, 1), 0


def _dynamic_slice_batch(args, dims, *, slice_sizes):
  # As JAX: a gather of one whole-operand-rank window per member, at clamped starts.
  (operand, *starts), (operand_dim, *start_dims) = args, dims
  index, index_dim = _batch_start_indices(starts, start_dims)
  every_dim = tuple(range(len(slice_sizes)))
  dnums = GatherDimensionNumbers(offset_dims=every_dim, collapsed_slice_dims=(),
                                 start_index_map=every_dim)
  return _gather_batch((operand, index), (operand_dim, index_dim), dimension_numbers=dnums,
                       slice_sizes=slice_sizes, unique_indices=True, indices_are_sorted=True,
                       mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)


batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch


def _zero_index_like(index):
  """A 0 start index of the same type as `index` (a Python 0 for a Python int)."""
  return 0 if isinstance(index, int) else np.zeros((), dtypes.dtype(index))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
  """`operand[..., start_index:start_index + slice_size]` along `axis`, clamped to fit."""
  shape, axis = _shape(operand), int(axis)
  starts = [_zero_index_like(start_index)] * len(shape)
  sizes = list(shape)
  allow_negative = [False] * len(shape)
  starts[axis], sizes[axis], allow_negative[axis] = start_index, slice_size, allow_negative_indices
  return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *,
                         allow_negative_indices=True):
  """`operand[..., index]` along `axis` at a (possibly traced) index, clamped."""
  result = dynamic_slice_in_dim(operand, index, 1, axis,
                                allow_negative_indices=allow_negative_indices)
  return result if keepdims else shapes.squeeze(result, (axis,))


# --- dynamic_update_slice ----------------------------------------------------------

dynamic_update_slice_p = Primitive("dynamic_update_slice")


@dynamic_update_slice_p.def_impl
def _dynamic_update_slice_reference(operand, update, *start_indices):
  """`operand` with the block at `start_indices` replaced by `update`.

  Out of bounds: each start is clamped so the whole update fits,
  `start = clamp(0, start, dim - update_dim)`; negative starts clamp to 0.
  Shape rule: `update` has the operand's rank and dtype and no larger
  dimensions; one scalar start per dimension, all of the same integer dtype.
  The result has the operand's shape and dtype; it is weakly typed only if
  both operand and update are.
  """
  starts = [_clamp(0, int(s), d - n)
            for s, d, n in zip(start_indices, operand.shape, update.shape)]
  out = operand.copy()
  out[tuple(_slice(s, s + n) for s, n in zip(starts, update.shape))] = update
  return out


@dynamic_update_slice_p.def_abstract_eval
def _dynamic_update_slice_shape_rule(operand, update, *start_indices):
  if operand.ndim != update.ndim:
    raise TypeError(f"dynamic_update_slice update must have the same rank as operand, "
                    f"got update shape {update.shape} for operand shape {operand.shape}.")
  _check_start_indices("dynamic_update_slice", operand, start_indices)
  if any(u > d for u, d in zip(update.shape, operand.shape)):
    raise TypeError(f"dynamic_update_slice update shape must be smaller than operand "
                    f"shape, got update shape {update.shape} for operand shape "
                    f"{operand.shape}.")
  check_same_dtypes("dynamic_update_slice", operand, update)
  return operand.update(weak_type=operand.weak_type and update.weak_type)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
  """`operand` with `update` written at (possibly traced) `start_indices`, clamped to fit."""
  starts = _wrap_start_indices(operand, start_indices, allow_negative_indices)
  return dynamic_update_slice_p.bind(operand, update, *starts)


def _dynamic_update_slice_jvp(primals, tangents):
  operand, update, *starts = primals
  out = dynamic_update_slice_p.bind(*primals)
  t_operand, t_update = tangents[:2]
  if isinstance(t_operand, ad.Zero) and isinstance(t_update, ad.Zero):
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  return out, dynamic_update_slice_p.bind(ad.instantiate_zeros(t_operand),
                                          ad.instantiate_zeros(t_update), *starts)


def _dynamic_update_slice_transpose(ct, operand, update, *starts):
  # The operand's cotangent is ct with the updated block zeroed; the
  # update's is that block of ct.
  update_aval = ad.primal_aval(update)
  t_operand = t_update = None
  if ad.is_undefined_primal(operand):
    t_operand = dynamic_update_slice_p.bind(ct, ad.zeros_like_aval(update_aval), *starts)
  if ad.is_undefined_primal(update):
    t_update = dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape)
  return [t_operand, t_update] + [None] * len(starts)


ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp
ad.deftranspose(dynamic_update_slice_p, _dynamic_update_slice_transpose)


def _dynamic_update_slice_batch(args, dims):
  # As JAX: a scatter of one window per member, clamped into bounds as the starts are.
  (operand, update, *starts), (operand_dim, update_dim, *start_dims) = args, dims
  index, index_dim = _batch_start_indices(starts, start_dims)
  every_dim = tuple(range(len(starts)))
  dnums = ScatterDimensionNumbers(update_window_dims=every_dim, inserted_window_dims=(),
                                  scatter_dims_to_operand_dims=every_dim)
  return _scatter_batch(scatter_p, (operand, index, update), (operand_dim, index_dim, update_dim),
                        dimension_numbers=dnums, indices_are_sorted=True, unique_indices=True,
                        mode=GatherScatterMode.CLIP, update_jaxpr=None, update_consts=())


batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
  """`dynamic_update_slice` at `start_index` along `axis` (0 along the others)."""
  ndim, axis = len(_shape(operand)), int(axis)
  starts = [_zero_index_like(start_index)] * ndim
  allow_negative = [False] * ndim
  starts[axis], allow_negative[axis] = start_index, allow_negative_indices
  return dynamic_update_slice(operand, update, starts,
                              allow_negative_indices=allow_negative)


def dynamic_update_index_in_dim(operand, update, index, axis, *,
                                allow_negative_indices=True):
  """Writes `update` (with or without the size-1 `axis`) at `index` along `axis`."""
  axis = int(axis)
  if len(_shape(update)) != len(_shape(operand)):
    update = shapes.expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)


# --- gather and scatter modes and dimension numbers ----------------------------------

class GatherScatterMode(enum.Enum):
  """How gather and scatter treat indices whose window is (partly) out of bounds.

  CLIP: indices are clamped so that the whole window is in bounds.
  FILL_OR_DROP: a gathered window that is partly out of bounds is replaced,
    entirely, by `fill_value`; a scattered one is dropped, entirely.
  PROMISE_IN_BOUNDS: the caller promises indices are in bounds. As on XLA,
    the reference clamps out-of-bounds gathers (as CLIP) and drops
    out-of-bounds scatters (as FILL_OR_DROP).
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()

  @staticmethod
  def from_any(s):
    """The mode named by `s`: a mode, None ("fill"/"drop"), "clip" or "promise_in_bounds"."""
    if isinstance(s, GatherScatterMode):
      return s
    if s == "clip":
      return GatherScatterMode.CLIP
    if s is None or s == "fill" or s == "drop":
      return GatherScatterMode.FILL_OR_DROP
    if s == "promise_in_bounds":
      return GatherScatterMode.PROMISE_IN_BOUNDS
    raise ValueError(f'Unknown gather mode "{s}"')


class GatherDimensionNumbers(NamedTuple):
  """How the dimensions of a gather's operand, indices and output relate.

  offset_dims: output dimensions that index into the gathered window (sorted).
  collapsed_slice_dims: operand dimensions of window size 1 that the output
    drops (sorted).
  start_index_map: for each entry of an index vector, the operand dimension
    it starts.
  operand_batching_dims / start_indices_batching_dims: operand dimensions
    (window size 0 or 1, dropped from the output) paired, in order, with
    indices batch dimensions; along such an operand dimension a window
    starts at its batch position's coordinate along the paired dimension.

  The index vector is always the last dimension of the indices.
  """
  offset_dims: tuple
  collapsed_slice_dims: tuple
  start_index_map: tuple
  operand_batching_dims: tuple = ()
  start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
  """How the dimensions of a scatter's operand, indices and updates relate.

  update_window_dims: dimensions of `updates` that index into the window
    (sorted). inserted_window_dims: operand dimensions of window size 1 that
    `updates` lacks (sorted). scatter_dims_to_operand_dims: for each entry of
    an index vector, the operand dimension it starts. operand_batching_dims /
    scatter_indices_batching_dims: paired dimensions, as in gather.
  The index vector is always the last dimension of the indices.
  """
  update_window_dims: tuple
  inserted_window_dims: tuple
  scatter_dims_to_operand_dims: tuple
  operand_batching_dims: tuple = ()
  scatter_indices_batching_dims: tuple = ()


def _canonical_dnums(cls, dimension_numbers):
  """`dimension_numbers` with every field a tuple of ints (hashable, printable)."""
  return cls(*(tuple(int(d) for d in field) for field in dimension_numbers))


def _check_dims(name, what, dims, rank, sorted_=True):
  if sorted_ and list(dims) != sorted(dims):
    raise TypeError(f"{what} in {name} op must be sorted; got {dims}")
  if len(set(dims)) != len(dims):
    raise TypeError(f"{what} in {name} op must not repeat; got: {dims}.")
  for d in dims:
    if not 0 <= d < rank:
      raise TypeError(f"Invalid {what} set in {name} op; valid range is [0, {rank}); "
                      f"got: {d}.")


def _check_batching_dims(op, operand, indices, operand_batching_dims, indices_name,
                         indices_batching_dims, disjoint_from):
  """The checks XLA makes of a gather's or scatter's batching dimensions."""
  _check_dims(op, "operand_batching_dims", operand_batching_dims, operand.ndim)
  _check_dims(op, indices_name, indices_batching_dims, indices.ndim - 1, sorted_=False)
  for name, dims in disjoint_from:
    if set(dims) & set(operand_batching_dims):
      raise TypeError(f"{name} and operand_batching_dims in {op} op must be disjoint; "
                      f"got: {dims} and {operand_batching_dims}.")
  if len(operand_batching_dims) != len(indices_batching_dims):
    raise TypeError(f"{op.capitalize()} op requires equal numbers of operand_batching_dims "
                    f"and {indices_name}, got {operand_batching_dims} and "
                    f"{indices_batching_dims}.")
  operand_batch = tuple(operand.shape[d] for d in operand_batching_dims)
  indices_batch = tuple(indices.shape[d] for d in indices_batching_dims)
  if operand_batch != indices_batch:
    raise TypeError(f"{op.capitalize()} op requires operand batching dimensions and indices "
                    f"batching dimensions to have the same shape, got {operand_batch} "
                    f"and {indices_batch}.")


def _window_start(operand_shape, index_vector, index_map, batch_position,
                  operand_batching_dims, indices_batching_dims):
  """The operand position where one window starts (Python ints, unclamped)."""
  start = [0] * len(operand_shape)
  for k, d in enumerate(index_map):
    start[d] = int(index_vector[k])
  for operand_dim, indices_dim in zip(operand_batching_dims, indices_batching_dims):
    start[operand_dim] = batch_position[indices_dim]
  return start


def _window_fits(start, window_shape, operand_shape):
  return all(0 <= s and s + n <= d for s, n, d in zip(start, window_shape, operand_shape))


def _clamp_window(start, window_shape, operand_shape):
  return [_clamp(0, s, d - n) for s, n, d in zip(start, window_shape, operand_shape)]


# --- gather ----------------------------------------------------------------------------

gather_p = Primitive("gather")


@gather_p.def_impl
def _gather_reference(operand, indices, *, dimension_numbers, slice_sizes,
                      indices_are_sorted, unique_indices, mode, fill_value):
  """Gathers one window of shape `slice_sizes` per index vector.

  `indices` has shape `batch_shape + (len(start_index_map),)`. For each batch
  position b, the window starts at operand dimension `start_index_map[k]` at
  `indices[b][k]`, at dimension `operand_batching_dims[j]` at
  `b[start_indices_batching_dims[j]]`, and at 0 elsewhere. The window, with
  its collapsed and batching dimensions (size 1) dropped, is output[b]; the
  output's `offset_dims` hold the window dimensions and its other dimensions
  the batch dimensions, in order.

  Out of bounds (a window not inside the operand): CLIP and
  PROMISE_IN_BOUNDS clamp its start to `clamp(0, start, dim - slice_size)`;
  FILL_OR_DROP outputs `fill_value` (converted to the operand's dtype as
  `convert_element_type` does) for the whole window. `indices_are_sorted`
  and `unique_indices` are hints with no effect here.

  Shape rule: see `_gather_shape_rule`; dtype and weak type are the operand's.
  """
  dnums = dimension_numbers
  batch_shape = indices.shape[:-1]
  window_shape = tuple(n for d, n in enumerate(slice_sizes)
                       if d not in dnums.collapsed_slice_dims + dnums.operand_batching_dims)
  if mode == GatherScatterMode.FILL_OR_DROP:
    fill = elementwise.convert_element_type_p.impl(
        np.asarray(fill_value), new_dtype=operand.dtype, weak_type=False)
  out = np.empty(batch_shape + window_shape, operand.dtype)
  for b in np.ndindex(*batch_shape):
    start = _window_start(operand.shape, indices[b], dnums.start_index_map, b,
                          dnums.operand_batching_dims, dnums.start_indices_batching_dims)
    if mode == GatherScatterMode.FILL_OR_DROP and not _window_fits(
        start, slice_sizes, operand.shape):
      out[b] = fill
      continue
    start = _clamp_window(start, slice_sizes, operand.shape)
    window = operand[tuple(_slice(s, s + n) for s, n in zip(start, slice_sizes))]
    out[b] = window.reshape(window_shape)
  return np.moveaxis(out, list(range(len(batch_shape), out.ndim)), dnums.offset_dims)


@gather_p.def_abstract_eval
def _gather_shape_rule(operand, indices, *, dimension_numbers, slice_sizes,
                       indices_are_sorted, unique_indices, mode, fill_value):
  """Checks the dimension numbers as XLA does; the output shape is the batch
  shape (indices.shape[:-1]) with the window sizes inserted at `offset_dims`."""
  if not dtypes.is_integer(indices.dtype):
    raise ValueError("indices must have an integer type")
  if indices.ndim < 1:
    raise TypeError("gather indices must have rank >= 1; the last dimension is the "
                    "index vector (add a trailing dimension of size 1 for scalar indices)")
  dnums = dimension_numbers
  out_rank = len(dnums.offset_dims) + indices.ndim - 1
  _check_dims("gather", "offset_dims", dnums.offset_dims, out_rank)
  if len(dnums.start_index_map) != indices.shape[-1]:
    raise TypeError(f"Gather op has {len(dnums.start_index_map)} elements in "
                    f"start_index_map and the bound of dimension index_vector_dim="
                    f"{indices.ndim - 1} of indices is {indices.shape[-1]}. These two "
                    f"numbers must be equal.")
  _check_dims("gather", "start_index_map", dnums.start_index_map, operand.ndim, sorted_=False)
  _check_dims("gather", "collapsed_slice_dims", dnums.collapsed_slice_dims, operand.ndim)
  _check_batching_dims("gather", operand, indices, dnums.operand_batching_dims,
                       "start_indices_batching_dims", dnums.start_indices_batching_dims,
                       (("collapsed_slice_dims", dnums.collapsed_slice_dims),
                        ("start_index_map", dnums.start_index_map)))
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"Gather op must have one slice size for every input dimension; "
                    f"got: len(slice_sizes)={len(slice_sizes)}, "
                    f"input_shape.rank={operand.ndim}")
  if len(slice_sizes) != (len(dnums.offset_dims) + len(dnums.collapsed_slice_dims)
                          + len(dnums.operand_batching_dims)):
    raise TypeError(f"All components of the offset index in a gather op must either "
                    f"be a offset dimension or explicitly collapsed/batching; got "
                    f"len(slice_sizes)={len(slice_sizes)}, output_slice_sizes="
                    f"{dnums.offset_dims}, collapsed_slice_dims="
                    f"{dnums.collapsed_slice_dims}, operand_batching_dims="
                    f"{dnums.operand_batching_dims}.")
  for i, (n, d) in enumerate(zip(slice_sizes, operand.shape)):
    if not 0 <= n <= d:
      raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                      f"within [0, {d} + 1), got {n}.")
  for i, d in enumerate(dnums.collapsed_slice_dims):
    if slice_sizes[d] != 1:
      raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound "
                      f"is {slice_sizes[d]} for index {d} at position {i}.")
  for i, d in enumerate(dnums.operand_batching_dims):
    if slice_sizes[d] > 1:
      raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, "
                      f"but bound is {slice_sizes[d]} for index {d} at position {i}.")
  window_sizes = iter(n for d, n in enumerate(slice_sizes)
                      if d not in dnums.collapsed_slice_dims + dnums.operand_batching_dims)
  batch_sizes = iter(indices.shape[:-1])
  shape = [next(window_sizes) if i in dnums.offset_dims else next(batch_sizes)
           for i in range(out_rank)]
  return operand.update(shape=shape)


def _default_fill_value(dtype):
  """JAX's fill for FILL_OR_DROP gathers: NaN, the lowest signed, the highest
  unsigned integer, True, or for PRNG keys the key whose data words are all
  the highest uint32 (0xFFFFFFFF)."""
  if dtypes.issubdtype(dtype, dtypes.prng_key):
    return int(np.iinfo(np.uint32).max)
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.is_unsigned(dtype):
    return int(dtypes.iinfo(dtype).max)
  if dtypes.is_integer(dtype):
    return int(dtypes.iinfo(dtype).min)
  return True


def gather(operand, start_indices, dimension_numbers, slice_sizes, *,
           unique_indices=False, indices_are_sorted=False, mode=None, fill_value=None):
  """Gathers windows of `operand` at `start_indices` (see `gather_p`).

  `mode` defaults to PROMISE_IN_BOUNDS, as in JAX (out-of-bounds windows
  clamp; `GatherScatterMode.from_any(None)`, the scatters' default, is
  FILL_OR_DROP). With FILL_OR_DROP ("fill") an out-of-bounds window is
  filled with `fill_value`, which defaults to NaN for inexact
  dtypes, the lowest value for signed and the highest for unsigned integers,
  True for booleans and the all-0xFFFFFFFF key for key arrays; other modes
  ignore it.
  """
  mode = (GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
          else GatherScatterMode.from_any(mode))
  if mode != GatherScatterMode.FILL_OR_DROP:
    fill_value = None
  elif fill_value is None:
    fill_value = _default_fill_value(core.get_aval(operand).dtype)
  return gather_p.bind(
      operand, start_indices,
      dimension_numbers=_canonical_dnums(GatherDimensionNumbers, dimension_numbers),
      slice_sizes=core.canonicalize_shape(slice_sizes),
      unique_indices=bool(unique_indices), indices_are_sorted=bool(indices_are_sorted),
      mode=mode, fill_value=fill_value)


def index_take(src, idxs, axes):
  """`src` indexed along `axes` by the integer arrays `idxs` (one per axis,
  of one shape `b`): result element `[i, ...]` is `src` at `idxs[j][i]` on
  axis `axes[j]`, the other axes of `src` following in order. Indices wrap
  modulo the axis size (negative ones count from the end). A `gather`."""
  axes = tuple(axes)
  src_shape = _shape(src)
  indices = shapes.concatenate([shapes.expand_dims(i, (1,)) for i in idxs], 1)
  sizes = np.array([src_shape[ax] for ax in axes])
  indices = indices % shapes.expand_dims(sizes, tuple(range(len(_shape(indices)) - 1)))
  slice_sizes = tuple(1 if d in axes else n for d, n in enumerate(src_shape))
  dnums = GatherDimensionNumbers(
      offset_dims=tuple(range(1, len(src_shape) - len(axes) + 1)),
      collapsed_slice_dims=axes, start_index_map=axes)
  return gather(src, indices, dimension_numbers=dnums, slice_sizes=slice_sizes)


def _gather_jvp(t, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                indices_are_sorted, mode, fill_value):
  # The same gather of the tangent; filled windows have a zero tangent.
  return gather(t, indices, dimension_numbers, slice_sizes, unique_indices=unique_indices,
                indices_are_sorted=indices_are_sorted, mode=mode, fill_value=0)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes,
                      unique_indices, indices_are_sorted, mode, fill_value):
  # Each window of ct is added back where it was read (scatter-add, same mode).
  dnums = dimension_numbers
  scatter_dnums = ScatterDimensionNumbers(
      update_window_dims=dnums.offset_dims, inserted_window_dims=dnums.collapsed_slice_dims,
      scatter_dims_to_operand_dims=dnums.start_index_map,
      operand_batching_dims=dnums.operand_batching_dims,
      scatter_indices_batching_dims=dnums.start_indices_batching_dims)
  zeros = ad.zeros_like_aval(operand.aval)
  return [scatter_add(zeros, indices, ct, scatter_dnums, unique_indices=unique_indices,
                      indices_are_sorted=indices_are_sorted, mode=mode), None]


ad.defjvp(gather_p, _gather_jvp, None)
ad.deftranspose(gather_p, _gather_transpose)


def _shift(dims):
  """Dimension numbers past a new leading batch axis."""
  return tuple(d + 1 for d in dims)


def _gather_batch(args, dims, *, dimension_numbers, slice_sizes, unique_indices,
                  indices_are_sorted, mode, fill_value):
  """As JAX's rule: batch axes go first, and the result's batch axis is 0."""
  (operand, indices), (operand_dim, indices_dim) = args, dims
  dnums = dimension_numbers
  params = dict(mode=mode, fill_value=fill_value)
  if indices_dim is batching.not_mapped:
    # The batch axis is one more window dimension, read whole: the first offset dim.
    operand = batching.moveaxis(operand, operand_dim, 0)
    dnums = GatherDimensionNumbers(
        offset_dims=(0,) + _shift(dnums.offset_dims),
        collapsed_slice_dims=_shift(dnums.collapsed_slice_dims),
        start_index_map=_shift(dnums.start_index_map),
        operand_batching_dims=_shift(dnums.operand_batching_dims),
        start_indices_batching_dims=dnums.start_indices_batching_dims)
    slice_sizes = (_shape(operand)[0],) + slice_sizes
    return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                         unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                         **params), 0
  indices = batching.moveaxis(indices, indices_dim, 0)
  if operand_dim is batching.not_mapped:
    # One more batch dimension of the indices. Members may read the same
    # windows, and their indices follow one another: neither unique nor sorted.
    dnums = dnums._replace(offset_dims=_shift(dnums.offset_dims),
                           start_indices_batching_dims=_shift(dnums.start_indices_batching_dims))
    return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                         unique_indices=False, indices_are_sorted=False, **params), 0
  # Both batched: member b reads operand[b], a paired batching dimension.
  operand = batching.moveaxis(operand, operand_dim, 0)
  dnums = GatherDimensionNumbers(
      offset_dims=_shift(dnums.offset_dims),
      collapsed_slice_dims=_shift(dnums.collapsed_slice_dims),
      start_index_map=_shift(dnums.start_index_map),
      operand_batching_dims=(0,) + _shift(dnums.operand_batching_dims),
      start_indices_batching_dims=(0,) + _shift(dnums.start_indices_batching_dims))
  slice_sizes = (min(_shape(operand)[0], 1),) + slice_sizes  # 0 for an empty batch
  return gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                       unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                       **params), 0


batching.primitive_batchers[gather_p] = _gather_batch


# --- scatter -----------------------------------------------------------------------------

def _scatter_reference(combine, operand, indices, updates, *, dimension_numbers,
                       indices_are_sorted, unique_indices, mode, update_jaxpr,
                       update_consts):
  """Combines each window of `updates` into `operand` at its index vector.

  `indices` has shape `batch_shape + (len(scatter_dims_to_operand_dims),)`;
  `updates` has the batch dimensions (in order) plus the window dimensions at
  `update_window_dims`. For each batch position b the window starts as in
  gather (index vector entries at `scatter_dims_to_operand_dims`, batch
  coordinates at `operand_batching_dims`, 0 elsewhere), and each operand
  element x under the window becomes `combine(x, u)` for its update u:
  `u` for scatter, and lax's add, sub, mul, min, max (integers wrap, NaN
  wins min/max) for scatter-add, -sub, -mul, -min, -max. When
  `update_jaxpr` is set (`scatter_apply`), `combine` is that jaxpr applied
  to each element pair; `update_consts` is always ().

  Out of bounds (a window not inside the operand): FILL_OR_DROP and
  PROMISE_IN_BOUNDS drop the whole window; CLIP clamps its start to
  `clamp(0, start, dim - window_size)`.

  Duplicates: windows are applied one after another in row-major order of
  their batch positions, so overlapping updates all take effect (summed,
  multiplied, ...). For plain `scatter` the last one wins here; JAX leaves
  the order unspecified. `indices_are_sorted` and `unique_indices` are hints
  with no effect here.

  Shape rule: see `_scatter_shape_rule`; the result has the operand's shape,
  dtype and weak type. Plain `scatter` also accepts key arrays (operand and
  updates of one key dtype): whole keys are written.
  """
  dnums = dimension_numbers
  batch_dims = [d for d in range(updates.ndim) if d not in dnums.update_window_dims]
  updates = np.moveaxis(updates, dnums.update_window_dims,
                        list(range(len(batch_dims), updates.ndim)))
  window_sizes = iter(updates.shape[len(batch_dims):])
  window_shape = [1 if d in dnums.inserted_window_dims + dnums.operand_batching_dims
                  else next(window_sizes) for d in range(operand.ndim)]
  out = operand.copy()
  for b in np.ndindex(*indices.shape[:-1]):
    start = _window_start(operand.shape, indices[b], dnums.scatter_dims_to_operand_dims,
                          b, dnums.operand_batching_dims,
                          dnums.scatter_indices_batching_dims)
    if mode == GatherScatterMode.CLIP:
      start = _clamp_window(start, window_shape, operand.shape)
    elif not _window_fits(start, window_shape, operand.shape):
      continue
    region = tuple(_slice(s, s + n) for s, n in zip(start, window_shape))
    out[region] = combine(out[region], updates[b].reshape(window_shape))
  return out


def _replace(old, new):
  return new


def _apply_jaxpr_elementwise(update_jaxpr, old, new):
  """`update_jaxpr(x, u)` for each element pair (scatter_apply's combiner)."""
  from refimpl.interpreters.eval import run_jaxpr
  with core.eval_context():
    result = [run_jaxpr(update_jaxpr, x, u)[0] for x, u in zip(old.ravel(), new.ravel())]
  return np.asarray(result, old.dtype).reshape(old.shape)


def _scatter_combiner(primitive):
  """The reference rule of a scatter primitive combining with `primitive`."""
  def reference(operand, indices, updates, *, update_jaxpr, **params):
    if update_jaxpr is not None:
      combine = lambda old, new: _apply_jaxpr_elementwise(update_jaxpr, old, new)
    else:
      combine = primitive.impl if primitive is not None else _replace
    return _scatter_reference(combine, operand, indices, updates,
                              update_jaxpr=update_jaxpr, **params)
  reference.__doc__ = _scatter_reference.__doc__
  return reference


def _scatter_shape_rule(name, category, operand, indices, updates, *, dimension_numbers,
                        indices_are_sorted, unique_indices, mode, update_jaxpr,
                        update_consts):
  """Checks the dimension numbers as XLA does; the result has the operand's shape."""
  if not dtypes.is_integer(indices.dtype):
    raise ValueError("indices must have an integer type")
  check_same_dtypes("scatter", operand, updates)
  check_dtype(name, operand, category)
  if indices.ndim < 1:
    raise TypeError("scatter indices must have rank >= 1; the last dimension is the "
                    "index vector (add a trailing dimension of size 1 for scalar indices)")
  dnums = dimension_numbers
  expected_rank = indices.ndim - 1 + len(dnums.update_window_dims)
  if updates.ndim != expected_rank:
    raise TypeError(f"Updates tensor must be of rank {expected_rank}; got {updates.ndim}.")
  _check_dims("scatter", "update_window_dims", dnums.update_window_dims, updates.ndim)
  _check_dims("scatter", "inserted_window_dims", dnums.inserted_window_dims, operand.ndim)
  _check_batching_dims("scatter", operand, indices, dnums.operand_batching_dims,
                       "scatter_indices_batching_dims", dnums.scatter_indices_batching_dims,
                       (("inserted_window_dims", dnums.inserted_window_dims),
                        ("scatter_dims_to_operand_dims", dnums.scatter_dims_to_operand_dims)))
  window_rank = (len(dnums.update_window_dims) + len(dnums.inserted_window_dims)
                 + len(dnums.operand_batching_dims))
  if operand.ndim != window_rank:
    raise TypeError(f"Scatter op has window of size {window_rank}; doesn't match "
                    f"operand of rank {operand.ndim}.")
  if len(dnums.scatter_dims_to_operand_dims) != indices.shape[-1]:
    raise TypeError(f"Scatter op has {len(dnums.scatter_dims_to_operand_dims)} elements "
                    f"in scatter_dims_to_operand_dims and the bound of dimension "
                    f"index_vector_dim={indices.ndim - 1} of indices is "
                    f"{indices.shape[-1]}. These two numbers must be equal")
  _check_dims("scatter", "scatter_dims_to_operand_dims",
              dnums.scatter_dims_to_operand_dims, operand.ndim, sorted_=False)
  window_dims = [d for d in range(operand.ndim)
                 if d not in dnums.inserted_window_dims + dnums.operand_batching_dims]
  for operand_dim, update_dim in zip(window_dims, dnums.update_window_dims):
    if updates.shape[update_dim] > operand.shape[operand_dim]:
      raise TypeError(f"Bounds of the window dimensions of updates must not exceed the "
                      f"bounds of the corresponding dimensions of operand. For dimension "
                      f"{update_dim}, updates bound is {updates.shape[update_dim]}, "
                      f"operand bound is {operand.shape[operand_dim]}.")
  update_batch_dims = [d for d in range(updates.ndim) if d not in dnums.update_window_dims]
  for d, size in zip(update_batch_dims, indices.shape[:-1]):
    if updates.shape[d] != size:
      raise TypeError(f"Bounds of the scatter dimensions of updates must be the same as "
                      f"the bounds of the corresponding dimensions of scatter indices. "
                      f"For scatter dimension {d}, updates bound is {updates.shape[d]}, "
                      f"indices bound is {size}.")
  return operand


def _scatter_primitive(name, combine_with, category):
  prim = Primitive(name)
  prim.def_impl(_scatter_combiner(combine_with))
  prim.def_abstract_eval(lambda *avals, **params:
                         _scatter_shape_rule(name, category, *avals, **params))
  return prim


scatter_p = _scatter_primitive("scatter", None, ANY + EXTENDED)  # key arrays too
scatter_add_p = _scatter_primitive("scatter-add", elementwise.add_p, NUMBER)
scatter_sub_p = _scatter_primitive("scatter-sub", elementwise.sub_p, NUMBER)
scatter_mul_p = _scatter_primitive("scatter-mul", elementwise.mul_p, NUMBER)
scatter_min_p = _scatter_primitive("scatter-min", elementwise.min_p, ANY)
scatter_max_p = _scatter_primitive("scatter-max", elementwise.max_p, ANY)


def _scatter_function(prim, name, summary):
  """The user-facing `lax.<name>` binding scatter primitive `prim`."""
  def scatter_fn(operand, scatter_indices, updates, dimension_numbers, *,
                 indices_are_sorted=False, unique_indices=False, mode=None):
    return prim.bind(
        operand, scatter_indices, updates,
        dimension_numbers=_canonical_dnums(ScatterDimensionNumbers, dimension_numbers),
        indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
        mode=GatherScatterMode.from_any(mode), update_jaxpr=None, update_consts=())
  scatter_fn.__name__ = scatter_fn.__qualname__ = name
  scatter_fn.__doc__ = summary + """

  `mode` defaults to FILL_OR_DROP: windows partly out of bounds are dropped;
  "clip" clamps them into bounds. See the primitive's reference rule
  (`lax.indexing.scatter_p.impl`) for the full semantics."""
  return scatter_fn


scatter = _scatter_function(scatter_p, "scatter",
                            "Writes `updates` into `operand` at `scatter_indices`.")
scatter_add = _scatter_function(scatter_add_p, "scatter_add",
                                "Adds `updates` into `operand` at `scatter_indices`.")
scatter_sub = _scatter_function(scatter_sub_p, "scatter_sub",
                                "Subtracts `updates` from `operand` at `scatter_indices`.")
scatter_mul = _scatter_function(scatter_mul_p, "scatter_mul",
                                "Multiplies `operand` by `updates` at `scatter_indices`.")
scatter_min = _scatter_function(scatter_min_p, "scatter_min",
                                "Minimum of `operand` and `updates` at `scatter_indices`.")
scatter_max = _scatter_function(scatter_max_p, "scatter_max",
                                "Maximum of `operand` and `updates` at `scatter_indices`.")


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
  """Replaces `operand` elements under the windows by `func(element)`.

  A `scatter` whose combiner (`update_jaxpr`) is `func` traced on scalars;
  `update_shape` is the shape updates would have. An element under several
  windows gets `func` applied several times.
  """
  from refimpl.interpreters.partial_eval import trace_to_jaxpr
  dtype = core.get_aval(operand).dtype
  scalar = ShapedArray((), dtype)
  update_jaxpr = trace_to_jaxpr(lambda x, _: [func(x)], [scalar, scalar])
  unused_updates = shapes.full(update_shape, 0, dtype)
  return scatter_p.bind(
      operand, scatter_indices, unused_updates,
      dimension_numbers=_canonical_dnums(ScatterDimensionNumbers, dimension_numbers),
      indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
      mode=GatherScatterMode.from_any(mode), update_jaxpr=update_jaxpr, update_consts=())


# --- scatter: differentiation rules ---------------------------------------------------------
# Indices are integers and have no tangent. Where JAX's rules use helper
# gathers and scatter-adds, these carry the scatter's `mode`, so that they
# find the windows the scatter wrote (JAX leaves some in their default mode).

def _read_windows(x, indices, dnums, updates_shape, **gather_params):
  """The gather that reads, from `x`, the windows a scatter with `dnums`
  writes, laid out as the scatter's updates (of shape `updates_shape`) are."""
  gather_dnums = GatherDimensionNumbers(
      offset_dims=dnums.update_window_dims, collapsed_slice_dims=dnums.inserted_window_dims,
      start_index_map=dnums.scatter_dims_to_operand_dims,
      operand_batching_dims=dnums.operand_batching_dims,
      start_indices_batching_dims=dnums.scatter_indices_batching_dims)
  window = iter(updates_shape[d] for d in dnums.update_window_dims)
  slice_sizes = [1 if d in dnums.inserted_window_dims + dnums.operand_batching_dims
                 else next(window) for d in range(len(_shape(x)))]
  return gather(x, indices, gather_dnums, slice_sizes, **gather_params)


def _zero_tangent(out):
  return ad.Zero(ad.tangent_aval(core.get_aval(out)))


def _both_zero(t_operand, t_updates):
  return isinstance(t_operand, ad.Zero) and isinstance(t_updates, ad.Zero)


def _scatter_addsub_jvp(prim, primals, tangents, **params):
  operand, indices, updates = primals
  out = prim.bind(operand, indices, updates, **params)
  t_operand, _, t_updates = tangents
  if _both_zero(t_operand, t_updates):
    return out, _zero_tangent(out)
  return out, prim.bind(ad.instantiate_zeros(t_operand), indices,
                        ad.instantiate_zeros(t_updates), **params)


def _scatter_addsub_transpose(prim, ct, operand, indices, updates, *, dimension_numbers,
                              mode, **params):
  # The operand's cotangent is ct; each update's is ct read at its window
  # (zero for dropped windows), negated for scatter-sub.
  t_operand = ct if ad.is_undefined_primal(operand) else None
  t_updates = None
  if ad.is_undefined_primal(updates):
    t_updates = _read_windows(ct, indices, dimension_numbers, updates.aval.shape,
                              mode=mode, fill_value=0)
    if prim is scatter_sub_p:
      t_updates = elementwise.neg(t_updates)
  return [t_operand, None, t_updates]


for _prim in (scatter_add_p, scatter_sub_p):
  ad.primitive_jvps[_prim] = functools.partial(_scatter_addsub_jvp, _prim)
  ad.deftranspose(_prim, functools.partial(_scatter_addsub_transpose, _prim))


def _scatter_mul_jvp_updates(t, operand, indices, updates, *, dimension_numbers,
                             indices_are_sorted, unique_indices, mode, **params):
  # d(x * u)/du is x where u lands; with repeated indices it would be the
  # product of the other updates too, which JAX does not implement.
  if not unique_indices:
    raise NotImplementedError(
        "scatter_mul gradients are only implemented if `unique_indices=True`")
  placed = scatter_add(ad.zeros_like_aval(core.get_aval(operand)), indices, t,
                       dimension_numbers, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices, mode=mode)
  return elementwise.mul(operand, placed)


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode, **params):
  t_operand = t_updates = None
  if ad.is_undefined_primal(operand):  # scaling each element: its own transpose
    t_operand = scatter_mul(ct, indices, updates, dimension_numbers,
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode)
  if ad.is_undefined_primal(updates):
    if not unique_indices:
      raise NotImplementedError(
          "scatter_mul gradients are only implemented if `unique_indices=True`")
    t_updates = _read_windows(elementwise.mul(ct, operand), indices, dimension_numbers,
                              updates.aval.shape, mode=mode, fill_value=0)
  return [t_operand, None, t_updates]


ad.defjvp(scatter_mul_p,
          lambda t, operand, indices, updates, **params:
              scatter_mul_p.bind(t, indices, updates, **params),
          None, _scatter_mul_jvp_updates)
ad.deftranspose(scatter_mul_p, _scatter_mul_transpose)


def _scatter_extremal_jvp(prim, primals, tangents, *, dimension_numbers, indices_are_sorted,
                          unique_indices, mode, update_jaxpr, update_consts):
  """The JVP of scatter-min/-max. Where several values tie for the result
  (the operand's and those of updates), each gets an equal share of the
  tangent, as for `min`/`max`."""
  operand, indices, updates = primals
  out = prim.bind(operand, indices, updates, dimension_numbers=dimension_numbers,
                  indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                  mode=mode, update_jaxpr=update_jaxpr, update_consts=update_consts)
  t_operand, _, t_updates = tangents
  if _both_zero(t_operand, t_updates):
    return out, _zero_tangent(out)
  t_operand, t_updates = ad.instantiate_zeros(t_operand), ad.instantiate_zeros(t_updates)
  dnums = dimension_numbers
  updates_shape = _shape(updates)
  read = lambda x: _read_windows(x, indices, dnums, updates_shape, mode=mode)
  count = lambda u: read(scatter_add(shapes.full_like(operand, 0), indices, u, dnums,
                                     mode=mode))
  zeros_u, ones_u = shapes.full_like(updates, 0), shapes.full_like(updates, 1)
  one, minus_one = (np.array(v, core.get_aval(operand).dtype) for v in (1, -1))
  add, div, select = elementwise.add, elementwise.div, elementwise.select

  won = elementwise.eq(updates, read(out))             # updates equal to the result
  kept = elementwise.eq(read(operand), read(out))      # operand elements equal to it
  num_won = count(select(won, ones_u, zeros_u))        # per element under each window
  num_refs = count(ones_u)                             # windows writing each element
  shared = div(one, add(num_won, one))                 # one share when the operand ties too
  updates_coef = select(won, select(kept, shared, div(one, num_won)), zeros_u)
  # Each of the num_refs windows takes back its part of the operand's tangent.
  operand_coef = div(add(minus_one, select(kept, shared, zeros_u)), num_refs)
  t_windows = add(elementwise.mul(read(t_operand), operand_coef),
                  elementwise.mul(t_updates, updates_coef))
  return out, scatter_add(t_operand, indices, t_windows, dnums,
                          indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=mode)


for _prim in (scatter_min_p, scatter_max_p):
  ad.primitive_jvps[_prim] = functools.partial(_scatter_extremal_jvp, _prim)


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
                 mode, update_jaxpr, update_consts):
  if update_jaxpr is not None:
    raise NotImplementedError("scatter_apply JVP not implemented")
  operand, indices, updates = primals
  dnums = dimension_numbers
  params = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                mode=mode)
  t_operand, _, t_updates = tangents
  if _both_zero(t_operand, t_updates) or unique_indices:
    out = scatter(operand, indices, updates, dnums, **params)
    if _both_zero(t_operand, t_updates):
      return out, _zero_tangent(out)
    # Windows do not overlap: the tangents are scattered the same way.
    return out, scatter(ad.instantiate_zeros(t_operand), indices,
                        ad.instantiate_zeros(t_updates), dnums, **params)
  t_operand, t_updates = ad.instantiate_zeros(t_operand), ad.instantiate_zeros(t_updates)
  # Overlapping windows: which update wins is unspecified, so find out.
  # Scatter an id (1, 2, ...) per update window, read back the id that won
  # under each window, keep only the winning updates and the operand
  # elements no window wrote, and scatter-add those: primal and tangent
  # alike (which needs no transpose rule for scatter).
  updates_shape = _shape(updates)
  ids_shape = [1 if d in dnums.update_window_dims else n for d, n in enumerate(updates_shape)]
  num_ids = math.prod(ids_shape)
  ids = elementwise.add(shapes.reshape(shapes.iota(np.uint32, num_ids), ids_shape),
                        shapes.full(updates_shape, 1, np.uint32))
  scattered_ids = scatter(shapes.full(_shape(operand), 0, np.uint32), indices, ids, dnums,
                          **params)
  won = elementwise.eq(ids, _read_windows(scattered_ids, indices, dnums, updates_shape,
                                          mode=mode))
  unwritten = elementwise.eq(scattered_ids, shapes.full_like(scattered_ids, 0))
  keep = lambda mask, x: elementwise.select(mask, x, shapes.full_like(x, 0))
  out = scatter_add(keep(unwritten, operand), indices, keep(won, updates), dnums, **params)
  return out, scatter_add(keep(unwritten, t_operand), indices, keep(won, t_updates), dnums,
                          **params)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode, update_jaxpr, update_consts):
  # (Only the JVP with unique indices yields a linear scatter.) The operand's
  # cotangent is ct with the overwritten elements zeroed; each update's is ct
  # read at its window.
  if not unique_indices:
    raise NotImplementedError("scatter transpose is only implemented where "
                              "unique_indices=True")
  updates_aval = ad.primal_aval(updates)
  t_operand = t_updates = None
  if ad.is_undefined_primal(operand):
    t_operand = scatter(ct, indices, ad.zeros_like_aval(updates_aval), dimension_numbers,
                        indices_are_sorted=indices_are_sorted, unique_indices=True, mode=mode)
  if ad.is_undefined_primal(updates):
    t_updates = _read_windows(ct, indices, dimension_numbers, updates_aval.shape,
                              mode=mode, fill_value=0)
  return [t_operand, None, t_updates]


ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.deftranspose(scatter_p, _scatter_transpose)


def _scatter_batch(prim, args, dims, *, dimension_numbers, **params):
  """As JAX's rule: the result is a batch, so the operand and updates get a
  batch axis first (broadcast if unbatched); the result's batch axis is 0."""
  (operand, indices, updates), (operand_dim, indices_dim, updates_dim) = args, dims
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not batching.not_mapped)
  operand = batching.bdim_at_front(operand, operand_dim, size)
  updates = batching.bdim_at_front(updates, updates_dim, size)
  dnums = dimension_numbers
  if indices_dim is batching.not_mapped:
    # The batch axis is one more window dimension, written whole.
    dnums = ScatterDimensionNumbers(
        update_window_dims=(0,) + _shift(dnums.update_window_dims),
        inserted_window_dims=_shift(dnums.inserted_window_dims),
        scatter_dims_to_operand_dims=_shift(dnums.scatter_dims_to_operand_dims),
        operand_batching_dims=_shift(dnums.operand_batching_dims),
        scatter_indices_batching_dims=dnums.scatter_indices_batching_dims)
  else:
    # Member b writes into operand[b]: a paired batching dimension, which is
    # also the first scatter dimension of updates.
    indices = batching.moveaxis(indices, indices_dim, 0)
    dnums = ScatterDimensionNumbers(
        update_window_dims=_shift(dnums.update_window_dims),
        inserted_window_dims=_shift(dnums.inserted_window_dims),
        scatter_dims_to_operand_dims=_shift(dnums.scatter_dims_to_operand_dims),
        operand_batching_dims=(0,) + _shift(dnums.operand_batching_dims),
        scatter_indices_batching_dims=(0,) + _shift(dnums.scatter_indices_batching_dims))
  return prim.bind(operand, indices, updates, dimension_numbers=dnums, **params), 0


for _prim in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
              scatter_max_p):
  batching.primitive_batchers[_prim] = functools.partial(_scatter_batch, _prim)
