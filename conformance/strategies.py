"""Hypothesis strategies shared by the tests and the conformance suite.

Values include the edge cases that specifications get wrong: NaN, ±inf,
-0.0, empty and size-1 axes, and the extreme integers of each dtype.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from refimpl import dtypes

FLOAT_DTYPES = [dtypes.float16, dtypes.bfloat16, dtypes.float32]
SIGNED_DTYPES = [dtypes.int8, dtypes.int16, dtypes.int32]
UNSIGNED_DTYPES = [dtypes.uint8, dtypes.uint16, dtypes.uint32]
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
COMPLEX_DTYPES = [dtypes.complex64]
BOOL_DTYPES = [dtypes.bool_]
# The 32-bit-canonical set: what programs see with x64 disabled (the default).
ALL_DTYPES = BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
  """Array shapes, including empty and size-1 axes by default."""
  return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims,
                          min_side=min_side, max_side=max_side)


def _elements(dtype, allow_nan=True, allow_inf=True):
  dtype = np.dtype(dtype)
  if dtype == dtypes.bfloat16:
    return st.floats(width=32, allow_nan=allow_nan, allow_infinity=allow_inf).map(
        lambda v: np.asarray(v, dtype).item())
  if dtype.kind == "c":
    part = st.floats(width=32, allow_nan=allow_nan, allow_infinity=allow_inf)
    return st.builds(complex, part, part)
  return hnp.from_dtype(dtype, allow_nan=allow_nan, allow_infinity=allow_inf)


def arrays(dtype, shape, allow_nan=True, allow_inf=True, elements=None):
  """NumPy arrays of `dtype` (bfloat16 included) and `shape` (a strategy or tuple)."""
  dtype = np.dtype(dtype)
  if elements is None:
    elements = _elements(dtype, allow_nan, allow_inf)
  if dtype == dtypes.bfloat16:
    return hnp.arrays(np.float32, shape, elements=elements).map(lambda a: a.astype(dtype))
  return hnp.arrays(dtype, shape, elements=elements)


def dtype_and_array(dtype_list=ALL_DTYPES, shape=None, **kwargs):
  """A (dtype, array) pair: first a dtype from `dtype_list`, then an array of it."""
  shape = shapes() if shape is None else shape
  return st.sampled_from(dtype_list).flatmap(
      lambda dt: st.tuples(st.just(dt), arrays(dt, shape, **kwargs)))
