"""Tests of refimpl/lax/sorting.py: sort (several operands, several keys,
stability, NaN and -0.0 order), top_k and approx_max_k/approx_min_k against
NumPy and a Python oracle of IEEE totalOrder."""

import struct

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from refimpl.errors import JaxRuntimeError
from conformance.strategies import (BOOL_DTYPES, FLOAT_DTYPES, INT_DTYPES,
                                    arrays, dtype_and_array, shapes)

ORDERED = BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES
NONEMPTY_RANK_1_TO_3 = shapes(min_dims=1, max_dims=3)


def _bits(x):
  """The array's bytes as unsigned integers: equal only for identical elements."""
  x = np.asarray(x)
  return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind in "fcV" or \
      x.dtype == dtypes.bfloat16 else x


def _comparable(x):
  """What NumPy can sort exactly: 16-bit floats widened to float32."""
  return x.astype(np.float32) if dtypes.is_float(x.dtype) and x.dtype.itemsize == 2 else x


def _total_order(value):
  """IEEE totalOrder of a float as a Python int (independent of the code under test)."""
  bits, = struct.unpack(">q", struct.pack(">d", float(value)))
  return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF) - 1


# --- sort ---------------------------------------------------------------------------------

@given(dtype_and_array(ORDERED, shape=NONEMPTY_RANK_1_TO_3), st.data())
def test_sort_matches_numpy_stable_sort(dx, data):
  """NumPy's stable sort: NaNs last (any sign), -0.0 equal to 0.0, ties in order."""
  dtype, x = dx
  dimension = data.draw(st.integers(-x.ndim, x.ndim - 1))
  order = np.argsort(_comparable(x), axis=dimension, kind="stable")
  expected = np.take_along_axis(x, order, axis=dimension)
  out = lax.sort(x, dimension=dimension)
  assert out.dtype == dtype and out.shape == x.shape
  np.testing.assert_array_equal(_bits(out), _bits(expected))


@given(arrays(np.int32, NONEMPTY_RANK_1_TO_3, elements=st.integers(-3, 3)), st.data())
def test_sort_key_val_is_stable(keys, data):
  dimension = data.draw(st.integers(0, keys.ndim - 1))
  values = lax.broadcasted_iota(np.int32, keys.shape, dimension)
  sorted_keys, perm = lax.sort_key_val(keys, values, dimension)
  expected = np.argsort(keys, axis=dimension, kind="stable")
  np.testing.assert_array_equal(perm, expected)
  np.testing.assert_array_equal(sorted_keys, np.take_along_axis(keys, expected, dimension))


@given(st.integers(1, 3).flatmap(lambda n: st.tuples(
    st.just(n), st.integers(1, n), st.lists(
        arrays(np.int8, (6,), elements=st.integers(-2, 2)), min_size=n, max_size=n))))
def test_num_keys_sorts_lexicographically(case):
  """The first `num_keys` operands are keys, first primary; the rest follow."""
  n, num_keys, operands = case
  payload = np.arange(6, dtype=np.float32)
  outs = lax.sort([*operands, payload], num_keys=num_keys)
  perm = np.lexsort(operands[:num_keys][::-1])
  for out, operand in zip(outs, [*operands, payload]):
    np.testing.assert_array_equal(out, operand[perm])


def test_sort_order_of_zeros_nans_and_infinities():
  neg_nan = -np.float32(np.nan)
  x = np.array([np.nan, 1.0, 0.0, -np.inf, neg_nan, -0.0, np.inf], np.float32)
  out = np.asarray(lax.sort(x))
  # -0.0 and 0.0 are equal (kept in input order); NaNs of either sign go last.
  np.testing.assert_array_equal(_bits(out[:5]), _bits(np.array(
      [-np.inf, 0.0, -0.0, 1.0, np.inf], np.float32)))
  assert np.isnan(out[5:]).all() and not np.signbit(out[5]) and np.signbit(out[6])
  np.testing.assert_array_equal(lax.sort(np.array([True, False, True])), [False, True, True])


def test_complex_sort_is_lexicographic_with_total_order_parts():
  x = np.array([1 + 2j, 1 - 1j, -1 + 5j, 0 + 1j, complex(-0.0, 3),
                complex(np.nan, 0), complex(0, np.nan)], np.complex64)
  out = np.asarray(lax.sort(x))
  # unlike NumPy, a -0.0 real part comes before 0.0 whatever the imaginary parts
  expected = np.array([-1 + 5j, complex(-0.0, 3), 0 + 1j, complex(0, np.nan), 1 - 1j,
                       1 + 2j, complex(np.nan, 0)], np.complex64)
  np.testing.assert_array_equal(_bits(out), _bits(expected))


@given(arrays(np.complex64, (5,), elements=st.complex_numbers(
    max_magnitude=1e3, allow_nan=False, allow_infinity=False, width=64)))
def test_complex_sort_matches_numpy_without_nans(x):
  x = np.where(x.real == 0, x.imag * 1j, x).astype(np.complex64)  # no -0.0 real parts
  x = np.where(x.imag == 0, x.real + 0j, x).astype(np.complex64)
  np.testing.assert_array_equal(lax.sort(x), np.sort(x, kind="stable"))


def test_sort_errors_and_printing():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(TypeError, match="equal shapes"):
    lax.sort([x, np.ones(3, np.float32)])
  with pytest.raises(ValueError, match="num_keys"):
    lax.sort([x, x], num_keys=3)
  with pytest.raises(ValueError, match="must equal 1"):
    lax.sort(x, num_keys=2)
  with pytest.raises(TypeError, match="at least one operand"):
    lax.sort([])
  with pytest.raises(ValueError):
    lax.sort(np.float32(1))
  jaxpr = jax.make_jaxpr(lambda x: lax.sort_key_val(x, x, 0))(x)
  assert "b:f32[2,3] c:f32[2,3] = sort[dimension=0 is_stable=True num_keys=1] a a" in str(jaxpr)


def test_sort_keeps_weak_type_and_jits():
  weak = lax.broadcast(jax.numpy.asarray(1.0), (3,))
  assert lax.sort(weak).weak_type
  x = np.array([[3, 1, 2], [0, -1, 5]], np.int32)
  k, v = jax.jit(lambda a, b: lax.sort((a, b), dimension=0))(x, x * 10)
  np.testing.assert_array_equal(k, np.sort(x, axis=0))
  np.testing.assert_array_equal(v, np.sort(x, axis=0) * 10)


# --- top_k ----------------------------------------------------------------------------------

def _top_k_oracle(x, k):
  """Indices of the k largest along the last axis by IEEE totalOrder, ties by index."""
  rows = x.reshape(int(np.prod(x.shape[:-1])), x.shape[-1])
  key = (lambda v: _total_order(v)) if dtypes.is_float(x.dtype) else int
  order = [sorted(range(len(row)), key=lambda i: (-key(row[i]), i))[:k] for row in rows]
  return np.array(order, np.int32).reshape(x.shape[:-1] + (k,))


@given(dtype_and_array(ORDERED, shape=shapes(min_dims=1, max_dims=2)), st.data())
def test_top_k_matches_total_order_oracle(dx, data):
  dtype, x = dx
  k = data.draw(st.integers(0, x.shape[-1]))
  values, indices = lax.top_k(x, k)
  expected = _top_k_oracle(x, k)
  assert values.dtype == dtype and indices.dtype == np.int32
  np.testing.assert_array_equal(indices, expected)
  np.testing.assert_array_equal(_bits(values), _bits(np.take_along_axis(x, expected, -1)))


@given(dtype_and_array(INT_DTYPES + FLOAT_DTYPES, shape=shapes(min_dims=2, max_dims=3,
                                                               min_side=1)), st.data())
def test_top_k_along_an_axis_and_approx_max_min_k(dx, data):
  dtype, x = dx
  axis = data.draw(st.integers(0, x.ndim - 1))
  k = data.draw(st.integers(1, x.shape[axis]))
  values, indices = lax.top_k(x, k, axis=axis)
  moved = np.moveaxis(x, axis, -1)
  expected = np.moveaxis(_top_k_oracle(moved, k), -1, axis)
  np.testing.assert_array_equal(indices, expected)
  if dtypes.is_float(dtype):
    max_values, max_indices = lax.approx_max_k(x, k, reduction_dimension=axis)
    np.testing.assert_array_equal(max_indices, indices)
    np.testing.assert_array_equal(_bits(max_values), _bits(values))
    _, min_indices = lax.approx_min_k(x, k, reduction_dimension=axis - x.ndim)
    smallest = [sorted(range(row.size), key=lambda i: (_total_order(row[i]), i))[:k]
                for row in moved.reshape(-1, moved.shape[-1])]
    np.testing.assert_array_equal(
        min_indices, np.moveaxis(np.array(smallest).reshape(moved.shape[:-1] + (k,)),
                                 -1, axis))


def test_top_k_examples():
  values, indices = lax.top_k(np.array([9., 3., 6., 4., 10.], np.float32), 3)
  np.testing.assert_array_equal(values, [10., 9., 6.])
  np.testing.assert_array_equal(indices, [4, 0, 2])
  x = np.array([1.0, np.nan, -np.float32(np.nan), np.inf, -0.0, 0.0], np.float32)
  _, indices = lax.top_k(x, 6)
  np.testing.assert_array_equal(indices, [1, 3, 0, 5, 4, 2])  # +NaN top, -NaN bottom
  _, indices = lax.top_k(np.array([2, 7, 7, 2], np.uint8), 4)
  np.testing.assert_array_equal(indices, [1, 2, 0, 3])


def test_top_k_errors_and_printing():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError, match="no larger than size along axis"):
    lax.top_k(x, 4)
  with pytest.raises(ValueError, match="nonnegative"):
    lax.top_k(x, -1)
  with pytest.raises(ValueError, match="complex"):
    lax.top_k(np.ones(3, np.complex64), 1)
  with pytest.raises(ValueError, match="floating"):
    lax.approx_max_k(np.ones(3, np.int32), 1)
  assert "top_k[axis=1 k=2] a" in str(jax.make_jaxpr(lambda x: lax.top_k(x, 2))(x))
  jaxpr = str(jax.make_jaxpr(lambda x: lax.approx_min_k(x, 2))(x))
  assert "approx_top_k[" in jaxpr and "is_max_k=False" in jaxpr
  assert "reduction_dimension=-1" in jaxpr


# --- approx_max_k / approx_min_k without aggregation -------------------------------------------

# Sizes worked out by hand from XLA's rule (tile W = 128, or 1024 for rank 1):
# M = clamp(trunc((1 - k) / log(recall)), W, n) windows, r = floor(log2(N // M)),
# size = W * ceil(ceil(n / W) / 2**min(r, ceil(log2(n // W)))).
@pytest.mark.parametrize("n, rank, k, recall, override, size", [
    (100, 2, 5, 0.95, -1, 100),         # n <= W: the whole dimension
    (1024, 1, 5, 0.95, -1, 1024),       # rank 1 has W = 1024
    (300, 2, 10, 0.95, -1, 300),        # M = 175, 300 // 175 = 1: r = 0
    (1000, 2, 10, 0.95, -1, 256),       # r = 2: ceil(8 / 4) tiles
    (100000, 2, 10, 0.95, -1, 256),     # r = 9: ceil(782 / 512) tiles
    (100000, 1, 10, 0.95, -1, 2048),    # M = W = 1024, r = 6: ceil(98 / 64) tiles
    (100000, 2, 1, 0.95, -1, 128),      # k = 1: one tile
    (100000, 2, 10, 1.0, -1, 100000),   # recall 1: nothing dropped
    (100000, 2, 10, 0.99, -1, 1664),    # M = 895, r = 6: ceil(782 / 64) tiles
    (100000, 2, 100, 0.95, -1, 3200),   # M = 1930, r = 5: ceil(782 / 32) tiles
    (100000, 2, 10, 0.95, 10**6, 128),  # N = 10**6: r = 12, capped at ceil(log2(781)) = 10
])
def test_approx_top_k_output_size_without_aggregation(n, rank, k, recall, override, size):
  shape = (n,) if rank == 1 else (1,) * (rank - 1) + (n,)
  x = jax.ShapeDtypeStruct(shape, np.float32)
  for fn in (lax.approx_max_k, lax.approx_min_k):
    values, indices = jax.eval_shape(
        lambda x: fn(x, k, recall_target=recall, reduction_input_size_override=override,
                     aggregate_to_topk=False), x)
    assert values.shape == indices.shape == shape[:-1] + (size,)
    assert values.dtype == np.float32 and indices.dtype == np.int32


@pytest.mark.parametrize("shape, axis", [((1000, 3), 0), ((2, 1000, 2), 1), ((3, 1000), -1)])
def test_approx_top_k_without_aggregation_is_the_sorted_prefix(shape, axis):
  x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
  moved = np.moveaxis(x, axis, -1)
  for fn, key in ((lax.approx_max_k, -moved), (lax.approx_min_k, moved)):
    values, indices = fn(x, 10, reduction_dimension=axis, aggregate_to_topk=False)
    order = np.argsort(key, axis=-1, kind="stable")[..., :256]   # 256 = size for n = 1000
    np.testing.assert_array_equal(np.moveaxis(indices, axis, -1), order)
    np.testing.assert_array_equal(np.moveaxis(values, axis, -1),
                                  np.take_along_axis(moved, order, -1))
  jaxpr = str(jax.make_jaxpr(lambda x: lax.approx_max_k(
      x, 10, reduction_dimension=axis, aggregate_to_topk=False))(x))
  out_shape = list(shape)
  out_shape[axis] = 256
  assert f"f32[{','.join(map(str, out_shape))}]" in jaxpr
  assert "aggregate_to_topk=False" in jaxpr


def test_approx_top_k_size_errors_are_xla_errors():
  x = np.ones((2, 1000), np.float32)
  with pytest.raises(JaxRuntimeError, match="reduction_input_size_override: 999"):
    lax.approx_max_k(x, 10, reduction_input_size_override=999, aggregate_to_topk=False)
  for recall in (0.0, 1.5):
    with pytest.raises(JaxRuntimeError, match=r"recall_target should range in \(0,1\]"):
      lax.approx_min_k(x, 10, recall_target=recall, aggregate_to_topk=False)
  # Only the reduction looks at them: small inputs, k = 1 and aggregation do not.
  assert lax.approx_max_k(x[:, :100], 10, recall_target=1.5,
                          aggregate_to_topk=False)[0].shape == (2, 100)
  assert lax.approx_max_k(x, 1, recall_target=1.5, aggregate_to_topk=False)[0].shape == (2, 128)
  assert lax.approx_max_k(x, 10, reduction_input_size_override=5)[0].shape == (2, 10)
