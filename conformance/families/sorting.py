"""Cases for the sorting primitives (refimpl/lax/sorting.py) and the jnp
functions built on them (refimpl/numpy/sorting.py).

NumPy sorts 16-bit floats only through float32 here (its bfloat16 support is
partial), so the NumPy side widens them first; the order is the same.
Functions whose output size depends on the data (unique, the set
operations) are checked with a static `size` (so they also run under jit),
against NumPy's result padded as JAX pads it. `partition` and
`argpartition` have no NumPy twin (NumPy's arrangement of the two sides is
its own): only the backend check runs for them.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case

ORDERED = S.BOOL_DTYPES + S.INT_DTYPES + S.FLOAT_DTYPES
REAL = S.INT_DTYPES + S.FLOAT_DTYPES
INT_AND_F32 = S.INT_DTYPES + [dtypes.float32]
QUANTILE_METHODS = ["linear", "lower", "higher", "midpoint"]


def _wide(x):
  """16-bit floats as float32 (what NumPy sorts exactly)."""
  x = np.asarray(x)
  return x.astype(np.float32) if dtypes.is_float(x.dtype) and x.dtype.itemsize == 2 else x


def _axis_inputs(dtype_list, allow_none=True, **array_kwargs):
  """An array of rank >= 1 and an `axis` kwarg (None, or an axis, maybe negative)."""
  return lambda: S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"axis": S.axes(len(shape), allow_none,
                                                           allow_tuple=False)}),
      dtype_list, shape=S.shapes(min_dims=1), **array_kwargs)


def _k_inputs(dtype_list, min_k=0):
  """An array of rank >= 1 and a `k` in [min_k, its last dimension]."""
  return lambda: S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"k": st.integers(min_k, shape[-1])}),
      dtype_list, shape=S.shapes(min_dims=1, min_side=min_k))


def _np_sort(x, axis=-1):
  x = np.asarray(x)
  if axis is None:
    x, axis = x.ravel(), 0
  return np.take_along_axis(x, np.argsort(_wide(x), axis=axis, kind="stable"), axis)


def _np_argsort(x, axis=-1):
  return np.argsort(_wide(x), axis=axis, kind="stable")


def _np_top_k(x, k):
  order = np.argsort(-x.astype(np.int64), axis=-1, kind="stable")[..., :k]
  return np.take_along_axis(x, order, -1), order


def _np_sort_two_keys(a, b):
  perm = np.lexsort((b, a), axis=-1)
  return np.take_along_axis(a, perm, -1), np.take_along_axis(b, perm, -1)


@st.composite
def _searchsorted_inputs(draw):
  """A sorted 1-D array, queries of the same dtype and side/method kwargs."""
  dtype = draw(st.sampled_from(REAL))
  a = draw(S.arrays(dtype, S.shapes(min_dims=1, max_dims=1)))
  a = np.sort(_wide(a), kind="stable").astype(dtype)
  v = draw(S.arrays(dtype, S.shapes(max_dims=2)))
  kwargs = draw(st.fixed_dictionaries({
      "side": st.sampled_from(["left", "right"]),
      "method": st.sampled_from(["scan", "scan_unrolled", "sort", "compare_all"])}))
  return (a, v), kwargs


@st.composite
def _digitize_inputs(draw):
  """Queries and monotonic bins (either direction) of one float dtype."""
  dtype = draw(st.sampled_from([dtypes.float32, dtypes.int32]))
  bins = np.sort(draw(S.small_integer_arrays(dtype, S.shapes(min_dims=1, max_dims=1))))
  if draw(st.booleans()):
    bins = bins[::-1].copy()
  x = draw(S.small_integer_arrays(dtype, S.shapes(max_dims=2), bound=5))
  return (x, bins), {"right": draw(st.booleans())}


@st.composite
def _quantile_inputs(draw, with_nans=False, method=True, scale=1):
  """Finite float32 data (NaNs too if asked), dyadic quantiles (exact in float32
  and float64, so NumPy's float64 virtual index agrees), an axis and keepdims."""
  elements = st.floats(-1e3, 1e3, width=32)
  if with_nans:
    elements = elements | st.just(np.nan)
  x = draw(S.arrays(dtypes.float32, S.shapes(min_dims=1, min_side=1), elements=elements))
  dyadic = st.integers(0, 16).map(lambda i: scale * i / 16)
  q = draw(S.arrays(dtypes.float32, draw(st.sampled_from([(), (2,)])), elements=dyadic))
  kwargs = {"axis": draw(S.axes(x.ndim, min_size=1)), "keepdims": draw(st.booleans())}
  if method:
    kwargs["method"] = draw(st.sampled_from(QUANTILE_METHODS))
  return (x, q), kwargs


def _median_inputs(with_nans):
  return lambda: _quantile_inputs(with_nans, method=False).map(
      lambda inputs: ((inputs[0][0],), inputs[1]))


def _pad(values, size, fill):
  """`values` padded (or cut) to `size` entries with `fill`."""
  values = np.asarray(values)[:size]
  return np.concatenate([values, np.full(size - len(values), fill, values.dtype)])


def _np_unique(x):
  return _pad(np.unique(x), x.size, 0)


def _np_unique_all(x):
  values, index, inverse, counts = np.unique_all(x)
  smallest = index[0] if index.size else 0
  return (_pad(values, x.size, 0), _pad(index, x.size, smallest), inverse,
          _pad(counts, x.size, 0))


def _set_operation_inputs(dtype_list):
  """Two small-integer arrays (many shared values) of one dtype."""
  def inputs(dtype):
    array = S.small_integer_arrays(dtype, S.shapes(max_dims=2, max_side=4), bound=3)
    return st.tuples(st.tuples(array, array), st.just({}))
  return lambda: st.sampled_from(dtype_list).flatmap(inputs)


def _set_operation_case(name, numpy_fn):
  """`jnp.<name>(a, b, size=a.size + b.size, fill_value=0)` vs NumPy's result padded."""
  jnp_fn = getattr(jnp, name)
  return Case(f"jnp.{name}", lambda a, b: jnp_fn(a, b, size=a.size + b.size, fill_value=0),
              _set_operation_inputs(INT_AND_F32),
              lambda a, b: _pad(numpy_fn(a, b), a.size + b.size, 0))


CASES = [
    # lax
    Case("lax.sort", lambda x, axis: lax.sort(x, dimension=axis),
         _axis_inputs(ORDERED, allow_none=False), _np_sort),
    Case("lax.sort (complex)", lambda x, axis: lax.sort(x, dimension=axis),
         _axis_inputs(S.COMPLEX_DTYPES, allow_none=False),
         divergence="complex_sort_total_order_parts"),
    Case("lax.sort (num_keys=2)", lambda a, b: lax.sort((a, b), num_keys=2),
         lambda: S.same_shape_arrays(S.INT_DTYPES, shape=S.shapes(min_dims=1)),
         _np_sort_two_keys),
    Case("lax.top_k", lax.top_k, _k_inputs(S.BOOL_DTYPES + S.INT_DTYPES), _np_top_k),
    Case("lax.top_k (float)", lax.top_k, _k_inputs(S.FLOAT_DTYPES), divergence="top_k_total_order"),
    Case("lax.approx_max_k", lambda x, k: lax.approx_max_k(x, k),
         _k_inputs(S.FLOAT_DTYPES, min_k=1), divergence="top_k_total_order"),
    Case("lax.approx_min_k", lambda x, k: lax.approx_min_k(x, k),
         _k_inputs(S.FLOAT_DTYPES, min_k=1), divergence="approx_min_k_total_order"),
    # jnp sorting and searching
    Case("jnp.sort", jnp.sort, _axis_inputs(ORDERED), _np_sort),
    Case("jnp.sort (complex)", jnp.sort, _axis_inputs(S.COMPLEX_DTYPES),
         divergence="complex_sort_total_order_parts"),
    Case("jnp.argsort", jnp.argsort, _axis_inputs(ORDERED, allow_none=False), _np_argsort),
    Case("jnp.lexsort", lambda a, b: jnp.lexsort((a, b)),
         lambda: S.same_shape_arrays(INT_AND_F32, shape=S.shapes(min_dims=1)),
         lambda a, b: np.lexsort((a, b))),
    Case("jnp.sort_complex", jnp.sort_complex,
         lambda: S.array_and_kwargs(lambda shape: st.just({}), INT_AND_F32,
                                    shape=S.shapes(min_dims=1)),
         np.sort_complex),
    Case("jnp.partition", lambda x, kth: jnp.partition(x, kth),
         lambda: S.array_and_kwargs(
             lambda shape: st.fixed_dictionaries({"kth": st.integers(0, shape[-1] - 1)}),
             REAL, shape=S.shapes(min_dims=1, min_side=1))),
    Case("jnp.argpartition", lambda x, kth: jnp.argpartition(x, kth),
         lambda: S.array_and_kwargs(
             lambda shape: st.fixed_dictionaries({"kth": st.integers(0, shape[-1] - 1)}),
             REAL, shape=S.shapes(min_dims=1, min_side=1))),
    Case("jnp.searchsorted", jnp.searchsorted, _searchsorted_inputs,
         lambda a, v, side, method: np.searchsorted(_wide(a), _wide(v), side=side)),
    Case("jnp.digitize", jnp.digitize, _digitize_inputs, np.digitize),
    # quantiles
    Case("jnp.quantile", jnp.quantile, _quantile_inputs, np.quantile, rtol=1e-5, atol=1e-4),
    Case("jnp.nanquantile", jnp.nanquantile, lambda: _quantile_inputs(with_nans=True),
         np.nanquantile, rtol=1e-5, atol=1e-4),
    Case("jnp.percentile", jnp.percentile, lambda: _quantile_inputs(scale=100),
         np.percentile, rtol=1e-5, atol=1e-3),
    Case("jnp.nanpercentile", jnp.nanpercentile,
         lambda: _quantile_inputs(with_nans=True, scale=100), np.nanpercentile,
         rtol=1e-5, atol=1e-3),
    Case("jnp.quantile (nearest)",
         lambda x, q, axis, keepdims: jnp.quantile(x, q, axis, method="nearest",
                                                   keepdims=keepdims),
         lambda: _quantile_inputs(method=False), divergence="quantile_nearest_rounds_half_down"),
    Case("jnp.nanquantile (nearest)",
         lambda x, q, axis, keepdims: jnp.nanquantile(x, q, axis, method="nearest",
                                                      keepdims=keepdims),
         lambda: _quantile_inputs(with_nans=True, method=False),
         divergence="nanquantile_nearest_rounds_half_down"),
    Case("jnp.median", jnp.median, _median_inputs(False), np.median, rtol=1e-5, atol=1e-4),
    Case("jnp.nanmedian", jnp.nanmedian, _median_inputs(True), np.nanmedian,
         rtol=1e-5, atol=1e-4),
    # unique and the set operations, with static sizes
    Case("jnp.unique", lambda x: jnp.unique(x, size=x.size, fill_value=0),
         lambda: S.array_and_kwargs(lambda shape: st.just({}), INT_AND_F32),
         _np_unique),
    Case("jnp.unique_all", lambda x: tuple(jnp.unique_all(x, size=x.size, fill_value=0)),
         lambda: S.array_and_kwargs(lambda shape: st.just({}), S.INT_DTYPES), _np_unique_all),
    _set_operation_case("union1d", np.union1d),
    _set_operation_case("intersect1d", np.intersect1d),
    _set_operation_case("setdiff1d", np.setdiff1d),
    _set_operation_case("setxor1d", np.setxor1d),
    Case("jnp.isin", jnp.isin,
         lambda: _set_operation_inputs(INT_AND_F32)().flatmap(lambda inputs: st.tuples(
             st.just(inputs[0]), st.fixed_dictionaries({"invert": st.booleans()}))),
         np.isin),
]


# --- derivatives: the sort/top-k permutation moves tangents with the values ---------
# Inputs have no ties (`S.distinct_arrays`), where the results are smooth.

@st.composite
def _distinct_and_axis(draw, axis_name="dimension", min_side=1, k=False):
  shape = draw(S.shapes(min_dims=1, min_side=min_side))
  axis = draw(st.integers(-len(shape), len(shape) - 1))
  kwargs = {axis_name: axis}
  if k:
    kwargs["k"] = draw(st.integers(1, shape[axis]))
  return (draw(S.distinct_arrays(shape)),), kwargs


@st.composite
def _sort_operands_inputs(draw):
  """Distinct float keys, float values, `num_keys` 1 or 2 (the values as
  second key)."""
  shape = draw(S.shapes(min_dims=1, min_side=1))
  return ((draw(S.distinct_arrays(shape)), draw(S.bounded_arrays(np.float64, shape))),
          {"num_keys": draw(st.integers(1, 2))})


@st.composite
def _integer_keys_inputs(draw):
  """Float values sorted by integer keys (ties common: the stable order)."""
  shape = draw(S.shapes(min_dims=1, min_side=1))
  keys = draw(S.arrays(np.int32, shape, elements=st.integers(0, 2)))
  return (draw(S.bounded_arrays(np.float64, shape)),), {"keys": keys}


AD_CASES = [
    ADCase("lax.sort", lambda x, dimension: lax.sort(x, dimension=dimension),
           _distinct_and_axis, ("sort",)),
    ADCase("lax.sort (two operands)",
           lambda a, b, num_keys: lax.sort((a, b), num_keys=num_keys),
           _sort_operands_inputs, ("sort",)),
    ADCase("lax.sort_key_val (integer keys)", lambda v, keys: lax.sort_key_val(keys, v)[1],
           _integer_keys_inputs, ("sort",)),
    ADCase("lax.top_k", lambda x, axis, k: lax.top_k(x, k, axis=axis)[0],
           lambda: _distinct_and_axis("axis", k=True), ("top_k",)),
    ADCase("lax.approx_max_k",
           lambda x, reduction_dimension, k: lax.approx_max_k(x, k, reduction_dimension)[0],
           lambda: _distinct_and_axis("reduction_dimension", k=True), ("approx_top_k",)),
    ADCase("lax.approx_min_k",
           lambda x, reduction_dimension, k: lax.approx_min_k(x, k, reduction_dimension)[0],
           lambda: _distinct_and_axis("reduction_dimension", k=True), ("approx_top_k",)),
]
