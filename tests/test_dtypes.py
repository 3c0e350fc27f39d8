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


@given(st.sampled_from(ALL), st.sampled_from(ALL))
def test_promotion_is_commutative(a, b):
  assert dtypes.promote_types(a, b) == dtypes.promote_types(b, a)


def test_promotion_through_the_weak_float_is_not_associative():
  """uint64 with int8 meets at the weak float, which is float64; JAX gives the same."""
  assert dtypes.promote_types(dtypes.promote_types(np.uint64, np.int8), dtypes.bfloat16) == np.float64
  assert dtypes.promote_types(np.uint64, dtypes.promote_types(np.int8, dtypes.bfloat16)) == dtypes.bfloat16


@given(st.sampled_from(ALL))
def test_promotion_is_idempotent_and_bool_is_bottom(a):
  assert dtypes.promote_types(a, a) == a
  assert dtypes.promote_types(a, dtypes.bool_) == a


@pytest.mark.parametrize("a, b, expected", [
    (np.int8, np.uint8, np.int16), (np.uint32, np.int32, np.int64),
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
