"""Shape and dtype rules shared by many primitives.

Each helper raises `TypeError` with a message naming the primitive, as JAX
does, so a wrong call fails at trace time with a clear explanation.
"""

import numpy as np

from refimpl import dtypes
from refimpl.core import ShapedArray

# Dtype categories accepted by primitives: tuples of NumPy's abstract types
# (bfloat16 counts as floating). Their names appear in error messages.
BOOL = (np.bool_,)
INTEGER = (np.integer,)
SIGNED = (np.signedinteger,)
FLOAT = (np.floating,)
COMPLEX = (np.complexfloating,)
INEXACT = FLOAT + COMPLEX
NUMBER = INTEGER + FLOAT + COMPLEX
INT_OR_BOOL = INTEGER + BOOL
ORDERED = INTEGER + FLOAT + BOOL
ANY = NUMBER + BOOL
EXTENDED = (dtypes.extended,)
"""Extended dtypes (PRNG keys): accepted only by shape operations, indexing,
control flow, `copy` and the equality comparisons."""
COMPLEX_PARTS = (np.float32, np.float64)
"""The dtypes that form complex numbers: `complex(float32, float32)` is complex64."""


def _belongs(dtype, category):
  return any(dtypes.issubdtype(dtype, t) for t in category)


def check_dtype(name, aval, category, position=None):
  """Raises TypeError unless `aval.dtype` belongs to `category`.

  `position` (for n-ary ops) names the offending operand, as JAX does.
  """
  if _belongs(aval.dtype, category):
    return
  if aval.dtype == dtypes.float0:
    raise TypeError(f"Called {name} with a float0 array. float0s do not support any "
                    "operations by design; use np.zeros_like(arr, dtype=float) to "
                    "get a regular array of zeros.")
  accepted = ", ".join(t.__name__ for t in category)
  if position is None:
    raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. "
                    f"Accepted dtypes are subtypes of {accepted}.")
  raise TypeError(f"{name} does not accept dtype {aval.dtype.name} at position "
                  f"{position}. Accepted dtypes at position {position} are subtypes "
                  f"of {accepted}.")


def check_same_dtypes(name, *avals):
  """lax ops do not promote: every operand must have the same dtype."""
  dts = [a.dtype for a in avals]
  if any(d != dts[0] for d in dts[1:]):
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                    f"{', '.join(d.name for d in dts)}. (Tip: jnp.{name} is a "
                    "similar function that does automatic type promotion on inputs).")


def broadcasting_shape(name, *avals):
  """The result shape of an n-ary elementwise op.

  Rank-0 operands broadcast against anything; operands of equal rank
  broadcast where a dimension is 1. Ranks otherwise must be equal.
  """
  shapes = [a.shape for a in avals if a.shape]
  if not shapes:
    return ()
  if len({len(s) for s in shapes}) != 1:
    raise TypeError(f"{name}: arrays must have same number of dimensions, got "
                    f"{', '.join(str(s) for s in shapes)}.")
  result = []
  for ds in zip(*shapes):
    non_1s = {d for d in ds if d != 1}
    if len(non_1s) > 1:
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(str(s) for s in shapes)}.")
    result.append(non_1s.pop() if non_1s else 1)
  return tuple(result)


def naryop_aval(name, avals, category, out_dtype=None, same_dtypes=True):
  """The aval of an elementwise op: broadcast shape, weak only if every operand is.

  `category` is one dtype category for all operands, or a list with one per
  operand. `out_dtype` is None (the operands' dtype), a dtype, or a function
  of the first operand's dtype.
  """
  categories = category if isinstance(category, list) else [category] * len(avals)
  for i, (a, c) in enumerate(zip(avals, categories)):
    check_dtype(name, a, c, position=i if len(avals) > 1 else None)
  if same_dtypes:
    check_same_dtypes(name, *avals)
  shape = broadcasting_shape(name, *avals)
  if out_dtype is None:
    dtype = avals[0].dtype
  elif callable(out_dtype):
    dtype = out_dtype(avals[0].dtype)
  else:
    dtype = out_dtype
  return ShapedArray(shape, dtype, all(a.weak_type for a in avals))


def canonical_axes(name, axes, ndim):
  """Checks that `axes` are distinct and within [0, ndim)."""
  axes = tuple(int(a) for a in axes)
  for a in axes:
    if not 0 <= a < ndim:
      raise ValueError(f"{name}: axis {a} is out of bounds for array of rank {ndim}")
  if len(set(axes)) != len(axes):
    raise ValueError(f"{name}: duplicate axes {axes}")
  return axes


def accumulation_dtype(dtype):
  """The dtype a reference rule sums or multiplies `dtype` values in, exact
  enough to round only once at the end: complex128, float64, or 64-bit
  integers (unsigned for unsigned; int64 for bool, whose results convert
  back by `!= 0`)."""
  if dtypes.is_complex(dtype):
    return np.dtype(np.complex128)
  if dtypes.is_float(dtype):
    return np.dtype(np.float64)
  return np.dtype(np.uint64 if dtypes.is_unsigned(dtype) else np.int64)


def contraction_dtype(dtype):
  """The dtype a contraction (dot_general, conv_general_dilated) with result
  `dtype` multiplies and sums in: as XLA on CPU, the result dtype for
  float32 and float64, and float32 for 16-bit floats; complex128 for
  complex (a complex64 BLAS kernel may overflow in its intermediates);
  64-bit integers for integers and bool (exact, wrapping once rounded)."""
  if dtype in (dtypes.float16, dtypes.bfloat16):
    return np.dtype(np.float32)
  if dtypes.is_float(dtype):
    return np.dtype(dtype)
  return accumulation_dtype(dtype)


def max_identity(dtype):
  """The smallest value of `dtype` (-inf for floats, False for bool): the
  identity of max."""
  if dtypes.is_bool(dtype):
    return False
  if dtypes.is_integer(dtype):
    return dtypes.iinfo(dtype).min
  return -np.inf


def min_identity(dtype):
  """The largest value of `dtype` (inf for floats, True for bool): the
  identity of min."""
  if dtypes.is_bool(dtype):
    return True
  if dtypes.is_integer(dtype):
    return dtypes.iinfo(dtype).max
  return np.inf


def as_dtype(x, dtype):
  """NumPy result `x` as an array of exactly `dtype` (for reference rules).

  A float64 result becomes a 16-bit float by way of float32: XLA computes
  16-bit floats in float32 and rounds that result, so the reference does too.
  """
  x = np.asarray(x)
  if x.dtype == dtype:
    return x
  dtype = np.dtype(dtype)
  if dtype in (dtypes.float16, dtypes.bfloat16) and x.dtype == dtypes.float64:
    x = x.astype(np.float32)
  return x.astype(dtype, copy=False)


def const(x, value):
  """`value` as a NumPy scalar of the dtype of `x` (a value or tracer): a
  literal in a jaxpr, as the differentiation rules use."""
  from refimpl.core import get_aval
  return np.array(value, get_aval(x).dtype)
