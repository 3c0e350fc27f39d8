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


@st.composite
def index_expressions(draw, shape):
  """A NumPy index (a tuple) for an array of `shape`, valid and in bounds.

  Elements: integers (negative ones too), slices with any start/stop
  (out-of-range ones included) and steps of either sign, `None`, at most one
  `...`, and either integer arrays (values in bounds, shapes broadcastable
  together) or one boolean mask over one or two dimensions. Arrays are NumPy
  arrays; size-0 dimensions get only slices and masks.
  """
  ndim = len(shape)
  if draw(st.booleans()):  # explicit dims [0, k) and [ndim - m, ndim) around `...`
    k = draw(st.integers(0, ndim))
    m = draw(st.integers(0, ndim - k))
    segments = [list(range(k)), list(range(ndim - m, ndim))]
  else:
    segments = [list(range(draw(st.integers(0, ndim))))]
  advanced = draw(st.sampled_from(["none", "arrays", "mask"]))
  base_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
  mask_used = False

  def element(dims):
    """An index element for the first of `dims`, and how many dims it consumes."""
    nonlocal mask_used
    size = shape[dims[0]]
    kinds = ["slice", "slice"] + ["int"] * (size > 0)
    if advanced == "arrays" and size > 0:
      kinds += ["array", "array"]
    if advanced == "mask" and not mask_used:
      kinds += ["mask"]
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
      return draw(st.integers(-size, size - 1)), 1
    if kind == "slice":
      bound = st.none() | st.integers(-size - 2, size + 2)
      step = st.none() | st.sampled_from([1, 2, 3, -1, -2])
      return slice(draw(bound), draw(bound), draw(step)), 1
    if kind == "array":
      array_shape = tuple(draw(st.sampled_from([1, d])) for d in base_shape)
      array_shape = array_shape[draw(st.integers(0, len(array_shape))):]
      values = hnp.arrays(np.int32, array_shape, elements=st.integers(-size, size - 1))
      return draw(values), 1
    mask_used = True
    n = draw(st.integers(1, min(2, len(dims))))
    mask_shape = tuple(shape[d] for d in dims[:n])
    return draw(hnp.arrays(np.bool_, mask_shape)), n

  parts = []
  for segment_number, dims in enumerate(segments):
    if segment_number == 1:
      parts.append(Ellipsis)
    while dims:
      item, consumed = element(dims)
      parts.append(item)
      dims = dims[consumed:]
  for _ in range(draw(st.integers(0, 2))):
    parts.insert(draw(st.integers(0, len(parts))), None)
  return tuple(parts)


@st.composite
def broadcastable_arrays(draw, dtype_list=ALL_DTYPES, n=2, max_dims=3, **kwargs):
  """(dtype, [array, ...]): `n` arrays of one dtype whose shapes lax broadcasts.

  Each operand has either rank 0 or the full rank, with any of its dimensions
  possibly 1 (lax's broadcasting rule; NumPy broadcasts these the same way).
  """
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(shapes(max_dims=max_dims))
  operands = []
  for _ in range(n):
    if draw(st.booleans()) and draw(st.booleans()):
      operand_shape = ()
    else:
      operand_shape = tuple(d if draw(st.booleans()) else 1 for d in shape)
    operands.append(draw(arrays(dtype, operand_shape, **kwargs)))
  return dtype, operands


# Tolerances for comparing floating results with an independent computation
# (NumPy in the operands' own dtype): (rtol, atol) per dtype. rtol allows a few
# ulps of either side (complex: relative to the modulus, and looser, since
# NumPy's complex64 functions lose accuracy, e.g. log1p(1e-4j)); atol is two
# of the smallest subnormals.
TOLERANCES = {
    np.dtype(dtypes.float16): (2e-3, 1.2e-7),
    np.dtype(dtypes.bfloat16): (1.6e-2, 1.9e-40),
    np.dtype(dtypes.float32): (2e-6, 2.9e-45),
    np.dtype(dtypes.float64): (1e-13, 1e-323),
    np.dtype(dtypes.complex64): (1e-4, 2.9e-45),
    np.dtype(dtypes.complex128): (1e-13, 1e-323),
}


def assert_close(actual, expected, dtype=None, rtol=None, atol=None):
  """Asserts `actual` matches `expected` within the dtype's TOLERANCES.

  Integers and booleans must be equal. Floats: NaN where expected is NaN
  (both parts for complex), infinities equal, except that a finite value
  within rtol of the largest float may meet an infinity (rounding at the
  overflow threshold). The sign of zero is not compared.
  """
  actual, expected = np.asarray(actual), np.asarray(expected)
  dtype = np.dtype(actual.dtype if dtype is None else dtype)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  if dtype not in TOLERANCES:
    np.testing.assert_array_equal(actual, expected)
    return
  default_rtol, default_atol = TOLERANCES[dtype]
  rtol = default_rtol if rtol is None else rtol
  atol = default_atol if atol is None else atol
  a = actual.astype(np.complex128 if dtype.kind == "c" else np.float64)
  e = expected.astype(a.dtype)
  big = float(dtypes.finfo(np.finfo(dtype).dtype if dtype.kind == "c" else dtype).max)
  for part in ((np.real, np.imag) if dtype.kind == "c" else (lambda v: v,)):
    pa, pe = part(a), part(e)
    np.testing.assert_array_equal(np.isnan(pa), np.isnan(pe), err_msg=f"NaNs differ: {a} vs {e}")
    overflow_edge = (np.isinf(pa) & (np.abs(pe) >= big * (1 - rtol))) | (
        np.isinf(pe) & (np.abs(pa) >= big * (1 - rtol)))
    infinite = (np.isinf(pa) | np.isinf(pe)) & ~overflow_edge
    np.testing.assert_array_equal(pa[infinite], pe[infinite], err_msg=f"{a} vs {e}")
  finite = np.isfinite(a) & np.isfinite(e)
  np.testing.assert_allclose(a[finite], e[finite], rtol=rtol, atol=atol,
                             err_msg=f"actual {a}\nexpected {e}")


def case_inputs(dtype_list=ALL_DTYPES, n=1, max_dims=3, kwargs=None, **array_kwargs):
  """Inputs of a conformance Case: `n` broadcastable arrays of one dtype and
  static keyword arguments drawn from `kwargs` (a strategy of dicts)."""
  arrays_ = broadcastable_arrays(dtype_list, n, max_dims, **array_kwargs)
  return st.tuples(arrays_.map(lambda pair: tuple(pair[1])),
                   st.just({}) if kwargs is None else kwargs)
