"""Tests of refimpl/lax/elementwise.py: every elementwise primitive against an
independent computation (NumPy in the operands' own dtype, or exact Python
integers), plus the shape/dtype rules, weak types and jaxpr printing."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from refimpl.config import enable_x64
from refimpl.lax.special import fused_multiply_add
from conformance import strategies as S
from conformance.strategies import assert_close

FLOATS = S.FLOAT_DTYPES
INTS = S.INT_DTYPES
SIGNED = S.SIGNED_DTYPES
COMPLEX = S.COMPLEX_DTYPES
# Complex inputs stay moderate and normal: NumPy's complex64 functions overflow
# in their intermediates (e.g. dividing by a subnormal) where the complex128
# reference does not (the reference is right).
_COMPLEX_PART = st.floats(-30, 30, width=32, allow_subnormal=False)
_COMPLEX_ELEMENTS = st.builds(complex, _COMPLEX_PART, _COMPLEX_PART)


@st.composite
def _operands(draw, dtype_list, n):
  """Strategy: (dtype, operands) broadcastable per lax, moderate complex values."""
  dtype = draw(st.sampled_from(dtype_list))
  elements = _COMPLEX_ELEMENTS if dtypes.is_complex(dtype) else None
  return draw(S.broadcastable_arrays([dtype], n, elements=elements))


def _native(fn):
  """`fn` computed by NumPy in the operands' dtype (cast back to it)."""
  def oracle(*xs):
    return np.asarray(fn(*xs)).astype(xs[0].dtype)
  return oracle


def _assert_equal(actual, expected):
  """Exact equality, NaN equal to NaN (bfloat16 compared as float32)."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  if actual.dtype == ml_dtypes.bfloat16:
    actual, expected = actual.astype(np.float32), expected.astype(np.float32)
  np.testing.assert_array_equal(actual, expected)


def _logistic_oracle(x):
  if dtypes.is_complex(x.dtype):
    return 1 / (1 + np.exp(-x))
  with np.errstate(over="ignore"):
    return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


def _log1p_oracle(x):
  """log1p; for complex from real formulas in float64 (NumPy's complex64 log1p
  is computed as log(1 + z) and loses accuracy near 0)."""
  if not dtypes.is_complex(x.dtype):
    return np.log1p(x)
  a, b = x.real.astype(np.float64), x.imag.astype(np.float64)
  return 0.5 * np.log1p(2 * a + a * a + b * b) + 1j * np.arctan2(b, 1 + a)


def _signum_oracle(x):
  """sign for floats from comparisons: -1, 1, and x itself for zeros and NaN."""
  return np.where(x > 0, 1, np.where(x < 0, -1, x)).astype(x.dtype)


# --- unary floating-point functions ---------------------------------------------------

UNARY = [
    (lax.exp, np.exp, FLOATS + COMPLEX),
    (lax.exp2, np.exp2, FLOATS + COMPLEX),
    (lax.expm1, np.expm1, FLOATS + COMPLEX),
    (lax.log, np.log, FLOATS + COMPLEX),
    (lax.log1p, _log1p_oracle, FLOATS + COMPLEX),
    (lax.logistic, _logistic_oracle, FLOATS + COMPLEX),
    (lax.sqrt, np.sqrt, FLOATS + COMPLEX),
    (lax.rsqrt, lambda x: 1 / np.sqrt(x), FLOATS + COMPLEX),
    (lax.cbrt, np.cbrt, FLOATS),
    (lax.sin, np.sin, FLOATS + COMPLEX),
    (lax.cos, np.cos, FLOATS + COMPLEX),
    (lax.tan, np.tan, FLOATS + COMPLEX),
    (lax.asin, np.arcsin, FLOATS + COMPLEX),
    (lax.acos, np.arccos, FLOATS + COMPLEX),
    (lax.atan, np.arctan, FLOATS + COMPLEX),
    (lax.sinh, np.sinh, FLOATS + COMPLEX),
    (lax.cosh, np.cosh, FLOATS + COMPLEX),
    (lax.tanh, np.tanh, FLOATS + COMPLEX),
    (lax.asinh, np.arcsinh, FLOATS + COMPLEX),
    (lax.acosh, np.arccosh, FLOATS + COMPLEX),
    (lax.atanh, np.arctanh, FLOATS + COMPLEX),
    (lax.neg, np.negative, FLOATS + COMPLEX),
    (lax.square, np.square, FLOATS + COMPLEX),
    (lax.floor, np.floor, FLOATS),
    (lax.ceil, np.ceil, FLOATS),
    (lax.sign, _signum_oracle, FLOATS),
    (lax.sign, np.sign, COMPLEX),
]


@pytest.mark.parametrize("fn, oracle, dtype_list", UNARY,
                         ids=[f"{f.__name__}-{len(d)}" for f, _, d in UNARY])
@given(data=st.data())
def test_unary_matches_numpy(fn, oracle, dtype_list, data):
  dtype, (x,) = data.draw(_operands(dtype_list, 1))
  out = fn(x)
  assert out.dtype == dtype and out.shape == x.shape
  with np.errstate(all="ignore"):
    expected = _native(oracle)(x)
  assert_close(out, expected)


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
def test_abs_gives_the_real_modulus(dtype):
  x = np.array([-2.5, 0.0, 3.0], dtype) if dtype not in COMPLEX else np.array([3 + 4j, -1j], dtype)
  out = lax.abs(x)
  assert out.dtype == (dtypes.float32 if dtype in COMPLEX else dtype)
  np.testing.assert_array_equal(out, np.abs(x))


@given(S.dtype_and_array(FLOATS))
def test_round_both_rounding_methods(dtype_x):
  dtype, x = dtype_x
  wide = x.astype(np.float64)   # exact: |x| + 0.5 needs at most 26 bits here
  away = np.copysign(np.floor(np.abs(wide) + 0.5), wide).astype(dtype)
  _assert_equal(lax.round(x), away)
  _assert_equal(lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.rint(x))


def test_round_ties_and_signed_zero():
  x = np.array([-2.5, -1.5, -0.5, -0.4, 0.5, 1.5, 2.5], np.float32)
  np.testing.assert_array_equal(lax.round(x), [-3, -2, -1, -0.0, 1, 2, 3])
  np.testing.assert_array_equal(lax.round(x, 1), [-2, -2, -0.0, -0.0, 0, 2, 2])
  assert np.signbit(lax.round(x)[3])
  assert lax.round(np.float32(0.49999997)) == 0   # not 1: no rounding in x + 0.5


@given(S.dtype_and_array(FLOATS))
def test_is_finite(dtype_x):
  _, x = dtype_x
  out = lax.is_finite(x)
  assert out.dtype == np.bool_
  np.testing.assert_array_equal(out, np.isfinite(x.astype(np.float32)))


def test_float_edge_cases():
  f = np.float32
  assert np.signbit(lax.sign(f(-0.0))) and lax.sign(f(-0.0)) == 0
  assert np.isnan(lax.sign(f(np.nan)))
  assert lax.rsqrt(f(0.0)) == np.inf and lax.rsqrt(f(-0.0)) == -np.inf
  assert lax.logistic(f(-np.inf)) == 0 and lax.logistic(f(np.inf)) == 1
  assert lax.expm1(f(-np.inf)) == -1 and np.signbit(lax.expm1(f(-0.0)))
  assert lax.log(f(0.0)) == -np.inf and np.isnan(lax.log(f(-1.0)))
  assert lax.cbrt(f(-8.0)) == -2
  assert lax.atan2(f(0.0), f(-0.0)) == np.float32(np.pi)
  assert lax.atan2(f(-0.0), f(-0.0)) == -np.float32(np.pi)
  # Subnormals are kept (XLA on CPU may flush them to zero).
  assert lax.mul(lax.nextafter(f(0), f(1)), f(1)) == np.float32(1e-45)


# --- binary floating-point functions --------------------------------------------------

BINARY = [
    (lax.add, np.add, FLOATS + COMPLEX),
    (lax.sub, np.subtract, FLOATS + COMPLEX),
    (lax.mul, np.multiply, FLOATS + COMPLEX),
    (lax.div, np.divide, FLOATS + COMPLEX),
    (lax.rem, np.fmod, FLOATS),
    (lax.max, np.maximum, FLOATS + COMPLEX),
    (lax.min, np.minimum, FLOATS + COMPLEX),
    (lax.atan2, np.arctan2, FLOATS),
    (lax.pow, np.power, FLOATS),
    (lax.nextafter, np.nextafter, FLOATS),
]


@pytest.mark.parametrize("fn, oracle, dtype_list", BINARY,
                         ids=[f.__name__ for f, _, _ in BINARY])
@given(data=st.data())
def test_binary_matches_numpy(fn, oracle, dtype_list, data):
  dtype, (x, y) = data.draw(_operands(dtype_list, 2))
  out = fn(x, y)
  assert out.dtype == dtype and out.shape == np.broadcast_shapes(x.shape, y.shape)
  with np.errstate(all="ignore"):
    expected = _native(oracle)(x, y)
  assert_close(out, expected)


def test_nextafter_steps_one_ulp_in_its_dtype():
  one = np.array(1, ml_dtypes.bfloat16)
  assert lax.nextafter(one, np.array(2, ml_dtypes.bfloat16)) == 1 + 2 ** -7
  assert lax.nextafter(np.float16(0), np.float16(-1)) == -np.float16(2 ** -24)
  assert lax.nextafter(np.float32(1), np.float32(1)) == 1


@given(data=st.data())
def test_pow_with_integer_exponent(data):
  dtype = data.draw(st.sampled_from(FLOATS))
  x = data.draw(S.arrays(dtype, (3,)))
  y = data.draw(S.arrays(np.int32, (3,), elements=st.integers(-20, 20)))
  out = lax.pow(x, y)
  assert out.dtype == dtype
  with np.errstate(all="ignore"):
    assert_close(out, np.power(x, y.astype(dtype)).astype(dtype))


# Moderate magnitudes for integer_pow: an intermediate power that overflows
# (or underflows) the dtype legitimately differs from the exact power.
# Complex infinities are left out: which part of inf * z is NaN depends on
# the order of the multiplications.
_MODERATE_FINITE = st.one_of(st.sampled_from([0.0, -0.0]), st.floats(0.125, 6),
                             st.floats(-6, -0.125))
_MODERATE = st.one_of(st.sampled_from([np.inf, -np.inf, np.nan]), _MODERATE_FINITE)


@given(data=st.data())
def test_integer_pow_matches_power(data):
  dtype = data.draw(st.sampled_from(FLOATS + COMPLEX))
  elements = (st.builds(complex, _MODERATE_FINITE, _MODERATE_FINITE) if dtype in COMPLEX
              else _MODERATE)
  x = data.draw(S.arrays(dtype, S.shapes(), elements=elements))
  y = data.draw(st.integers(-6, 6))
  out = lax.integer_pow(x, y)
  wide = x.astype(np.complex128 if dtype in COMPLEX else np.float64)
  with np.errstate(all="ignore"):   # a negative power is documented as 1 / x**|y|
    expected = np.power(wide, y) if y >= 0 else 1 / np.power(wide, -y)
  # Repeated squaring rounds at each step: allow a few more ulps.
  rtol, _ = S.TOLERANCES[np.dtype(dtype)]
  assert_close(out, np.asarray(expected).astype(dtype), rtol=4 * rtol)


def test_integer_pow_zero_exponent_is_one():
  np.testing.assert_array_equal(lax.integer_pow(np.array([0.0, np.nan], np.float32), 0), [1, 1])


# --- integer arithmetic against exact Python integers ----------------------------------------

def _python(dtype, fn, *xs):
  """fn applied to Python ints elementwise, wrapped modulo 2**bits into dtype."""
  xs = np.broadcast_arrays(*xs)
  bits = np.dtype(dtype).itemsize * 8
  values = [fn(*(int(v) for v in items)) for items in zip(*(x.ravel() for x in xs))]
  wrapped = np.array([v % 2 ** bits for v in values], np.uint64).astype(dtype)
  return wrapped.reshape(xs[0].shape)


def _c_div(a, b):
  """C's truncating division, with XLA's results for x / 0 and INT_MIN / -1."""
  if b == 0:
    return -1
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q


def _c_rem(a, b):
  return a if b == 0 else a - b * _c_div(a, b)


INTEGER_BINARY = [
    (lax.add, lambda a, b: a + b),
    (lax.sub, lambda a, b: a - b),
    (lax.mul, lambda a, b: a * b),
    (lax.div, _c_div),
    (lax.rem, _c_rem),
    (lax.max, max),
    (lax.min, min),
    (lax.bitwise_and, lambda a, b: a & b),
    (lax.bitwise_or, lambda a, b: a | b),
    (lax.bitwise_xor, lambda a, b: a ^ b),
]


@pytest.mark.parametrize("fn, exact", INTEGER_BINARY, ids=[f.__name__ for f, _ in INTEGER_BINARY])
@given(data=st.data())
def test_integer_binary_is_exact_with_wraparound(fn, exact, data):
  dtype, (x, y) = data.draw(S.broadcastable_arrays(INTS, 2))
  out = fn(x, y)
  assert out.dtype == dtype
  np.testing.assert_array_equal(out, _python(dtype, exact, x, y))


INTEGER_UNARY = [
    (lax.neg, lambda a: -a, INTS),
    (lax.abs, abs, SIGNED),
    (lax.sign, lambda a: (a > 0) - (a < 0), INTS),
    (lax.square, lambda a: a * a, INTS),
    (lax.bitwise_not, lambda a: ~a, INTS),
]


@pytest.mark.parametrize("fn, exact, dtype_list", INTEGER_UNARY,
                         ids=[f.__name__ for f, _, _ in INTEGER_UNARY])
@given(data=st.data())
def test_integer_unary_is_exact_with_wraparound(fn, exact, dtype_list, data):
  dtype, x = data.draw(S.dtype_and_array(dtype_list))
  out = fn(x)
  assert out.dtype == dtype
  np.testing.assert_array_equal(out, _python(dtype, exact, x))


@given(S.dtype_and_array(INTS), st.integers(0, 9))
def test_integer_pow_on_integers_wraps(dtype_x, y):
  dtype, x = dtype_x
  np.testing.assert_array_equal(lax.integer_pow(x, y), _python(dtype, lambda a: a ** y, x))


def test_integer_division_edge_cases():
  i32 = np.int32
  x = np.array([7, -7, 7, -7, 5, -2 ** 31], i32)
  y = np.array([2, 2, -2, -2, 0, -1], i32)
  np.testing.assert_array_equal(lax.div(x, y), [3, -3, -3, 3, -1, -2 ** 31])
  np.testing.assert_array_equal(lax.rem(x, y), [1, -1, 1, -1, 5, 0])
  np.testing.assert_array_equal(lax.div(np.uint8(7), np.uint8(0)), 255)
  assert lax.neg(np.int8(-128)) == -128 and lax.abs(np.int8(-128)) == -128


def _bits_of(v, bits):
  return v % 2 ** bits


SHIFTS = [
    (lax.shift_left, lambda a, s, bits: a << s if 0 <= s < bits else 0),
    (lax.shift_right_logical,
     lambda a, s, bits: _bits_of(a, bits) >> s if 0 <= s < bits else 0),
    (lax.shift_right_arithmetic,
     lambda a, s, bits: _signed(a, bits) >> (s if 0 <= s < bits else bits)),
]


def _signed(v, bits):
  v = v % 2 ** bits
  return v - 2 ** bits if v >= 2 ** (bits - 1) else v


@pytest.mark.parametrize("fn, exact", SHIFTS, ids=[f.__name__ for f, _ in SHIFTS])
@given(data=st.data())
def test_shifts_including_out_of_range_amounts(fn, exact, data):
  dtype = data.draw(st.sampled_from(INTS))
  bits = np.dtype(dtype).itemsize * 8
  x = data.draw(S.arrays(dtype, (4,)))
  amounts = st.integers(0 if dtypes.is_unsigned(dtype) else -3, bits + 3)
  y = data.draw(S.arrays(dtype, (4,), elements=amounts))
  out = fn(x, y)
  np.testing.assert_array_equal(out, _python(dtype, lambda a, s: exact(a, s, bits), x, y))


@given(S.dtype_and_array(INTS))
def test_population_count_and_clz(dtype_x):
  dtype, x = dtype_x
  bits = np.dtype(dtype).itemsize * 8
  np.testing.assert_array_equal(lax.population_count(x),
                                _python(dtype, lambda a: bin(a % 2 ** bits).count("1"), x))
  np.testing.assert_array_equal(lax.clz(x),
                                _python(dtype, lambda a: bits - (a % 2 ** bits).bit_length(), x))


@given(S.broadcastable_arrays([np.bool_], 2))
def test_logic_on_booleans(dtype_xy):
  _, (x, y) = dtype_xy
  np.testing.assert_array_equal(lax.bitwise_and(x, y), x & y)
  np.testing.assert_array_equal(lax.bitwise_or(x, y), x | y)
  np.testing.assert_array_equal(lax.bitwise_xor(x, y), x ^ y)
  np.testing.assert_array_equal(lax.bitwise_not(x), ~x)


# --- comparisons, clamp, select ----------------------------------------------------------------

COMPARISONS = [(lax.eq, np.equal), (lax.ne, np.not_equal), (lax.lt, np.less),
               (lax.le, np.less_equal), (lax.gt, np.greater), (lax.ge, np.greater_equal)]


@pytest.mark.parametrize("fn, oracle", COMPARISONS, ids=[f.__name__ for f, _ in COMPARISONS])
@given(data=st.data())
def test_comparisons(fn, oracle, data):
  ordered = fn not in (lax.eq, lax.ne)
  dtype_list = [d for d in S.ALL_DTYPES if not (ordered and dtypes.is_complex(d))]
  dtype, (x, y) = data.draw(S.broadcastable_arrays(dtype_list, 2))
  out = fn(x, y)
  assert out.dtype == np.bool_
  np.testing.assert_array_equal(out, oracle(x, y))


def test_complex_is_not_ordered():
  z = np.complex64(1 + 1j)
  with pytest.raises(TypeError, match="lt does not accept dtype complex64 at position 0"):
    lax.lt(z, z)
  assert lax.eq(z, z)


@given(data=st.data())
def test_clamp(data):
  dtype = data.draw(st.sampled_from(FLOATS + INTS))
  x = data.draw(S.arrays(dtype, (5,)))
  lo, hi = data.draw(S.arrays(dtype, ())), data.draw(S.arrays(dtype, (5,)))
  with np.errstate(invalid="ignore"):
    expected = np.minimum(np.maximum(x, lo), hi)
  assert_close(lax.clamp(lo, x, hi), expected)


def test_clamp_shape_and_dtype_rules():
  x = np.zeros(3, np.float32)
  with pytest.raises(TypeError, match=r"clamp requires min.shape == operand.shape"):
    lax.clamp(np.zeros(2, np.float32), x, np.float32(1))
  with pytest.raises(TypeError, match="same dtypes"):
    lax.clamp(np.int32(0), x, np.float32(1))
  np.testing.assert_array_equal(lax.clamp(np.float32(2), x, np.float32(1)), [1, 1, 1])


def test_select_and_select_n():
  pred = np.array([True, False])
  a, b = np.array([1, 2], np.int32), np.array([3, 4], np.int32)
  np.testing.assert_array_equal(lax.select(pred, a, b), [1, 4])
  np.testing.assert_array_equal(lax.select_n(np.array([0, 1], np.int32), a, b), [1, 4])


# --- casts --------------------------------------------------------------------------------------

def _convert_oracle(x, new_dtype):
  new_dtype = np.dtype(new_dtype)
  if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype):
    x = x.real
  if new_dtype == np.bool_:
    return x != 0
  if dtypes.is_inexact(x.dtype) and dtypes.is_integer(new_dtype):
    info = np.iinfo(new_dtype)
    saturate = lambda v: 0 if math.isnan(v) else min(max(math.trunc(v), info.min), info.max) \
        if math.isfinite(v) else (info.max if v > 0 else info.min)
    return np.array([saturate(float(v)) for v in x.ravel()], new_dtype).reshape(x.shape)
  return x.astype(new_dtype)


@given(S.dtype_and_array(S.ALL_DTYPES), st.sampled_from(S.ALL_DTYPES))
def test_convert_element_type(dtype_x, new_dtype):
  _, x = dtype_x
  out = lax.convert_element_type(x, new_dtype)
  assert out.dtype == new_dtype and not out.weak_type
  with np.errstate(all="ignore"):
    expected = _convert_oracle(x, new_dtype)
  _assert_equal(out, expected)


def test_convert_complex_to_bool_tests_the_real_part():
  x = np.array([1j, 1 + 1j, 0, complex(0, np.nan), complex(np.nan, 0)], np.complex64)
  with pytest.warns(np.exceptions.ComplexWarning):
    out = lax.convert_element_type(x, np.bool_)
  np.testing.assert_array_equal(out, [False, True, False, False, True])


def test_convert_element_type_saturates_unlike_numpy():
  x = np.array([254.0, 255.0, 256.0, 257.0, -1.0, np.nan, np.inf], np.float32)
  np.testing.assert_array_equal(lax.convert_element_type(x, np.uint8),
                                [254, 255, 255, 255, 0, 0, 255])
  with enable_x64():
    big = np.array([1e30, -1e30, 2.0 ** 63, np.nan])
    np.testing.assert_array_equal(lax.convert_element_type(big, np.int64),
                                  [2 ** 63 - 1, -2 ** 63, 2 ** 63 - 1, 0])


def test_convert_complex_to_real_warns_and_keeps_real_part():
  with pytest.warns(np.exceptions.ComplexWarning):
    out = lax.convert_element_type(np.complex64(1.5 + 2j), np.int32)
  assert out == 1


@given(S.dtype_and_array([d for d in S.ALL_DTYPES if d != np.bool_ and d not in COMPLEX],
                         shape=S.shapes(min_dims=1)))
def test_bitcast_convert_type_matches_view(dtype_x):
  dtype, x = dtype_x
  same_width = {1: np.uint8, 2: np.int16, 4: np.float32}[np.dtype(dtype).itemsize]
  np.testing.assert_array_equal(np.asarray(lax.bitcast_convert_type(x, same_width)).view(np.uint8),
                                x.view(np.uint8))
  narrow = lax.bitcast_convert_type(x, np.uint8)
  assert narrow.shape == x.shape + ((np.dtype(dtype).itemsize,) if np.dtype(dtype).itemsize > 1
                                    else ())
  np.testing.assert_array_equal(np.asarray(narrow).reshape(-1),
                                np.ascontiguousarray(x).view(np.uint8).reshape(-1))


def test_bitcast_convert_type_rules():
  assert lax.bitcast_convert_type(np.float32(1.0), np.int32) == 0x3F800000
  wide = lax.bitcast_convert_type(np.array([0, 0, 128, 63], np.uint8), np.float32)
  assert wide.shape == () and wide == 1.0
  with pytest.raises(ValueError, match="Attempting to convert array of shape"):
    lax.bitcast_convert_type(np.zeros(3, np.uint8), np.float32)
  with pytest.raises(TypeError, match="does not support bool or complex"):
    lax.bitcast_convert_type(np.zeros(2, np.bool_), np.uint8)
  assert not lax.bitcast_convert_type(lax.add(1.0, 1.0), np.int32).weak_type


@given(S.arrays(np.float32, S.shapes()))
def test_reduce_precision_to_bfloat16_equals_the_cast(x):
  out = lax.reduce_precision(x, 8, 7)
  expected = x.astype(ml_dtypes.bfloat16).astype(np.float32)
  np.testing.assert_array_equal(out, expected)


@given(S.arrays(np.float32, S.shapes(), allow_nan=False))
def test_reduce_precision_to_float16_flushes_its_subnormals(x):
  out = np.asarray(lax.reduce_precision(x, 5, 10))
  with np.errstate(over="ignore"):
    half = x.astype(np.float16).astype(np.float32)
  flushed = out == 0
  np.testing.assert_array_equal(out[~flushed], half[~flushed])
  assert (np.abs(half[flushed]) < 2.0 ** -14).all()


def test_reduce_precision_nan_with_no_mantissa_bits_is_inf():
  assert lax.reduce_precision(np.float32(np.nan), 8, 0) == np.inf
  assert np.isnan(lax.reduce_precision(np.float32(np.nan), 8, 1))


# --- complex numbers ----------------------------------------------------------------------------

def test_complex_parts():
  re, im = np.array([1.0, np.inf], np.float32), np.array([np.inf, -2.0], np.float32)
  z = lax.complex(re, im)
  assert z.dtype == np.complex64
  np.testing.assert_array_equal(lax.real(z), re)
  np.testing.assert_array_equal(lax.imag(z), im)
  np.testing.assert_array_equal(lax.conj(z), np.conj(np.asarray(z)))
  conj_of_real = lax.conj(re)
  assert conj_of_real.dtype == np.complex64
  np.testing.assert_array_equal(conj_of_real, re)
  with pytest.raises(TypeError, match="complex does not accept dtype float16"):
    lax.complex(np.float16(1), np.float16(1))
  with pytest.raises(TypeError, match="real does not accept dtype float32"):
    lax.real(re)


# --- special functions ----------------------------------------------------------------------------

def test_special_function_known_values():
  f = np.float32
  np.testing.assert_allclose(lax.erf(f(1.0)), 0.8427007929497149, rtol=1e-7)
  np.testing.assert_allclose(lax.erfc(f(3.0)), 2.209049699858544e-05, rtol=1e-6)
  np.testing.assert_allclose(lax.lgamma(f(0.5)), math.log(math.sqrt(math.pi)), rtol=1e-7)
  assert lax.lgamma(f(-2.0)) == np.inf and lax.lgamma(f(-np.inf)) == np.inf
  euler = 0.5772156649015329
  np.testing.assert_allclose(lax.digamma(f(1.0)), -euler, rtol=1e-7)
  np.testing.assert_allclose(lax.digamma(f(0.5)), -euler - 2 * math.log(2), rtol=1e-7)
  np.testing.assert_allclose(lax.digamma(f(-2.5)), 1.1031566406452432, rtol=1e-6)
  assert np.isnan(lax.digamma(f(0.0))) and np.isnan(lax.digamma(f(-3.0)))
  assert lax.digamma(f(np.inf)) == np.inf
  np.testing.assert_allclose(lax.erf_inv(f(0.5)), 0.4769362762044699, rtol=1e-7)
  assert lax.erf_inv(f(1.0)) == np.inf and lax.erf_inv(f(-1.0)) == -np.inf
  assert np.isnan(lax.erf_inv(f(1.5)))


@given(S.arrays(np.float64, (8,), elements=st.floats(-6, 6)))
def test_erf_and_erfc_identities(x):
  with enable_x64():
    np.testing.assert_allclose(lax.erf(x) + lax.erfc(x), 1.0, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(lax.erf(-x), -np.asarray(lax.erf(x)), rtol=0, atol=0)


@given(S.arrays(np.float64, (8,), elements=st.floats(-1, 1, exclude_min=True, exclude_max=True)))
def test_erf_inv_inverts_erf(x):
  """XLA's float64 algorithm (Giles' polynomials): erf(y) within 1e-14 of x;
  near ±1, 1 - |x| through erfc within 1e-12 relative, plus the absolute
  error of rounding x * x in w = -log1p(-x * x) (2**-53)."""
  with enable_x64():
    y = np.asarray(lax.erf_inv(x))
  np.testing.assert_allclose([math.erf(v) for v in y], x, rtol=1e-14, atol=1e-300)
  tail = np.abs(x) > 0.5   # near ±1, also check 1 - |x| (the hard part) through erfc
  np.testing.assert_allclose([math.erfc(abs(v)) for v in y[tail]], 1 - np.abs(x[tail]),
                             rtol=1e-12, atol=2.0 ** -53)


@given(S.arrays(np.float64, (8,), elements=S.non_integer_floats(-30, 30, 1e-3)))
def test_lgamma_and_digamma_recurrences(x):
  with enable_x64():
    np.testing.assert_allclose(np.asarray(lax.lgamma(x + 1)) - lax.lgamma(x), np.log(np.abs(x)),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.asarray(lax.digamma(x + 1)) - lax.digamma(x), 1 / x,
                               rtol=1e-9, atol=1e-9)


@given(S.arrays(np.float32, (8,), elements=st.floats(0.0625, 50, width=32)))
def test_digamma_is_the_derivative_of_lgamma(x):
  h = 1e-5 * np.maximum(1.0, x.astype(np.float64))
  derivative = [(math.lgamma(v + d) - math.lgamma(v - d)) / (2 * d)
                for v, d in zip(x.astype(float), h)]
  np.testing.assert_allclose(lax.digamma(x), derivative, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [lax.erf, lax.erfc, lax.erf_inv, lax.lgamma, lax.digamma])
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_special_functions_keep_16_bit_dtypes(fn, dtype):
  x = np.array([0.25, 0.5], dtype)
  out = fn(x)
  assert out.dtype == dtype
  np.testing.assert_allclose(out.astype(np.float32), fn(x.astype(np.float32)), rtol=1e-2)


# --- shape and dtype rules, weak types ------------------------------------------------------------

def test_broadcasting_rules():
  x = np.ones((2, 3), np.float32)
  assert lax.add(x, np.float32(1)).shape == (2, 3)              # rank 0 broadcasts
  assert lax.add(x, np.ones((1, 3), np.float32)).shape == (2, 3)  # size-1 dims broadcast
  assert lax.add(np.ones((2, 1), np.float32), np.ones((1, 3), np.float32)).shape == (2, 3)
  with pytest.raises(TypeError, match="arrays must have same number of dimensions"):
    lax.add(x, np.ones(3, np.float32))
  with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
    lax.add(x, np.ones((3, 3), np.float32))


def test_dtype_errors():
  with pytest.raises(TypeError, match="sin does not accept dtype int32. Accepted dtypes are "
                                      "subtypes of floating, complexfloating"):
    lax.sin(np.int32(1))
  with pytest.raises(TypeError, match="lax.add requires arguments to have the same dtypes, "
                                      "got int32, float32"):
    lax.add(np.int32(1), np.float32(1))
  with pytest.raises(TypeError, match="add does not accept dtype bool"):
    lax.add(True, False)
  with pytest.raises(TypeError, match="shift_left does not accept dtype float32"):
    lax.shift_left(np.float32(1), np.float32(1))
  with pytest.raises(TypeError, match="abs does not accept dtype uint8"):
    lax.abs(np.uint8(1))
  with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
    lax.integer_pow(np.int32(2), -1)
  with pytest.raises(TypeError, match="the first argument to pow must have an inexact dtype"):
    lax.pow(np.float32(2), np.float16(2))
  with pytest.raises(TypeError, match="pow does not accept dtype int32 at position 0"):
    lax.pow(np.int32(2), np.int32(2))
  with pytest.raises(TypeError, match="rem does not accept dtype complex64"):
    lax.rem(np.complex64(1), np.complex64(1))
  with pytest.raises(TypeError, match="cbrt does not accept dtype complex64"):
    lax.cbrt(np.complex64(1))


def test_weak_type_propagation():
  weak = lax.add(1.0, 2.0)
  assert weak.weak_type and weak.dtype == np.float32
  assert not lax.add(weak, np.float32(1)).weak_type
  assert lax.exp(weak).weak_type
  assert lax.lt(1.0, 2.0).weak_type            # comparisons of weak values are weak bools
  assert not lax.lt(np.float32(1), 2.0).weak_type
  assert lax.abs(lax.complex(1.0, 2.0)).weak_type
  assert lax.convert_element_type(1, np.float32, weak_type=True).weak_type


def test_mul_with_out_dtype():
  out = lax.mul(np.int8(100), np.int8(3), out_dtype=np.int32)
  assert out.dtype == np.int32 and out == 300


# --- jaxprs and jit -------------------------------------------------------------------------------

def test_jaxpr_params_print_as_in_jax():
  x = np.ones(3, np.float32)
  assert str(jax.make_jaxpr(lambda x: lax.exp(x))(x)) == \
      "{ lambda ; a:f32[3]. let b:f32[3] = exp a in (b,) }"
  assert "exp[accuracy=AccuracyMode.HIGHEST]" in str(
      jax.make_jaxpr(lambda x: lax.exp(x, accuracy=lax.AccuracyMode.HIGHEST))(x))
  assert "mul a a" in str(jax.make_jaxpr(lambda x: lax.mul(x, x))(x))
  assert "round[rounding_method=0]" in str(jax.make_jaxpr(lax.round)(x))
  assert "integer_pow[y=3]" in str(jax.make_jaxpr(lambda x: lax.integer_pow(x, 3))(x))
  assert "conj[input_dtype=float32]" in str(jax.make_jaxpr(lax.conj)(x))
  assert "reduce_precision[exponent_bits=8 mantissa_bits=7]" in str(
      jax.make_jaxpr(lambda x: lax.reduce_precision(x, 8, 7))(x))
  assert "bitcast_convert_type[new_dtype=int32]" in str(
      jax.make_jaxpr(lambda x: lax.bitcast_convert_type(x, np.int32))(x))
  assert "not a" in str(jax.make_jaxpr(lax.bitwise_not)(np.ones(3, np.int32)))


@given(S.dtype_and_array(FLOATS))
def test_jit_agrees_with_eager(dtype_x):
  """A jitted program computes what its equations compute eagerly, except
  that a float32/float64 product read only by a subtraction is fused into it,
  rounded once (docs/jaxpr.md); 16-bit floats are not fused."""
  _, x = dtype_x
  f = lambda x: lax.sub(lax.mul(lax.sin(x), lax.exp(x)), lax.rsqrt(x))
  s, e, r = (np.asarray(g(x)) for g in (lax.sin, lax.exp, lax.rsqrt))
  fused = s.dtype in (np.float32, np.float64)
  _assert_equal(jax.jit(f)(x), fused_multiply_add(s, e, -r) if fused else f(x))


def test_primitive_docstrings_state_semantics():
  for prim in [lax.add_p, lax.div_p, lax.rem_p, lax.shift_left_p, lax.round_p,
               lax.convert_element_type_p, lax.digamma_p, lax.clamp_p]:
    assert prim.__doc__ and len(prim.__doc__) > 40, prim
