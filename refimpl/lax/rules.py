"""Shape and dtype rules shared by many primitives.

Each helper raises `TypeError` with a message naming the primitive, as JAX
does, so a wrong call fails at trace time with a clear explanation.
"""

import numpy as np

from refimpl import dtypes
from refimpl.core import ShapedArray

# Dtype categories accepted by primitives.
FLOAT = "floating"
INEXACT = "inexact (floating or complex)"
INTEGER = "integer"
INT_OR_BOOL = "integer or boolean"
NUMBER = "numeric"
ANY = "any"

_MEMBERSHIP = {
    FLOAT: dtypes.is_float,
    INEXACT: dtypes.is_inexact,
    INTEGER: dtypes.is_integer,
    INT_OR_BOOL: lambda d: dtypes.is_integer(d) or dtypes.is_bool(d),
    NUMBER: lambda d: not dtypes.is_bool(d),
    ANY: lambda d: True,
}


def check_dtype(name, aval, category):
  """Raises TypeError unless `aval.dtype` belongs to `category`."""
  if not _MEMBERSHIP[category](aval.dtype):
    raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. "
                    f"Accepted dtypes are subtypes of {category}.")


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


def naryop_aval(name, avals, category, out_dtype=None):
  """The aval of an elementwise op: broadcast shape, common dtype, weak if all weak."""
  for a in avals:
    check_dtype(name, a, category)
  check_same_dtypes(name, *avals)
  shape = broadcasting_shape(name, *avals)
  dtype = avals[0].dtype if out_dtype is None else out_dtype
  weak = all(a.weak_type for a in avals) and out_dtype is None
  return ShapedArray(shape, dtype, weak)


def canonical_axes(name, axes, ndim):
  """Checks that `axes` are distinct and within [0, ndim)."""
  axes = tuple(int(a) for a in axes)
  for a in axes:
    if not 0 <= a < ndim:
      raise ValueError(f"{name}: axis {a} is out of bounds for array of rank {ndim}")
  if len(set(axes)) != len(axes):
    raise ValueError(f"{name}: duplicate axes {axes}")
  return axes


def as_dtype(x, dtype):
  """NumPy result `x` as an array of exactly `dtype` (for reference rules)."""
  return np.asarray(x).astype(dtype, copy=False)
