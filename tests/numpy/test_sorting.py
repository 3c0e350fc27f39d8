"""Tests of refimpl/numpy/sorting.py against NumPy: sorting, partitioning,
searching, quantiles, unique and the set operations, plus JAX's own rules
(static `size` under jit, NaN order, lowering)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from refimpl.errors import ConcretizationTypeError
from conformance.strategies import (BOOL_DTYPES, FLOAT_DTYPES, INT_DTYPES, arrays,
                                    assert_close, dtype_and_array, shapes)

ORDERED = BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES
SMALL_INTS = st.integers(-4, 4)


def _comparable(x):
  """What NumPy sorts exactly: 16-bit floats widened to float32."""
  return x.astype(np.float32) if dtypes.is_float(x.dtype) and x.dtype.itemsize == 2 else x


def _equal(actual, expected, dtype=None):
  """Same shape, dtype (if given) and values, NaNs equal."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  if dtype is not None:
    assert actual.dtype == dtype, (actual.dtype, dtype)
  expected = expected.astype(actual.dtype)
  np.testing.assert_array_equal(_comparable(actual), _comparable(expected))


def _canonical_nans(x):
  """`x` with every NaN the positive quiet NaN."""
  return np.where(np.isnan(x), np.array(np.nan, x.dtype), x) if dtypes.is_float(x.dtype) else x


@st.composite
def array_and_axis(draw, dtype_list=ORDERED, min_side=0, **kwargs):
  dtype, x = draw(dtype_and_array(dtype_list, shape=shapes(min_dims=1, min_side=min_side),
                                  **kwargs))
  return x, draw(st.integers(-x.ndim, x.ndim - 1))


# --- sort, argsort, lexsort ----------------------------------------------------------------

@given(array_and_axis(), st.booleans())
def test_sort_and_argsort_match_numpy_stable_sort(xa, descending):
  x, axis = xa
  ascending = np.argsort(_comparable(x), axis=axis, kind="stable")
  if descending:  # largest first, NaNs first, equal elements in their original order
    _, rank = np.unique(_comparable(x), return_inverse=True)
    rank = rank.reshape(x.shape)
    index = np.indices(x.shape)[axis % x.ndim]
    expected = np.lexsort((index, -rank), axis=axis)
  else:
    expected = ascending
  _equal(jnp.argsort(x, axis=axis, descending=descending), expected, np.int32)
  _equal(jnp.sort(x, axis=axis, descending=descending),
         np.take_along_axis(x, expected, axis=axis), x.dtype)


def test_sort_flattens_for_axis_none_and_rejects_kind():
  x = np.array([[3, 1], [2, 0]], np.int32)
  _equal(jnp.sort(x, axis=None), [0, 1, 2, 3])
  _equal(jnp.argsort(x, axis=None), [3, 1, 2, 0])
  _equal(jnp.asarray(x).sort(axis=0), np.sort(x, axis=0))  # the method
  with pytest.raises(TypeError, match="'kind' argument to sort is not supported"):
    jnp.sort(x, kind="stable")
  with pytest.raises(TypeError, match="'order'"):
    jnp.argsort(x, order="a")
  with pytest.raises(TypeError):
    jnp.sort([3, 1, 2])


@given(st.integers(1, 3).flatmap(lambda n: st.lists(
    arrays(np.int8, (2, 5), elements=st.integers(-2, 2)), min_size=n, max_size=n)),
       st.sampled_from([0, 1, -1]))
def test_lexsort_matches_numpy(keys, axis):
  _equal(jnp.lexsort(keys, axis=axis), np.lexsort(keys, axis=axis), np.int32)
  _equal(jnp.lexsort(np.stack(keys), axis=axis), np.lexsort(np.stack(keys), axis=axis))


def test_lexsort_with_floats_and_errors():
  a = np.array([1.0, np.nan, 1.0, -0.0, 0.0], np.float32)
  b = np.array([2, 2, 1, 1, 1], np.int32)
  _equal(jnp.lexsort([a, b]), np.lexsort([a, b]))
  with pytest.raises(TypeError, match="need sequence of keys"):
    jnp.lexsort([])
  with pytest.raises(ValueError, match="same shape"):
    jnp.lexsort([a, b[:3]])


@given(arrays(np.complex64, shapes(min_dims=1), elements=st.complex_numbers(
    max_magnitude=100, allow_nan=False, allow_infinity=False, width=64)))
def test_sort_complex_matches_numpy(x):
  x = (x + 0).astype(np.complex64)  # -0.0 parts become +0.0 (JAX orders them first)
  _equal(jnp.sort_complex(x), np.sort_complex(x), np.complex64)


def test_sort_complex_converts_to_complex():
  _equal(jnp.sort_complex(np.array([3, 1, 2], np.int32)), [1, 2, 3], np.complex64)
  assert jnp.sort_complex(np.ones(2, dtypes.bfloat16)).dtype == np.complex64


# --- partition -----------------------------------------------------------------------------

@given(array_and_axis(INT_DTYPES + FLOAT_DTYPES, min_side=1), st.data())
def test_partition_and_argpartition_partition(xa, data):
  """The kth element is the kth smallest; no larger element before it, no
  smaller after it; the result is a permutation."""
  x, axis = xa
  x = _canonical_nans(x)
  if dtypes.is_integer(x.dtype) and not dtypes.is_unsigned(x.dtype):
    x = np.maximum(x, np.iinfo(x.dtype).min + 1)  # -INT_MIN wraps (see below)
  kth = data.draw(st.integers(-x.shape[axis], x.shape[axis] - 1))
  k = kth % x.shape[axis]
  comparable = np.moveaxis(_comparable(x), axis, -1)
  expected_kth = np.sort(comparable, axis=-1)[..., k]
  for out in (np.asarray(jnp.partition(x, kth, axis=axis)),
              np.take_along_axis(x, np.asarray(jnp.argpartition(x, kth, axis=axis)), axis)):
    assert out.dtype == x.dtype and out.shape == x.shape
    out = np.moveaxis(_comparable(out), axis, -1)
    _equal(np.sort(out, axis=-1), np.sort(comparable, axis=-1))
    pivot = out[..., k]
    _equal(pivot, expected_kth)
    with np.errstate(invalid="ignore"):
      before_ok = (out[..., :k] <= pivot[..., None]) | np.isnan(pivot[..., None])
      after_ok = (out[..., k + 1:] >= pivot[..., None]) | np.isnan(out[..., k + 1:])
    assert before_ok.all() and after_ok.all()
  indices = np.sort(np.moveaxis(np.asarray(jnp.argpartition(x, kth, axis=axis)), axis, -1))
  _equal(indices, np.broadcast_to(np.arange(x.shape[axis]), indices.shape))


def test_partition_follows_jax_on_negative_nans_and_int_min():
  x = np.array([3.0, -np.float32(np.nan), 1.0, np.nan, 2.0], np.float32)
  out = np.asarray(jnp.partition(x, 1))
  assert np.isnan(out[0]) and np.signbit(out[0])  # a NaN with its sign bit set goes first
  assert out[1] == 1.0 and np.isnan(out[-4:]).sum() == 1
  _equal(jnp.partition(np.array([5, 0, 255, 3], np.uint8), 1)[:2], [0, 3])
  int_min = np.iinfo(np.int32).min
  # -INT_MIN wraps to INT_MIN, so JAX's partition loses it (and repeats 0): reproduced
  _equal(jnp.partition(np.array([1, int_min, 0], np.int32), 0), [0, 1, 0])
  with pytest.raises(NotImplementedError):
    jnp.partition(np.ones(3, np.complex64), 1)


# --- searchsorted, digitize -----------------------------------------------------------------

@given(dtype_and_array(INT_DTYPES + FLOAT_DTYPES, shape=shapes(min_dims=1, max_dims=1)),
       st.data(), st.sampled_from(["left", "right"]),
       st.sampled_from(["scan", "scan_unrolled", "sort", "compare_all"]))
def test_searchsorted_matches_numpy(dx, data, side, method):
  dtype, a = dx
  a = np.sort(_comparable(a), kind="stable").astype(dtype)
  v = data.draw(arrays(dtype, shapes(max_dims=2)))
  expected = np.searchsorted(_comparable(a), _comparable(v), side=side)
  _equal(jnp.searchsorted(a, v, side=side, method=method), expected, np.int32)


@given(arrays(np.int32, (6,), elements=SMALL_INTS), arrays(np.int32, (4,), elements=SMALL_INTS))
def test_searchsorted_with_sorter(a, v):
  sorter = np.argsort(a, kind="stable")
  _equal(jnp.searchsorted(a, v, sorter=sorter), np.searchsorted(a, v, sorter=sorter))


def test_searchsorted_examples_and_errors():
  a = np.array([-np.inf, -1.0, -0.0, 2.0, np.inf, np.nan], np.float32)
  v = np.array([np.nan, 0.0, -0.0, np.inf, 3.0, -np.inf], np.float32)
  _equal(jnp.searchsorted(a, v), [5, 2, 2, 4, 4, 0])
  _equal(jnp.searchsorted(a, v, side="right"), [6, 3, 3, 5, 4, 1])
  _equal(jnp.searchsorted(np.zeros(0, np.float32), v), np.zeros(6))
  _equal(jnp.searchsorted(np.array([1, 3]), 2.5), 1)  # promoted to float32
  with pytest.raises(ValueError, match="invalid value for keyword 'side'"):
    jnp.searchsorted(a, v, side="middle")
  with pytest.raises(ValueError, match="invalid value for keyword 'method'"):
    jnp.searchsorted(a, v, method="bisect")
  with pytest.raises(ValueError, match="1-dimensional"):
    jnp.searchsorted(np.ones((2, 2)), v)


def test_searchsorted_scan_is_a_binary_search_in_a_scan():
  # As JAX: 'scan' and 'scan_unrolled' are one scan of ceil(log2(n + 1)) steps
  # (vectorized over the queries), unrolled fully for 'scan_unrolled'.
  a = np.arange(6, dtype=np.float32)
  v = np.array([[-1.0, 2.0, 2.5], [5.0, 9.0, np.nan]], np.float32)
  for method, unroll in (("scan", 1), ("scan_unrolled", 3)):
    text = str(jax.make_jaxpr(lambda a, v, m=method: jnp.searchsorted(a, v, method=m))(a, v))
    assert text.count("scan[") == 1 and "length=3" in text and f"unroll={unroll}\n" in text
  for method in ("sort", "compare_all"):
    assert "scan[" not in str(jax.make_jaxpr(
        lambda a, v, m=method: jnp.searchsorted(a, v, method=m))(a, v))
  for side in ("left", "right"):
    expected = np.searchsorted(a, v, side=side)
    search = lambda a, v, s=side: jnp.searchsorted(a, v, side=s)
    _equal(jax.jit(search)(a, v), expected, np.int32)
    _equal(jax.vmap(search, (None, 0))(a, v), expected, np.int32)
    # a batch of sorted arrays, each searched for its own queries
    rows = np.stack([a, a * 2])
    _equal(jax.vmap(search)(rows, v),
           [np.searchsorted(r, q, side=side) for r, q in zip(rows, v)], np.int32)
  # differentiating through a search (jnp.interp-style): the search sees primals only
  slope = jax.grad(lambda x: jnp.take(a * a, jnp.searchsorted(a, x)) * x)(np.float32(2.5))
  assert slope == 9.0


@given(arrays(np.float32, (5,), elements=st.integers(-3, 3).map(float)),
       arrays(np.float32, shapes(max_dims=2), elements=st.sampled_from(
           [-4.0, -3.0, -1.5, 0.0, 1.0, 2.5, 3.0, np.nan])),
       st.booleans(), st.booleans())
def test_digitize_matches_numpy(bins, x, right, decreasing):
  bins = np.sort(bins)[::-1] if decreasing else np.sort(bins)
  _equal(jnp.digitize(x, bins, right=right), np.digitize(x, bins, right=right), np.int32)


def test_digitize_with_no_bins_and_errors():
  _equal(jnp.digitize(np.ones(3, np.float32), np.zeros(0, np.float32)), [0, 0, 0], np.int32)
  with pytest.raises(ValueError, match="1-dimensional"):
    jnp.digitize(np.ones(3), np.ones((2, 2)))


# --- quantiles -----------------------------------------------------------------------------

def _jax_nearest(x, q, axis, keepdims, nan=False):
  """'nearest' as JAX computes it: the lower neighbour when the fraction is <= 0.5."""
  fn = np.nanquantile if nan else np.quantile
  low = fn(x, q, axis=axis, method="lower", keepdims=keepdims)
  high = fn(x, q, axis=axis, method="higher", keepdims=keepdims)
  n = (np.sum(~np.isnan(x), axis=axis, keepdims=keepdims) if nan
       else np.sum(np.ones_like(x), axis=axis, keepdims=keepdims))
  position = np.multiply.outer(np.asarray(q), n - 1) if np.ndim(q) else q * (n - 1)
  return np.where(position - np.floor(position) <= 0.5, low, high)


@st.composite
def quantile_arguments(draw):
  x = draw(arrays(np.float32, shapes(min_dims=1, min_side=1), allow_inf=False,
                  elements=st.floats(-1e3, 1e3, width=32) | st.just(np.nan)))
  axes = draw(st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=1))
  axis = draw(st.sampled_from([None, axes[0] - x.ndim, tuple(axes)]))
  # dyadic q: exact in float32 (JAX's q) and float64 (NumPy's), and so is q * (n - 1)
  dyadic = st.integers(0, 32).map(lambda i: i / 32)
  q = draw(dyadic | arrays(np.float32, (draw(st.integers(0, 3)),), elements=dyadic))
  return x, q, axis, draw(st.booleans())


@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")
@given(quantile_arguments(), st.sampled_from(["linear", "lower", "higher", "midpoint",
                                              "nearest"]), st.booleans())
def test_quantile_and_nanquantile_match_numpy(args, method, ignore_nan):
  x, q, axis, keepdims = args
  if not ignore_nan:
    x = np.where(np.isnan(x), 0.0, x).astype(np.float32)
  np_fn, jnp_fn = (np.nanquantile, jnp.nanquantile) if ignore_nan else (np.quantile,
                                                                          jnp.quantile)
  out = jnp_fn(x, q, axis=axis, method=method, keepdims=keepdims)
  with np.errstate(all="ignore"):
    if method == "nearest":
      expected = _jax_nearest(x, q, axis, keepdims, nan=ignore_nan)
    else:
      expected = np_fn(x, q, axis=axis, method=method, keepdims=keepdims)
  assert out.dtype == np.float32
  assert_close(out, np.asarray(expected, np.float32), rtol=1e-5, atol=1e-4)


@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")
@given(quantile_arguments())
def test_percentile_median_and_nan_variants_match_numpy(args):
  x, q, axis, keepdims = args
  assert_close(jnp.nanpercentile(x, np.multiply(q, 100), axis=axis, keepdims=keepdims),
               np.nanpercentile(x, np.multiply(q, 100), axis=axis,
                                keepdims=keepdims).astype(np.float32), rtol=1e-5, atol=1e-3)
  assert_close(jnp.nanmedian(x, axis=axis, keepdims=keepdims),
               np.nanmedian(x, axis=axis, keepdims=keepdims).astype(np.float32),
               rtol=1e-5, atol=1e-4)
  x = np.where(np.isnan(x), 1.0, x).astype(np.float32)
  assert_close(jnp.percentile(x, np.multiply(q, 100), axis=axis, keepdims=keepdims),
               np.percentile(x, np.multiply(q, 100), axis=axis,
                             keepdims=keepdims).astype(np.float32), rtol=1e-5, atol=1e-3)
  assert_close(jnp.median(x, axis=axis, keepdims=keepdims),
               np.median(x, axis=axis, keepdims=keepdims).astype(np.float32),
               rtol=1e-5, atol=1e-4)


def test_quantile_examples_and_errors():
  x = jnp.arange(10)
  q = np.array([0.25, 0.5, 0.75], np.float32)
  np.testing.assert_allclose(jnp.quantile(x, q), [2.25, 4.5, 6.75])
  _equal(jnp.quantile(x, q, method="nearest"), [2.0, 4.0, 7.0], np.float32)
  _equal(jnp.quantile(np.arange(4.0), 0.5, method="nearest"), 1.0)  # NumPy: 2.0
  assert np.isnan(jnp.quantile(np.array([1.0, np.nan], np.float32), 0.5))
  assert np.isnan(jnp.nanmedian(np.array([np.nan, np.nan], np.float32)))
  assert jnp.median(np.array([1, 2], np.int8)).dtype == np.float32
  assert jnp.median(np.ones(3, np.float16)).dtype == np.float16
  with pytest.raises(ValueError, match="method can only be"):
    jnp.quantile(x, 0.5, method="inverted_cdf")
  with pytest.raises(ValueError, match="complex"):
    jnp.median(np.ones(3, np.complex64))
  with pytest.raises(ValueError, match="overwrite_input"):
    jnp.median(x, overwrite_input=True)
  with pytest.raises(ValueError, match="rank <= 1"):
    jnp.quantile(x, np.ones((2, 2), np.float32) / 2)
  with pytest.raises(TypeError):   # NumPy's deprecated `interpolation` is gone from JAX 0.10
    jnp.quantile(x, 0.5, interpolation="lower")


# --- unique --------------------------------------------------------------------------------

@given(dtype_and_array(INT_DTYPES + FLOAT_DTYPES + BOOL_DTYPES, shape=shapes(max_side=5)),
       st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_unique_matches_numpy(dx, return_index, return_inverse, return_counts, equal_nan):
  dtype, x = dx
  x = _canonical_nans(x)
  x = np.where(x == 0, np.zeros((), x.dtype), x) if dtypes.is_float(dtype) else x
  flags = dict(return_index=return_index, return_inverse=return_inverse,
               return_counts=return_counts, equal_nan=equal_nan)
  actual = jnp.unique(x, **flags)
  expected = np.unique(_comparable(x), **flags)
  actual = actual if isinstance(actual, tuple) else (actual,)
  expected = expected if isinstance(expected, tuple) else (expected,)
  assert len(actual) == len(expected)
  _equal(actual[0], expected[0].astype(dtype), dtype)
  for a, e in zip(actual[1:], expected[1:]):
    _equal(a, e, np.int32)


@given(arrays(np.int32, shapes(min_dims=2, max_dims=3, max_side=4), elements=st.integers(0, 1)),
       st.data())
def test_unique_along_an_axis_matches_numpy(x, data):
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  actual = jnp.unique(x, True, True, True, axis=axis)
  expected = np.unique(x, True, True, True, axis=axis)
  for a, e in zip(actual, expected):
    _equal(a, e)


def test_unique_with_size_and_fill_value():
  x = np.array([3, 4, 1, 3, 1], np.int32)
  _equal(jnp.unique(x, size=3), [1, 3, 4])
  _equal(jnp.unique(x, size=2), [1, 3])
  _equal(jnp.unique(x, size=5), [1, 3, 4, 1, 1])  # padded with the smallest value
  values, index, inverse, counts = jnp.unique(x, True, True, True, size=5, fill_value=0)
  _equal(values, [1, 3, 4, 0, 0])
  _equal(index, [2, 0, 1, 2, 2])
  _equal(inverse, [1, 2, 0, 1, 0])
  _equal(counts, [2, 2, 1, 0, 0])
  values, counts = jax.jit(lambda x: jnp.unique(x, return_counts=True, size=4))(x)
  _equal(values, [1, 3, 4, 1])
  _equal(counts, [2, 2, 1, 0])
  with pytest.raises(ConcretizationTypeError, match="size argument"):
    jax.jit(jnp.unique)(x)
  with pytest.raises(ValueError, match="fill_value must be specified"):
    jnp.unique(np.zeros(0, np.int32), size=2)
  _equal(jnp.unique(np.zeros(0, np.int32), size=2, fill_value=7), [7, 7])


def test_unique_api_functions_match_numpy():
  x = np.array([[2.0, np.nan, 1.0], [2.0, np.nan, -1.0]], np.float32)
  for name in ("unique_all", "unique_counts", "unique_inverse"):
    actual, expected = getattr(jnp, name)(x), getattr(np, name)(x)
    assert actual._fields == expected._fields
    for a, e in zip(actual, expected):
      _equal(a, e)
  _equal(jnp.unique_values(x), np.unique_values(x))
  _equal(jnp.unique(x), [-1.0, 1.0, 2.0, np.nan])  # equal_nan: one NaN
  values = jnp.unique_values(x, size=6, fill_value=0.0)
  _equal(values, [-1.0, 1.0, 2.0, np.nan, np.nan, 0.0])


# --- set operations ------------------------------------------------------------------------

set_elements = st.integers(-3, 3).map(float) | st.just(np.nan)
set_arrays = arrays(np.float32, shapes(max_dims=2, max_side=4), elements=set_elements)
int_set_arrays = arrays(np.int32, shapes(max_dims=2, max_side=4), elements=SMALL_INTS)


@given(set_arrays, set_arrays, st.booleans())
def test_set_operations_match_numpy(a, b, invert):
  _equal(jnp.union1d(a, b), np.union1d(a, b), np.float32)
  _equal(jnp.intersect1d(a, b), np.intersect1d(a, b), np.float32)
  _equal(jnp.setdiff1d(a, b), np.setdiff1d(a, b), np.float32)
  _equal(jnp.setxor1d(a, b), np.setxor1d(a, b), np.float32)
  for method in ("auto", "compare_all", "binary_search", "sort"):
    _equal(jnp.isin(a, b, invert=invert, method=method), np.isin(a, b, invert=invert))


@given(int_set_arrays, int_set_arrays)
def test_intersect1d_indices_and_setdiff1d_assume_unique_match_numpy(a, b):
  for actual, expected in zip(jnp.intersect1d(a, b, return_indices=True),
                              np.intersect1d(a, b, return_indices=True)):
    _equal(actual, expected)
  unique_a = np.unique(a)[::-1].copy()
  _equal(jnp.setdiff1d(unique_a, b, assume_unique=True),
         np.setdiff1d(unique_a, b, assume_unique=True))


@given(int_set_arrays, int_set_arrays, st.integers(0, 6))
def test_set_operations_with_size_pad_as_jax(a, b, size):
  """Static sizes: the first `size` results, padded with `fill_value` (default:
  the smallest result, 0 if none; setdiff1d: 0). Also under jit."""
  def padded(values, default):
    values = values[:size]
    fill = default(values) if values.size else 0
    return np.concatenate([values, np.full(size - len(values), fill)])

  smallest = lambda v: v.min()
  cases = [(jnp.union1d, np.union1d, smallest), (jnp.intersect1d, np.intersect1d, smallest),
           (jnp.setxor1d, np.setxor1d, smallest), (jnp.setdiff1d, np.setdiff1d, lambda v: 0)]
  for jnp_fn, np_fn, default in cases:
    expected = np_fn(a, b)
    if jnp_fn is jnp.union1d and expected.size == 0 and size:
      continue  # an empty union needs a fill_value
    _equal(jnp_fn(a, b, size=size), padded(expected, default))
    _equal(jax.jit(lambda a, b: jnp_fn(a, b, size=size, fill_value=-9))(a, b),
           np.concatenate([expected[:size], np.full(max(size - expected.size, 0), -9)]))


def test_intersect1d_with_size_pads_indices_out_of_bounds():
  a = np.array([1, 2, 3, 2], np.int32)
  b = np.array([2, 5, 3], np.int32)
  values, index1, index2 = jnp.intersect1d(a, b, return_indices=True, size=4)
  _equal(values, [2, 3, 2, 2])
  _equal(index1, [1, 2, 4, 4])
  _equal(index2, [0, 2, 3, 3])


def test_set_operations_need_size_under_jit():
  a = np.array([1, 2], np.int32)
  for fn in (jnp.union1d, jnp.intersect1d, jnp.setdiff1d, jnp.setxor1d):
    with pytest.raises(ConcretizationTypeError):
      jax.jit(fn)(a, a)
  _equal(jax.jit(lambda a, b: jnp.isin(a, b))(a, np.array([2, 3])), [False, True])
  _equal(jnp.isin(np.array([[1, 5]]), 5), [[False, True]])


# --- lowering ------------------------------------------------------------------------------

def test_jnp_sort_functions_lower_to_sort():
  x = np.ones((2, 3), np.float32)

  def text(fn, *args):
    return " ".join(str(jax.make_jaxpr(fn)(*args)).split())

  sort_text = text(lambda x: jnp.sort(x, axis=0), x)
  assert "name=sort" in sort_text and "sort[dimension=0 is_stable=True num_keys=1]" in sort_text
  argsort_text = text(jnp.argsort, x)
  assert "iota[dimension=1 dtype=int32 shape=(2, 3)]" in argsort_text
  assert "sort[ dimension=1 is_stable=True num_keys=1 ] c d" in argsort_text
  lexsort_text = text(lambda x, y: jnp.lexsort([x, y]), x, x)
  assert "sort[ dimension=1 is_stable=True num_keys=2 ] e d f" in lexsort_text
  assert text(lambda x: jnp.partition(x, 1), x).count("top_k[") == 2
