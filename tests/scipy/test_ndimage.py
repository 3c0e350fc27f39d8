"""Tests of refimpl/scipy/ndimage.py: map_coordinates of orders 0 and 1 in every mode
against scipy.ndimage (JAX's 'constant' and 'wrap' are SciPy's 'grid-constant' and
'grid-wrap'), integer inputs, JAX's documented example, errors, jit, vmap and grad."""

import numpy as np
import pytest
import scipy.ndimage
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy import ndimage
from conformance import strategies as S

_SCIPY_MODE = {"constant": "grid-constant", "nearest": "nearest", "wrap": "grid-wrap",
               "mirror": "mirror", "reflect": "reflect"}


def _inputs(draw, dtype):
  shape = draw(S.shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
  image = draw(S.arrays(dtype, shape, elements=st.floats(-10, 10)))
  # Coordinates away from the half-integers where order 0 rounds differently from SciPy.
  coordinate = st.floats(-6, 9).filter(lambda c: abs(c - np.floor(c) - 0.5) > 1e-3)
  coords = [draw(S.arrays(dtype, (5,), elements=coordinate)) for _ in shape]
  return image, coords


@pytest.mark.parametrize("mode", sorted(_SCIPY_MODE))
@pytest.mark.parametrize("order", [0, 1])
@given(data=st.data())
def test_map_coordinates_matches_scipy(mode, order, data):
  image, coords = _inputs(data.draw, np.float64)
  with enable_x64():
    actual = ndimage.map_coordinates(image, coords, order, mode=mode, cval=1.5)
  expected = scipy.ndimage.map_coordinates(image, np.stack(coords), order=order,
                                           mode=_SCIPY_MODE[mode], cval=1.5)
  np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


@given(data=st.data(), order=st.sampled_from([0, 1]), mode=st.sampled_from(sorted(_SCIPY_MODE)))
def test_float32(data, order, mode):
  image, coords = _inputs(data.draw, np.float32)
  actual = ndimage.map_coordinates(image, coords, order, mode=mode)
  assert actual.dtype == np.float32
  expected = scipy.ndimage.map_coordinates(image.astype(np.float64), np.stack(coords),
                                           order=order, mode=_SCIPY_MODE[mode])
  np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_documented_example():
  image = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  out = ndimage.map_coordinates(image, [np.array([0.5, 1.5]), np.array([1.5, 2.5])], order=1)
  np.testing.assert_array_equal(out, np.array([3.5, 8.5], np.float32))


def test_integer_inputs_round_half_away_from_zero():
  image = np.array([0, 1, -4, 7], np.int32)
  out = ndimage.map_coordinates(image, [np.array([0.5, 1.5, 2.5, 1.25])], order=1)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, [1, -2, 2, 0])
  # Order 0 rounds coordinates half away from zero: 0.5 -> 1, -0.5 -> -1 (outside: cval).
  out = ndimage.map_coordinates(image.astype(np.float32), [np.array([0.5, 2.5, -0.5])], order=0)
  np.testing.assert_array_equal(out, [1., 7., 0.])
  # Integer coordinates are used as they are.
  np.testing.assert_array_equal(ndimage.map_coordinates(image, [np.array([3, 4, -1])], 1),
                                [7, 0, 0])


def test_errors():
  image = np.ones((3, 3), np.float32)
  coords = [np.zeros(2)] * 2
  with pytest.raises(NotImplementedError, match="requires order<=1"):
    ndimage.map_coordinates(image, coords, 3)
  with pytest.raises(NotImplementedError, match="does not yet support mode grid-wrap"):
    ndimage.map_coordinates(image, coords, 1, mode="grid-wrap")
  with pytest.raises(ValueError, match="coordinates must be a sequence of length input.ndim"):
    ndimage.map_coordinates(image, coords[:1], 1)


def test_jit_vmap_and_grad():
  image = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  rows, cols = np.array([0.25, 1.5, 2.0], np.float32), np.array([0.5, 2.75, 1.0], np.float32)
  interp = lambda img, r, c: ndimage.map_coordinates(img, [r, c], 1, mode="nearest")
  np.testing.assert_allclose(jax.jit(interp)(image, rows, cols), interp(image, rows, cols))
  batched = jax.vmap(interp, in_axes=(None, 0, 0))(image, rows[:, None], cols[:, None])
  np.testing.assert_allclose(batched[:, 0], interp(image, rows, cols))
  # image[i, j] = 4 i + j is linear, so the derivatives along the coordinates are 4 and 1.
  grads = jax.grad(lambda r, c: interp(image, r, c).sum(), argnums=(0, 1))(rows[:2], cols[:2])
  np.testing.assert_allclose(grads[0], [4., 4.])
  np.testing.assert_allclose(grads[1], [1., 1.])
