"""Tests of refimpl/numpy/reductions.py against NumPy, plus JAX's own choices
(dtype promotion, lowering, nanargmax of an all-NaN slice, errors)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from conformance.strategies import (BOOL_DTYPES, FLOAT_DTYPES, INT_DTYPES, arrays,
                                    dtype_and_array, shapes)


def _tolerance(dtype):
  return {dtypes.float16: 1e-2, dtypes.bfloat16: 2e-2}.get(np.dtype(dtype), 2e-5)


def _close(actual, expected, dtype):
  """Same shape and dtype; values equal up to the dtype's rounding (NaNs equal)."""
  expected = np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == dtype, (actual.dtype, dtype)
  actual = np.asarray(actual)
  with np.errstate(over="ignore"):
    expected = expected.astype(dtype)
  if dtypes.is_inexact(dtype):
    wide = np.complex128 if dtypes.is_complex(dtype) else np.float64
    np.testing.assert_allclose(actual.astype(wide), expected.astype(wide),
                               rtol=_tolerance(dtype), atol=1e-5)
  else:
    np.testing.assert_array_equal(actual, expected)


@st.composite
def axis_arguments(draw, ndim):
  """None, an int (maybe negative) or a tuple of distinct axes."""
  if ndim == 0:
    return draw(st.sampled_from([None, ()]))
  axes = draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                       max_size=ndim))
  return draw(st.sampled_from([None, tuple(axes), axes[0] if axes else None]))


def _wide(x):
  """Floats as float64 (what NumPy should reduce to compare with rounding once)."""
  return x.astype(np.float64) if dtypes.is_float(x.dtype) else x


# --- sum, prod, max, min, all, any -----------------------------------------------------------

@given(dtype_and_array(BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES), st.data(), st.booleans())
def test_sum_prod_match_numpy(dx, data, keepdims):
  dtype, x = dx
  axis = data.draw(axis_arguments(x.ndim))
  out_dtype = (np.dtype(np.int32) if dtypes.is_bool(dtype) or dtypes.is_integer(dtype)
               and not dtypes.is_unsigned(dtype) else
               np.dtype(np.uint32) if dtypes.is_unsigned(dtype) else dtype)
  with np.errstate(all="ignore"):
    expected = np.sum(_wide(x), axis=axis, keepdims=keepdims, dtype=None if
                      dtypes.is_float(dtype) else out_dtype)
    _close(jnp.sum(x, axis=axis, keepdims=keepdims), expected.astype(out_dtype), out_dtype)
    expected = np.prod(_wide(x), axis=axis, keepdims=keepdims, dtype=None if
                       dtypes.is_float(dtype) else out_dtype)
    _close(jnp.prod(x, axis=axis, keepdims=keepdims), expected.astype(out_dtype), out_dtype)


@given(dtype_and_array(INT_DTYPES + FLOAT_DTYPES, shape=shapes(min_side=1)), st.data(),
       st.booleans())
def test_max_min_match_numpy(dx, data, keepdims):
  dtype, x = dx
  axis = data.draw(axis_arguments(x.ndim))
  wide = x.astype(np.float32) if dtypes.is_float(dtype) else x
  _close(jnp.max(x, axis=axis, keepdims=keepdims),
         np.max(wide, axis=axis, keepdims=keepdims).astype(dtype), dtype)
  _close(jnp.min(x, axis=axis, keepdims=keepdims),
         np.min(wide, axis=axis, keepdims=keepdims).astype(dtype), dtype)
  _close(jnp.amax(x, axis=axis), np.amax(wide, axis=axis).astype(dtype), dtype)
  with np.errstate(invalid="ignore"):  # inf - inf
    expected_ptp = np.ptp(wide, axis=axis).astype(dtype)
  _close(jnp.ptp(x, axis=axis), expected_ptp, dtype)


@given(dtype_and_array(BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES), st.data())
def test_all_any_count_nonzero_match_numpy(dx, data):
  _, x = dx
  axis = data.draw(axis_arguments(x.ndim))
  _close(jnp.all(x, axis=axis), np.all(x, axis=axis), np.bool_)
  _close(jnp.any(x, axis=axis), np.any(x, axis=axis), np.bool_)
  _close(jnp.count_nonzero(x, axis=axis), np.count_nonzero(x, axis=axis), np.int32)


def test_all_any_of_complex_test_the_real_part_without_warning():
  x = np.array([[1j, 0j], [1 + 1j, 2 + 0j]], np.complex64)
  with warnings.catch_warnings():
    warnings.simplefilter("error")   # no ComplexWarning: JAX casts the real part
    np.testing.assert_array_equal(jnp.any(x, axis=1), [False, True])
    np.testing.assert_array_equal(jnp.all(x, axis=1), [False, True])
    assert not jnp.any(np.array([1j, -2j]))


@given(dtype_and_array([np.float32, np.int32], shape=shapes(min_dims=1)), st.data())
def test_where_and_initial_match_numpy(dx, data):
  dtype, x = dx
  mask = data.draw(arrays(np.bool_, x.shape[-1:]))  # broadcast against x
  axis = data.draw(axis_arguments(x.ndim))
  with np.errstate(all="ignore"):
    _close(jnp.sum(x, axis=axis, where=mask, initial=3),
           np.sum(_wide(x), axis=axis, where=mask, initial=3).astype(dtype), dtype)
    _close(jnp.prod(x, axis=axis, where=mask),
           np.prod(_wide(x), axis=axis, where=mask).astype(dtype), dtype)
    _close(jnp.max(x, axis=axis, where=mask, initial=-5),
           np.max(x, axis=axis, where=mask, initial=-5), dtype)
    _close(jnp.min(x, axis=axis, initial=5), np.min(x, axis=axis, initial=5), dtype)
    _close(jnp.all(x, axis=axis, where=mask), np.all(x, axis=axis, where=mask), np.bool_)
    _close(jnp.any(x, axis=axis, where=mask), np.any(x, axis=axis, where=mask), np.bool_)


def test_sum_dtypes():
  assert jnp.sum(np.ones(3, np.int8)).dtype == np.int32
  assert jnp.sum(np.ones(3, np.uint8)).dtype == np.uint32
  assert jnp.sum(np.ones(3, bool)).dtype == np.int32
  assert jnp.sum(np.ones(3, np.int8), promote_integers=False).dtype == np.int8
  assert jnp.sum(np.ones(3, np.float16)).dtype == np.float16
  assert jnp.sum(np.ones(3, np.int32), dtype=np.float32).dtype == np.float32
  assert jnp.sum(np.ones(3, bool), dtype=bool).dtype == np.bool_
  assert not jnp.sum(2.0).weak_type
  assert int(jnp.sum(np.full(3, 100, np.int8), promote_integers=False)) == 44  # wraps


def test_jax_seed_examples():
  with pytest.raises(TypeError) as err:
    jnp.sum([1, 2, 3])
  assert str(err.value) == ("sum requires ndarray or scalar arguments, got <class 'list'> "
                            "at position 0.")
  assert int(jnp.sum(jnp.array([1, 2, 3]))) == 6
  assert float(jnp.sum(jnp.array([1, 2, jnp.nan, 3, 4]))) != float(jnp.sum(jnp.array([1.0])))


def test_lowering():
  x = np.ones(3, np.float32)
  assert str(jax.make_jaxpr(lambda x: jnp.sum(jnp.exp(-x)))(x)) == (
      "{ lambda ; a:f32[3]. let\n    b:f32[3] = neg a\n    c:f32[3] = exp b\n"
      "    d:f32[] = reduce_sum[axes=(0,)] c\n  in (d,) }")
  prims = lambda f, *args: [e.primitive.name for e in jax.make_jaxpr(f)(*args).eqns]
  assert prims(jnp.mean, x) == ["reduce_sum", "div"]
  assert prims(jnp.sum, np.ones(3, np.float16)) == [
      "convert_element_type", "reduce_sum", "convert_element_type"]
  assert prims(jnp.max, x) == ["reduce_max"]
  assert prims(jnp.any, x) == ["convert_element_type", "reduce_or"]
  assert prims(lambda x: jnp.argmax(x), x) == ["argmax"]
  assert prims(lambda x: jnp.cumsum(x), x) == ["cumsum"]


def test_reduction_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(NotImplementedError, match="The 'out' argument to jnp.sum is not "
                                                "supported."):
    jnp.sum(x, out=x)
  with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
    jnp.max(np.zeros((0, 2)))
  with pytest.raises(ValueError, match="to use a where mask one has to specify 'initial'"):
    jnp.min(x, where=x > 0)
  with pytest.raises(ValueError, match="duplicate value in 'axis'"):
    jnp.sum(x, axis=(0, -2))
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.sum(x, axis=2)
  with pytest.raises(ValueError, match="initial value must be a scalar"):
    jnp.sum(x, initial=np.ones(2))
  assert float(jnp.max(np.zeros(0), initial=1.5)) == 1.5


def test_nan_propagation():
  x = np.array([1.0, np.nan, 3.0], np.float32)
  assert np.isnan(jnp.max(x)) and np.isnan(jnp.min(x)) and np.isnan(jnp.sum(x))
  assert int(jnp.argmax(x)) == 1 and int(jnp.argmin(x)) == 1


# --- mean, var, std, average ----------------------------------------------------------------------

@given(dtype_and_array([np.float32, np.int16, np.bool_, np.float16],
                       shape=shapes(min_side=1), allow_nan=False, allow_inf=False,
                       elements=None), st.data(), st.booleans())
def test_mean_var_std_match_numpy(dx, data, keepdims):
  dtype, x = dx
  x = np.clip(x, -1e3, 1e3) if dtypes.is_float(dtype) else x
  axis = data.draw(axis_arguments(x.ndim))
  out_dtype = dtype if dtypes.is_float(dtype) else np.dtype(np.float32)
  wide = x.astype(np.float64)
  _close(jnp.mean(x, axis=axis, keepdims=keepdims),
         np.mean(wide, axis=axis, keepdims=keepdims), out_dtype)
  ddof = data.draw(st.integers(0, 1))
  n = wide.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
  with np.errstate(all="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns where n - ddof <= 0
    expected_var = np.var(wide, axis=axis, keepdims=keepdims, ddof=ddof)
  if n - ddof <= 0:
    expected_var = np.full_like(expected_var, np.nan)
  var = jnp.var(x, axis=axis, keepdims=keepdims, ddof=ddof)
  assert var.dtype == out_dtype
  # the variance is computed wide and rounded to the output dtype (float16 may overflow)
  with np.errstate(over="ignore"):
    expected_var = expected_var.astype(out_dtype).astype(np.float64)
  np.testing.assert_allclose(np.asarray(var, np.float64), expected_var,
                             rtol=_tolerance(out_dtype), atol=1e-3 * (1 + np.abs(wide).max()))
  # std is the square root of that rounded variance
  np.testing.assert_allclose(np.asarray(jnp.std(x, axis=axis, ddof=ddof), np.float64) ** 2,
                             np.reshape(expected_var, np.shape(np.var(wide, axis=axis))),
                             rtol=_tolerance(out_dtype) * 4, atol=1e-2 * (1 + np.abs(wide).max()))


def test_mean_var_details():
  x = np.array([[1, 3, 4, 2], [5, 2, 6, 3], [8, 1, 2, 9]], np.int32)
  where = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 1]], bool)
  _close(jnp.mean(x, axis=1, where=where), [2.5, 2.5, 6.0], np.float32)
  _close(jnp.var(x, axis=1, where=where), np.var(x, axis=1, where=where), np.float32)
  _close(jnp.mean(x, dtype=np.float16), np.mean(x), np.float16)
  _close(jnp.var(np.array([1 + 1j, 1 - 1j], np.complex64)), 1.0, np.float32)
  with pytest.raises(ValueError, match="ddof and correction"):
    jnp.var(x, ddof=1, correction=1)
  with pytest.raises(ValueError, match="must be inexact"):
    jnp.std(x, dtype=np.int32)


def test_average():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  w = np.array([1.0, 2.0, 0.0, 1.0])
  _close(jnp.average(x), np.average(x), np.float32)
  _close(jnp.average(x, axis=1, weights=w), np.average(x, axis=1, weights=w), np.float32)
  avg, total = jnp.average(x, axis=0, weights=np.ones((3, 4)), returned=True)
  _close(total, np.full(4, 3.0), np.float32)
  with pytest.raises(ValueError, match="Axis must be specified"):
    jnp.average(x, weights=w)


# --- arg reductions -------------------------------------------------------------------------------

@given(dtype_and_array(BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES, shape=shapes(min_side=1)),
       st.data(), st.booleans())
def test_argmax_argmin_match_numpy(dx, data, keepdims):
  dtype, x = dx
  axis = None if x.ndim == 0 else data.draw(st.one_of(st.none(),
                                                      st.integers(-x.ndim, x.ndim - 1)))
  wide = x.astype(np.float32) if dtypes.is_float(dtype) else x
  _close(jnp.argmax(x, axis=axis, keepdims=keepdims),
         np.argmax(wide, axis=axis, keepdims=keepdims), np.int32)
  _close(jnp.argmin(x, axis=axis, keepdims=keepdims),
         np.argmin(wide, axis=axis, keepdims=keepdims), np.int32)


def test_nanargmax_nanargmin():
  x = np.array([[1, np.nan, 3], [np.nan, np.nan, np.nan]], np.float32)
  _close(jnp.nanargmax(x, axis=1), [2, -1], np.int32)  # JAX gives -1; NumPy raises
  _close(jnp.nanargmin(x, axis=1), [0, -1], np.int32)
  _close(jnp.nanargmax(np.array([3, 1])), 0, np.int32)
  with pytest.raises(ValueError, match="empty sequence"):
    jnp.argmax(np.zeros((0,)))


# --- nan reductions -------------------------------------------------------------------------------

@given(dtype_and_array([np.float32, np.float16], shape=shapes(min_side=1)), st.data())
def test_nan_reductions_match_numpy(dx, data):
  dtype, x = dx
  axis = data.draw(axis_arguments(x.ndim))
  wide = x.astype(np.float64)
  with np.errstate(all="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on all-NaN slices
    _close(jnp.nansum(x, axis=axis), np.nansum(wide, axis=axis), dtype)
    _close(jnp.nanprod(x, axis=axis), np.nanprod(wide, axis=axis), dtype)
    _close(jnp.nanmax(x, axis=axis), np.nanmax(wide, axis=axis), dtype)
    _close(jnp.nanmin(x, axis=axis), np.nanmin(wide, axis=axis), dtype)
    # JAX sums in the input dtype, so a mean of values near the dtype's max
    # overflows (NumPy's float64 one does not): compare on bounded values.
    bounded = np.clip(x, -1e3, 1e3)  # keeps the float32 rounding of the mean small
    _close(jnp.nanmean(bounded, axis=axis), np.nanmean(bounded.astype(np.float64), axis=axis),
           dtype)
    np.testing.assert_allclose(np.asarray(jnp.nanvar(bounded, axis=axis), np.float64),
                               np.nanvar(bounded.astype(np.float64), axis=axis)
                               .astype(dtype).astype(np.float64),
                               rtol=_tolerance(dtype) * 4, atol=1e-2)


def test_nan_reductions_of_integers_are_plain():
  x = np.array([1, 2, 3], np.int32)
  _close(jnp.nansum(x), 6, np.int32)
  _close(jnp.nanmax(x), 3, np.int32)
  _close(jnp.nanmean(x), 2.0, np.float32)


# --- cumulative reductions ------------------------------------------------------------------------

@given(dtype_and_array(BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES), st.data())
def test_cumulative_match_numpy(dx, data):
  dtype, x = dx
  axis = None if x.ndim == 0 else data.draw(st.one_of(st.none(),
                                                      st.integers(-x.ndim, x.ndim - 1)))
  out_dtype = np.dtype(np.int32) if dtypes.is_bool(dtype) else dtype
  with np.errstate(all="ignore"):
    _close(jnp.cumsum(x, axis=axis),
           np.cumsum(_wide(x), axis=axis, dtype=None if dtypes.is_float(dtype) else out_dtype)
           .astype(out_dtype), out_dtype)
    _close(jnp.cumprod(x, axis=axis),
           np.cumprod(_wide(x), axis=axis, dtype=None if dtypes.is_float(dtype) else out_dtype)
           .astype(out_dtype), out_dtype)
    if dtypes.is_float(dtype):
      _close(jnp.nancumsum(x, axis=axis), np.nancumsum(_wide(x), axis=axis), dtype)
      _close(jnp.nancumprod(x, axis=axis), np.nancumprod(_wide(x), axis=axis), dtype)


def test_cumulative_sum_and_prod():
  x = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
  _close(jnp.cumulative_sum(x, axis=1), np.cumsum(x, axis=1), np.int32)
  _close(jnp.cumulative_sum(x, axis=1, include_initial=True),
         [[0, 1, 3, 6], [0, 4, 9, 15]], np.int32)
  _close(jnp.cumulative_prod(x[0], include_initial=True), [1, 1, 2, 6], np.int32)
  _close(jnp.cumsum(x, dtype=bool), np.cumsum(x).astype(bool), np.bool_)
  with pytest.raises(ValueError, match="axis was not set"):
    jnp.cumulative_sum(x)
  with pytest.raises(ValueError, match="non-scalar"):
    jnp.cumulative_sum(np.float32(1))


def test_promotion_with_x64_enabled():
  with jax.enable_x64():
    assert jnp.sum(np.ones(3, np.int32)).dtype == np.int64
    assert jnp.sum(np.ones(3, np.uint8)).dtype == np.uint64
    assert jnp.mean(np.ones(3, np.int32)).dtype == np.float64
    assert jnp.argmax(np.ones(3)).dtype == np.int64
