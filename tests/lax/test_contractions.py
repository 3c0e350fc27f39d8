"""dot_general and conv_general_dilated on arbitrary values, against the
contraction computed in float64 (complex128, 64-bit integers).

The reference rules sum real floats in the result dtype (16-bit floats in
float32), as XLA does on CPU, in an unspecified order: a float result is
within the rounding-error bound of such a sum of the float64 one, k terms
giving at most (k + 1) float32 epsilons of the sum of the terms' moduli,
plus the final rounding. Complex results are computed in complex128, and
integers are exact (wrapping). IEEE rules hold: 0 * inf is NaN.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from refimpl import lax
from conformance import strategies as S
from conformance.families.convolution import numpy_conv_general_dilated

REAL = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)]
COMPLEX = [np.dtype(np.complex64)]
INTEGER = [np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.uint32)]


def _values(dtype, shape):
  """Finite values of `dtype` of moderate size (no overflow in the sums)."""
  if dtype.kind in "iu":
    return hnp.arrays(dtype, shape)
  bound = 16.0 if dtype == np.float16 else 1e3
  part = st.floats(-bound, bound, width=32)
  if dtype.kind == "c":
    return hnp.arrays(np.complex128, shape, elements=st.builds(complex, part, part)).map(
        lambda a: a.astype(dtype))
  return hnp.arrays(np.float32, shape, elements=part).map(lambda a: a.astype(dtype))


def _wide(x):
  x = np.asarray(x)
  if x.dtype.kind in "iu":
    return x.astype(np.uint64 if x.dtype.kind == "u" else np.int64)
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _assert_within_sum_bound(actual, exact, magnitude, terms, dtype):
  """`actual` (of `dtype`) is `exact` up to the rounding errors of a float32
  sum of `terms` terms whose moduli sum to `magnitude`, and its rounding."""
  actual = np.asarray(actual)
  assert actual.dtype == dtype and actual.shape == exact.shape
  if dtype.kind in "iu":
    np.testing.assert_array_equal(actual, exact.astype(dtype))
    return
  info = ml_dtypes.finfo(dtype)
  compute_eps = float(np.finfo(np.float64 if dtype.kind == "c" else np.float32).eps)
  bound = ((terms + 1) * compute_eps * magnitude + float(info.eps) * np.abs(exact)
           + float(info.smallest_subnormal))
  error = np.abs(actual.astype(exact.dtype) - exact)
  assert (error <= bound).all(), (actual, exact, error, bound)


@st.composite
def _batch_matmul_operands(draw, dtypes):
  dtype = draw(st.sampled_from(dtypes))
  b, m, k, n = (draw(st.integers(0, 4)) for _ in range(4))
  return draw(_values(dtype, (b, m, k))), draw(_values(dtype, (b, n, k)))


BATCH_MATMUL = (((2,), (2,)), ((0,), (0,)))   # (b, m, k) x (b, n, k) -> (b, m, n)


@given(_batch_matmul_operands(REAL + COMPLEX + INTEGER))
def test_dot_general_is_the_wide_sum_within_rounding(operands):
  lhs, rhs = operands
  out = lax.dot_general(lhs, rhs, BATCH_MATMUL)
  exact = np.einsum("bik,bjk->bij", _wide(lhs), _wide(rhs))
  magnitude = np.einsum("bik,bjk->bij", np.abs(_wide(lhs)), np.abs(_wide(rhs)))
  _assert_within_sum_bound(out, exact, magnitude, lhs.shape[2], lhs.dtype)


@given(_batch_matmul_operands([np.dtype(np.int8)]))
def test_dot_general_preferred_float_sums_integers_in_float32(operands):
  lhs, rhs = operands
  out = lax.dot_general(lhs, rhs, BATCH_MATMUL, preferred_element_type=np.float32)
  exact = np.einsum("bik,bjk->bij", _wide(lhs), _wide(rhs)).astype(np.float64)
  np.testing.assert_array_equal(out, exact.astype(np.float32))   # |sums| < 2**24: exact


@pytest.mark.parametrize("dtype", REAL + [np.dtype(np.float64)] + COMPLEX, ids=str)
def test_dot_general_keeps_zero_times_inf_nan(dtype):
  lhs = np.zeros((1, 3, 4), dtype)
  rhs = np.ones((1, 2, 4), dtype)
  rhs[0, 1, 2] = np.inf
  out = np.asarray(lax.dot_general(lhs, rhs, BATCH_MATMUL))
  assert np.isnan(out[0, :, 1]).all() and (out[0, :, 0] == 0).all()


@st.composite
def _conv_operands(draw, dtypes):
  """S.conv_inputs's layouts and parameters, with arbitrary values."""
  dtype = draw(st.sampled_from(dtypes))
  (lhs, rhs), kwargs = draw(S.conv_inputs([np.int8]))
  return (draw(_values(dtype, lhs.shape)), draw(_values(dtype, rhs.shape))), kwargs


@given(_conv_operands(REAL + COMPLEX + INTEGER))
def test_conv_is_the_wide_sum_within_rounding(inputs):
  (lhs, rhs), kwargs = inputs
  out = lax.conv_general_dilated(lhs, rhs, **kwargs)
  exact = numpy_conv_general_dilated(_wide(lhs), _wide(rhs), **kwargs)
  magnitude = numpy_conv_general_dilated(np.abs(_wide(lhs)), np.abs(_wide(rhs)), **kwargs)
  dnums = lax.conv_dimension_numbers(lhs.shape, rhs.shape, kwargs["dimension_numbers"])
  terms = int(np.prod([rhs.shape[d] for d in dnums.rhs_spec[1:]]))
  _assert_within_sum_bound(out, exact, magnitude, terms, lhs.dtype)


@pytest.mark.parametrize("special", [np.inf, np.nan])
def test_conv_kernel_specials_meet_elements_only(special):
  # A kernel's inf meets the input's elements (inf * 0 is NaN there), never
  # its padding or the holes of lhs_dilation.
  lhs = np.array([[[1.0, 0.0, 3.0]]], np.float32)
  rhs = np.array([[[special, 1.0]]], np.float32)
  out = np.asarray(lax.conv_general_dilated(lhs, rhs, (1,), ((1, 1),), lhs_dilation=(2,)))
  # dilated and padded: [pad, 1, hole, 0, hole, 3, pad]
  expected = np.array([1.0, special * 1.0, 0.0, special * 0.0, 3.0, special * 3.0],
                      np.float32)
  np.testing.assert_array_equal(out[0, 0], expected)
