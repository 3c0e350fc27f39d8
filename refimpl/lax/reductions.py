"""Reduction primitives: reduce_sum/prod/max/min/and/or/xor, argmax/argmin,
and the cumulative reductions cumsum/cumprod/cummax/cummin.

Shape rule (reduce_*, argmax, argmin): `axes` are distinct dimensions of the
operand and the result has them removed. Cumulative reductions keep the
shape. Dtype and weak type are the operand's, except argmax/argmin, which
give `index_dtype` (not weak).

Accumulation: floating sums and products are computed in double precision
(complex128 for complex) and rounded once to the operand's dtype; integer
sums and products wrap around modulo 2**bits. A reduction over an empty set
of elements gives the identity of its operation.
"""

import operator

import numpy as np

from refimpl import dtypes
from refimpl.core import Primitive, ShapedArray, get_aval
from refimpl.lax import elementwise
from refimpl.lax.rules import (ANY, INT_OR_BOOL, NUMBER, as_dtype, canonical_axes,
                               check_dtype)
from refimpl.lax.shapes import canonicalize_axis

__all__ = ['reduce', 'reduce_sum', 'reduce_prod', 'reduce_max', 'reduce_min',
           'reduce_and', 'reduce_or', 'reduce_xor', 'argmax', 'argmin',
           'cumsum', 'cumprod', 'cummax', 'cummin']


def _reduced_aval(name, operand, axes, category):
  check_dtype(name, operand, category)
  axes = canonical_axes(name, axes, operand.ndim)
  shape = tuple(d for i, d in enumerate(operand.shape) if i not in axes)
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def _wide_dtype(dtype):
  """The dtype a sum or product accumulates in (see the module docstring)."""
  if dtypes.is_complex(dtype):
    return np.complex128
  if dtypes.is_float(dtype):
    return np.float64
  if dtypes.is_unsigned(dtype):
    return np.uint64
  if dtypes.is_integer(dtype):
    return np.int64
  return dtype


def _max_identity(dtype):
  """The smallest value of `dtype`: the identity of max."""
  if dtypes.is_bool(dtype):
    return False
  if dtypes.is_integer(dtype):
    return dtypes.iinfo(dtype).min
  return -np.inf


def _min_identity(dtype):
  """The largest value of `dtype`: the identity of min."""
  if dtypes.is_bool(dtype):
    return True
  if dtypes.is_integer(dtype):
    return dtypes.iinfo(dtype).max
  return np.inf


def _as_comparable(x):
  """Values NumPy can order exactly: float16/bfloat16 widened to float32."""
  return x.astype(np.float32) if dtypes.is_float(x.dtype) and x.dtype.itemsize <= 2 else x


def _monoid_primitive(name, category, reference):
  prim = Primitive(name)
  prim.def_impl(reference)
  prim.def_abstract_eval(
      lambda operand, *, axes: _reduced_aval(name, operand, axes, category))
  return prim


def _reduce_sum_reference(operand, *, axes):
  """Sum over `axes`. Empty: 0. Integers wrap; floats accumulate in double."""
  wide = np.sum(operand, axis=tuple(axes), dtype=_wide_dtype(operand.dtype))
  return as_dtype(wide, operand.dtype)


def _reduce_prod_reference(operand, *, axes):
  """Product over `axes`. Empty: 1. Integers wrap; floats accumulate in double."""
  wide = np.prod(operand, axis=tuple(axes), dtype=_wide_dtype(operand.dtype))
  return as_dtype(wide, operand.dtype)


def _reduce_max_reference(operand, *, axes):
  """Maximum over `axes`. NaN if any element is NaN. Empty: the dtype's
  smallest value (-inf for floats, the minimum integer, False)."""
  x = _as_comparable(operand)
  return as_dtype(np.max(x, axis=tuple(axes), initial=_max_identity(operand.dtype)),
                  operand.dtype)


def _reduce_min_reference(operand, *, axes):
  """Minimum over `axes`. NaN if any element is NaN. Empty: the dtype's
  largest value (+inf for floats, the maximum integer, True)."""
  x = _as_comparable(operand)
  return as_dtype(np.min(x, axis=tuple(axes), initial=_min_identity(operand.dtype)),
                  operand.dtype)


def _reduce_and_reference(operand, *, axes):
  """Logical (bool) or bitwise (integer) AND over `axes`. Empty: all bits set."""
  return as_dtype(np.bitwise_and.reduce(operand, axis=tuple(axes)), operand.dtype)


def _reduce_or_reference(operand, *, axes):
  """Logical (bool) or bitwise (integer) OR over `axes`. Empty: 0 / False."""
  return as_dtype(np.bitwise_or.reduce(operand, axis=tuple(axes)), operand.dtype)


def _reduce_xor_reference(operand, *, axes):
  """Logical (bool) or bitwise (integer) XOR over `axes`. Empty: 0 / False."""
  return as_dtype(np.bitwise_xor.reduce(operand, axis=tuple(axes)), operand.dtype)


reduce_sum_p = _monoid_primitive("reduce_sum", NUMBER, _reduce_sum_reference)
reduce_prod_p = _monoid_primitive("reduce_prod", NUMBER, _reduce_prod_reference)
reduce_max_p = _monoid_primitive("reduce_max", ANY, _reduce_max_reference)
reduce_min_p = _monoid_primitive("reduce_min", ANY, _reduce_min_reference)
reduce_and_p = _monoid_primitive("reduce_and", INT_OR_BOOL, _reduce_and_reference)
reduce_or_p = _monoid_primitive("reduce_or", INT_OR_BOOL, _reduce_or_reference)
reduce_xor_p = _monoid_primitive("reduce_xor", INT_OR_BOOL, _reduce_xor_reference)


def _axes(axes):
  return tuple(operator.index(a) for a in axes)


def reduce_sum(operand, axes):
  return reduce_sum_p.bind(operand, axes=_axes(axes))


def reduce_prod(operand, axes):
  return reduce_prod_p.bind(operand, axes=_axes(axes))


def reduce_max(operand, axes):
  return reduce_max_p.bind(operand, axes=_axes(axes))


def reduce_min(operand, axes):
  return reduce_min_p.bind(operand, axes=_axes(axes))


def reduce_and(operand, axes):
  return reduce_and_p.bind(operand, axes=_axes(axes))


def reduce_or(operand, axes):
  return reduce_or_p.bind(operand, axes=_axes(axes))


def reduce_xor(operand, axes):
  return reduce_xor_p.bind(operand, axes=_axes(axes))


def _and_identity(dtype):
  """All bits set: the identity of bitwise and."""
  return True if dtypes.is_bool(dtype) else np.array(-1).astype(dtype)


def reduce(operands, init_values, computation, dimensions):
  """`lax.reduce` for the monoids that have primitives.

  `computation` must be one of lax.add, mul, max, min, bitwise_and,
  bitwise_or, bitwise_xor, with `init_values` its identity; the reduction
  then lowers to the matching reduce_* primitive, as JAX does. General
  reducer functions are not supported (NotImplementedError).
  """
  single = not isinstance(operands, (tuple, list))
  if not single:
    if len(operands) != 1:
      raise NotImplementedError("lax.reduce of several operands is not supported")
    operands, init_values = operands[0], init_values[0]
  dtype = get_aval(operands).dtype
  monoids = {"add": (reduce_sum, 0), "mul": (reduce_prod, 1),
             "max": (reduce_max, _max_identity(dtype)),
             "min": (reduce_min, _min_identity(dtype)),
             "bitwise_and": (reduce_and, _and_identity(dtype)),
             "bitwise_or": (reduce_or, 0), "bitwise_xor": (reduce_xor, 0)}
  for name, (reducer, identity) in monoids.items():
    if computation is getattr(elementwise, name, None):
      if not np.all(np.asarray(init_values) == np.asarray(identity)):
        break
      out = reducer(operands, dimensions)
      return out if single else [out]
  raise NotImplementedError(
      "lax.reduce supports only add, mul, max, min and bitwise and/or/xor with their "
      "identity as init value")


# --- argmax / argmin ---------------------------------------------------------------

def _argminmax_reference(numpy_fn):
  def reference(operand, *, axes, index_dtype):
    axis, = axes
    x = _as_comparable(operand)
    if not dtypes.is_inexact(x.dtype):
      return as_dtype(numpy_fn(x, axis=axis), index_dtype)
    nan = np.isnan(x)
    best = numpy_fn(np.where(nan, 0, x), axis=axis)
    first_nan = np.argmax(nan, axis=axis)
    return as_dtype(np.where(nan.any(axis=axis), first_nan, best), index_dtype)
  return reference


def _argminmax_shape_rule(name):
  def rule(operand, *, axes, index_dtype):
    if len(axes) != 1:
      raise ValueError(f"{name} takes exactly one axis, got axes={axes}")
    axis, = axes
    if not 0 <= axis < operand.ndim:
      raise ValueError(f"Invalid axis {axis} for operand shape {operand.shape}")
    if operand.shape[axis] < 1:
      raise ValueError(f"argmin and argmax require non-empty reduction dimension. "
                       f"operand.shape={operand.shape} axis={axis}")
    if not dtypes.is_integer(index_dtype):
      raise TypeError(f"index_dtype must be an integer type, but got {np.dtype(index_dtype).name}")
    shape = operand.shape[:axis] + operand.shape[axis + 1:]
    return ShapedArray(shape, index_dtype)
  return rule


argmax_p = Primitive("argmax")
argmax_p.def_impl(_argminmax_reference(np.argmax))
argmax_p.impl.__doc__ = """Index of the largest element along the single axis in `axes`.

Ties give the first index. NaN counts as larger than everything: if the
slice holds a NaN the result is the index of the first NaN. Complex values
compare lexicographically. The reduced axis must be non-empty.
"""
argmax_p.def_abstract_eval(_argminmax_shape_rule("argmax"))

argmin_p = Primitive("argmin")
argmin_p.def_impl(_argminmax_reference(np.argmin))
argmin_p.impl.__doc__ = """Index of the smallest element along the single axis in `axes`.

Ties give the first index. NaN wins here too: if the slice holds a NaN the
result is the index of the first NaN (as in JAX and NumPy). Complex values
compare lexicographically. The reduced axis must be non-empty.
"""
argmin_p.def_abstract_eval(_argminmax_shape_rule("argmin"))


def argmax(operand, axis, index_dtype):
  """Index of the maximum along `axis` (first NaN, else first maximum)."""
  index_dtype = dtypes.canonicalize_dtype(np.dtype(index_dtype))
  return argmax_p.bind(operand, axes=(operator.index(axis),), index_dtype=index_dtype)


def argmin(operand, axis, index_dtype):
  """Index of the minimum along `axis` (first NaN, else first minimum)."""
  index_dtype = dtypes.canonicalize_dtype(np.dtype(index_dtype))
  return argmin_p.bind(operand, axes=(operator.index(axis),), index_dtype=index_dtype)


# --- cumulative reductions -----------------------------------------------------------

def _cumulative_primitive(name, category, accumulate, doc):
  prim = Primitive(name)

  def reference(operand, *, axis, reverse):
    x = np.flip(operand, axis) if reverse else operand
    out = as_dtype(accumulate(x, axis), operand.dtype)
    return np.flip(out, axis) if reverse else out

  def shape_rule(operand, *, axis, reverse):
    check_dtype(name, operand, category)
    if not 0 <= axis < operand.ndim:
      raise ValueError(f"{name} axis {axis} out of range for operand of shape "
                       f"{operand.shape}")
    return operand

  reference.__doc__ = doc
  prim.def_impl(reference)
  prim.def_abstract_eval(shape_rule)
  return prim


cumsum_p = _cumulative_primitive(
    "cumsum", NUMBER,
    lambda x, axis: np.cumsum(x, axis=axis, dtype=_wide_dtype(x.dtype)),
    """Running sums along `axis` (from the end when `reverse`).

    Element i is the sum of elements 0..i, each computed in double precision
    for floats and rounded once; integers wrap. Shape and dtype unchanged.""")

cumprod_p = _cumulative_primitive(
    "cumprod", NUMBER,
    lambda x, axis: np.cumprod(x, axis=axis, dtype=_wide_dtype(x.dtype)),
    """Running products along `axis` (from the end when `reverse`).

    Computed in double precision for floats and rounded per element;
    integers wrap. Shape and dtype unchanged.""")

cummax_p = _cumulative_primitive(
    "cummax", ANY,
    lambda x, axis: np.maximum.accumulate(_as_comparable(x), axis=axis),
    """Running maxima along `axis` (from the end when `reverse`).

    Once a NaN is met, every later element is NaN.""")

cummin_p = _cumulative_primitive(
    "cummin", ANY,
    lambda x, axis: np.minimum.accumulate(_as_comparable(x), axis=axis),
    """Running minima along `axis` (from the end when `reverse`).

    Once a NaN is met, every later element is NaN.""")


def _cumulative(prim, operand, axis, reverse):
  axis = canonicalize_axis(axis, get_aval(operand).ndim)
  return prim.bind(operand, axis=axis, reverse=bool(reverse))


def cumsum(operand, axis=0, reverse=False):
  return _cumulative(cumsum_p, operand, axis, reverse)


def cumprod(operand, axis=0, reverse=False):
  return _cumulative(cumprod_p, operand, axis, reverse)


def cummax(operand, axis=0, reverse=False):
  return _cumulative(cummax_p, operand, axis, reverse)


def cummin(operand, axis=0, reverse=False):
  return _cumulative(cummin_p, operand, axis, reverse)
