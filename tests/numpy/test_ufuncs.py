"""Tests of refimpl/numpy/ufuncs.py: the elementwise jnp functions against
NumPy, JAX's type promotion (against the table recorded from JAX), weak types,
the jaxprs they trace to, and the places where JAX deliberately differs from
NumPy."""

import json
import pathlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes
from refimpl.config import enable_x64
from conformance import strategies as S
from conformance.strategies import assert_close

FLOATS = S.FLOAT_DTYPES
INTS = S.INT_DTYPES
COMPLEX = S.COMPLEX_DTYPES
BOOL = S.BOOL_DTYPES
REAL = BOOL + INTS + FLOATS
_COMPLEX_PART = st.floats(-30, 30, width=32, allow_subnormal=False)
_COMPLEX_ELEMENTS = st.builds(complex, _COMPLEX_PART, _COMPLEX_PART)


def _result_dtype(kind, dtype):
  """The dtype JAX gives a function of `kind` applied to `dtype` operands."""
  dtype = np.dtype(dtype)
  if kind == "inexact" and not dtypes.is_inexact(dtype):
    return np.dtype(np.float32)
  if kind == "numeric" and dtype == np.bool_:
    return np.dtype(np.int32)
  if kind == "bool":
    return np.dtype(np.bool_)
  return dtype


@st.composite
def _operands(draw, dtype_list, n, elements=None, finite=False):
  """(dtype, arrays): n arrays of one dtype with NumPy-broadcastable shapes
  (ranks may differ: jnp promotes ranks as NumPy does)."""
  dtype = draw(st.sampled_from(dtype_list))
  shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, max_dims=3, max_side=3))
  if elements is None and dtypes.is_complex(dtype):
    elements = _COMPLEX_ELEMENTS
  kwargs = dict(allow_nan=False, allow_inf=False) if finite else {}
  return dtype, [draw(S.arrays(dtype, s, elements=elements, **kwargs))
                 for s in shapes.input_shapes]


def _check(out, expected, dtype, tolerance=None):
  assert out.dtype == dtype, (out.dtype, dtype)
  assert_close(out, np.asarray(expected).astype(dtype), dtype, rtol=tolerance, atol=tolerance)


# --- unary functions ---------------------------------------------------------------------

UNARY = [
    # (jnp function, NumPy function, result kind, operand dtypes)
    (jnp.exp, np.exp, "inexact", REAL + COMPLEX),
    (jnp.exp2, np.exp2, "inexact", REAL + COMPLEX),
    (jnp.expm1, np.expm1, "inexact", REAL),
    (jnp.log, np.log, "inexact", REAL + COMPLEX),
    (jnp.log2, np.log2, "inexact", REAL + COMPLEX),
    (jnp.log10, np.log10, "inexact", REAL + COMPLEX),
    (jnp.log1p, np.log1p, "inexact", REAL),
    (jnp.sqrt, np.sqrt, "inexact", REAL + COMPLEX),
    (jnp.cbrt, np.cbrt, "inexact", REAL),
    (jnp.sin, np.sin, "inexact", REAL + COMPLEX),
    (jnp.cos, np.cos, "inexact", REAL + COMPLEX),
    (jnp.tan, np.tan, "inexact", REAL + COMPLEX),
    (jnp.arcsin, np.arcsin, "inexact", REAL + COMPLEX),
    (jnp.arccos, np.arccos, "inexact", REAL + COMPLEX),
    (jnp.arctan, np.arctan, "inexact", REAL + COMPLEX),
    (jnp.sinh, np.sinh, "inexact", REAL + COMPLEX),
    (jnp.cosh, np.cosh, "inexact", REAL + COMPLEX),
    (jnp.tanh, np.tanh, "inexact", REAL + COMPLEX),
    (jnp.arcsinh, np.arcsinh, "inexact", REAL + COMPLEX),
    (jnp.arccosh, np.arccosh, "inexact", REAL + COMPLEX),
    (jnp.arctanh, np.arctanh, "inexact", REAL + COMPLEX),
    (jnp.asin, np.arcsin, "inexact", REAL),
    (jnp.acos, np.arccos, "inexact", REAL),
    (jnp.atan, np.arctan, "inexact", REAL),
    (jnp.asinh, np.arcsinh, "inexact", REAL),
    (jnp.acosh, np.arccosh, "inexact", REAL),
    (jnp.atanh, np.arctanh, "inexact", REAL),
    (jnp.deg2rad, np.deg2rad, "inexact", REAL),
    (jnp.rad2deg, np.rad2deg, "inexact", REAL),
    (jnp.reciprocal, np.reciprocal, "inexact", REAL),
    (jnp.sinc, np.sinc, "inexact", [np.float32]),  # 16-bit pi is too coarse to compare
    (jnp.fabs, np.fabs, "inexact", REAL),
    (jnp.rint, np.rint, "inexact", REAL + COMPLEX),
    (jnp.spacing, np.spacing, "inexact", FLOATS),
    (jnp.negative, np.negative, "same", INTS + FLOATS + COMPLEX),
    (jnp.positive, np.positive, "same", INTS + FLOATS + COMPLEX),
    (jnp.abs, np.abs, "same", REAL),
    (jnp.sign, np.sign, "same", INTS + FLOATS),
    (jnp.floor, np.floor, "same", REAL),
    (jnp.ceil, np.ceil, "same", REAL),
    (jnp.trunc, np.trunc, "same", REAL),
    (jnp.fix, np.fix, "same", REAL),
    (jnp.round, np.round, "same", REAL + COMPLEX),
    (jnp.square, np.square, "numeric", REAL + COMPLEX),
    (jnp.conjugate, np.conjugate, "same", REAL + COMPLEX),
    (jnp.real, np.real, "same", REAL),
    (jnp.invert, np.invert, "same", BOOL + INTS),
    (jnp.bitwise_not, np.bitwise_not, "same", BOOL + INTS),
    (jnp.logical_not, np.logical_not, "bool", REAL + COMPLEX),
    (jnp.isnan, np.isnan, "bool", REAL + COMPLEX),
    (jnp.isinf, np.isinf, "bool", REAL + COMPLEX),
    (jnp.isfinite, np.isfinite, "bool", REAL + COMPLEX),
    (jnp.isposinf, np.isposinf, "bool", REAL),
    (jnp.isneginf, np.isneginf, "bool", REAL),
    (jnp.signbit, np.signbit, "bool", INTS + FLOATS),
]


# jnp.spacing(±inf) is nextafter(±inf, ...) - ±inf: NaN, or inf for float16 (NumPy: NaN).
_FINITE_ONLY = (jnp.spacing,)


@pytest.mark.parametrize("fn, np_fn, kind, dtype_list", UNARY,
                         ids=[f.__name__ for f, *_ in UNARY])
@given(data=st.data())
def test_unary_matches_numpy(fn, np_fn, kind, dtype_list, data):
  dtype, (x,) = data.draw(_operands(dtype_list, 1, finite=fn in _FINITE_ONLY))
  want = _result_dtype(kind, dtype)
  out = fn(x)
  compute_in = x.astype(want) if kind == "inexact" else x
  with np.errstate(all="ignore"):
    expected = np_fn(compute_in)
  _check(out, expected, want)


def test_abs_of_complex_is_real():
  out = jnp.abs(np.array([3 + 4j], np.complex64))
  assert out.dtype == np.float32 and out[0] == 5


def test_imag_of_real_is_zero():
  out = jnp.imag(np.array([1.5, -2.0], np.float32))
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, [0, 0])


def test_bitwise_count_counts_the_magnitude_as_uint8():
  out = jnp.bitwise_count(np.array([-1, 7, 0, -128], np.int8))
  assert out.dtype == np.uint8
  np.testing.assert_array_equal(out, [1, 3, 0, 1])


# --- binary functions ---------------------------------------------------------------------------

BINARY = [
    (jnp.add, np.add, "same", REAL + COMPLEX, {}),
    (jnp.subtract, np.subtract, "same", INTS + FLOATS + COMPLEX, {}),
    (jnp.multiply, np.multiply, "same", REAL + COMPLEX, {}),
    (jnp.true_divide, np.true_divide, "inexact", REAL + COMPLEX, {}),
    (jnp.divide, np.divide, "inexact", FLOATS, {}),
    (jnp.maximum, np.maximum, "same", REAL + COMPLEX, {}),
    (jnp.minimum, np.minimum, "same", REAL + COMPLEX, {}),
    (jnp.fmax, np.fmax, "same", REAL, {}),
    (jnp.fmin, np.fmin, "same", REAL, {}),
    (jnp.arctan2, np.arctan2, "inexact", REAL, {}),
    (jnp.atan2, np.arctan2, "inexact", FLOATS, {}),
    (jnp.hypot, np.hypot, "inexact", REAL, {}),
    (jnp.logaddexp, np.logaddexp, "inexact", REAL, dict(log_tolerance=True)),
    (jnp.logaddexp2, np.logaddexp2, "inexact", REAL, dict(log_tolerance=True)),
    (jnp.copysign, np.copysign, "inexact", REAL, {}),
    (jnp.nextafter, np.nextafter, "inexact", FLOATS, {}),
    (jnp.heaviside, np.heaviside, "inexact", REAL, dict(x_not_nan=True)),
    (jnp.float_power, np.power, "inexact", FLOATS, {}),
    (jnp.power, np.power, "same", FLOATS, {}),
    (jnp.equal, np.equal, "bool", REAL + COMPLEX, {}),
    (jnp.not_equal, np.not_equal, "bool", REAL + COMPLEX, {}),
    (jnp.less, np.less, "bool", REAL + COMPLEX, {}),
    (jnp.less_equal, np.less_equal, "bool", REAL + COMPLEX, {}),
    (jnp.greater, np.greater, "bool", REAL + COMPLEX, {}),
    (jnp.greater_equal, np.greater_equal, "bool", REAL + COMPLEX, {}),
    (jnp.logical_and, np.logical_and, "bool", REAL + COMPLEX, {}),
    (jnp.logical_or, np.logical_or, "bool", REAL + COMPLEX, {}),
    (jnp.logical_xor, np.logical_xor, "bool", REAL + COMPLEX, {}),
    (jnp.bitwise_and, np.bitwise_and, "same", BOOL + INTS, {}),
    (jnp.bitwise_or, np.bitwise_or, "same", BOOL + INTS, {}),
    (jnp.bitwise_xor, np.bitwise_xor, "same", BOOL + INTS, {}),
    # Divisions with nonzero, finite divisors (see the divergence tests below).
    (jnp.floor_divide, np.floor_divide, "numeric", REAL, dict(finite=True, nonzero=True)),
    (jnp.remainder, np.remainder, "numeric", REAL, dict(finite=True, nonzero=True)),
    (jnp.mod, np.mod, "numeric", INTS, dict(nonzero=True)),
    (jnp.fmod, np.fmod, "numeric", REAL, dict(finite=True, nonzero=True)),
]


@pytest.mark.parametrize("fn, np_fn, kind, dtype_list, options", BINARY,
                         ids=[f.__name__ for f, *_ in BINARY])
@given(data=st.data())
def test_binary_matches_numpy(fn, np_fn, kind, dtype_list, options, data):
  dtype, (x, y) = data.draw(_operands(dtype_list, 2, finite=options.get("finite", False)))
  if options.get("nonzero"):
    y = np.where(y == 0, np.ones_like(y), y)
  if options.get("x_not_nan"):
    x = np.where(x != x, np.zeros_like(x), x)
  want = _result_dtype(kind, dtype)
  out = fn(x, y)
  assert out.shape == np.broadcast_shapes(x.shape, y.shape)
  with np.errstate(all="ignore"):
    expected = np_fn(x.astype(want), y.astype(want)) if kind != "bool" else np_fn(x, y)
  _check(out, expected, want,
         _LOG_TOLERANCE.get(np.dtype(want)) if options.get("log_tolerance") else None)


@given(data=st.data())
def test_divmod_matches_numpy(data):
  dtype, (x, y) = data.draw(_operands(INTS + FLOATS, 2, finite=True))
  y = np.where(y == 0, np.ones_like(y), y)
  quotient, remainder = jnp.divmod(x, y)
  with np.errstate(all="ignore"):
    expected_q, expected_r = np.divmod(x, y)
  _check(quotient, expected_q, dtype)
  _check(remainder, expected_r, dtype)


@given(data=st.data())
def test_integer_power_and_shifts_match_numpy(data):
  dtype = data.draw(st.sampled_from(INTS))
  bits = np.dtype(dtype).itemsize * 8
  x = data.draw(S.arrays(dtype, (4,)))
  exponent = data.draw(S.arrays(dtype, (4,), elements=st.integers(0, min(bits - 1, 20))))
  np.testing.assert_array_equal(jnp.power(x, exponent), np.power(x, exponent))
  np.testing.assert_array_equal(jnp.left_shift(x, exponent), np.left_shift(x, exponent))
  np.testing.assert_array_equal(jnp.right_shift(x, exponent), np.right_shift(x, exponent))


@given(data=st.data())
def test_gcd_and_lcm_match_numpy(data):
  dtype = data.draw(st.sampled_from([np.int8, np.int32, np.uint16]))
  bound = 127 if dtype == np.int8 else 1000
  low = 0 if dtype == np.uint16 else -bound
  dtype, (x, y) = data.draw(_operands([dtype], 2, elements=st.integers(low, bound)))
  np.testing.assert_array_equal(jnp.gcd(x, y), np.gcd(x, y))
  np.testing.assert_array_equal(jnp.lcm(x, y), np.lcm(x, y))


def test_gcd_is_a_while_loop_as_in_jax():
  x1 = np.array([12, 7, 0, -21, 0], np.int32)
  x2 = np.array([18, 0, 5, 14, 0], np.int32)
  text = str(jax.make_jaxpr(jnp.gcd)(x1, x2))
  assert text.count("while[") == 1 and "reduce_or[axes=(0,)]" in text  # cond: any(b != 0)
  assert "while[" in str(jax.make_jaxpr(jnp.lcm)(x1, x2))
  for fun, ref in ((jnp.gcd, np.gcd), (jnp.lcm, np.lcm)):
    np.testing.assert_array_equal(jax.jit(fun)(x1, x2), ref(x1, x2))
    # vmap: each member's loop stops on its own (a batched predicate)
    np.testing.assert_array_equal(jax.vmap(fun)(x1, x2), ref(x1, x2))
    np.testing.assert_array_equal(jax.vmap(fun, (0, None))(x1, np.int32(6)), ref(x1, 6))
  # consecutive Fibonacci numbers need the most steps for their size
  np.testing.assert_array_equal(jnp.gcd(np.int8(89), np.int8(-55)), 1)
  assert jnp.gcd(12, 18).weak_type and int(jnp.gcd(12, 18)) == 6
  # abs(INT_MIN) wraps: the loop still ends (JAX's can cycle), with the divergence's values
  int_min = np.iinfo(np.int32).min
  np.testing.assert_array_equal(jnp.gcd(np.array([int_min, int_min, 5]), np.array([6, 0, int_min])),
                                [-2, int_min, -1])


def test_integer_power_with_array_exponents_is_unrolled_as_in_jax():
  # JAX's _pow_int_int is binary exponentiation unrolled over 6 bits: no loop primitive
  text = str(jax.make_jaxpr(jnp.power)(np.arange(4), np.arange(4)))
  assert "while[" not in text and "scan[" not in text and text.count("mul") == 12
  np.testing.assert_array_equal(jax.vmap(jnp.power)(np.arange(4), np.arange(4)), [1, 1, 4, 27])


# --- other functions against NumPy ----------------------------------------------------------------

@given(S.dtype_and_array(FLOATS))
def test_frexp_and_ldexp_match_numpy(dtype_x):
  dtype, x = dtype_x
  mantissa, exponent = jnp.frexp(x)
  expected_m, expected_e = np.frexp(x)
  assert mantissa.dtype == dtype and exponent.dtype == np.int32
  assert_close(mantissa, expected_m, dtype)
  finite = np.isfinite(x.astype(np.float32))
  np.testing.assert_array_equal(np.asarray(exponent)[finite], expected_e[finite])
  np.testing.assert_array_equal(np.asarray(jnp.ldexp(mantissa, exponent)).astype(np.float32),
                                x.astype(np.float32))


@given(S.dtype_and_array(FLOATS), st.integers(-40, 40))
def test_ldexp_matches_numpy(dtype_x, n):
  dtype, x = dtype_x
  with np.errstate(over="ignore"):
    expected = np.ldexp(x, np.int32(n))
  _check(jnp.ldexp(x, n), expected, dtype)


@given(S.dtype_and_array(FLOATS, allow_nan=False, allow_inf=False))
def test_modf_matches_numpy(dtype_x):
  dtype, x = dtype_x
  x = np.where(np.isfinite(x.astype(np.float32)), x, np.zeros_like(x))  # bfloat16 rounds to inf
  fraction, whole = jnp.modf(x)
  expected_f, expected_w = np.modf(x)
  _check(fraction, expected_f, dtype)
  _check(whole, expected_w, dtype)


@given(S.dtype_and_array(FLOATS + COMPLEX))
def test_nan_to_num_and_angle_match_numpy(dtype_x):
  dtype, x = dtype_x
  if dtype in COMPLEX:
    expected = np.nan_to_num(x)
  else:  # NumPy's nan_to_num does not know bfloat16's limits: use float32 with them
    info = dtypes.finfo(dtype)
    expected = np.nan_to_num(x.astype(np.float32), posinf=float(info.max), neginf=float(info.min))
  _check(jnp.nan_to_num(x), expected, dtype)
  # As in JAX, a rank-0 real operand gives the default float.
  angle_dtype = np.dtype(np.float32) if dtype in COMPLEX or x.ndim == 0 else dtype
  with np.errstate(invalid="ignore"):
    _check(jnp.angle(x), np.angle(x if dtype in COMPLEX else x.astype(angle_dtype)), angle_dtype)


def test_modf_of_infinity_follows_jax():
  fraction, whole = jnp.modf(np.float32(np.inf))
  assert whole == np.inf and np.isnan(fraction)   # x - floor(x); NumPy gives 0.0


@given(data=st.data(), equal_nan=st.booleans())
def test_isclose_matches_numpy(data, equal_nan):
  dtype, (x, y) = data.draw(_operands(FLOATS[2:] + INTS, 2))
  np.testing.assert_array_equal(jnp.isclose(x, y, equal_nan=equal_nan),
                                np.isclose(x, y, equal_nan=equal_nan))


@given(data=st.data())
def test_clip_matches_numpy(data):
  dtype, (x, lo, hi) = data.draw(_operands(INTS + FLOATS, 3))
  with np.errstate(invalid="ignore"):
    expected = np.minimum(hi, np.maximum(lo, x))
  _check(jnp.clip(x, lo, hi), expected, dtype)
  _check(jnp.clip(x, max=hi), np.minimum(hi, x), dtype)
  _check(jnp.clip(x), x, dtype)


def test_clip_rejects_complex():
  with pytest.raises(ValueError, match="Complex values have no ordering"):
    jnp.clip(np.ones(2, np.complex64), 0, 1)


@given(data=st.data())
def test_where_matches_numpy(data):
  dtype, (c, x, y) = data.draw(_operands(REAL, 3))
  out = jnp.where(c, x, y)
  _check(out, np.where(c, x, y), dtype)


def test_where_promotes_and_broadcasts():
  out = jnp.where(np.array([True, False]), np.int8(3), 2.5)
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, [3, 2.5])
  assert jnp.where(np.array([1, 0]), np.float16(1), np.float16(2)).dtype == np.float16
  with pytest.raises(ValueError, match="Either both or neither"):
    jnp.where(True, 1)


@pytest.mark.parametrize("decimals", [-1, 0, 1, 2])
def test_round_decimals(decimals):
  x = np.array([1.2345, -2.5, 0.5, 1.5, 123.456], np.float32)
  np.testing.assert_allclose(jnp.round(x, decimals), np.round(x, decimals), rtol=1e-6)
  np.testing.assert_array_equal(jnp.around(np.array([1, 2], np.int32)), [1, 2])


# --- promotion ------------------------------------------------------------------------------------

_GOLDEN = json.loads((pathlib.Path(__file__).parent.parent / "data" / "promotion.json").read_text())
_DTYPES_BY_NAME = {np.dtype(d).name: np.dtype(d) for d in dtypes.SUPPORTED_DTYPES}
_PYTHON_SCALARS = {"python int": 1, "python float": 1.0, "python bool": True}


@pytest.mark.parametrize("pair", sorted(_GOLDEN["promote_types (x64 enabled)"]))
def test_promote_types_matches_jax(pair):
  a, b = pair.split(",")
  with enable_x64():
    got = jnp.promote_types(_DTYPES_BY_NAME[a], _DTYPES_BY_NAME[b])
  assert np.dtype(got).name == _GOLDEN["promote_types (x64 enabled)"][pair]


@pytest.mark.parametrize("case", sorted(_GOLDEN["array + python scalar (x64 disabled)"]))
def test_array_plus_python_scalar_matches_jax(case):
  array_dtype, scalar = case.split(" + ")
  x = np.zeros(3, _DTYPES_BY_NAME[array_dtype])
  out = jnp.add(x, _PYTHON_SCALARS[scalar])
  assert out.dtype.name == _GOLDEN["array + python scalar (x64 disabled)"][case]
  # Weak exactly when the scalar's kind wins (JAX's lattice: i8 with f* is f*).
  assert out.weak_type == (out.dtype != x.dtype)


def test_promotion_where_jax_differs_from_numpy():
  i8, u8 = np.ones(2, np.int8), np.ones(2, np.uint8)
  assert jnp.add(i8, u8).dtype == np.int16 == np.add(i8, u8).dtype
  # x64 off: int64 -> int32
  assert jnp.add(np.ones(2, np.int32), np.ones(2, np.uint32)).dtype == np.int32
  with enable_x64():
    assert jnp.add(np.ones(2, np.int64), np.ones(2, np.uint64)).dtype == np.float64
  # An int32 array and a Python float: float32 (NumPy: float64). As in JAX's
  # table (i32 with f* is f*), the result is weakly typed.
  mixed = jnp.add(np.ones(2, np.int32), 1.5)
  assert mixed.dtype == np.float32 and mixed.weak_type
  assert jnp.add(np.ones(2, np.float16), 1.5).dtype == np.float16
  assert jnp.add(np.ones(2, ml_dtypes.bfloat16), np.ones(2, np.float16)).dtype == np.float32
  assert jnp.multiply(np.ones(2, np.uint8), 300).dtype == np.uint8
  half = jnp.divide(1, 2)
  assert half == 0.5 and half.dtype == np.float32
  assert jnp.true_divide(np.ones(2, np.int32), np.ones(2, np.int32)).dtype == np.float32


def test_result_type_and_promote_types():
  assert jnp.result_type(np.int8, np.uint8) == np.int16
  assert jnp.result_type(np.ones(2, np.float16), 1.0) == np.float16
  assert jnp.promote_types(np.int32, np.float32) == np.float32


def test_weak_types():
  assert jnp.add(1.0, 2.0).weak_type and jnp.add(1.0, 2.0).dtype == np.float32
  assert not jnp.add(np.float32(1), 2.0).weak_type
  assert jnp.exp(1).weak_type and jnp.exp(1).dtype == np.float32
  assert jnp.less(1, 2).weak_type   # as in JAX: Array(True, dtype=bool, weak_type=True)
  assert not jnp.multiply(2, np.ones(2, np.float16)).weak_type


# --- JAX semantics that differ from NumPy ---------------------------------------------------------

def test_astype_saturates_float_to_int():
  np.testing.assert_array_equal(jnp.arange(254.0, 258.0).astype("uint8"), [254, 255, 255, 255])
  np.testing.assert_array_equal(jnp.astype(np.array([np.nan, -3.9, 1e10], np.float32), np.int32),
                                [0, -3, 2 ** 31 - 1])
  np.testing.assert_array_equal(jnp.astype(np.array([2j, 0], np.complex64), bool), [True, False])


def test_integer_division_by_zero_follows_xla():
  x = np.array([7, -7], np.int32)
  zero = np.zeros(2, np.int32)
  np.testing.assert_array_equal(jnp.remainder(x, zero), [0, 0])
  np.testing.assert_array_equal(jnp.fmod(x, zero), [0, 0])
  # floor_divide: lax.div gives -1, then the sign correction applies.
  np.testing.assert_array_equal(jnp.floor_divide(x, zero), [-2, -2])
  # floats by ±0: x / 0 as NumPy (and JAX 0.10), the remainder NaN
  x = np.array([1, -1, 0, np.inf, -np.inf, np.nan], np.float32)
  for zero in (np.float32(0), np.float32(-0.0)):
    with np.errstate(all="ignore"):
      want = np.divmod(x, zero)
    for got, expected in zip(jnp.divmod(x, zero), want):
      np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(jnp.floor_divide(x, zero), want[0])
    np.testing.assert_array_equal(x // jnp.asarray(zero), want[0])


def test_remainder_and_fmod_signs():
  x, y = np.array([-7, 7, -7, 7], np.int32), np.array([2, -2, -2, 2], np.int32)
  np.testing.assert_array_equal(jnp.remainder(x, y), [1, -1, -1, 1])
  np.testing.assert_array_equal(jnp.fmod(x, y), [-1, 1, -1, 1])
  np.testing.assert_array_equal(jnp.floor_divide(x, y), [-4, -4, 3, 3])


def test_right_shift_is_arithmetic_for_signed_and_logical_for_unsigned():
  assert jnp.right_shift(np.int8(-128), 1) == -64
  assert jnp.right_shift(np.uint8(128), 1) == 64
  assert jnp.left_shift(np.int32(1), 40) == 0       # XLA: shift >= bit width gives 0
  assert jnp.right_shift(np.int32(-5), 40) == -1


def test_integer_power_with_negative_exponent_as_in_jax():
  with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
    jnp.power(np.int32(2), -1)   # a concrete scalar exponent: integer_pow
  # An exponent array: binary exponentiation over its low 6 bits, so -1 acts as 63.
  np.testing.assert_array_equal(jnp.power(np.array([2, 3], np.int32), np.array([-1, 0], np.int32)),
                                [0, 1])
  assert jnp.power(np.zeros(1, np.int32), np.zeros(1, np.int32)) == 1


def test_broadcasting_of_mismatched_shapes_fails():
  with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
    jnp.add(np.ones(3, np.float32), np.ones(4, np.float32))
  assert jnp.add(np.ones((2, 1), np.float32), np.ones(3, np.float32)).shape == (2, 3)


def test_list_arguments_are_rejected():
  for fn, args in [(jnp.add, ([1, 2], 1)), (jnp.exp, ([1.0],)), (jnp.where, (True, [1], 2)),
                   (jnp.clip, ([1, 2], 0, 1)), (jnp.power, ((1, 2), 2))]:
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
      fn(*args)


def test_one_argument_where():
  if hasattr(jnp, "nonzero"):
    (indices,) = jnp.where(np.array([0, 3, 0, 4]))
    np.testing.assert_array_equal(indices, [1, 3])
  else:
    with pytest.raises(NotImplementedError, match="jnp.nonzero"):
      jnp.where(np.array([0, 1]))


def test_special_values():
  f = np.float32
  assert jnp.heaviside(f(np.nan), f(0.5)) == 0.5   # JAX gives x2 for a NaN x1; NumPy NaN
  np.testing.assert_allclose(jnp.reciprocal(np.complex64(1 + 1j)), 0.5 - 0.5j, rtol=1e-7)
  assert jnp.hypot(f(np.inf), f(np.nan)) == np.inf
  assert jnp.logaddexp(f(-np.inf), f(-np.inf)) == -np.inf
  assert jnp.logaddexp(f(np.inf), f(np.inf)) == np.inf
  assert jnp.sinc(f(0)) == 1
  assert jnp.signbit(f(-0.0)) and not jnp.signbit(f(0.0)) and jnp.signbit(f(-np.nan))
  assert np.signbit(jnp.copysign(f(2), f(-0.0))) and jnp.copysign(f(2), f(-0.0)) == -2
  np.testing.assert_allclose(jnp.logaddexp(np.complex64(1 + 1j), np.complex64(2 - 1j)),
                             np.log(np.exp(1 + 1j) + np.exp(2 - 1j)), rtol=1e-6)


# --- jaxprs ---------------------------------------------------------------------------------------

def _jaxpr(fn, *args):
  return str(jax.make_jaxpr(fn)(*args))


def test_jaxprs_match_jax():
  x = np.ones(3, np.float32)
  assert _jaxpr(lambda x: x + 2.0, x) == \
      "{ lambda ; a:f32[3]. let b:f32[3] = add a 2.0:f32[] in (b,) }"
  assert _jaxpr(lambda x: jnp.exp(-x), x) == \
      "{ lambda ; a:f32[3]. let b:f32[3] = neg a; c:f32[3] = exp b in (c,) }"
  assert _jaxpr(lambda x: x ** 2, x) == \
      "{ lambda ; a:f32[3]. let b:f32[3] = integer_pow[y=2] a in (b,) }"
  assert _jaxpr(jnp.square, x) == "{ lambda ; a:f32[3]. let b:f32[3] = square a in (b,) }"
  assert _jaxpr(lambda x: x ** 2.5, x) == \
      "{ lambda ; a:f32[3]. let b:f32[3] = pow a 2.5:f32[] in (b,) }"
  # Functions JAX wraps in jit show as jit equations holding their jaxpr.
  assert _jaxpr(jnp.rint, x) == (
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[3] = jit[\n"
      "      name=rint\n"
      "      jaxpr={ lambda ; c:f32[3]. let d:f32[3] = round[rounding_method=1] c in (d,) }\n"
      "    ] a\n"
      "  in (b,) }")
  remainder = _jaxpr(lambda i: i % 3, np.ones(3, np.int32))
  assert "name=remainder" in remainder and "] a 3:i32[]" in remainder
  assert _jaxpr(lambda i: i / 2, np.ones(3, np.int32)) == (
      "{ lambda ; a:i32[3]. let\n"
      "    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
      "    c:f32[3] = div b 2.0:f32[]\n"
      "  in (c,) }")
  where = _jaxpr(lambda x: jnp.where(x > 1, x, 0.0), x)
  assert "gt a 1.0:f32[]" in where and "select_n" in where
  assert _jaxpr(jnp.log2, x).count("log") == 2
  assert "shift_right_arithmetic" in _jaxpr(lambda i: i >> 1, np.ones(3, np.int32))
  assert "shift_right_logical" in _jaxpr(lambda i: i >> 1, np.ones(3, np.uint32))
  assert "or a b" in _jaxpr(jnp.add, np.ones(2, bool), np.ones(2, bool))


def test_traced_power_of_integer_arrays_uses_binary_exponentiation():
  text = _jaxpr(jnp.power, np.ones(3, np.int32), np.ones(3, np.int32))
  assert text.count("shift_right_logical") == 6 and "pow" not in text.replace("pow[", "")


def test_array_operators_use_these_functions():
  x = jnp.asarray(np.array([5, -7], np.int32))
  np.testing.assert_array_equal(x // 2, [2, -4])
  np.testing.assert_array_equal(x % 3, [2, 2])
  np.testing.assert_array_equal(-x, [-5, 7])
  np.testing.assert_array_equal(abs(x), [5, 7])
  np.testing.assert_array_equal(~x, [-6, 6])
  np.testing.assert_array_equal(x ** 2, [25, 49])
  np.testing.assert_array_equal(2 ** jnp.asarray(np.array([1, 5], np.int32)), [2, 32])
  q, r = divmod(x, 3)
  np.testing.assert_array_equal(q, [1, -3])
  np.testing.assert_array_equal(r, [2, 2])
  assert round(jnp.asarray(np.float32(2.5))) == 2


@given(a=st.sampled_from(S.ALL_DTYPES), b=st.sampled_from(S.ALL_DTYPES),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       data=st.data())
def test_mixed_dtype_and_shape_operands_promote_and_broadcast(a, b, shapes, data):
  """For any two dtypes and broadcastable shapes: the result has the lattice
  promotion of the dtypes and NumPy's broadcast shape, and multiply's values
  equal NumPy's computed in that dtype."""
  x = data.draw(S.arrays(a, shapes.input_shapes[0], allow_nan=False, allow_inf=False))
  y = data.draw(S.arrays(b, shapes.input_shapes[1], allow_nan=False, allow_inf=False))
  out = jnp.multiply(x, y)
  want = dtypes.canonicalize_dtype(dtypes.promote_types(a, b))
  assert out.dtype == want and not out.weak_type
  assert out.shape == shapes.result_shape
  with np.errstate(all="ignore"):
    expected = (x.astype(want) * y.astype(want)) if want != np.bool_ else (x & y)
  assert_close(out, expected, dtype=want)


@given(a=st.sampled_from(S.ALL_DTYPES),
       scalar=st.one_of(st.booleans(), st.integers(-100, 100), st.floats(-10, 10)))
def test_python_scalars_are_weak_in_promotion(a, scalar):
  """An array meeting a Python scalar keeps its dtype unless the scalar's kind is
  higher (int < float < complex); a result of a higher kind is weakly typed."""
  x = np.zeros(2, a)
  out = (jnp.add(x, scalar) if a != np.bool_ or type(scalar) is not bool
         else jnp.logical_or(x, scalar))
  want, weak = dtypes.result_type_and_weak_type(x, scalar)
  assert (out.dtype, out.weak_type) == (want, weak)
  def rank(dt):  # bool < int < float < complex
    return (dtypes.is_integer(dt) + 2 * dtypes.is_float(dt) + 3 * dtypes.is_complex(dt))
  if rank(a) >= rank(np.dtype(type(scalar))):
    assert out.dtype == a and not out.weak_type
  else:
    assert out.weak_type


# --- the ufunc objects: attributes, and their methods against NumPy's ufuncs -------------------

# JAX's ufunc objects; every other function here is a plain function, as in JAX.
UFUNC_NAMES = ["add", "subtract", "multiply", "maximum", "minimum", "logaddexp", "logaddexp2",
               "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
               "bitwise_xor"]
# The operand dtypes for which NumPy's ufunc method is the reference (the logical ufuncs
# convert a complex operand by its real part in JAX, NumPy by its value).
UFUNC_DTYPES = {
    "add": BOOL + INTS + FLOATS + COMPLEX, "subtract": INTS + FLOATS + COMPLEX,
    "multiply": BOOL + INTS + FLOATS, "maximum": REAL, "minimum": REAL,
    "logaddexp": FLOATS, "logaddexp2": FLOATS, "logical_and": REAL, "logical_or": REAL,
    "logical_xor": REAL, "bitwise_and": BOOL + INTS, "bitwise_or": BOOL + INTS,
    "bitwise_xor": BOOL + INTS,
}
# logaddexp and logaddexp2 compute in the operand's dtype: the log of a sum,
# with the maximum subtracted and added back, loses up to a few ulps of it.
_LOG_TOLERANCE = {np.dtype(dtypes.float16): 3e-2, np.dtype(dtypes.bfloat16): 2e-1,
                  np.dtype(dtypes.float32): 5e-5}


def test_which_functions_are_ufuncs():
  ufuncs = sorted(n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc))
  assert ufuncs == sorted(UFUNC_NAMES + ["negative"])
  for name in ("sin", "divmod", "frexp", "modf", "equal", "isclose", "where", "clip"):
    assert not isinstance(getattr(jnp, name), jnp.ufunc), name


@pytest.mark.parametrize("name", UFUNC_NAMES + ["negative"])
def test_ufunc_attributes_match_numpy(name):
  f, np_f = getattr(jnp, name), getattr(np, name)
  assert repr(f) == f"<jnp.ufunc '{name}'>" and f.__name__ == name
  assert f.__doc__ == f._func.__doc__
  assert (f.nin, f.nout, f.nargs) == (np_f.nin, np_f.nout, np_f.nargs - 1)  # NumPy counts `out`
  assert f.identity == np_f.identity and type(f.identity) is type(np_f.identity)


def _reduce_dtype(name, dtype, accumulate=False):
  """The dtype of JAX's `name.reduce` (`name.accumulate`) of a `dtype` array."""
  dtype = np.dtype(dtype)
  if name.startswith("logical"):
    return np.dtype(np.bool_)
  if name in ("add", "multiply") and dtype == np.bool_:
    return np.dtype(np.int32)   # jnp.sum / jnp.cumsum count booleans as int32
  if name in ("add", "multiply") and dtypes.is_integer(dtype) and dtype.itemsize < 4 \
      and not accumulate:
    return np.dtype(np.uint32 if dtypes.is_unsigned(dtype) else np.int32)  # jnp.sum promotes
  return dtype


def _ufunc_operand(draw, name, dtype, shape):
  """An operand for `name`'s methods: integers small enough that sums and
  products cannot overflow; logaddexp's floats moderate (or infinite, NaN)."""
  if name in ("add", "subtract", "multiply") and not dtypes.is_float(dtype):
    return draw(S.small_integer_arrays(dtype, shape, bound=2 if name == "multiply" else 4))
  if name.startswith("logaddexp"):
    finite = st.floats(-20, 20, width=16 if dtype == dtypes.float16 else 32)
    special = st.sampled_from([np.inf, -np.inf, np.nan])
    return draw(S.arrays(dtype, shape, elements=finite | special))
  return draw(S.arrays(dtype, shape))


def _numpy_method(name, method, x, *args, **kwargs):
  """NumPy's `getattr(np, name).method(x, ...)`, floats computed in float64
  (complex128) except for subtract, which NumPy folds in the operand's dtype
  just as the reference does."""
  if name != "subtract" and dtypes.is_inexact(x.dtype):
    wide = np.complex128 if dtypes.is_complex(x.dtype) else np.float64
    x = x.astype(wide)
    args = tuple(np.asarray(a).astype(wide) for a in args)
    kwargs = {k: (np.asarray(v).astype(wide) if k == "initial" else v) for k, v in kwargs.items()}
  with np.errstate(all="ignore"):
    return getattr(getattr(np, name), method)(x, *args, **kwargs)


def _check_method_result(name, out, expected, dtype):
  assert out.dtype == dtype, (name, out.dtype, dtype)
  tolerance = _LOG_TOLERANCE.get(np.dtype(dtype)) if name.startswith("logaddexp") else None
  assert_close(out, np.asarray(expected).astype(dtype), dtype, rtol=tolerance, atol=tolerance)


@given(name=st.sampled_from(UFUNC_NAMES), data=st.data())
def test_ufunc_reduce_matches_numpy(name, data):
  """`jnp.<ufunc>.reduce` against NumPy's for each binary ufunc: axis None, an
  int or a tuple (one axis for subtract, which is not reorderable), keepdims,
  a `where` mask (with `initial` for the ufuncs without identity), `initial`,
  empty axes (the identity, else the ValueError both raise)."""
  f = getattr(jnp, name)
  dtype = data.draw(st.sampled_from(UFUNC_DTYPES[name]))
  x = _ufunc_operand(data.draw, name, dtype, data.draw(S.shapes(max_side=3)))
  kwargs = dict(axis=data.draw(S.axes(x.ndim, allow_tuple=name != "subtract")),
                keepdims=data.draw(st.booleans()))
  if data.draw(st.booleans()):
    kwargs["where"] = data.draw(S.arrays(np.bool_, data.draw(st.sampled_from(
        [x.shape, x.shape[1:], (1,) * x.ndim]))))
  if (f.identity is None and "where" in kwargs) or data.draw(st.booleans()):
    kwargs["initial"] = _ufunc_operand(data.draw, name, dtype, ())[()]
  np_kwargs = kwargs
  if name == "subtract" and kwargs["axis"] is None:  # NumPy folds it over one axis only
    x_np, np_kwargs = x.ravel(), {**kwargs, "axis": 0, "keepdims": False}
    if "where" in kwargs:
      np_kwargs["where"] = np.broadcast_to(kwargs["where"], x.shape).ravel()
  else:
    x_np = x
  reduced = range(x.ndim) if kwargs["axis"] is None else np.atleast_1d(kwargs["axis"])
  if f.identity is None and "initial" not in kwargs and any(x.shape[d] == 0 for d in reduced):
    with pytest.raises(ValueError, match="zero-size array"):
      f.reduce(x, **kwargs)
    with pytest.raises(ValueError):
      _numpy_method(name, "reduce", x_np, **np_kwargs)
    return
  out = f.reduce(x, **kwargs)
  expected = _numpy_method(name, "reduce", x_np, **np_kwargs)
  _check_method_result(name, out, np.reshape(expected, out.shape), _reduce_dtype(name, dtype))


@given(name=st.sampled_from(UFUNC_NAMES), data=st.data())
def test_ufunc_accumulate_matches_numpy(name, data):
  f = getattr(jnp, name)
  dtype = data.draw(st.sampled_from(UFUNC_DTYPES[name]))
  x = _ufunc_operand(data.draw, name, dtype, data.draw(S.shapes(min_dims=1, max_side=4)))
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  out = f.accumulate(x, axis=axis)
  expected = _numpy_method(name, "accumulate", x, axis=axis)
  _check_method_result(name, out, expected, _reduce_dtype(name, dtype, accumulate=True))


@given(name=st.sampled_from(UFUNC_NAMES), data=st.data())
def test_ufunc_outer_matches_numpy(name, data):
  f = getattr(jnp, name)
  dtype = data.draw(st.sampled_from(UFUNC_DTYPES[name]))
  a, b = (_ufunc_operand(data.draw, name, dtype, data.draw(S.shapes(max_dims=2, max_side=3)))
          for _ in range(2))
  out = f.outer(a, b)
  expected = _numpy_method(name, "outer", a, b)
  _check_method_result(name, out, expected, f(a.flat[:1], b.flat[:1]).dtype)


@given(name=st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum",
                             "bitwise_or", "logical_xor", "negative"]),
       data=st.data())
def test_ufunc_at_matches_numpy(name, data):
  """`jnp.<ufunc>.at(x, indices, values, inplace=False)` against NumPy's
  in-place `ufunc.at`: repeated and negative indices apply the function
  repeatedly, in order. add, multiply and subtract scatter (`x.at[i].add`);
  the others fold the call over the indices."""
  f = getattr(jnp, name)
  dtype = data.draw(st.sampled_from(UFUNC_DTYPES.get(name, INTS + FLOATS)))
  shape = data.draw(S.shapes(min_dims=1, min_side=1, max_side=3))
  x = data.draw(S.small_integer_arrays(dtype, shape, bound=3))
  indices = data.draw(S.index_arrays(shape[0], data.draw(S.shapes(max_dims=1, max_side=4))))
  values = () if name == "negative" else (data.draw(S.small_integer_arrays(
      dtype, data.draw(st.sampled_from([(), indices.shape + shape[1:]])), bound=3)),)
  out = f.at(x, indices, *values, inplace=False)
  expected = x.copy()
  getattr(np, name).at(expected, indices, *values)
  _check_method_result(name, out, expected, np.dtype(bool) if name == "logical_xor" else x.dtype)


@given(name=st.sampled_from(["add", "subtract", "maximum", "bitwise_xor"]), data=st.data())
def test_ufunc_reduceat_matches_numpy(name, data):
  """Segments `x[i[j]:i[j+1]]` along `axis`, in any order (a segment that
  does not increase is the element `x[i[j]]`), as NumPy's `reduceat`."""
  f = getattr(jnp, name)
  dtype = data.draw(st.sampled_from([d for d in UFUNC_DTYPES[name] if d != np.bool_]))
  shape = data.draw(S.shapes(min_dims=1, min_side=1, max_side=4))
  x = data.draw(S.small_integer_arrays(dtype, shape, bound=4))
  axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
  indices = data.draw(hnp.arrays(np.int32, data.draw(st.integers(0, 5)),
                                 elements=st.integers(0, shape[axis] - 1)))
  out = f.reduceat(x, indices, axis=axis)
  _check_method_result(name, out, np.asarray(getattr(np, name).reduceat(x, indices, axis=axis)),
                       np.dtype(dtype))


def test_ufunc_method_examples_from_jax():
  x = jnp.array([[1, 2, 3], [4, 5, 6]])
  assert jnp.add.reduce(x).tolist() == [5, 7, 9]
  assert jnp.logical_and.reduce(x > 2).tolist() == [False, False, True]
  assert jnp.bitwise_or.reduce(x, axis=1).tolist() == [3, 7]
  assert jnp.add.accumulate(x, axis=1).tolist() == [[1, 3, 6], [4, 9, 15]]
  assert jnp.multiply.accumulate(x, axis=1).tolist() == [[1, 2, 6], [4, 20, 120]]
  assert jnp.bitwise_or.accumulate(x, axis=1).tolist() == [[1, 3, 3], [4, 5, 7]]
  y = jnp.array([1, 2, 3, 4, 5])
  assert jnp.add.at(y, 0, 100, inplace=False).tolist() == [101, 2, 3, 4, 5]
  assert jnp.add.at(jnp.ones(10, int), jnp.array([2, 5, 7]), jnp.array([10, 20, 30]),
                    inplace=False).tolist() == [1, 1, 11, 1, 1, 21, 1, 31, 1, 1]
  assert jnp.add.reduceat(y, jnp.array([0, 2])).tolist() == [3, 12]
  assert jnp.add.reduceat(jnp.arange(1, 9), jnp.array([0, 2, 5])).tolist() == [3, 12, 21]
  table = jnp.multiply.outer(jnp.arange(1, 11), jnp.arange(1, 11))
  assert table.tolist() == [[i * j for j in range(1, 11)] for i in range(1, 11)]
  assert jnp.add.outer(jnp.ones((1, 3, 5)), jnp.ones((2, 4))).shape == (1, 3, 5, 2, 4)


def test_ufunc_method_dtypes_follow_jax():
  """add.reduce is jnp.sum (small integers and booleans give int32; NumPy gives
  int64), add.accumulate is jnp.cumsum (int8 stays int8 and wraps), `dtype`
  converts the operand first; the identity fills where `where` is False."""
  i8 = np.array([100, 100], np.int8)
  assert jnp.add.reduce(i8).dtype == np.int32 and int(jnp.add.reduce(i8)) == 200
  assert jnp.add.reduce(np.array([True, True, False])).tolist() == 2
  assert jnp.add.accumulate(i8).tolist() == [100, -56]
  assert jnp.add.reduce(i8, dtype=jnp.float32).dtype == np.float32
  assert jnp.maximum.reduce(np.array([1.5, 2.5], np.float32), dtype=jnp.int32).tolist() == 2
  u8 = np.array([3, 5], np.uint8)
  assert jnp.bitwise_and.reduce(u8, where=np.array([False, False])).tolist() == 255
  assert jnp.logaddexp.reduce(np.zeros((0,), np.float32)).tolist() == -np.inf
  assert jnp.multiply.reduce(np.zeros((2, 0), np.float32), axis=1).tolist() == [1.0, 1.0]
  assert jnp.logical_xor.reduce(np.array([1, 2, 3])).tolist() is True
  assert jnp.negative.at(np.arange(4), np.array([1, 1, 2]), inplace=False).tolist() == [0, 1, -2, 3]
  assert jnp.add.at(np.array([True, False]), np.array([1, 1]), True, inplace=False).tolist() == \
      [True, True]


def test_ufunc_method_errors():
  x = np.arange(6.0).reshape(2, 3)
  with pytest.raises(ValueError, match="zero-size array to reduction operation subtract"):
    jnp.subtract.reduce(np.zeros((0, 2)))
  with pytest.raises(ValueError, match="zero-size array"):
    jnp.maximum.reduce(np.zeros((2, 0)), axis=1)
  with pytest.raises(ValueError, match="'minimum' does not have an identity"):
    jnp.minimum.reduce(x, where=np.array([True, False, True]))
  with pytest.raises(ValueError, match="integer argument required"):
    jnp.bitwise_and.reduce(x)
  with pytest.raises(NotImplementedError, match="tuple of axes"):
    jnp.subtract.reduce(x, axis=(0, 1))
  with pytest.raises(ValueError, match="binary ufuncs"):
    jnp.negative.reduce(x)
  with pytest.raises(NotImplementedError, match="inplace=False"):
    jnp.add.at(x, 0, 1.0)
  with pytest.raises(NotImplementedError, match="out argument"):
    jnp.add(x, x, out=x)
  with pytest.raises(TypeError):
    jnp.add.reduce([1, 2])


def test_ufunc_method_jaxprs_match_jax():
  """The methods are jitted (as in JAX) around the fast path: one reduction
  primitive, cumsum, or a scatter."""
  x = np.ones((2, 3), np.float32)
  assert _jaxpr(jnp.add.reduce, x) == (
      "{ lambda ; a:f32[2,3]. let\n"
      "    b:f32[3] = jit[\n"
      "      name=reduce\n"
      "      jaxpr={ lambda ; c:f32[2,3]. let d:f32[3] = reduce_sum[axes=(0,)] c in (d,) }\n"
      "    ] a\n"
      "  in (b,) }")
  assert "reduce_max[axes=(0, 1)]" in _jaxpr(lambda v: jnp.maximum.reduce(v, axis=None), x)
  assert "reduce_and[axes=(1,)]" in _jaxpr(lambda b: jnp.logical_and.reduce(b, axis=1),
                                           x > 0)
  assert "reduce_xor[axes=(0,)]" in _jaxpr(jnp.bitwise_xor.reduce, np.ones(3, np.int32))
  assert "cumsum[axis=1 reverse=False]" in _jaxpr(lambda v: jnp.add.accumulate(v, axis=1), x)
  assert "scatter-add" in _jaxpr(lambda v: jnp.add.at(v, np.array([0, 0]), 1.0,
                                                      inplace=False), x)
  logsumexp = _jaxpr(jnp.logaddexp.reduce, x)
  assert "reduce_max" in logsumexp and "reduce_sum" in logsumexp and "log" in logsumexp
  # calling a ufunc is calling its function: no jit equation
  assert _jaxpr(jnp.add, x, x) == \
      "{ lambda ; a:f32[2,3] b:f32[2,3]. let c:f32[2,3] = add a b in (c,) }"
