"""Tests of refimpl/dtypes.py: the promotion lattice and x64 canonicalization.

The full promote_types table against recorded JAX facts is checked in
tests/numpy/test_ufuncs.py; here: the lattice's algebra and canonicalization.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import dtypes

ALL = list(dtypes.SUPPORTED_DTYPES)


def _promote_or_error(a, b):
  try:
    return dtypes.promote_types(a, b)
  except dtypes.TypePromotionError:
    return "no promotion path"


@given(st.sampled_from(ALL), st.sampled_from(ALL))
def test_promotion_is_commutative(a, b):
  assert _promote_or_error(a, b) == _promote_or_error(b, a)


def test_promotion_through_the_weak_float_is_not_associative():
  """uint64 with int8 meets at the weak float, which is float64; JAX gives the same."""
  assert dtypes.promote_types(dtypes.promote_types(np.uint64, np.int8),
                              dtypes.bfloat16) == np.float64
  assert dtypes.promote_types(np.uint64,
                              dtypes.promote_types(np.int8, dtypes.bfloat16)) == dtypes.bfloat16


@given(st.sampled_from(ALL))
def test_promotion_is_idempotent_and_bool_is_bottom(a):
  assert dtypes.promote_types(a, a) == a
  assert dtypes.promote_types(a, dtypes.bool_) == a


@pytest.mark.parametrize("a, b, expected", [
    (np.int8, np.uint8, np.int16), (np.uint32, np.int32, np.int32),  # x64 off
    (np.uint64, np.int64, np.float64), (dtypes.bfloat16, np.float16, np.float32),
    (np.int64, np.float16, np.float16), (np.float32, np.complex64, np.complex64),
])
def test_promotion_differs_from_numpy_where_jax_does(a, b, expected):
  assert dtypes.promote_types(a, b) == expected


def test_weak_types():
  assert dtypes.result_type_and_weak_type(np.float16(1), 1.0) == (np.float16, False)
  assert dtypes.result_type_and_weak_type(1, 2.0) == (np.float32, True)
  assert dtypes.result_type_and_weak_type(np.int8(1), 1) == (np.int8, False)
  assert dtypes.result_type_and_weak_type(True, 1) == (np.int32, True)
  assert dtypes.result_type_and_weak_type(True, False) == (np.bool_, False)


def test_canonicalization_and_warning():
  assert dtypes.canonicalize_dtype(np.float64) == np.float32
  assert dtypes.canonicalize_dtype(np.uint64) == np.uint32
  with pytest.warns(UserWarning, match="Explicitly requested dtype float64 requested in zeros"):
    dtypes.check_user_dtype_supported(np.float64, "zeros")
  with jax.enable_x64():
    assert dtypes.canonicalize_dtype(np.float64) == np.float64
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      dtypes.check_user_dtype_supported(np.float64, "zeros")
  assert dtypes.default_float_dtype() == np.float32


def test_x64_from_environment():
  code = "import refimpl.numpy as jnp; print(jnp.asarray(1.0).dtype)"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, JAX_ENABLE_X64="True"), check=True).stdout
  assert out.strip() == "float64"


def test_short_names():
  assert [dtypes.short_name(d) for d in (np.float32, dtypes.bfloat16, np.bool_, np.uint8,
                                         np.complex64)] == ["f32", "bf16", "bool", "u8", "c64"]
  assert [dtypes.short_name(d) for d in (dtypes.float8_e4m3fn, dtypes.int4, dtypes.uint2,
                                         dtypes.float4_e2m1fn)] == ["f8_e4m3fn", "i4", "u2",
                                                                    "f4_e2m1fn"]


@given(st.sampled_from(dtypes.NARROW_INT_DTYPES + dtypes.NARROW_FLOAT_DTYPES),
       st.sampled_from(ALL))
def test_narrow_types_promote_only_with_weak_types_and_bool(narrow, other):
  """As JAX's lattice: nothing lies above a narrow type, so it promotes only
  with itself, bool, Python scalars of its kind (or lower) and, for a narrow
  float, the integer types (which lie below the weak float)."""
  below = (narrow, dtypes.bool_) + (
      (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
       dtypes.uint16, dtypes.uint32, dtypes.uint64)
      if narrow in dtypes.NARROW_FLOAT_DTYPES else ())
  if other in below:
    assert dtypes.promote_types(narrow, other) == narrow
  else:
    with pytest.raises(dtypes.TypePromotionError, match="implicit promotion"):
      dtypes.promote_types(narrow, other)
  x = np.zeros(2, narrow)
  assert dtypes.result_type_and_weak_type(x, 1) == (narrow, False)
  if narrow in dtypes.NARROW_FLOAT_DTYPES:
    assert dtypes.result_type_and_weak_type(x, 1.0) == (narrow, False)
  else:  # the weak float is not above a narrow integer either
    with pytest.raises(dtypes.TypePromotionError, match="4-bit integers"):
      dtypes.result_type_and_weak_type(x, 1.0)


def test_narrow_types_categories():
  assert dtypes.is_float(dtypes.float8_e4m3fn) and dtypes.is_inexact(dtypes.float4_e2m1fn)
  assert not dtypes.is_complex(dtypes.float8_e5m2)
  assert dtypes.is_integer(dtypes.int4) and not dtypes.is_unsigned(dtypes.int4)
  assert dtypes.is_unsigned(dtypes.uint2)
  assert not dtypes.issubdtype(dtypes.uint4, np.signedinteger)
  assert dtypes.iinfo(dtypes.int4).min == -8 and dtypes.iinfo(dtypes.uint2).max == 3
  assert dtypes.finfo(dtypes.float8_e4m3fn).max == 448


def test_complex_and_real_counterparts():
  to_complex = {np.float16: np.complex64, dtypes.bfloat16: np.complex64,
                np.float32: np.complex64, np.float64: np.complex128,
                np.complex64: np.complex64, np.complex128: np.complex128,
                np.int8: np.complex128, np.uint32: np.complex128, np.bool_: np.complex128}
  for dt, expected in to_complex.items():
    assert dtypes.to_complex_dtype(dt) == expected, dt
  to_real = {np.complex64: np.float32, np.complex128: np.float64, np.float16: np.float16,
             dtypes.bfloat16: dtypes.bfloat16, np.int32: np.int32, np.bool_: np.bool_}
  for dt, expected in to_real.items():
    assert dtypes.to_real_dtype(dt) == expected, dt


def test_float0_takes_no_part_in_promotion():
  """float0 (integer tangents) mixed with another dtype: JAX's ValueError."""
  import refimpl.numpy as jnp
  z = np.zeros(3, dtypes.float0)
  for f in (lambda: jnp.multiply(2., z), lambda: jnp.add(jnp.ones(3), z),
            lambda: dtypes.result_type(np.float32, dtypes.float0)):
    with pytest.raises(ValueError, match=r"dtype=dtype\(\[\('float0', 'V'\)\]\) is not a "
                       "valid dtype for JAX type promotion"):
      f()
