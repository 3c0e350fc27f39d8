"""Tests of refimpl/numpy/convolution.py: jnp.convolve and jnp.correlate
against np.convolve and np.correlate."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import refimpl as jax
import refimpl.numpy as jnp
from conformance import strategies as S

MODES = ["full", "same", "valid"]


@given(st.sampled_from([np.float32, np.complex64]).flatmap(
    lambda dt: st.tuples(*[hnp.arrays(dt, st.integers(1, 7).map(lambda n: (n,)),
                                      elements=st.floats(-100, 100, width=32))] * 2)),
       st.sampled_from(MODES), st.sampled_from(["convolve", "correlate"]))
def test_matches_numpy(vectors, mode, op):
  a, v = vectors
  actual = getattr(jnp, op)(a, v, mode)
  wide = np.complex128 if a.dtype.kind == "c" else np.float64
  expected = getattr(np, op)(a.astype(wide), v.astype(wide), mode)
  assert actual.dtype == a.dtype
  scale = np.abs(a).sum() * np.abs(v).max() + 1
  np.testing.assert_allclose(np.asarray(actual), expected, atol=1e-6 * scale)


@given(st.sampled_from(S.INT_DTYPES + S.BOOL_DTYPES).flatmap(
    lambda dt: st.tuples(*[S.small_integer_arrays(dt, st.integers(1, 6).map(
        lambda n: (n,)))] * 2)), st.sampled_from(MODES))
def test_integers_give_floats_unless_preferred(vectors, mode):
  a, v = vectors
  expected = np.convolve(a.astype(np.int64), v.astype(np.int64), mode)
  as_float = jnp.convolve(a, v, mode)
  assert as_float.dtype == np.float32
  np.testing.assert_array_equal(as_float, expected)
  exact = jnp.correlate(a, v, mode, preferred_element_type=np.int32)
  assert exact.dtype == np.int32
  np.testing.assert_array_equal(exact, np.correlate(a.astype(np.int64), v.astype(np.int64),
                                                    mode))


def test_examples():
  np.testing.assert_array_equal(jnp.convolve(np.float32([1, 2, 3]), np.float32([0, 1, 0.5])),
                                [0, 1, 2.5, 4, 1.5])
  np.testing.assert_array_equal(
      jnp.convolve(np.float32([1, 2, 3]), np.float32([0, 1, 0.5]), "same"), [1, 2.5, 4])
  np.testing.assert_array_equal(jnp.correlate(np.float32([1, 2, 3]), np.float32([0, 1, 0.5])),
                                [3.5])
  np.testing.assert_array_equal(
      jnp.correlate(np.float32([1, 2, 3]), np.float32([0, 1, 0.5]), "full"),
      [0.5, 2, 3.5, 3, 0])
  # the second argument is conjugated
  np.testing.assert_array_equal(jnp.correlate(np.complex64([1j]), np.complex64([1j])), [1])
  assert jnp.convolve(np.int32([1, 2]), np.float16([1, 2])).dtype == np.float16  # JAX's lattice
  assert jnp.convolve(np.float16([1, 2]), np.float16([1, 2])).dtype == np.float16


def test_errors():
  with pytest.raises(ValueError, match="only support 1-dimensional inputs"):
    jnp.convolve(np.ones((2, 2), np.float32), np.ones(2, np.float32))
  with pytest.raises(ValueError, match="inputs cannot be empty"):
    jnp.correlate(np.ones(0, np.float32), np.ones(2, np.float32))
  with pytest.raises(ValueError, match="mode must be one of"):
    jnp.convolve(np.ones(3, np.float32), np.ones(2, np.float32), "middle")
  with pytest.raises(TypeError, match="convolve requires ndarray or scalar arguments"):
    jnp.convolve([1.0, 2.0], np.ones(2, np.float32))


def test_lowering():
  text = str(jax.make_jaxpr(jnp.convolve)(np.ones(5, np.float32), np.ones(3, np.float32)))
  assert "name=convolve" in text and "name=_conv" in text
  assert "rev[dimensions=(0,)]" in text and "padding=((2, 2),)" in text
  text = str(jax.make_jaxpr(lambda a, v: jnp.correlate(a, v, "same"))(
      np.ones(2, np.float32), np.ones(4, np.float32)))
  # a shorter first argument swaps the inputs and reverses the result
  assert "padding=((1, 0),)" in text and "rev[" in text
