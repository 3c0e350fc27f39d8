"""Tests of refimpl/lax/reductions.py: reductions, arg reductions and cumulative
reductions against NumPy, including NaN, inf and empty axes."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from conformance.strategies import (BOOL_DTYPES, COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES,
                                    arrays, dtype_and_array, shapes)

NUMERIC = INT_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES
ORDERED = BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES


def _tolerance(dtype):
  return {dtypes.float16: 1e-2, dtypes.bfloat16: 2e-2}.get(np.dtype(dtype), 1e-5)


def _check(actual, expected, dtype, exact=True):
  assert actual.shape == np.shape(expected), (actual.shape, np.shape(expected))
  assert actual.dtype == dtype, (actual.dtype, dtype)
  actual, expected = np.asarray(actual), np.asarray(expected)
  if dtypes.is_float(dtype) or dtypes.is_complex(dtype):
    as_wide = np.complex128 if dtypes.is_complex(dtype) else np.float64
    actual, expected = actual.astype(as_wide), expected.astype(as_wide)
  if exact:
    np.testing.assert_array_equal(actual, expected)
  else:
    np.testing.assert_allclose(actual, expected, rtol=_tolerance(dtype), atol=1e-6)


def _draw_axes(data, ndim):
  return tuple(data.draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True,
                                  max_size=ndim)))


@given(dtype_and_array(NUMERIC), st.data())
def test_reduce_sum_matches_numpy(dx, data):
  dtype, x = dx
  axes = _draw_axes(data, x.ndim)
  if dtypes.is_integer(dtype):  # wraps around in the operand's dtype
    _check(lax.reduce_sum(x, axes), np.sum(x, axis=axes, dtype=dtype), dtype)
  else:
    wide = np.complex128 if dtypes.is_complex(dtype) else np.float64
    expected = np.sum(x.astype(wide), axis=axes).astype(dtype)
    with np.errstate(invalid="ignore"):
      _check(lax.reduce_sum(x, axes), expected, dtype, exact=False)


@given(dtype_and_array(NUMERIC, shape=shapes(max_side=3)), st.data())
def test_reduce_prod_matches_numpy(dx, data):
  dtype, x = dx
  axes = _draw_axes(data, x.ndim)
  if dtypes.is_integer(dtype):
    _check(lax.reduce_prod(x, axes), np.prod(x, axis=axes, dtype=dtype), dtype)
  else:
    wide = np.complex128 if dtypes.is_complex(dtype) else np.float64
    with np.errstate(all="ignore"):
      expected = np.prod(x.astype(wide), axis=axes).astype(dtype)
      _check(lax.reduce_prod(x, axes), expected, dtype, exact=False)


def _running_products(values, start=None):
  """The running products of `values` in order, in Python's complex numbers
  ((ac - bd) + (ad + bc)i, unfused), from `start` if given."""
  out, acc = [], start
  for v in values:
    acc = complex(v) if acc is None else acc * complex(v)
    out.append(acc)
  return out


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@given(st.data())
def test_complex_products_multiply_in_order_unfused(dtype, data):
  """reduce_prod and cumprod of complex numbers: in order along the axes
  (row-major; the product from 1), each product rounded operation by
  operation, whatever the CPU (NumPy's SIMD loops fuse multiply-adds).
  Finite values whose products stay finite: the rounding is what is checked."""
  width = 8 * np.dtype(dtype).itemsize
  elements = st.complex_numbers(max_magnitude=10, allow_nan=False, allow_infinity=False,
                                width=width)
  x = data.draw(arrays(dtype, shapes(max_dims=3, min_side=1, max_side=4), elements=elements))
  axes = tuple(sorted(_draw_axes(data, x.ndim)))
  kept = [d for d in range(x.ndim) if d not in axes]
  rows = np.transpose(x, kept + list(axes)).reshape(-1, math.prod(x.shape[d] for d in axes))
  expected = np.array([_running_products(row, start=1 + 0j)[-1] for row in rows], dtype)
  with jax.enable_x64():
    _check(lax.reduce_prod(x, axes), expected.reshape([x.shape[d] for d in kept]), dtype)
    if x.ndim:
      axis = data.draw(st.integers(0, x.ndim - 1))
      moved = np.moveaxis(x, axis, -1)
      running = np.array([_running_products(row) for row in moved.reshape(-1, x.shape[axis])],
                         dtype).reshape(moved.shape)
      _check(lax.cumprod(x, axis), np.moveaxis(running, -1, axis), dtype)


@given(dtype_and_array(ORDERED), st.data())
def test_reduce_max_min_match_numpy(dx, data):
  dtype, x = dx
  axes = _draw_axes(data, x.ndim)
  wide = np.float32 if dtypes.is_float(dtype) else dtype
  if dtypes.is_bool(dtype):
    low, high = False, True
  elif dtypes.is_integer(dtype):
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
  else:
    low, high = -np.inf, np.inf
  _check(lax.reduce_max(x, axes), np.max(x.astype(wide), axis=axes, initial=low).astype(dtype),
         dtype)
  _check(lax.reduce_min(x, axes), np.min(x.astype(wide), axis=axes, initial=high).astype(dtype),
         dtype)


@given(dtype_and_array(BOOL_DTYPES + INT_DTYPES), st.data())
def test_bitwise_reductions_match_numpy(dx, data):
  dtype, x = dx
  axes = _draw_axes(data, x.ndim)
  _check(lax.reduce_and(x, axes), np.bitwise_and.reduce(x, axis=axes), dtype)
  _check(lax.reduce_or(x, axes), np.bitwise_or.reduce(x, axis=axes), dtype)
  _check(lax.reduce_xor(x, axes), np.bitwise_xor.reduce(x, axis=axes), dtype)


def test_empty_reductions_give_identities():
  empty_f = np.zeros((0, 2), np.float32)
  empty_i = np.zeros((0, 2), np.int8)
  assert np.all(np.asarray(lax.reduce_max(empty_f, (0,))) == -np.inf)
  assert np.all(np.asarray(lax.reduce_min(empty_f, (0,))) == np.inf)
  assert np.all(np.asarray(lax.reduce_max(empty_i, (0,))) == -128)
  assert np.all(np.asarray(lax.reduce_min(empty_i, (0,))) == 127)
  assert np.all(np.asarray(lax.reduce_sum(empty_f, (0,))) == 0)
  assert np.all(np.asarray(lax.reduce_prod(empty_i, (0,))) == 1)
  assert np.all(np.asarray(lax.reduce_and(np.zeros((0,), np.uint8), (0,))) == 255)
  assert bool(lax.reduce_and(np.zeros((0,), bool), (0,)))


def test_nan_and_inf():
  x = np.array([1.0, np.nan, np.inf], np.float32)
  assert np.isnan(np.asarray(lax.reduce_max(x, (0,))))
  assert np.isnan(np.asarray(lax.reduce_min(x, (0,))))
  assert np.isnan(np.asarray(lax.reduce_sum(np.array([np.inf, -np.inf], np.float32), (0,))))
  assert np.asarray(lax.reduce_sum(np.array([65504, 65504], np.float16), (0,))) == np.inf


def test_integer_sums_wrap():
  assert int(lax.reduce_sum(np.array([100, 100], np.int8), (0,))) == -56
  assert int(lax.reduce_prod(np.array([16, 16], np.uint8), (0,))) == 0


def test_reduction_shape_rules():
  with pytest.raises(TypeError, match="reduce_sum does not accept dtype bool"):
    lax.reduce_sum(np.ones(3, bool), (0,))
  with pytest.raises(TypeError, match="reduce_and does not accept dtype float32"):
    lax.reduce_and(np.ones(3, np.float32), (0,))
  with pytest.raises(ValueError, match="out of bounds"):
    lax.reduce_max(np.ones(3, np.float32), (1,))
  with pytest.raises(ValueError, match="duplicate"):
    lax.reduce_max(np.ones((3, 2), np.float32), (0, 0))


def test_weak_type_and_printing():
  weak = lax.broadcast(jax.numpy.asarray(1.0), (3,))
  assert lax.reduce_max(weak, (0,)).weak_type
  jaxpr = jax.make_jaxpr(lambda x: lax.reduce_max(x, (0,)))(np.ones((2, 3), np.float32))
  assert "b:f32[3] = reduce_max[axes=(0,)] a" in str(jaxpr)


def test_lax_reduce_recognizes_monoids():
  x = np.ones((2, 3), np.float32)
  jaxpr = jax.make_jaxpr(lambda x: lax.reduce(x, -np.inf, lax.max, (1,)))(x)
  assert "reduce_max[axes=(1,)]" in str(jaxpr)
  jaxpr = jax.make_jaxpr(lambda x: lax.reduce(x, 0.0, lax.add, (0, 1)))(x)
  assert "reduce_sum[axes=(0, 1)]" in str(jaxpr)
  jaxpr = jax.make_jaxpr(lambda x: lax.reduce(x, np.int32(-1), lax.bitwise_and, (0,)))(
      x.astype(np.int32))
  assert "reduce_and[axes=(0,)]" in str(jaxpr)
  # not the identity: the generic reduction, folding from the init value
  jaxpr = jax.make_jaxpr(lambda x: lax.reduce(x, 1.0, lax.add, (0,)))(x)
  assert "reduce[" in str(jaxpr) and "reduce_sum" not in str(jaxpr)
  np.testing.assert_array_equal(lax.reduce(x, 1.0, lax.add, (0,)), [3.0, 3.0, 3.0])
  # a strong operand with a weak init: the result is strong, as the operand
  assert not lax.reduce(x, 0.0, lax.add, (0,)).weak_type


# --- the generic reduce -----------------------------------------------------------------------

def _fold(fn, x, init, dims):
  """Python left fold over `dims` in row-major order, one result per kept position."""
  kept = [d for d in range(x.ndim) if d not in dims]
  moved = np.transpose(x, kept + sorted(dims))
  out_shape = moved.shape[:len(kept)]
  flat = moved.reshape(int(np.prod(out_shape)), -1) if moved.size else \
      np.zeros((int(np.prod(out_shape)), 0), x.dtype)
  out = []
  for row in flat:
    acc = init
    for v in row:
      acc = fn(acc, v)
    out.append(acc)
  return np.array(out, x.dtype).reshape(out_shape)


@given(dtype_and_array([np.float32], shape=shapes(max_side=3), allow_nan=False), st.data())
def test_generic_reduce_with_max_of_abs_matches_fold(dx, data):
  _, x = dx
  dims = _draw_axes(data, x.ndim)
  out = lax.reduce(x, np.float32(0), lambda a, b: lax.max(lax.abs(a), lax.abs(b)), dims)
  expected = _fold(lambda a, b: max(abs(a), abs(b)), x, np.float32(0), dims)
  _check(out, expected, np.float32)


@given(dtype_and_array([np.float32], shape=shapes(min_dims=1, max_side=3), allow_nan=False,
                       allow_inf=False), st.data())
def test_generic_reduce_with_logaddexp(dx, data):
  _, x = dx
  dims = _draw_axes(data, x.ndim)
  logaddexp = lambda a, b: lax.add(lax.max(a, b), lax.log1p(lax.exp(
      lax.neg(lax.abs(lax.sub(a, b))))))
  out = lax.reduce(x, np.float32(-np.inf), logaddexp, dims)
  expected = _fold(lambda a, b: np.logaddexp(np.float64(a), np.float64(b)), x,
                   -np.inf, dims)
  _check(out, expected, np.float32, exact=False)


def test_generic_reduce_of_a_pytree_and_order_of_the_fold():
  values = np.array([[3., 7., 7., 1.], [2., 2., 0., 5.]], np.float32)
  index = lax.broadcasted_iota(np.int32, values.shape, 1)

  def argmax_step(acc, x):  # (value, index) of the first maximum
    take = lax.gt(x[0], acc[0])
    return lax.select(take, x[0], acc[0]), lax.select(take, x[1], acc[1])

  best, where = lax.reduce((values, index), (np.float32(-np.inf), np.int32(-1)),
                           argmax_step, (1,))
  np.testing.assert_array_equal(best, [7., 5.])
  np.testing.assert_array_equal(where, [1, 3])
  # a left fold in row-major order of the reduced dims: ((init*10 + a)*10 + b)...
  digits = np.array([[1, 2], [3, 4]], np.int32)
  out = lax.reduce(digits, np.int32(0), lambda acc, x: acc * 10 + x, (0, 1))
  assert int(out) == 1234
  out = jax.jit(lambda d: lax.reduce(d, np.int32(0), lambda acc, x: acc * 10 + x, (1, 0)))(
      digits)
  assert int(out) == 1234
  empty = lax.reduce(np.zeros((0, 2), np.int32), np.int32(7), lambda a, b: a * b, (0,))
  np.testing.assert_array_equal(empty, [7, 7])


def test_generic_reduce_printing_and_errors():
  x = np.ones((2, 3), np.float32)
  jaxpr = str(jax.make_jaxpr(lambda x: lax.reduce(x, 0.0, lambda a, b: a * 2 + b, (0,)))(x))
  assert "b:f32[3] = reduce[\n      dimensions=(0,)\n      jaxpr={ lambda ; c:f32[] d:f32[]." \
      in jaxpr
  assert "mul c 2.0:f32[]" in jaxpr and "] a 0.0:f32[]" in jaxpr
  with pytest.raises(TypeError, match="should match corresponding initial value dtypes"):
    lax.reduce(x.astype(np.int8), 0, lambda a, b: a + b * 2, (0,))
  with pytest.raises(ValueError, match="non-scalar initial value"):
    lax.reduce(x, np.zeros(3, np.float32), lambda a, b: a * b, (0,))
  with pytest.raises(ValueError, match="same tree structure"):
    lax.reduce((x, x), np.float32(0), lax.add, (0,))
  with pytest.raises(NotImplementedError, match="close over Tracers"):
    jax.jit(lambda x, c: lax.reduce(x, np.float32(0), lambda a, b: a + b * c, (0,)))(x, 2.0)
  assert lax.reduce_p.multiple_results


# --- argmax / argmin ------------------------------------------------------------------------

@given(dtype_and_array(ORDERED, shape=shapes(min_dims=1, min_side=1)), st.data())
def test_argmax_argmin_match_numpy(dx, data):
  dtype, x = dx
  axis = data.draw(st.integers(0, x.ndim - 1))
  wide = np.float32 if dtypes.is_float(dtype) else dtype  # NumPy: first NaN wins too
  for lax_fn, np_fn in ((lax.argmax, np.argmax), (lax.argmin, np.argmin)):
    out = lax_fn(x, axis, np.int32)
    _check(out, np_fn(x.astype(wide), axis=axis).astype(np.int32), np.int32)


def test_argmax_examples_and_errors():
  x = np.array([[1, 3, 3], [np.nan, 5, np.nan]], np.float32)
  np.testing.assert_array_equal(lax.argmax(x, 1, np.int32), [1, 0])
  np.testing.assert_array_equal(lax.argmin(x, 1, np.int32), [0, 0])
  assert lax.argmax(x, 1, np.uint8).dtype == np.uint8
  with pytest.raises(ValueError, match="non-empty reduction dimension"):
    lax.argmax(np.zeros((2, 0), np.float32), 1, np.int32)
  with pytest.raises(TypeError, match="index_dtype must be an integer"):
    lax.argmax(x, 1, np.float32)
  jaxpr = jax.make_jaxpr(lambda x: lax.argmax(x, 0, np.int32))(np.ones(3, np.float32))
  assert "argmax[axes=(0,) index_dtype=int32]" in str(jaxpr)


# --- cumulative reductions ------------------------------------------------------------------

@given(dtype_and_array(INT_DTYPES + FLOAT_DTYPES, shape=shapes(min_dims=1)), st.data())
def test_cumulative_reductions_match_numpy(dx, data):
  dtype, x = dx
  axis = data.draw(st.integers(0, x.ndim - 1))
  reverse = data.draw(st.booleans())
  flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
  wide = np.float64 if dtypes.is_float(dtype) else dtype
  with np.errstate(all="ignore"):
    cases = [(lax.cumsum, np.cumsum(flip(x).astype(wide), axis=axis, dtype=wide)),
             (lax.cumprod, np.cumprod(flip(x).astype(wide), axis=axis, dtype=wide)),
             (lax.cummax, np.maximum.accumulate(flip(x).astype(wide), axis=axis)),
             (lax.cummin, np.minimum.accumulate(flip(x).astype(wide), axis=axis))]
    for lax_fn, expected in cases:
      exact = lax_fn in (lax.cummax, lax.cummin) or dtypes.is_integer(dtype)
      _check(lax_fn(x, axis, reverse=reverse), flip(expected).astype(dtype), dtype, exact)


@given(dtype_and_array(FLOAT_DTYPES, shape=shapes(min_dims=1)), st.data())
def test_cumlogsumexp_matches_numpy(dx, data):
  dtype, x = dx
  axis = data.draw(st.integers(0, x.ndim - 1))
  reverse = data.draw(st.booleans())
  flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
  with np.errstate(all="ignore"):
    expected = flip(np.logaddexp.accumulate(flip(x).astype(np.float64), axis=axis))
  _check(lax.cumlogsumexp(x, axis, reverse=reverse), expected.astype(dtype), dtype,
         exact=False)


def test_cumlogsumexp_examples_and_errors():
  x = np.array([0.0, -np.inf, np.log(3.0), np.inf, 1.0], np.float32)
  np.testing.assert_allclose(lax.cumlogsumexp(x), [0.0, 0.0, np.log(4.0), np.inf, np.inf],
                             rtol=1e-6)
  big = np.array([1000.0, 1000.0], np.float32)  # no overflow: computed stably
  np.testing.assert_allclose(lax.cumlogsumexp(big), [1000.0, 1000.0 + np.log(2.0)])
  with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
    lax.cumlogsumexp(np.ones(3, np.int32))
  jaxpr = jax.make_jaxpr(lambda x: lax.cumlogsumexp(x, reverse=True))(x)
  assert "cumlogsumexp[axis=0 reverse=True] a" in str(jaxpr)


def test_reduction_primitives_are_exported():
  for name in ("reduce_p", "reduce_sum_p", "reduce_max_p", "reduce_min_p", "reduce_prod_p",
               "reduce_and_p", "reduce_or_p", "reduce_xor_p", "argmax_p", "argmin_p",
               "cumsum_p", "cumprod_p", "cummax_p", "cummin_p", "cumlogsumexp_p"):
    assert getattr(lax, name).name == name[:-2]


def test_cumsum_printing_and_errors():
  jaxpr = jax.make_jaxpr(lambda x: lax.cumsum(x, -1, reverse=True))(np.ones((2, 3), np.float32))
  assert "cumsum[axis=1 reverse=True] a" in str(jaxpr)
  with pytest.raises(TypeError, match="cumsum does not accept dtype bool"):
    lax.cumsum(np.ones(3, bool))
