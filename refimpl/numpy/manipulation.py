"""Shape manipulation: reshape, transpose, joining and splitting, tiling,
flipping, rolling, padding, and the diagonal/triangle helpers.

Each function lowers to the lax shape primitives as JAX's does (reshape,
transpose, broadcast_in_dim, squeeze, concatenate, split, rev, pad, ...).
Axis arguments may be negative and must be static.
"""

import builtins
import operator

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.lax.shapes import canonicalize_axis, shape_argument
from refimpl.numpy.creation import (array, asarray, broadcast_to, concatenate_in_chunks,
                                    concrete, ensure_arraylike, eye, is_array, linspace,
                                    tri, zeros_like)
from refimpl.numpy.ufuncs import remainder, where
from refimpl.numpy.util import check_arraylike, promote_dtypes
from refimpl.sharding import check_out_sharding

__all__ = ['reshape', 'ravel', 'transpose', 'permute_dims', 'matrix_transpose',
           'swapaxes', 'moveaxis', 'rollaxis', 'squeeze', 'expand_dims', 'concatenate',
           'concat', 'stack', 'unstack', 'hstack', 'vstack', 'dstack', 'column_stack',
           'split', 'array_split', 'hsplit', 'vsplit', 'dsplit', 'tile', 'repeat',
           'flip', 'fliplr', 'flipud', 'rot90', 'roll', 'pad', 'atleast_1d',
           'atleast_2d', 'atleast_3d', 'shape', 'ndim', 'size', 'tril', 'triu', 'diag',
           'diagflat', 'diagonal', 'trace', 'append', 'diff', 'resize', 'tril_indices',
           'triu_indices', 'tril_indices_from', 'triu_indices_from', 'diag_indices',
           'diag_indices_from']


def _index_tuple(x):
  """An int or a sequence of ints as a tuple of ints."""
  return (operator.index(x),) if np.ndim(x) == 0 else tuple(operator.index(i) for i in x)


def _canonical_axes(axes, ndim):
  return tuple(canonicalize_axis(a, ndim) for a in _index_tuple(axes))


# --- shape queries --------------------------------------------------------------------------

def shape(a):
  """The shape of `a` (Python data included), as a tuple of ints."""
  return np.shape(a)


def ndim(a):
  return np.ndim(a)


def size(a, axis=None):
  return np.size(a, axis)


# --- reshaping ------------------------------------------------------------------------------

def _new_shape(a, new_shape):
  """`new_shape` with a -1 entry filled in; TypeError when the sizes differ."""
  requested = shape_argument(new_shape)
  unknown = [i for i, d in enumerate(requested) if d == -1]
  if len(unknown) > 1:
    raise ValueError("can only specify one unknown dimension")
  if any(d < -1 for d in requested):
    raise ValueError(f"reshape: negative dimensions are not allowed, got {requested}")
  known = int(np.prod([d for d in requested if d != -1], dtype=np.int64))
  result = list(requested)
  if unknown and known and a.size % known == 0:
    result[unknown[0]] = a.size // known
  if unknown and result[unknown[0]] == -1 or int(np.prod(result, dtype=np.int64)) != a.size:
    raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into shape "
                    f"{requested}" + ("" if unknown else f" (size {known})"))
  return tuple(result)


def reshape(a, shape, order="C", *, copy=None, out_sharding=None):
  """`a` with a new shape (one entry may be -1); order "C" or "F"."""
  check_out_sharding(out_sharding, "jnp.reshape")
  a = ensure_arraylike("reshape", a)
  new_shape = _new_shape(a, shape)
  if order == "C":
    return lax.reshape(a, new_shape)
  if order == "F":
    reversed_dims = tuple(range(a.ndim))[::-1]
    out = lax.reshape(a, new_shape[::-1], reversed_dims)
    return lax.transpose(out, tuple(range(len(new_shape)))[::-1])
  if order == "A":
    raise NotImplementedError("np.reshape order=A is not implemented.")
  raise ValueError(f"Unexpected value for 'order' argument: {order}.")


def ravel(a, order="C", *, out_sharding=None):
  """`a` flattened to one dimension, in order "C" or "F"."""
  check_out_sharding(out_sharding, "jnp.ravel")
  a = ensure_arraylike("ravel", a)
  if order == "K":
    raise NotImplementedError("Ravel not implemented for order='K'.")
  return reshape(a, (a.size,), order)


def transpose(a, axes=None):
  """Permutes the axes (reverses them by default)."""
  a = ensure_arraylike("transpose", a)
  axes = tuple(range(a.ndim))[::-1] if axes is None else _canonical_axes(axes, a.ndim)
  return lax.transpose(a, axes)


def permute_dims(a, /, axes):
  return transpose(a, axes)


def matrix_transpose(x, /):
  """Swaps the last two axes."""
  x = ensure_arraylike("matrix_transpose", x)
  if x.ndim < 2:
    raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got "
                     f"ndim={x.ndim}")
  return lax.transpose(x, (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))


def swapaxes(a, axis1, axis2):
  a = ensure_arraylike("swapaxes", a)
  perm = list(range(a.ndim))
  i, j = canonicalize_axis(axis1, a.ndim), canonicalize_axis(axis2, a.ndim)
  perm[i], perm[j] = perm[j], perm[i]
  return lax.transpose(a, perm)


def moveaxis(a, source, destination):
  """Moves axes `source` to positions `destination`, keeping the others in order."""
  a = ensure_arraylike("moveaxis", a)
  source = _canonical_axes(source, a.ndim)
  destination = _canonical_axes(destination, a.ndim)
  if len(source) != len(destination):
    raise ValueError(f"Inconsistent number of elements: {len(source)} vs {len(destination)}")
  perm = [i for i in range(a.ndim) if i not in source]
  for dest, src in sorted(zip(destination, source)):
    perm.insert(dest, src)
  return lax.transpose(a, perm)


def rollaxis(a, axis, start=0):
  a = ensure_arraylike("rollaxis", a)
  axis = canonicalize_axis(axis, a.ndim)
  start = operator.index(start)
  if not -a.ndim <= start <= a.ndim:
    raise ValueError(f"start={start} must satisfy {-a.ndim}<=start<={a.ndim}")
  start = start + a.ndim if start < 0 else start
  return moveaxis(a, axis, start - 1 if start > axis else start)


def squeeze(a, axis=None):
  """Removes size-1 axes (all of them, or those in `axis`)."""
  a = ensure_arraylike("squeeze", a)
  if axis is None:
    axis = tuple(i for i, d in enumerate(a.shape) if d == 1)
  return lax.squeeze(a, _index_tuple(axis))


def expand_dims(a, axis):
  """Inserts size-1 axes at positions `axis` of the result."""
  a = ensure_arraylike("expand_dims", a)
  return lax.expand_dims(a, _index_tuple(axis))


# --- joining --------------------------------------------------------------------------------

def concatenate(arrays, axis=0, dtype=None):
  """Joins a sequence of arrays (promoted to a common dtype) along `axis`.

  `axis=None` joins the flattened arrays. Lowers to `concatenate`, as a tree
  of at most 16 operands per equation.
  """
  if is_array(arrays) or isinstance(arrays, np.ndarray):
    return _concatenate_array(asarray(arrays), axis, dtype)
  check_arraylike("concatenate", *arrays)
  if not len(arrays):
    raise ValueError("Need at least one array to concatenate.")
  if axis is None:
    return concatenate([ravel(a) for a in arrays], axis=0, dtype=dtype)
  if np.ndim(arrays[0]) == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = canonicalize_axis(axis, np.ndim(arrays[0]))
  if dtype is None:
    arrays = promote_dtypes(*arrays)
  else:
    arrays = [asarray(a, dtype=dtype) for a in arrays]
  return concatenate_in_chunks(list(arrays), axis)


def _concatenate_array(arr, axis, dtype):
  """Concatenation of the sub-arrays of one array: a reshape."""
  if axis is None:
    return ravel(arr if dtype is None else asarray(arr, dtype=dtype))
  if arr.ndim < 2:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  if dtype is not None:
    arr = asarray(arr, dtype=dtype)
  inner = arr.shape[1:]
  axis = canonicalize_axis(axis, len(inner))
  new_shape = inner[:axis] + (inner[axis] * arr.shape[0],) + inner[axis + 1:]
  dims = [*range(1, axis + 1), 0, *range(axis + 1, arr.ndim)]
  return lax.reshape(arr, new_shape, dims)


def concat(arrays, /, *, axis=0):
  return concatenate(arrays, axis=axis)


def stack(arrays, axis=0, out=None, dtype=None):
  """Joins equally shaped arrays along a new axis (expand_dims + concatenate)."""
  if not len(arrays):
    raise ValueError("Need at least one array to stack.")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
  if is_array(arrays) or isinstance(arrays, np.ndarray):
    arrays = asarray(arrays)
    axis = canonicalize_axis(axis, arrays.ndim)
    return concatenate(expand_dims(arrays, axis + 1), axis=axis, dtype=dtype)
  check_arraylike("stack", *arrays)
  shape0 = np.shape(arrays[0])
  axis = canonicalize_axis(axis, len(shape0) + 1)
  expanded = []
  for a in arrays:
    if np.shape(a) != shape0:
      raise ValueError("All input arrays must have the same shape.")
    expanded.append(expand_dims(a, axis))
  return concatenate(expanded, axis=axis, dtype=dtype)


def unstack(x, /, *, axis=0):
  """The slices of `x` along `axis`, as a tuple (split + squeeze)."""
  x = ensure_arraylike("unstack", x)
  if x.ndim == 0:
    raise ValueError("Unstack requires arrays with rank > 0, however a scalar array "
                     "was passed.")
  axis = canonicalize_axis(axis, x.ndim)
  return tuple(lax.squeeze(t, (axis,)) for t in lax.split(x, (1,) * x.shape[axis], axis))


def _sequence(fun_name, tup):
  if is_array(tup) or isinstance(tup, np.ndarray):
    return list(asarray(tup))
  check_arraylike(fun_name, *tup)
  return list(tup)


def hstack(tup, dtype=None):
  """Concatenates along axis 1 (axis 0 for 1-D arrays)."""
  arrays = [atleast_1d(a) for a in _sequence("hstack", tup)]
  return concatenate(arrays, 0 if arrays and arrays[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
  """Concatenates along axis 0, as 2-D arrays."""
  return concatenate([atleast_2d(a) for a in _sequence("vstack", tup)], 0, dtype=dtype)


def dstack(tup, dtype=None):
  """Concatenates along axis 2, as 3-D arrays."""
  return concatenate([atleast_3d(a) for a in _sequence("dstack", tup)], 2, dtype=dtype)


def append(arr, values, axis=None):
  """`values` appended to `arr` along `axis` (both flattened when `axis` is None)."""
  if axis is None:
    return concatenate([ravel(arr), ravel(values)], 0)
  return concatenate([arr, values], axis=axis)


def column_stack(tup):
  """Stacks 1-D arrays as columns (2-D arrays are concatenated along axis 1)."""
  arrays = [asarray(a) for a in _sequence("column_stack", tup)]
  columns = [array(a, copy=False, ndmin=2).T if a.ndim < 2 else a for a in arrays]
  return concatenate(columns, 1)


def atleast_1d(*arys):
  check_arraylike("atleast_1d", *arys)
  out = [array(a, copy=False, ndmin=1) for a in arys]
  return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
  check_arraylike("atleast_2d", *arys)
  out = [array(a, copy=False, ndmin=2) for a in arys]
  return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
  """Views of 3 or more dims: (N,) becomes (1, N, 1), (M, N) becomes (M, N, 1)."""
  check_arraylike("atleast_3d", *arys)
  out = []
  for a in arys:
    a = asarray(a)
    if a.ndim == 0:
      a = lax.expand_dims(a, (0, 1, 2))
    elif a.ndim == 1:
      a = lax.expand_dims(a, (0, 2))
    elif a.ndim == 2:
      a = lax.expand_dims(a, (2,))
    out.append(a)
  return out[0] if len(out) == 1 else out


# --- splitting ------------------------------------------------------------------------------

def _split(fun_name, ary, indices_or_sections, axis):
  ary = ensure_arraylike(fun_name, ary)
  axis = canonicalize_axis(axis, ary.ndim)
  length = ary.shape[axis]
  if np.ndim(indices_or_sections) > 0 or isinstance(indices_or_sections, (list, tuple)):
    # Unlike NumPy, JAX takes split points literally: negative, decreasing or
    # out-of-range points give negative sizes, which lax.split rejects.
    bounds = [0] + [operator.index(concrete(i, f"in jax.numpy.{fun_name} argument 1"))
                    for i in indices_or_sections] + [length]
    sizes = np.diff(bounds)
  else:
    sections = operator.index(concrete(indices_or_sections,
                                       f"in jax.numpy.{fun_name} argument 1"))
    if sections <= 0:
      raise ValueError("number sections must be larger than 0.")
    part, rest = divmod(length, sections)
    if rest == 0:
      sizes = [part] * sections
    elif fun_name == "array_split":
      sizes = [part + 1] * rest + [part] * (sections - rest)
    else:
      raise ValueError(f"array split does not result in an equal division: rest is {rest}")
  return list(lax.split(ary, [int(s) for s in sizes], axis))


def split(ary, indices_or_sections, axis=0):
  """Splits into equal sections, or at the given indices (the `split` primitive)."""
  return _split("split", ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis=0):
  """As `split`, but sections may differ in size by one (larger ones first)."""
  return _split("array_split", ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
  a = ensure_arraylike("hsplit", ary)
  return _split("hsplit", a, indices_or_sections, 0 if a.ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
  return _split("vsplit", ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
  return _split("dsplit", ary, indices_or_sections, 2)


def diff(a, n=1, axis=-1, prepend=None, append=None):
  """n-th discrete difference along `axis` (`!=` for booleans), after joining
  `prepend` and `append` (scalars are broadcast to one slice)."""
  a = ensure_arraylike("diff", a)
  n = operator.index(concrete(n, "'n' argument of jnp.diff"))
  if n == 0:
    return a
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  if a.ndim == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  axis = canonicalize_axis(axis, a.ndim)
  parts = []
  for extra in (prepend, a, append):
    if extra is None:
      continue
    check_arraylike("diff", extra)
    if np.ndim(extra) == 0:
      edge_shape = list(a.shape)
      edge_shape[axis] = 1
      extra = broadcast_to(extra, edge_shape)
    parts.append(extra)
  a = concatenate(parts, axis) if len(parts) > 1 else a
  later = (slice(None),) * axis + (slice(1, None),)
  earlier = (slice(None),) * axis + (slice(None, -1),)
  for _ in range(n):
    a = (a[later] != a[earlier]) if a.dtype == np.bool_ else a[later] - a[earlier]
  return a


# --- repeating ------------------------------------------------------------------------------

def tile(A, reps):
  """`A` repeated `reps` times along each axis (reshape, broadcast, reshape)."""
  A = ensure_arraylike("tile", A)
  reps = _index_tuple(reps)
  a_shape = (1,) * (len(reps) - A.ndim) + A.shape
  reps = (1,) * (len(a_shape) - len(reps)) + reps
  interleaved = reshape(A, [d for n in a_shape for d in (1, n)])
  result = broadcast_to(interleaved, [d for pair in zip(reps, a_shape) for d in pair])
  return reshape(result, tuple(int(n) * r for n, r in zip(a_shape, reps)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
  """Repeats each element `repeats` times along `axis` (the flattened array by default).

  `repeats` must be concrete: a scalar (lowered through tile and reshape) or
  an array with one count per element (lowered to a gather).
  """
  check_out_sharding(out_sharding, "jnp.repeat")
  a = ensure_arraylike("repeat", a)
  if axis is None:
    a, axis = ravel(a), 0
  axis = canonicalize_axis(axis, a.ndim)
  repeats = np.asarray(concrete(repeats, "The repeats argument of jnp.repeat"))
  if repeats.ndim == 0:
    count = operator.index(repeats[()])
    if count < 0:
      raise ValueError(f"repeats may not contain negative values, got {count}")
    expanded = expand_dims(a, axis + 1)
    reps = [1] * expanded.ndim
    reps[axis + 1] = count
    out_shape = list(a.shape)
    out_shape[axis] *= count
    out = reshape(tile(expanded, reps), out_shape)
  else:
    if repeats.dtype.kind == "u":   # (np.repeat counts in intp: uint64 would not cast)
      repeats = repeats.astype(np.int64)
    positions = np.repeat(np.arange(a.shape[axis]), repeats)
    out = a[(slice(None),) * axis + (positions,)]
  if total_repeat_length is not None and out.shape[axis] != total_repeat_length:
    raise ValueError(f"jnp.repeat: total_repeat_length={total_repeat_length} does not "
                     f"match the repeated length {out.shape[axis]}")
  return out


def resize(a, new_shape):
  """`a` flattened, repeated as often as needed and cut to `new_shape`."""
  a = ensure_arraylike("resize", a)
  new_shape = _index_tuple(new_shape)
  if any(d < 0 for d in new_shape):
    raise ValueError("all elements of `new_shape` must be non-negative")
  flat = ravel(a)
  new_size = int(np.prod(new_shape, dtype=np.int64))
  if flat.size == 0 or new_size == 0:
    return zeros_like(flat, shape=new_shape)
  copies = -(-new_size // flat.size)
  return reshape(tile(flat, copies)[:new_size], new_shape)


# --- flipping and rolling ----------------------------------------------------------------------

def flip(m, axis=None):
  """Reverses the order of elements along `axis` (all axes by default)."""
  m = ensure_arraylike("flip", m)
  axes = tuple(range(m.ndim)) if axis is None else _canonical_axes(axis, m.ndim)
  return lax.rev(m, axes)


def fliplr(m):
  m = ensure_arraylike("fliplr", m)
  if m.ndim < 2:
    raise ValueError("Input must be >= 2-d.")
  return flip(m, 1)


def flipud(m):
  m = ensure_arraylike("flipud", m)
  if m.ndim < 1:
    raise ValueError("Input must be >= 1-d.")
  return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
  """Rotates by 90 degrees `k` times in the plane of `axes` (first towards second)."""
  m = ensure_arraylike("rot90", m)
  if m.ndim < 2:
    raise ValueError(f"rot90 requires its first argument to have ndim at least two, but "
                     f"got first argument of shape {m.shape}, which has ndim {m.ndim}")
  k = operator.index(k) % 4
  ax1, ax2 = _canonical_axes(axes, m.ndim)
  if ax1 == ax2:
    raise ValueError("Axes must be different")
  if k == 0:
    return m
  if k == 2:
    return flip(flip(m, ax1), ax2)
  perm = list(range(m.ndim))
  perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
  return transpose(flip(m, ax2), perm) if k == 1 else flip(transpose(m, perm), ax2)


def roll(a, shift, axis=None):
  """Shifts elements cyclically by `shift` along `axis` (the flattened array by default).

  Static shifts lower to slices and a concatenate; traced shifts to a
  concatenate of two copies and a dynamic slice.
  """
  a = ensure_arraylike("roll", a)
  if axis is None:
    return lax.reshape(roll(ravel(a), shift, 0), a.shape)
  axes = _canonical_axes(axis, a.ndim)
  if isinstance(shift, core.Tracer) and shift.to_concrete_value() is None:
    return _roll_dynamic(a, shift, axes)
  try:
    shifts = _index_tuple(concrete(shift, "jnp.roll shift"))
  except TypeError:  # not integers (1.5): as in JAX, the dynamic roll truncates them to int32
    return _roll_dynamic(a, shift, axes)
  for ax, s in zip(*np.broadcast_arrays(axes, shifts)):
    n = a.shape[ax]
    if n == 0:
      continue
    i = int(-s) % n
    a = lax.concatenate([lax.slice_in_dim(a, i, n, axis=int(ax)),
                         lax.slice_in_dim(a, 0, i, axis=int(ax))], int(ax))
  return a


def _roll_dynamic(a, shift, axes):
  shift = asarray(shift)
  if len(np.broadcast_shapes(shift.shape, np.shape(axes))) != 1:
    raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
  shifts = broadcast_to(shift, np.broadcast_shapes(shift.shape, np.shape(axes)))
  for s, ax in zip(shifts, np.broadcast_to(axes, shifts.shape)):
    ax = int(ax)
    n = np.int32(a.shape[ax])
    s = remainder(lax.convert_element_type(s, dtypes.int32), np.int32(builtins.max(n, 1)))
    doubled = lax.concatenate([a, a], ax)
    a = lax.dynamic_slice_in_dim(doubled, lax.sub(n, s), a.shape[ax], axis=ax)
  return a


# --- padding ------------------------------------------------------------------------------------

def _pairs(values, nd, name):
  """`values` broadcast to nd (before, after) pairs of concrete values."""
  try:
    values = np.asarray(concrete(values, f"jnp.pad {name}") if is_array(values) else values)
  except ValueError:   # NumPy refuses ragged nesting
    raise TypeError(f"`{name}` entries must be the same shape: {values}") from None
  if values.dtype == object:
    raise TypeError(f"`{name}` entries must be the same shape: {values}")
  if values.shape in ((nd, 2), (1, 2), (2,), (1,), ()):
    return np.broadcast_to(values, (nd, 2))
  raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {values.shape}. "
                   f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def pad(array, pad_width, mode="constant", **kwargs):
  """Pads `array` by `pad_width` ((before, after) per axis, broadcast NumPy-style).

  Modes: "constant" (`constant_values`, lowered to the `pad` primitive),
  "empty" (zeros), "edge", "wrap", "reflect" and "symmetric" (with
  `reflect_type` "even" or "odd"), "linear_ramp" (`end_values`, a ramp by
  `linspace` from the end value towards the edge), the statistics "maximum",
  "minimum", "mean" and "median" of the first/last `stat_length` entries
  (rounded for integer arrays), lowered to slices, rev and concatenate; or a
  callable `mode(vector, (before, after), axis, kwargs)` that returns the
  padded vector (unlike NumPy, it cannot modify in place), applied along each
  axis of the zero-padded array. A 0-d array is returned unchanged.
  """
  array = ensure_arraylike("pad", array)
  widths = _pairs(pad_width, array.ndim, "pad_width")
  if widths.size and not dtypes.is_integer(widths.dtype):
    raise TypeError("`pad_width` must be of integral type.")
  if callable(mode):
    return _pad_func(array, widths, mode, kwargs)
  allowed = {"constant": {"constant_values"}, "empty": set(), "edge": set(),
             "wrap": set(), "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
             "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
             "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"}}
  if mode not in allowed:
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
  unexpected = set(kwargs) - allowed[mode]
  if unexpected:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unexpected}")
  if array.ndim == 0:
    return array
  if (widths < 0).any():
    raise ValueError("index can't contain negative values")
  widths = [tuple(int(w) for w in pair) for pair in widths]
  if mode == "constant":
    return _pad_constant(array, widths, kwargs.get("constant_values", 0))
  if mode == "empty":
    return _pad_constant(array, widths, 0)
  if mode == "linear_ramp":
    return _pad_linear_ramp(array, widths, _pairs(kwargs.get("end_values", 0), array.ndim,
                                                  "end_values"))
  if mode in ("maximum", "minimum", "mean", "median"):
    stat_length = kwargs.get("stat_length")
    if stat_length is not None:
      stat_length = _pairs(stat_length, array.ndim, "stat_length")
    return _pad_stats(array, widths, stat_length, mode)
  for axis, (before, after) in enumerate(widths):
    if array.shape[axis] == 0:
      if before or after:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")
      continue
    if mode == "edge":
      array = _pad_edge(array, axis, before, after)
    elif mode == "wrap":
      array = _pad_wrap(array, axis, before, after)
    else:
      reflect_type = kwargs.get("reflect_type", "even")
      if reflect_type not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type}")
      array = _pad_reflect(array, axis, before, after, mode, reflect_type)
  return array


def _pad_constant(array, widths, constant_values):
  values = asarray(constant_values)
  values = lax.convert_element_type(values, array.dtype, dtypes.is_weakly_typed(array))
  if values.ndim == 0:
    return lax.pad(array, values, [(lo, hi, 0) for lo, hi in widths])
  values = broadcast_to(values, (array.ndim, 2))
  for axis, (lo, hi) in enumerate(widths):
    for side, width in ((0, lo), (1, hi)):
      if width:
        config = [(0, 0, 0)] * array.ndim
        config[axis] = (width, 0, 0) if side == 0 else (0, width, 0)
        array = lax.pad(array, values[axis, side], config)
  return array


def _pad_linear_ramp(array, widths, end_values):
  def ramp(axis, index, end, width):   # `width` values from `end` towards array[index]
    edge = lax.squeeze(lax.slice_in_dim(array, index, index + 1, axis=axis), (axis,))
    values = linspace(end, edge, width, endpoint=False, dtype=array.dtype, axis=axis)
    return lax.convert_element_type(values, array.dtype, dtypes.is_weakly_typed(array))

  for axis, (before, after) in enumerate(widths):
    n = array.shape[axis]
    array = lax.concatenate([ramp(axis, 0, end_values[axis, 0], before), array,
                             lax.rev(ramp(axis, n - 1, end_values[axis, 1], after), (axis,))],
                            axis)
  return array


def _pad_stats(array, widths, stat_length, mode):
  # Imported here: these modules import this one.
  from refimpl.numpy import reductions, sorting, ufuncs
  stat_func = {"maximum": reductions.max, "minimum": reductions.min,
               "mean": reductions.mean, "median": sorting.median}[mode]
  def padding(part, axis, width):   # the statistic of `part`, repeated `width` times
    stat = stat_func(part, axis=axis, keepdims=True)
    if dtypes.is_integer(array.dtype):
      stat = ufuncs.round(stat)
    stat = lax.convert_element_type(stat, array.dtype, dtypes.is_weakly_typed(array))
    return repeat(stat, width, axis=axis)

  for axis, (before, after) in enumerate(widths):
    n = array.shape[axis]
    first, last = array, array
    if stat_length is not None:
      length_before, length_after = (int(v) for v in stat_length[axis])
      if length_before == 0 or length_after == 0:
        raise ValueError("stat_length of 0 yields no value for padding")
      first = lax.slice_in_dim(array, 0, builtins.min(length_before, n), axis=axis)
      last = lax.slice_in_dim(array, n - builtins.min(length_after, n), n, axis=axis)
    array = lax.concatenate([padding(first, axis, before), array, padding(last, axis, after)],
                            axis)
  return array


def _pad_func(array, widths, func, kwargs):
  from refimpl.numpy.utilities import apply_along_axis  # it imports this module
  widths = [tuple(int(w) for w in pair) for pair in widths]
  padded = _pad_constant(array, widths, 0)
  for axis in range(padded.ndim):
    padded = apply_along_axis(func, axis, padded, widths[axis], axis, kwargs)
  return padded


def _pad_edge(array, axis, before, after):
  n = array.shape[axis]
  first = repeat(lax.slice_in_dim(array, 0, 1, axis=axis), before, axis=axis)
  last = repeat(lax.slice_in_dim(array, n - 1, n, axis=axis), after, axis=axis)
  return lax.concatenate([first, array, last], axis)


def _pad_wrap(array, axis, before, after):
  n = array.shape[axis]
  left_copies, left_rest = divmod(before, n)
  right_copies, right_rest = divmod(after, n)
  parts = []
  if left_rest:
    parts.append(lax.slice_in_dim(array, n - left_rest, n, axis=axis))
  parts += [array] * (left_copies + right_copies + 1)
  if right_rest:
    parts.append(lax.slice_in_dim(array, 0, right_rest, axis=axis))
  return lax.concatenate(parts, axis)


def _pad_reflect(array, axis, before, after, mode, reflect_type):
  """Mirror padding; pads wider than the axis mirror repeatedly, as NumPy does."""
  n = array.shape[axis]
  offset = 1 if mode == "reflect" and n > 1 else 0

  def grow(array, padding, at_start):
    size = array.shape[axis]
    edge = (lax.slice_in_dim(array, 0, 1, axis=axis) if at_start else
            lax.slice_in_dim(array, size - 1, size, axis=axis))
    while padding > 0:
      size = array.shape[axis]
      width = builtins.min(padding, n - offset)
      padding -= width
      if at_start:
        piece = lax.slice_in_dim(array, offset, offset + width, axis=axis)
      else:
        piece = lax.slice_in_dim(array, size - width - offset, size - offset, axis=axis)
      piece = lax.rev(piece, (axis,))
      if reflect_type == "odd":
        piece = 2 * edge - piece
        if n > 1:
          edge = (lax.slice_in_dim(piece, 0, 1, axis=axis) if at_start else
                  lax.slice_in_dim(piece, width - 1, width, axis=axis))
      array = lax.concatenate([piece, array] if at_start else [array, piece], axis)
    return array

  return grow(grow(array, before, True), after, False)


# --- diagonals and triangles ------------------------------------------------------------------

def tril(m, k=0):
  """Zeros above the k-th diagonal of the last two axes."""
  m = ensure_arraylike("tril", m)
  if m.ndim < 2:
    raise ValueError("Argument to jax.numpy.tril must be at least 2D")
  mask = tri(*m.shape[-2:], k=k, dtype=bool)
  return lax.select(lax.broadcast(mask, m.shape[:-2]), m, zeros_like(m))


def triu(m, k=0):
  """Zeros below the k-th diagonal of the last two axes."""
  m = ensure_arraylike("triu", m)
  if m.ndim < 2:
    raise ValueError("Argument to jax.numpy.triu must be at least 2D")
  mask = tri(*m.shape[-2:], k=k - 1, dtype=bool)
  return lax.select(lax.broadcast(mask, m.shape[:-2]), zeros_like(m), m)


def _triangle_indices(name, numpy_fn, n, k, m):
  n = operator.index(concrete(n, f"n argument of jnp.{name}"))
  k = operator.index(concrete(k, f"k argument of jnp.{name}"))
  m = n if m is None else operator.index(concrete(m, f"m argument of jnp.{name}"))
  rows, cols = numpy_fn(n, k, m)
  int_dtype = dtypes.default_int_dtype()
  return asarray(rows, dtype=int_dtype), asarray(cols, dtype=int_dtype)


def tril_indices(n, k=0, m=None):
  """Row and column indices of the lower triangle (at and below diagonal k)."""
  return _triangle_indices("tril_indices", np.tril_indices, n, k, m)


def triu_indices(n, k=0, m=None):
  """Row and column indices of the upper triangle (at and above diagonal k)."""
  return _triangle_indices("triu_indices", np.triu_indices, n, k, m)


def tril_indices_from(arr, k=0):
  arr = ensure_arraylike("tril_indices_from", arr)
  if arr.ndim != 2:
    raise ValueError("input array must be 2-d")
  return tril_indices(arr.shape[0], k=k, m=arr.shape[1])


def triu_indices_from(arr, k=0):
  arr = ensure_arraylike("triu_indices_from", arr)
  if arr.ndim != 2:
    raise ValueError("input array must be 2-d")
  return triu_indices(arr.shape[0], k=k, m=arr.shape[1])


def diag_indices(n, ndim=2):
  """`ndim` copies of `arange(n)`: the indices of a main diagonal."""
  n = operator.index(concrete(n, "'n' argument of jnp.diag_indices"))
  ndim = operator.index(concrete(ndim, "'ndim' argument of jnp.diag_indices"))
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0:
    raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  return (lax.iota(dtypes.default_int_dtype(), n),) * ndim


def diag_indices_from(arr):
  arr = ensure_arraylike("diag_indices_from", arr)
  if arr.ndim < 2:
    raise ValueError("input array must be at least 2-d")
  if len(set(arr.shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(arr.shape[0], arr.ndim)


def diagonal(a, offset=0, axis1=0, axis2=1):
  """The `offset` diagonal of the (axis1, axis2) planes, as the last axis (a gather)."""
  a = ensure_arraylike("diagonal", a)
  if a.ndim < 2:
    raise ValueError("diagonal requires an array of at least two dimensions.")
  offset = operator.index(concrete(offset, "'offset' argument of jnp.diagonal()"))
  n1, n2 = a.shape[canonicalize_axis(axis1, a.ndim)], a.shape[canonicalize_axis(axis2, a.ndim)]
  a = moveaxis(a, (axis1, axis2), (-2, -1))
  length = builtins.max(0, builtins.min(n1 + builtins.min(offset, 0),
                                        n2 - builtins.max(offset, 0)))
  i = np.arange(length)
  j = np.arange(abs(offset), abs(offset) + length)
  return a[..., i, j] if offset >= 0 else a[..., j, i]


def diag(v, k=0):
  """The k-th diagonal of a 2-D array, or a 2-D array with 1-D `v` on its k-th diagonal."""
  v = ensure_arraylike("diag", v)
  k = operator.index(k)
  if v.ndim == 1:
    n = v.shape[0] + abs(k)
    v = lax.pad(v, lax.full_like(v, 0, shape=()), ((builtins.max(0, k), builtins.max(0, -k), 0),))
    return where(eye(n, k=k, dtype=bool), v, zeros_like(v))
  if v.ndim == 2:
    return diagonal(v, offset=k)
  raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k=0):
  return diag(ravel(v), k)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  """Sum of the `offset` diagonal: a masked sum over (axis1, axis2)."""
  from refimpl.numpy.reductions import sum
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
  a = ensure_arraylike("trace", a)
  dtypes.check_user_dtype_supported(dtype, "trace")
  n1, n2 = a.shape[canonicalize_axis(axis1, a.ndim)], a.shape[canonicalize_axis(axis2, a.ndim)]
  a = moveaxis(a, (axis1, axis2), (-2, -1))
  a = where(eye(n1, n2, k=offset, dtype=bool), a, zeros_like(a))
  return sum(a, axis=(-2, -1), dtype=dtype)
