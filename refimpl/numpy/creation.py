"""Array creation: array/asarray, filled arrays, ranges, eye/tri, grids, broadcasting.

Dtypes follow JAX: without `dtype`, Python data gets the default type of its
kind (int32, float32, complex64 with x64 off) and a requested 64-bit dtype
warns and is truncated. Only Python scalars (and weakly typed arrays) give
weakly typed results.
"""

import builtins
import operator

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.errors import ConcretizationTypeError
from refimpl.lax.shapes import canonicalize_axis, shape_argument
from refimpl.numpy.util import check_arraylike, to_inexact_dtype
from refimpl.sharding import check_out_sharding

__all__ = ['array', 'asarray', 'copy', 'zeros', 'ones', 'empty', 'full', 'zeros_like',
           'ones_like', 'empty_like', 'full_like', 'arange', 'linspace', 'logspace',
           'geomspace', 'eye', 'identity', 'tri', 'meshgrid', 'indices', 'fromfunction',
           'broadcast_to', 'broadcast_arrays', 'broadcast_shapes']


# --- helpers shared by the jnp modules ------------------------------------------------

def is_array(x):
  """Arrays and tracers (JAX's `jax.Array`), as opposed to NumPy or Python data."""
  return isinstance(x, (core.Tracer, core.ConcreteArray))


def user_dtype(dtype, fun_name):
  """A dtype argument as the canonical dtype used (warning if 64-bit is
  truncated); a key dtype is kept as it is."""
  dtypes.check_user_dtype_supported(dtype, fun_name)
  return dtypes.canonicalize_dtype(dtype, allow_extended_dtype=True)


def concrete(x, context):
  """The concrete value of `x`: raises ConcretizationTypeError for a traced value."""
  if isinstance(x, core.Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(x, context)
    return value
  return np.asarray(x) if isinstance(x, core.ConcreteArray) else x


def ensure_arraylike(fun_name, *args):
  """check_arraylike, then each argument as an Array (one value for one argument)."""
  check_arraylike(fun_name, *args)
  arrays = [x if is_array(x) else asarray(x) for x in args]
  return arrays[0] if len(arrays) == 1 else arrays


def concatenate_in_chunks(arrays, axis):
  """lax.concatenate of many arrays as a tree of concatenations of at most 16."""
  while len(arrays) > 16:
    arrays = [lax.concatenate(arrays[i:i + 16], axis) for i in range(0, len(arrays), 16)]
  return lax.concatenate(arrays, axis)


# --- array / asarray -------------------------------------------------------------------

def _checked_leaf(x):
  """A leaf of the data given to `array`, converted to a value JAX accepts."""
  if x is None:
    raise ValueError("None is not a valid value for jnp.array")
  if hasattr(x, "__jax_array__"):
    x = x.__jax_array__()
  if isinstance(x, np.ma.MaskedArray):
    core.get_aval(x)  # raises JAX's ValueError: a mask would be lost
  if (is_array(x) or dtypes.is_python_scalar(x)
      or isinstance(x, (np.ndarray, np.generic))):
    return x
  try:
    value = np.asarray(x)
  except (TypeError, ValueError):
    value = None
  if value is None or not core.valid_jaxtype(value):
    raise TypeError(f"Unexpected input type for array: {type(x)}")
  return value


def _map_leaves(fn, obj):
  if isinstance(obj, (list, tuple)):
    return [_map_leaves(fn, item) for item in obj]
  return fn(obj)


def _leaves(obj):
  if isinstance(obj, list):
    return [leaf for item in obj for leaf in _leaves(item)]
  return [obj]


def array(object, dtype=None, *args, copy=True, order="K", ndmin=0, device=None,
          out_sharding=None):
  """An Array from array-like data: scalars, (nested) lists and tuples, NumPy
  arrays, Arrays and tracers.

  Without `dtype` the result has the promoted dtype of the leaves; it is
  weakly typed only when `object` itself is (a Python scalar or a weak
  array), so `array(1.0)` is weak but `array([1.0])` is not. Lists holding
  tracers are stacked with lax: each element is expanded with
  `broadcast_in_dim` and all are joined by `concatenate`. `copy`, `order`
  and `ndmin` are keyword-only, as in JAX.
  """
  if args:
    raise TypeError(f"array() takes from 1 to 2 positional arguments but {2 + len(args)} "
                    "were given")
  _check_placement("array", device, out_sharding)
  if order is not None and order != "K":
    raise NotImplementedError("Only implemented for order='K'")
  if dtype is not None:
    dtype = user_dtype(dtype, "array")
  weak_type = dtype is None and dtypes.is_weakly_typed(object)
  if dtype is None:
    dtypes.check_python_int(object)  # a Python int takes the default integer dtype
  object = _map_leaves(_checked_leaf, object)
  leaves = _leaves(object)
  if dtype is None:
    dtype = dtypes.result_type(*leaves) if leaves else dtypes.default_float_dtype()
  if not any(is_array(leaf) for leaf in leaves):
    with np.errstate(over="ignore", invalid="ignore"):
      out = np.asarray(object, dtype=dtype)
  elif is_array(object):
    out = lax.copy_p.bind(object) if copy else object
  else:
    items = [array(item, dtype=dtype, copy=False) for item in object]  # converts first,
    out = concatenate_in_chunks([lax.expand_dims(x, (0,)) for x in items], 0)  # then stack
  out = lax.convert_element_type(out, dtype, weak_type)
  if ndmin > out.ndim:
    out = lax.expand_dims(out, range(ndmin - out.ndim))
  return out


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
  """As `array`, but arrays of the requested dtype are returned unchanged."""
  _check_placement("asarray", device, out_sharding)
  if dtype is not None:
    dtype = user_dtype(dtype, "asarray")
  return array(a, dtype=dtype, copy=builtins.bool(copy), order=order)


def copy(a, order=None):
  """A copy of `a` (lax's `copy_p` primitive for arrays)."""
  return array(a, copy=True, order=order)


# --- filled arrays ----------------------------------------------------------------------

def _check_placement(name, device, out_sharding):
  """JAX's checks of a creation function's `device` and `out_sharding`: at most
  one of them, `out_sharding` a NamedSharding or a PartitionSpec over the mesh in
  context. Every array is on the one device, so they change nothing else."""
  if device is not None and out_sharding is not None:
    raise ValueError(f"Only one of `device` or `out_sharding` can be set. Got "
                     f"device={device!r} and out_sharding={out_sharding!r}")
  check_out_sharding(out_sharding, f"jnp.{name}")


def _check_forgot_shape_tuple(name, shape, dtype):
  if isinstance(dtype, int) and isinstance(shape, int):
    raise TypeError(f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally "
                    f"write `jnp.{name}({shape}, {dtype})` when you meant "
                    f"`jnp.{name}(({shape}, {dtype}))`, i.e. with a single tuple "
                    f"argument for the shape?")


def _default_float_or(dtype, name):
  return dtypes.default_float_dtype() if dtype is None else user_dtype(dtype, name)


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of zeros (float32 by default); lowers to `broadcast_in_dim`."""
  _check_placement("zeros", device, out_sharding)
  _check_forgot_shape_tuple("zeros", shape, dtype)
  return lax.full(shape, 0, _default_float_or(dtype, "zeros"))


def ones(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of ones (float32 by default)."""
  _check_placement("ones", device, out_sharding)
  _check_forgot_shape_tuple("ones", shape, dtype)
  return lax.full(shape, 1, _default_float_or(dtype, "ones"))


def empty(shape, dtype=None, *, device=None, out_sharding=None):
  """As `zeros`: JAX arrays are always initialized."""
  _check_placement("empty", device, out_sharding)
  _check_forgot_shape_tuple("empty", shape, dtype)
  return zeros(shape, dtype)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
  """`fill_value` (a scalar, or an array broadcast to `shape`) repeated to `shape`.

  Weakly typed when `dtype` is None and `fill_value` is a Python scalar.
  A Python int `fill_value` must fit the integer dtype of the result
  (OverflowError; JAX's `full` wraps it instead, docs/out_of_bounds.md).
  """
  _check_placement("full", device, out_sharding)
  check_arraylike("full", fill_value)
  dtype = None if dtype is None else user_dtype(dtype, "full")
  dtypes.check_python_int(fill_value, dtype)
  if np.ndim(fill_value) == 0:
    return lax.full(shape, fill_value, dtype)
  return broadcast_to(asarray(fill_value, dtype=dtype), shape)


def _check_like(name, a, *others):
  """`check_arraylike` of the arguments of a `*_like` function, whose `a` may
  also be any object with a `shape` and a `dtype` (a ShapeDtypeStruct), as in JAX."""
  duck = hasattr(a, "shape") and hasattr(a, "dtype")
  check_arraylike(name, 0 if duck else a, *others)


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Zeros with the shape and dtype (and weak type) of `a` unless given."""
  _check_placement("zeros_like", device, out_sharding)
  _check_like("zeros_like", a)
  dtype = None if dtype is None else user_dtype(dtype, "zeros_like")
  return lax.full_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  _check_placement("ones_like", device, out_sharding)
  _check_like("ones_like", a)
  dtype = None if dtype is None else user_dtype(dtype, "ones_like")
  return lax.full_like(a, 1, dtype, shape)


def empty_like(prototype, dtype=None, shape=None, *, device=None):
  """As `zeros_like`."""
  _check_like("empty_like", prototype)
  return zeros_like(prototype, dtype=dtype, shape=shape)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
  """As `full`, with the shape and dtype of `a` unless given."""
  _check_placement("full_like", device, out_sharding)
  _check_like("full_like", a, fill_value)
  dtype = None if dtype is None else user_dtype(dtype, "full_like")
  dtypes.check_python_int(fill_value, dtypes.dtype(a) if dtype is None else dtype)
  if np.ndim(fill_value) == 0:
    return lax.full_like(a, fill_value, dtype, shape)
  shape = np.shape(a) if shape is None else shape
  dtype = dtypes.dtype(a) if dtype is None else dtype
  return broadcast_to(asarray(fill_value, dtype=dtype), shape)


# --- ranges -------------------------------------------------------------------------------

def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
  """Evenly spaced values in [start, stop), as `np.arange`.

  The arguments must be concrete (static under `jit`). Without `dtype`,
  integers give int32 and any float gives float32. `arange(n)` (or
  `arange(0, n)`) lowers to the `iota` primitive; other ranges are
  computed with NumPy and become constants.
  """
  _check_placement("arange", device, out_sharding)
  dtype = None if dtype is None else user_dtype(dtype, "arange")
  check_arraylike("arange", start)
  start_name = "stop" if stop is None and step is None else "start"
  for name, value in ((start_name, start), ("stop", stop), ("step", step)):
    if value is not None:
      check_arraylike("arange", value)
      if np.ndim(value) != 0:
        raise ValueError(f"jax.numpy.arange: arguments must be scalars; got "
                         f"{name}={value}")
  given = [x for x in (start, stop, step) if x is not None]
  start, stop, step = (None if x is None else
                       concrete(x, f"It arose in the jnp.arange argument '{name}'")
                       for x, name in ((start, start_name), (stop, "stop"), (step, "step")))
  if dtype is None:
    dtype = dtypes.result_type(*given)
  if step is None and (stop is None or np.all(start == 0)):
    size = start if stop is None else stop
    size = builtins.max(int(np.ceil(size)), 0)
    return lax.iota(dtype, size)
  return array(np.arange(start, stop, step, dtype=dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             *, device=None):
  """`num` evenly spaced values from `start` to `stop` (included if `endpoint`).

  Computed as `start * (1 - t) + stop * t` for `t = iota / div` in the
  inexact type, so both ends are exact; integer dtypes take the floor.
  """
  num = operator.index(concrete(num, "'num' argument of jnp.linspace"))
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  check_arraylike("linspace", start, stop)
  dtype = (to_inexact_dtype(dtypes.result_type(start, stop)) if dtype is None
           else user_dtype(dtype, "linspace"))
  compute_dtype = to_inexact_dtype(dtype)
  start = asarray(start, dtype=compute_dtype)
  stop = asarray(stop, dtype=compute_dtype)
  bounds_shape = list(broadcast_shapes(start.shape, stop.shape))
  start = broadcast_to(start, bounds_shape)
  stop = broadcast_to(stop, bounds_shape)
  axis = len(bounds_shape) + axis + 1 if axis < 0 else axis
  out_bounds_shape = bounds_shape[:axis] + [1] + bounds_shape[axis:]
  div = num - 1 if endpoint else num
  if num > 1:
    delta = lax.convert_element_type(stop - start, compute_dtype) / array(div, compute_dtype)
    real_dtype = dtypes.to_real_dtype(compute_dtype)
    iota_shape = [1] * len(out_bounds_shape)
    iota_shape[axis] = div
    t = lax.reshape(lax.iota(real_dtype, div), iota_shape) / asarray(div, real_dtype)
    t = lax.convert_element_type(t, compute_dtype)
    out = (lax.reshape(start, out_bounds_shape) * (1 - t)
           + lax.reshape(stop, out_bounds_shape) * t)
    if endpoint:
      out = lax.concatenate([out, lax.expand_dims(stop, (axis,))], axis)
  elif num == 1:
    delta = asarray(np.nan if endpoint else stop - start, dtype=compute_dtype)
    out = lax.reshape(start, out_bounds_shape)
  else:
    delta = asarray(np.nan, dtype=compute_dtype)
    out = zeros(bounds_shape[:axis] + [0] + bounds_shape[axis:], compute_dtype)
  if dtypes.is_integer(dtype) and not dtypes.is_integer(out.dtype):
    out = lax.floor(out)
  out = lax.convert_element_type(out, dtype)
  return (out, delta) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  """`base ** linspace(start, stop, ...)`."""
  from refimpl.numpy.ufuncs import power  # ufuncs imports this module
  check_arraylike("logspace", start, stop)
  dtype = (to_inexact_dtype(dtypes.result_type(start, stop)) if dtype is None
           else user_dtype(dtype, "logspace"))
  compute_dtype = to_inexact_dtype(dtype)
  start = asarray(start, dtype=compute_dtype)
  stop = asarray(stop, dtype=compute_dtype)
  exponents = linspace(start, stop, num, endpoint=endpoint, axis=axis)
  return lax.convert_element_type(power(base, exponents), dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
  """Values spaced evenly on a log scale from `start` to `stop` (same sign)."""
  from refimpl.numpy.ufuncs import log10, sign  # ufuncs imports this module
  check_arraylike("geomspace", start, stop)
  dtype = (to_inexact_dtype(dtypes.result_type(start, stop)) if dtype is None
           else user_dtype(dtype, "geomspace"))
  compute_dtype = to_inexact_dtype(dtype)
  start = asarray(start, dtype=compute_dtype)
  stop = asarray(stop, dtype=compute_dtype)
  signs = sign(start)
  out = signs * logspace(log10(start / signs), log10(stop / signs), num,
                         endpoint=endpoint, base=10.0, dtype=compute_dtype, axis=0)
  if axis != 0:
    axis = canonicalize_axis(axis, out.ndim)
    perm = list(range(1, out.ndim))
    perm.insert(axis, 0)
    out = lax.transpose(out, perm)
  return lax.convert_element_type(out, dtype)


# --- eye, tri, grids ----------------------------------------------------------------------

def _dim(n, what):
  n = operator.index(concrete(n, what))
  if n < 0:
    raise ValueError(f"negative dimensions are not allowed, got {n} for {what}")
  return n


def eye(N, M=None, k=0, dtype=None, *, device=None):
  """Ones on the k-th diagonal (float32 by default): `iota + k == iota` converted."""
  N = _dim(N, "argument 'N' of jnp.eye()")
  M = N if M is None else _dim(M, "argument 'M' of jnp.eye()")
  k = operator.index(concrete(k, "argument 'k' of jnp.eye()"))
  k = max(-N, min(k, M))   # (any diagonal outside the matrix is as empty: kept in int32)
  dtype = _default_float_or(dtype, "eye")
  shifted_rows = lax.add(lax.broadcasted_iota(np.int32, (N, M), 0), np.int32(k))
  cols = lax.broadcasted_iota(np.int32, (N, M), 1)
  return lax.convert_element_type(lax.eq(shifted_rows, cols), dtype)


def identity(n, dtype=None):
  return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
  """Ones at and below the k-th diagonal (float32 by default)."""
  N = _dim(N, "argument 'N' of jnp.tri()")
  M = N if M is None else _dim(M, "argument 'M' of jnp.tri()")
  k = operator.index(concrete(k, "argument 'k' of jnp.tri()"))
  dtype = _default_float_or(dtype, "tri")
  shifted_rows = lax.add(lax.broadcasted_iota(np.int32, (N, M), 0), np.int32(k))
  cols = lax.broadcasted_iota(np.int32, (N, M), 1)
  return lax.convert_element_type(lax.ge(shifted_rows, cols), dtype)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
  """Coordinate grids of the 1-D arrays `xi` (`indexing` "xy" swaps the first two)."""
  check_arraylike("meshgrid", *xi)
  args = [asarray(x) for x in xi]
  if not copy:
    raise ValueError("jax.numpy.meshgrid only supports copy=True")
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  if any(a.ndim != 1 for a in args):
    raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                     f"{[a.shape for a in args]}")
  if indexing == "xy" and len(args) >= 2:
    args[0], args[1] = args[1], args[0]
  shape = [1 if sparse else a.shape[0] for a in args]
  outputs = []
  for i, a in enumerate(args):
    out_shape = shape[:i] + [a.shape[0]] + shape[i + 1:] if sparse else shape
    outputs.append(lax.broadcast_in_dim(a, out_shape, (i,)))
  if indexing == "xy" and len(args) >= 2:
    outputs[0], outputs[1] = outputs[1], outputs[0]
  return outputs


def indices(dimensions, dtype=None, sparse=False):
  """Index grids: `out[i]` holds each position's index along axis i."""
  from refimpl.numpy.manipulation import stack
  dtype = dtypes.default_int_dtype() if dtype is None else user_dtype(dtype, "indices")
  dimensions = tuple(_dim(d, "dimensions argument of jnp.indices") for d in dimensions)
  n = len(dimensions)
  outputs = []
  for i, size in enumerate(dimensions):
    shape = (1,) * i + (size,) + (1,) * (n - i - 1) if sparse else dimensions
    outputs.append(lax.broadcast_in_dim(lax.iota(dtype, size), shape, (i,)))
  if sparse:
    return tuple(outputs)
  return stack(outputs, 0) if outputs else array([], dtype=dtype)


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """`function(*indices(shape, dtype), **kwargs)`: the function of each position."""
  shape = shape_argument(shape)
  return function(*indices(shape, dtype=dtype), **kwargs)


# --- broadcasting ---------------------------------------------------------------------------

def broadcast_shapes(*shapes):
  """The NumPy broadcast of `shapes` (tuples or ints); ValueError if incompatible."""
  shapes = [(s,) if np.ndim(s) == 0 else tuple(s) for s in shapes]
  if not shapes:
    return ()
  try:
    return tuple(np.broadcast_shapes(*shapes))
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def broadcast_to(array, shape, *, out_sharding=None):
  """`array` broadcast to `shape` (one `broadcast_in_dim`, or itself if it fits)."""
  check_out_sharding(out_sharding, "jnp.broadcast_to")
  check_arraylike("broadcast_to", array)
  array = array if is_array(array) else asarray(array)
  shape = shape_argument(shape)
  arr_shape = array.shape
  if arr_shape == shape:
    return array
  if len(shape) < len(arr_shape):
    raise ValueError(f"Cannot broadcast to shape with fewer dimensions: "
                     f"arr_shape={arr_shape} shape={shape}")
  lead = len(shape) - len(arr_shape)
  if any(d not in (1, s) for d, s in zip(arr_shape, shape[lead:])):
    raise ValueError(f"Incompatible shapes for broadcasting: {arr_shape} and requested "
                     f"shape {shape}")
  return lax.broadcast_in_dim(array, shape, tuple(range(lead, len(shape))))


def broadcast_arrays(*args):
  """The arguments broadcast against each other (as Arrays)."""
  check_arraylike("broadcast_arrays", *args)
  shapes = [np.shape(a) if not is_array(a) else a.shape for a in args]
  if not shapes or all(s == shapes[0] for s in shapes):
    return [asarray(a) for a in args]
  shape = broadcast_shapes(*shapes)
  return [broadcast_to(a, shape) for a in args]

