"""Tests of refimpl/lax/convolution.py: conv_general_dilated against the
convolution written out from its definition, the layout helpers, shape
tuples, conv_transpose, patches and local convolutions."""

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.families.convolution import numpy_conv_general_dilated

ALL = S.BOOL_DTYPES + S.INT_DTYPES + S.FLOAT_DTYPES + S.COMPLEX_DTYPES
CDN = lax.ConvDimensionNumbers


def _check_equal(actual, expected):
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
  np.testing.assert_array_equal(np.asarray(actual).astype(np.complex128),
                                np.asarray(expected).astype(np.complex128))


@given(S.conv_inputs(ALL))
def test_conv_general_dilated_matches_definition(inputs):
  (lhs, rhs), kwargs = inputs
  expected = numpy_conv_general_dilated(lhs, rhs, **kwargs)
  _check_equal(lax.conv_general_dilated(lhs, rhs, **kwargs), expected)
  # the same layout as ConvDimensionNumbers
  dnums = lax.conv_dimension_numbers(lhs.shape, rhs.shape, kwargs["dimension_numbers"])
  _check_equal(lax.conv_general_dilated(lhs, rhs, **{**kwargs, "dimension_numbers": dnums}),
               expected)
  undilated = all(d == 1 for d in kwargs["lhs_dilation"] + kwargs["rhs_dilation"])
  if undilated and kwargs["batch_group_count"] == 1:
    assert expected.shape == lax.conv_general_shape_tuple(
        lhs.shape, rhs.shape, kwargs["window_strides"], kwargs["padding"],
        kwargs["dimension_numbers"])


@given(S.conv_inputs([np.int8], max_spatial_dims=1), st.sampled_from(["SAME", "SAME_LOWER",
                                                                       "VALID"]))
def test_string_padding(inputs, padding):
  (lhs, rhs), kwargs = inputs
  kwargs["lhs_dilation"] = None
  dnums = lax.conv_dimension_numbers(lhs.shape, rhs.shape, kwargs["dimension_numbers"])
  in_sizes = [lhs.shape[d] for d in dnums.lhs_spec[2:]]
  kernel = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(dnums.rhs_spec[2:],
                                                        kwargs["rhs_dilation"])]
  pads = []
  for size, k, s in zip(in_sizes, kernel, kwargs["window_strides"]):
    out = -(-size // s)
    total = max(0, (out - 1) * s + k - size)
    pads.append((total // 2, total - total // 2) if padding == "SAME" else
                (total - total // 2, total // 2) if padding == "SAME_LOWER" else (0, 0))
  actual = lax.conv_general_dilated(lhs, rhs, **{**kwargs, "padding": padding})
  _check_equal(actual, numpy_conv_general_dilated(lhs, rhs, **{**kwargs, "padding": pads}))
  if padding != "VALID":
    out_spec = lax.conv_dimension_numbers(lhs.shape, rhs.shape,
                                          kwargs["dimension_numbers"]).out_spec
    assert [actual.shape[d] for d in out_spec[2:]] == [
        -(-n // s) for n, s in zip(in_sizes, kwargs["window_strides"])]


def test_conv_example_nchw():
  x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
  w = np.array([[[[1, 0], [0, -1]]]], np.float32)  # x[i, j] - x[i + 1, j + 1]
  np.testing.assert_array_equal(lax.conv(x, w, (1, 1), "VALID"), np.full((1, 1, 3, 3), -5))
  out = lax.conv_with_general_padding(x, w, (2, 2), ((1, 0), (1, 0)), (1, 1), (1, 1))
  np.testing.assert_array_equal(out[0, 0], [[-0., -2.], [-8., -5.]])


def test_padding_and_holes_are_skipped_not_multiplied():
  lhs = np.array([[[1.0, 2.0, 3.0]]], np.float32)
  rhs = np.array([[[np.inf, 1.0]]], np.float32)
  out = lax.conv_general_dilated(lhs, rhs, (1,), ((1, 0),))
  np.testing.assert_array_equal(out[0, 0], [1.0, np.inf, np.inf])
  dilated = lax.conv_general_dilated(lhs, rhs, (1,), ((0, 0),), lhs_dilation=(2,))
  np.testing.assert_array_equal(dilated[0, 0], [np.inf, 2.0, np.inf, 3.0])
  nan = lax.conv_general_dilated(np.float32([[[np.nan, 1.0]]]), np.float32([[[1.0]]]),
                                 (1,), "VALID")
  np.testing.assert_array_equal(nan[0, 0], [np.nan, 1.0])


def test_groups():
  # depthwise: each of 2 input channels gets its own kernel
  x = np.array([[[1., 2.], [10., 20.]]], np.float32)          # N=1, C=2, W=2
  w = np.array([[[1., 1.]], [[1., -1.]]], np.float32)         # O=2, I=1, W=2
  out = lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=2)
  np.testing.assert_array_equal(out[0, :, 0], [3., -10.])
  # batch groups: output feature o reads batch group o // (O / B)
  out = lax.conv_general_dilated(np.float32([[[1., 2.]], [[3., 4.]]]),
                                 np.float32([[[1., 1.]], [[1., 1.]]]), (1,), "VALID",
                                 batch_group_count=2)
  np.testing.assert_array_equal(out, [[[3.], [7.]]])


def test_dtypes_and_preferred_element_type():
  x = np.full((1, 1, 4), 100, np.int8)
  w = np.ones((1, 1, 2), np.int8)
  assert lax.conv(x, w, (1,), "VALID")[0, 0, 0] == np.int8(-56)  # wraps
  wide = lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=np.int32)
  assert wide.dtype == np.int32 and wide[0, 0, 0] == 200
  as_float = lax.conv(x, w, (1,), "VALID", preferred_element_type=np.float32)
  assert as_float.dtype == np.float32 and as_float[0, 0, 0] == 200
  half = np.full((1, 1, 3), 0.1, dtypes.bfloat16)
  assert lax.conv(half, np.ones((1, 1, 3), dtypes.bfloat16), (1,), "VALID",
                  preferred_element_type=np.float32).dtype == np.float32
  with pytest.raises(TypeError, match="incompatible with `preferred_element_type`"):
    lax.conv(np.ones((1, 1, 2), np.float32), np.ones((1, 1, 2), np.float32), (1,), "VALID",
             preferred_element_type=np.int32)
  with pytest.raises(TypeError, match="must not be narrower"):
    lax.conv(x.astype(np.int32), w.astype(np.int32), (1,), "VALID",
             preferred_element_type=np.int16)
  with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
    lax.conv(x, w.astype(np.int32), (1,), "VALID")
  weak = lax.convert_element_type(np.ones((1, 1, 2), np.float32), np.float32, weak_type=True)
  assert lax.conv(weak, weak, (1,), "VALID").weak_type
  assert not lax.conv(weak, np.ones((1, 1, 2), np.float32), (1,), "VALID").weak_type


def test_shape_errors():
  x, w = np.ones((1, 4, 5), np.float32), np.ones((2, 2, 3), np.float32)
  with pytest.raises(ValueError, match="must divide lhs feature dimension size"):
    lax.conv_general_dilated(x, w, (1,), "VALID", feature_group_count=3)
  with pytest.raises(ValueError, match="must equal the rhs input feature dimension size"):
    lax.conv_general_dilated(x, w, (1,), "VALID")
  with pytest.raises(ValueError, match="At most one of batch_group_count"):
    lax.conv_general_dilated(np.ones((2, 4, 5), np.float32), w, (1,), "VALID",
                             feature_group_count=2, batch_group_count=2)
  with pytest.raises(ValueError, match="batch_group_count must divide lhs batch"):
    lax.conv_general_dilated(x, np.ones((2, 4, 3), np.float32), (1,), "VALID",
                             batch_group_count=2)
  with pytest.raises(ValueError, match="Negative padding is larger"):
    lax.conv_general_dilated(x, np.ones((2, 4, 3), np.float32), (1,), ((-3, -3),))
  with pytest.raises(ValueError, match="window and window_strides"):
    lax.conv_general_dilated(x, np.ones((2, 4, 3), np.float32), (1, 1), ((0, 0),))
  with pytest.raises(TypeError, match="lhs and rhs ndim to be equal"):
    lax.conv(x, np.ones((2, 4), np.float32), (1,), "VALID")
  with pytest.raises(ValueError, match="String padding is not implemented"):
    lax.conv_general_dilated(x, np.ones((2, 4, 3), np.float32), (1,), "SAME",
                             lhs_dilation=(2,))
  with pytest.raises(ValueError, match="padding argument to conv_general_dilated"):
    lax.conv_general_dilated(x, np.ones((2, 4, 3), np.float32), (1,), (1, 1))


def test_dimension_numbers():
  assert lax.conv_general_permutations(("NHWC", "HWIO", "NHWC")) == \
      ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  # spatial dimensions are ordered by the kernel string
  assert lax.conv_general_permutations(("NCHW", "OIWH", "NCWH")) == \
      ((0, 1, 3, 2), (0, 1, 2, 3), (0, 1, 2, 3))
  assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None) == \
      CDN((0, 1, 2), (0, 1, 2), (0, 1, 2))
  dn = CDN((0, 2, 1), (2, 1, 0), (0, 2, 1))
  assert lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), dn) == dn
  with pytest.raises(TypeError, match="must contain the characters 'N' and 'C'"):
    lax.conv_general_permutations(("NHW", "OIH", "NCH"))
  with pytest.raises(TypeError, match="same set of spatial characters"):
    lax.conv_general_permutations(("NCH", "OIW", "NCH"))
  with pytest.raises(TypeError, match="must have len equal to the ndim"):
    lax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), ("NCHW", "OIH", "NCH"))
  assert lax.ConvGeneralDilatedDimensionNumbers is not None
  # an NHWC convolution equals the NCHW one on transposed data
  x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)   # NCHW
  w = np.arange(6 * 3 * 2 * 2, dtype=np.float32).reshape(6, 3, 2, 2)   # OIHW
  nchw = lax.conv_general_dilated(x, w, (1, 2), "SAME")
  nhwc = lax.conv_general_dilated(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), (1, 2),
                                  "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  np.testing.assert_array_equal(nhwc, np.asarray(nchw).transpose(0, 2, 3, 1))


def test_shape_tuples():
  assert lax.conv_shape_tuple((2, 3, 10, 8), (4, 3, 3, 3), (2, 1), "SAME") == (2, 4, 5, 8)
  assert lax.conv_shape_tuple((2, 3, 10, 8), (4, 3, 3, 3), (1, 1), ((0, 0), (1, 1))) == \
      (2, 4, 8, 8)
  assert lax.conv_general_shape_tuple((2, 10, 8, 3), (3, 3, 3, 4), (1, 1), "VALID",
                                      ("NHWC", "HWIO", "NHWC")) == (2, 8, 6, 4)
  for padding in ("SAME", "VALID"):
    for strides in ((1,), (2,), (3,)):
      x, w = np.ones((1, 5, 2), np.float32), np.ones((3, 2, 4), np.float32)  # NHC, HIO
      expected = lax.conv_transpose_shape_tuple(x.shape, w.shape, strides, padding,
                                                ("NHC", "HIO", "NHC"))
      assert lax.conv_transpose(x, w, strides, padding).shape == expected


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.data())
def test_conv_transpose_is_a_scatter_of_kernels(size, kernel, stride, data):
  """With transpose_kernel and 'VALID' padding, input position y adds
  x[y] * w[c, o, m] at output position y * stride + m (the transpose of a
  strided convolution)."""
  x = data.draw(S.small_integer_arrays(np.float32, (2, 2, size)))       # N, C, W
  w = data.draw(S.small_integer_arrays(np.float32, (2, 3, kernel)))     # C, O, W ("OIW")
  out = lax.conv_transpose(x, w, (stride,), "VALID", dimension_numbers=("NCW", "OIW", "NCW"),
                           transpose_kernel=True)
  expected = np.zeros((2, 3, (size - 1) * stride + kernel + max(stride - kernel, 0)))
  for n, c, y, o, m in itertools.product(range(2), range(2), range(size), range(3),
                                         range(kernel)):
    expected[n, o, y * stride + m] += x[n, c, y] * w[c, o, m]
  _check_equal(out, expected.astype(np.float32))


def test_conv_transpose_lowering():
  x, w = np.ones((1, 4, 2), np.float32), np.ones((3, 5, 2), np.float32)  # NHC, HIO
  text = str(jax.make_jaxpr(lambda x, w: lax.conv_transpose(
      x, w, (2,), "SAME", transpose_kernel=True))(x, w))
  assert "rev[dimensions=(0,)]" in text and "transpose[permutation=(0, 2, 1)]" in text
  assert "lhs_dilation=(2,)" in text and "padding=((2, 1),)" in text


@given(st.integers(1, 2), st.integers(1, 2), st.sampled_from(["VALID", "SAME"]), st.data())
def test_patches(kh, kw, padding, data):
  x = data.draw(S.small_integer_arrays(np.float32, (2, 3, 3, 4)))
  patches = lax.conv_general_dilated_patches(x, (kh, kw), (1, 1), padding)
  pads = lax.padtype_to_pads((3, 4), (kh, kw), (1, 1), padding)
  padded = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
  out_h, out_w = patches.shape[2:]
  expected = np.zeros((2, 3 * kh * kw, out_h, out_w), np.float32)
  for c, i, j in itertools.product(range(3), range(kh), range(kw)):
    expected[:, c * kh * kw + i * kw + j] = padded[:, c, i:i + out_h, j:j + out_w]
  _check_equal(patches, expected)


def test_local_convolution():
  rng = np.random.default_rng(0)
  x = rng.integers(-3, 4, (2, 3, 4, 5)).astype(np.float32)             # NCHW
  filter_shape = (2, 3)
  out_h, out_w = 3, 3
  rhs = rng.integers(-3, 4, (4, 3 * 6, out_h, out_w)).astype(np.float32)  # O, (C,kh,kw), H, W
  out = lax.conv_general_dilated_local(x, rhs, (1, 1), "VALID", filter_shape)
  expected = np.zeros((2, 4, out_h, out_w), np.float32)
  for n, o, y, z in itertools.product(range(2), range(4), range(out_h), range(out_w)):
    window = x[n, :, y:y + 2, z:z + 3].reshape(-1)
    expected[n, o, y, z] = window @ rhs[o, :, y, z]
  _check_equal(out, expected)


def test_jaxpr_prints_as_jax():
  x, w = np.ones((1, 2, 5), np.float32), np.ones((3, 2, 2), np.float32)
  text = str(jax.make_jaxpr(lambda x, w: lax.conv_general_dilated(
      x, w, (1,), "SAME", rhs_dilation=(2,)))(x, w))
  assert text == """{ lambda ; a:f32[1,2,5] b:f32[3,2,2]. let
    c:f32[1,3,5] = conv_general_dilated[
      batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), \
out_spec=(0, 1, 2))
      feature_group_count=1
      lhs_dilation=(1,)
      padding=((1, 1),)
      precision=None
      preferred_element_type=None
      rhs_dilation=(2,)
      window_strides=(1,)
    ] a b
  in (c,) }"""
