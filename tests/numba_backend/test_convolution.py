"""The numba backend's conv_general_dilated agrees with the reference.

Small integer values make every sum exact, so all dtypes compare bit for
bit over random layouts, strides, padding (negative too), dilations and
group counts; float operands with NaN and infinities compare within the
dot_general bound of docs/backends.md (the reference sums by BLAS).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax
from conformance import strategies as cst
from tests.numba_backend.test_linalg import _abs_finite, assert_dot_close

pytest.importorskip("numba")


@pytest.mark.parametrize("dtype", cst.ALL_DTYPES, ids=str)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_conv_exact(dtype, data):
  (lhs, rhs), kwargs = data.draw(cst.conv_inputs([dtype]))
  program = lambda x, w: lax.conv_general_dilated(x, w, **kwargs)
  reference = np.asarray(jax.jit(program)(lhs, rhs))
  backend = np.asarray(jax.jit(program, backend="numba")(lhs, rhs))
  assert backend.dtype == reference.dtype and backend.shape == reference.shape
  assert np.array_equal(reference, backend, equal_nan=True)


@pytest.mark.parametrize("dtype", cst.FLOAT_DTYPES + cst.COMPLEX_DTYPES, ids=str)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_conv_floats(dtype, data):
  """NHWC/HWIO/NHWC, stride 2 and lhs dilation 2 on one axis, padding skipped."""
  n, h, w, c, o = data.draw(st.tuples(*[st.integers(0, 4)] * 5))
  kh, kw = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 3)))
  x = data.draw(cst.arrays(dtype, (n, h, w, c)))
  k = data.draw(cst.arrays(dtype, (kh, kw, c, o)))
  params = dict(window_strides=(2, 1), padding=((1, 0), (-1, 2)), lhs_dilation=(1, 2),
                dimension_numbers=("NHWC", "HWIO", "NHWC"))
  program = lambda x, k: lax.conv_general_dilated(x, k, **params)
  with jax.enable_x64():
    magnitude = np.asarray(jax.jit(program)(_abs_finite(x), _abs_finite(k)))   # float64 sums
  assert_dot_close(jax.jit(program)(x, k), jax.jit(program, backend="numba")(x, k),
                   magnitude, kh * kw * c, "conv")
