"""Hypothesis strategies shared by the tests and the conformance suite.

Values include the edge cases that specifications get wrong: NaN, ±inf,
-0.0, empty and size-1 axes, and the extreme integers of each dtype.
"""

import math

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
  try:
    for part in ((np.real, np.imag) if dtype.kind == "c" else (lambda v: v,)):
      pa, pe = part(a), part(e)
      np.testing.assert_array_equal(np.isnan(pa), np.isnan(pe), err_msg="NaNs differ")
      overflow_edge = (np.isinf(pa) & (np.abs(pe) >= big * (1 - rtol))) | (
          np.isinf(pe) & (np.abs(pa) >= big * (1 - rtol)))
      infinite = (np.isinf(pa) | np.isinf(pe)) & ~overflow_edge
      np.testing.assert_array_equal(pa[infinite], pe[infinite], err_msg="infinities differ")
    finite = np.isfinite(a) & np.isfinite(e)
    np.testing.assert_allclose(a[finite], e[finite], rtol=rtol, atol=atol)
  except AssertionError as err:  # the whole arrays, formatted only on failure
    raise AssertionError(f"{err}\nactual {a}\nexpected {e}") from None


def case_inputs(dtype_list=ALL_DTYPES, n=1, max_dims=3, kwargs=None, **array_kwargs):
  """Inputs of a conformance Case: `n` broadcastable arrays of one dtype and
  static keyword arguments drawn from `kwargs` (a strategy of dicts)."""
  arrays_ = broadcastable_arrays(dtype_list, n, max_dims, **array_kwargs)
  return st.tuples(arrays_.map(lambda pair: tuple(pair[1])),
                   st.just({}) if kwargs is None else kwargs)


# --- strategies for the conformance families (shapes, indexing, reductions, ...) -----------------

def broadcastable_shapes(n, max_dims=3, max_side=4):
  """A list of `n` shapes that broadcast together as NumPy's (ranks may
  differ, size-1 and empty axes included)."""
  return hnp.mutually_broadcastable_shapes(num_shapes=n, max_dims=max_dims,
                                           max_side=max_side).map(
      lambda s: list(s.input_shapes))


@st.composite
def numpy_case_inputs(draw, dtype_list=ALL_DTYPES, n=1, max_dims=3, kwargs=None,
                      **array_kwargs):
  """As `case_inputs`, but the `n` arrays broadcast as NumPy allows: ranks may
  differ (what jnp functions accept, and lax functions do not)."""
  dtype = draw(st.sampled_from(dtype_list))
  arrays_ = tuple(draw(arrays(dtype, s, **array_kwargs))
                  for s in draw(broadcastable_shapes(n, max_dims)))
  return arrays_, ({} if kwargs is None else draw(kwargs))


def axes(ndim, allow_none=True, allow_tuple=True, min_size=0):
  """An `axis` argument for an array of rank `ndim`: None, an int (negative
  too) or a tuple of distinct axes (possibly empty, in any order)."""
  options = []
  if allow_none:
    options.append(st.none())
  if ndim:
    options.append(st.integers(-ndim, ndim - 1))
  if allow_tuple and not ndim:
    options.append(st.just(()))
  elif allow_tuple:
    options.append(st.lists(st.integers(0, ndim - 1), min_size=min_size, max_size=ndim,
                            unique=True).flatmap(
        lambda dims: st.tuples(*[st.sampled_from([d, d - ndim]) for d in dims])))
  return st.one_of(options)


@st.composite
def array_and_kwargs(draw, kwargs_for, dtype_list=ALL_DTYPES, shape=None, **array_kwargs):
  """Inputs of a Case whose static arguments depend on the operand's shape:
  `((array,), kwargs)` with kwargs drawn from `kwargs_for(shape)` (a strategy
  of dicts). `shape` is a strategy of shapes (default `shapes()`)."""
  dtype = draw(st.sampled_from(dtype_list))
  array = draw(arrays(dtype, draw(shapes() if shape is None else shape), **array_kwargs))
  return (array,), draw(kwargs_for(array.shape))


@st.composite
def same_shape_arrays(draw, dtype_list=ALL_DTYPES, n=2, shape=None, **array_kwargs):
  """Inputs of a Case taking `n` arrays of one dtype and one shape (a
  strategy, default `shapes()`): `(arrays, {})`."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(shapes() if shape is None else shape)
  return tuple(draw(arrays(dtype, shape, **array_kwargs)) for _ in range(n)), {}


def index_arrays(size, shape, in_bounds=True):
  """int32 arrays of `shape` indexing an axis of length `size` (> 0): values in
  NumPy's valid range [-size, size), or in [-2 size - 1, 2 size + 1] (out of
  bounds on both sides too) when not `in_bounds`."""
  low, high = (-size, size - 1) if in_bounds else (-2 * size - 1, 2 * size + 1)
  return hnp.arrays(np.int32, shape, elements=st.integers(low, high))


def small_integer_arrays(dtype, shape, bound=4):
  """Arrays of any `dtype` whose values are integers in [-bound, bound] ([0,
  bound] unsigned, both parts for complex): sums of a few of their products
  are exact in every dtype, so results can be compared exactly."""
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    elements = st.booleans()
  elif dtypes.is_unsigned(dtype):
    elements = st.integers(0, bound)
  elif dtype.kind == "c":
    part = st.integers(-bound, bound)
    elements = st.builds(complex, part, part)
  else:
    elements = st.integers(-bound, bound)
  return arrays(dtype, shape, elements=elements)


@st.composite
def window_params(draw, shape, max_window=3, max_stride=2, max_pad=2, max_dilation=2,
                  string_padding=True):
  """Static params of a windowed reduction over an operand of `shape`:
  window_dimensions, window_strides, padding ((lo, hi) pairs, from -1 to
  `max_pad`, or 'VALID'/'SAME'/'SAME_LOWER' when `string_padding`),
  base_dilation and window_dilation."""
  ndim = len(shape)
  dims = lambda high: tuple(draw(st.integers(1, high)) for _ in range(ndim))
  params = dict(window_dimensions=dims(max_window), window_strides=dims(max_stride),
                base_dilation=dims(max_dilation), window_dilation=dims(max_dilation))
  if string_padding and draw(st.booleans()):
    params["padding"] = draw(st.sampled_from(["VALID", "SAME", "SAME_LOWER"]))
  else:
    params["padding"] = tuple(
        (draw(st.integers(-1, max_pad)), draw(st.integers(-1, max_pad))) for _ in shape)
  return params


@st.composite
def conv_inputs(draw, dtype_list, max_spatial_dims=2, max_side=4):
  """Inputs of lax.conv_general_dilated: `((lhs, rhs), kwargs)` with small
  integer values (exact sums), a random layout (three strings such as
  ('WNCH', 'OHIW', 'HNWC')), strides, padding (negative too), dilations,
  and a feature or batch group count of 1 or 2."""
  dtype = draw(st.sampled_from(dtype_list))
  n_spatial = draw(st.integers(0, max_spatial_dims))
  groups, batch_groups = draw(st.sampled_from([(1, 1), (2, 1), (1, 2)]))
  batch = batch_groups * draw(st.integers(0, 2))
  in_features = draw(st.integers(0, 2))
  out_features = groups * batch_groups * draw(st.integers(1, 2))
  kernel = [draw(st.integers(1, 3)) for _ in range(n_spatial)]
  spatial = [draw(st.integers(0, max_side)) for _ in range(n_spatial)]
  strides = tuple(draw(st.integers(1, 2)) for _ in range(n_spatial))
  lhs_dilation = tuple(draw(st.integers(1, 2)) for _ in range(n_spatial))
  rhs_dilation = tuple(draw(st.integers(1, 2)) for _ in range(n_spatial))
  padding = []
  for d, dil in zip(spatial, lhs_dilation):
    dilated = 1 + dil * (d - 1) if d else 0
    lo = draw(st.integers(-min(1, dilated), 2))
    padding.append((lo, draw(st.integers(-min(1, dilated + lo), 2))))
  # spatial dimension j is letter j of "HWD"; the kernel string orders them
  letters = "HWD"[:n_spatial]
  specs = ["".join(draw(st.permutations(pair + letters))) for pair in ("NC", "OI", "NC")]
  rhs_letters = [c for c in specs[1] if c in letters]
  order = [letters.index(c) for c in rhs_letters]

  def layout(spec, sizes):  # sizes: by letter
    return tuple(sizes[c] for c in spec)

  spatial_sizes = dict(zip(letters, spatial))
  kernel_sizes = dict(zip(letters, kernel))
  lhs = draw(small_integer_arrays(dtype, layout(
      specs[0], {"N": batch, "C": groups * in_features, **spatial_sizes})))
  rhs = draw(small_integer_arrays(dtype, layout(
      specs[1], {"O": out_features, "I": in_features, **kernel_sizes})))
  reorder = lambda values: tuple(values[j] for j in order)
  kwargs = dict(window_strides=reorder(strides), padding=reorder(padding),
                lhs_dilation=reorder(lhs_dilation), rhs_dilation=reorder(rhs_dilation),
                dimension_numbers=tuple(specs), feature_group_count=groups,
                batch_group_count=batch_groups)
  return (lhs, rhs), kwargs


# --- linear algebra and FFT inputs ---------------------------------------------------------

LINALG_DTYPES = [dtypes.float32, dtypes.complex64]


def bounded_arrays(dtype, shape, bound=1.0):
  """Finite arrays of a float or complex `dtype` whose elements (each part,
  for complex) lie in [-bound, bound]."""
  part = st.floats(-bound, bound, width=32)
  elements = st.builds(complex, part, part) if np.dtype(dtype).kind == "c" else part
  return arrays(dtype, shape, elements=elements)


def batch_shapes(max_dims=1, max_side=2):
  """Leading (batch) shapes of matrix stacks, `()` included."""
  return hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=1, max_side=max_side)


def _unitary(draw, dtype, batch, n):
  """A random unitary (orthogonal when real) float64/complex128 stack `batch + (n, n)`."""
  wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
  return np.linalg.qr(draw(bounded_arrays(dtype, batch + (n, n))).astype(wide))[0]


@st.composite
def well_conditioned_matrices(draw, dtype, batch=(), shape=None, kind="invertible",
                              max_side=4):
  """Matrix stacks `batch + shape` whose condition number is at most about 10,
  so float32 results stay close to the exact ones. `shape` defaults to a
  random square (or, for "full_rank", rectangular) shape with sides in
  [1, max_side]. Kinds:

  * "invertible": entries in [-1, 1] plus 2n on the diagonal (diagonally
    dominant, so invertible);
  * "positive_definite": `Q diag(s) Q^H` with `Q` unitary, `s` in [1, 10];
  * "hermitian": the same with `|s|` in [1, 10] of either sign;
  * "full_rank": `U diag(s) V^H` (`m x n`) with singular values `s` in [1, 10].
  """
  if shape is None:
    m = draw(st.integers(1, max_side))
    shape = (m, draw(st.integers(1, max_side)) if kind == "full_rank" else m)
  m, n = shape
  wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
  if kind == "invertible":
    x = draw(bounded_arrays(dtype, batch + (n, n))).astype(wide)
    return (x + 2 * n * np.eye(n)).astype(dtype)
  k = min(m, n)
  s = draw(hnp.arrays(np.float64, batch + (k,), elements=st.floats(1, 10)))
  if kind == "hermitian":
    s = s * draw(hnp.arrays(np.float64, batch + (k,), elements=st.sampled_from([-1., 1.])))
  u = _unitary(draw, dtype, batch, m)[..., :k]
  v = u if kind in ("positive_definite", "hermitian") else _unitary(draw, dtype, batch, n)[..., :k]
  a = (u * s[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
  if kind != "full_rank":  # exactly Hermitian after rounding
    a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
  return a.astype(dtype)


def bounded_elements(dtype, low, high):
  """Finite elements of a float `dtype` in [low, high] (bfloat16 by rounding float32)."""
  dtype = np.dtype(dtype)
  if dtype == dtypes.bfloat16:
    return st.floats(low, high, width=32).map(
        lambda v: float(np.clip(np.asarray(v, dtype), low, high).astype(dtype)))
  big = float(np.finfo(dtype).max)   # the bounds, as values of the dtype
  low, high = (float(np.asarray(min(max(v, -big), big), dtype)) for v in (low, high))
  return hnp.from_dtype(dtype, min_value=low, max_value=high, allow_nan=False,
                        allow_infinity=False)


def non_integer_floats(low, high, margin):
  """Floats in (low, high) at least `margin` away from every integer (the poles
  of the gamma family), built rather than filtered: an integer plus a fraction."""
  return st.builds(lambda n, f: n + f, st.integers(math.floor(low), math.ceil(high) - 1),
                   st.floats(margin, 1 - margin)).filter(lambda v: low < v < high)


def bounded_case_inputs(dtype_list, n=1, low=-100.0, high=100.0, max_dims=3, kwargs=None):
  """As `case_inputs`, with finite float operands in [low, high]: for functions
  whose NumPy formula (or whose cost) needs a bounded domain."""
  arrays_ = st.sampled_from(dtype_list).flatmap(lambda dt: broadcastable_arrays(
      [dt], n, max_dims, elements=bounded_elements(dt, low, high)))
  return st.tuples(arrays_.map(lambda pair: tuple(pair[1])),
                   st.just({}) if kwargs is None else kwargs)


def distinct_arrays(shape):
  """float64 arrays of `shape` whose elements differ pairwise by at least 0.5
  (a shuffled grid, jittered): no ties, so sorting, top-k and max/min
  selection are smooth there, for derivative checks."""
  n = int(np.prod(shape, dtype=int))
  jitter = hnp.arrays(np.float64, (n,), elements=st.floats(-0.25, 0.25))
  return st.tuples(st.permutations(range(n)), jitter).map(
      lambda pj: (np.asarray(pj[0], np.float64) - n / 2 + pj[1]).reshape(shape))


@st.composite
def separated_spectrum_matrices(draw, dtype, batch=(), shape=None, kind="hermitian",
                                max_side=4):
  """Matrix stacks `batch + shape` whose eigenvalues (singular values for
  "full_rank") are 1 to 2 apart, so that eigen- and singular vectors are
  smooth functions of the matrix, for derivative checks. Kinds:

  * "hermitian": `Q diag(w) Q^H`, `Q` unitary, `w` real in [1 - n, n + 1];
  * "full_rank": `U diag(s) V^H` (`m x n`), `s` in [1, 2 min(m, n)];
  * "diagonalizable": `X diag(w) X^-1`, `X` an "invertible" well-conditioned
    matrix, `w` as for "hermitian" (plus an imaginary part in [-1, 1] when
    complex).
  """
  if shape is None:
    m = draw(st.integers(1, max_side))
    shape = (m, draw(st.integers(1, max_side)) if kind == "full_rank" else m)
  m, n = shape
  k = min(m, n)
  values = np.cumsum(draw(hnp.arrays(np.float64, batch + (k,), elements=st.floats(1, 2))), -1)
  mH = lambda x: np.conj(np.swapaxes(x, -1, -2))
  if kind == "full_rank":
    u = _unitary(draw, dtype, batch, m)[..., :k]
    v = _unitary(draw, dtype, batch, n)[..., :k]
    return ((u * values[..., None, :]) @ mH(v)).astype(dtype)
  values = values - k
  if kind == "hermitian":
    q = _unitary(draw, dtype, batch, n)
    a = (q * values[..., None, :]) @ mH(q)
    return ((a + mH(a)) / 2).astype(dtype)
  if np.dtype(dtype).kind == "c":
    values = values + 1j * draw(bounded_arrays(np.float64, batch + (k,)))
  x = draw(well_conditioned_matrices(dtype, batch, (n, n)))
  return ((x * values[..., None, :]) @ np.linalg.inv(x)).astype(dtype)
