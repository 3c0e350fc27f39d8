"""Array creation: array, asarray, zeros, ones, full, arange, ..."""

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.array import Array

__all__ = ['array', 'asarray', 'zeros', 'ones', 'full', 'arange']


def array(object, dtype=None, copy=True, order="K", ndmin=0):
  """An Array from array-like data (nested lists/tuples allowed here).

  Python scalars give weakly typed arrays only via `asarray` of a scalar;
  `array` of a scalar is strongly typed, as in JAX. Lists of tracers are
  stacked with lax.
  """
  dtypes.check_user_dtype_supported(dtype, "array")
  leaves = _flatten_nested(object)
  if any(isinstance(x, core.Tracer) for x in leaves):
    raise NotImplementedError
  if isinstance(object, (core.ConcreteArray,)):
    value = np.asarray(object)
    weak = object.aval.weak_type and dtype is None
  else:
    value = np.asarray(object)
    weak = False
  if dtype is not None:
    out_dtype = dtypes.canonicalize_dtype(dtypes.dtype(dtype))
  elif isinstance(object, core.ConcreteArray):
    out_dtype = value.dtype
  else:
    out_dtype = _default_dtype_of(object, value)
  value = np.asarray(value).astype(out_dtype) if dtypes.is_bool(out_dtype) or not dtypes.is_integer(out_dtype) or not dtypes.is_inexact(value.dtype) else lax.convert_element_type(value, out_dtype)._value
  if ndmin > value.ndim:
    value = value.reshape((1,) * (ndmin - value.ndim) + value.shape)
  return Array(value, weak_type=weak)


def _flatten_nested(obj):
  if isinstance(obj, (list, tuple)):
    return [leaf for item in obj for leaf in _flatten_nested(item)]
  return [obj]


def _default_dtype_of(obj, value):
  """The dtype of data from Python: canonical, with Python scalars weak-promoted."""
  leaves = _flatten_nested(obj)
  if leaves and all(dtypes.is_python_scalar(x) for x in leaves):
    return dtypes.result_type(*(type(x) for x in leaves)) if len(set(map(type, leaves))) > 1 else dtypes.python_scalar_dtype(leaves[0])
  return dtypes.canonicalize_dtype(value.dtype)


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
  if isinstance(a, (core.Tracer, core.ConcreteArray)) and dtype is None:
    return a
  if dtypes.is_python_scalar(a) and dtype is None:
    return lax.convert_element_type(a, dtypes.python_scalar_dtype(a), type(a) is not bool)
  return array(a, dtype=dtype, copy=False)


def zeros(shape, dtype=None, *, device=None):
  return full(shape, 0, dtype)


def ones(shape, dtype=None, *, device=None):
  return full(shape, 1, dtype)


def full(shape, fill_value, dtype=None, *, device=None):
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  dtype = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtypes.dtype(dtype))
  fill = lax.convert_element_type(fill_value, dtype)
  return lax.broadcast_in_dim(fill, shape, ())


def arange(start, stop=None, step=None, dtype=None):
  if stop is None:
    start, stop = 0, start
  step = 1 if step is None else step
  if dtype is None:
    dtype = dtypes.result_type(*(x for x in (start, stop, step)))
  value = np.arange(start, stop, step).astype(dtypes.canonicalize_dtype(dtypes.dtype(dtype)))
  return Array(value)
