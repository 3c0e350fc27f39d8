"""Tests of refimpl/image.py (jax.image): resize and scale_and_translate against
hand-computed examples and a loop-by-loop NumPy reference of JAX's resampling (half-pixel
centres, kernels stretched by 1/scale when downsampling with antialias, weights
normalized over the input, zero outside it), nearest-neighbour indices, dtypes, errors,
and jit, vmap and grad."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import image
from refimpl.config import enable_x64
from conformance import strategies as S


def _keys(x, a):
  if x < 1:
    return ((a + 2) * x - (a + 3)) * x * x + 1
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2 else 0.0


def _lanczos(radius, x):
  if x > radius:
    return 0.0
  if x <= 1e-3:
    return 1.0
  return radius * math.sin(math.pi * x) * math.sin(math.pi * x / radius) / (math.pi * x) ** 2


_KERNELS = {
    "linear": lambda x: max(0.0, 1 - x),
    "cubic": lambda x: _keys(x, -0.5),
    "lanczos3": lambda x: _lanczos(3, x),
    "lanczos5": lambda x: _lanczos(5, x),
}


def _reference_1d(values, out_size, method, scale, translation, antialias):
  """JAX's resampling of a 1-D signal, one output pixel at a time."""
  kernel, n = _KERNELS[method], len(values)
  stretch = max(1 / scale, 1.0) if antialias else 1.0
  out = np.zeros(out_size)
  for j in range(out_size):
    centre = (j + 0.5) / scale - translation / scale - 0.5
    if not -0.5 <= centre <= n - 0.5:
      continue
    weights = np.array([kernel(abs(centre - i) / stretch) for i in range(n)])
    total = weights.sum()
    if abs(total) > 1000 * np.finfo(np.float32).eps:
      out[j] = weights @ values / total
  return out


def _reference(x, shape, method, scales, translations, antialias):
  for axis in range(x.ndim):
    x = np.apply_along_axis(_reference_1d, axis, x, shape[axis], method, scales[axis],
                            translations[axis], antialias)
  return x


def test_hand_computed_linear_examples():
  # Upsampling interpolates: output centres at 0.25 steps of the input's [-0.25, 1.25].
  np.testing.assert_allclose(image.resize(jnp.array([1.0, 3.0]), (4,), "linear"),
                             [1.0, 1.5, 2.5, 3.0])
  x = jnp.arange(8.0)
  # Halving samples at 0.5, 2.5, ...: without antialias the triangle averages two pixels.
  np.testing.assert_allclose(image.resize(x, (4,), "linear", antialias=False),
                             [0.5, 2.5, 4.5, 6.5])
  # With antialias the triangle is twice as wide: at 0.5 pixels 0, 1, 2 weigh .75, .75, .25
  # (the missing pixel -1 dropped by the normalization): (0 * .75 + 1 * .75 + 2 * .25) / 1.75.
  np.testing.assert_allclose(image.resize(x, (4,), "linear"),
                             [1.25 / 1.75, 2.5, 4.5, 7 - 1.25 / 1.75], rtol=1e-6)


def test_nearest_picks_floor_of_the_scaled_centre():
  x = jnp.arange(6).reshape(2, 3)
  out = image.resize(x, (4, 5), "nearest")
  assert out.dtype == x.dtype
  rows, cols = [math.floor((j + 0.5) * 2 / 4) for j in range(4)], [
      math.floor((j + 0.5) * 3 / 5) for j in range(5)]
  np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3)[np.ix_(rows, cols)])
  np.testing.assert_array_equal(image.resize(jnp.arange(7), (3,), "nearest"), [1, 3, 5])


@given(data=st.data(), method=st.sampled_from(sorted(_KERNELS)), antialias=st.booleans())
def test_resize_matches_the_reference(data, method, antialias):
  shape = data.draw(S.shapes(min_dims=1, max_dims=2, min_side=1, max_side=6))
  out_shape = tuple(data.draw(st.lists(st.integers(1, 8), min_size=len(shape),
                                       max_size=len(shape))))
  x = data.draw(S.arrays(np.float64, shape, elements=st.floats(-10, 10)))
  with enable_x64():
    actual = image.resize(x, out_shape, method, antialias)
  scales = [o / i for o, i in zip(out_shape, shape)]
  np.testing.assert_allclose(actual, _reference(x, out_shape, method, scales, [0] * x.ndim,
                                                antialias), rtol=1e-10, atol=1e-10)


@given(data=st.data(), method=st.sampled_from(sorted(_KERNELS)), antialias=st.booleans())
def test_scale_and_translate_matches_the_reference(data, method, antialias):
  x = data.draw(S.arrays(np.float64, (data.draw(st.integers(1, 5)),), elements=st.floats(-5, 5)))
  size = data.draw(st.integers(1, 7))
  scale = data.draw(st.sampled_from([0.4, 0.75, 1.0, 1.5, 3.0]))
  translation = data.draw(st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0]))
  with enable_x64():
    actual = image.scale_and_translate(x, (size,), (0,), jnp.array([scale]),
                                       jnp.array([translation]), method, antialias)
  expected = _reference_1d(x, size, method, scale, translation, antialias)
  np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch",
                                    "area"])
def test_constant_images_stay_constant_and_same_shape_is_identity(method):
  x = jnp.full((3, 4), 2.5)
  for shape in [(5, 7), (2, 3), (3, 9)]:
    np.testing.assert_allclose(image.resize(x, shape, method), np.full(shape, 2.5), rtol=1e-5)
  y = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
  np.testing.assert_array_equal(image.resize(y, (3, 4), method), y)


def test_pytorch_cubic_and_area_kernels():
  x = jnp.array([0.0, 1.0, 0.0, 0.0])
  # Area downsampling by 2 averages pairs.
  np.testing.assert_allclose(image.resize(x, (2,), "area"), [0.5, 0.0])
  # 'cubic-pytorch' without antialias: a = -0.75 with edge pixels repeated. Upsampling by 2,
  # output 0 samples at -0.25: taps -2, -1, 0 (distances 1.75, 0.75, 0.25) all clamp to
  # pixel 0, tap 1 (distance 1.25) is pixel 1, the only nonzero one.
  distances = [1.75, 0.75, 0.25, 1.25]
  expected = _keys(1.25, -0.75) / sum(_keys(d, -0.75) for d in distances)
  np.testing.assert_allclose(image.resize(x, (8,), "cubic-pytorch", antialias=False)[0],
                             expected, rtol=1e-6)
  # With antialias it is the Keys cubic.
  np.testing.assert_allclose(image.resize(x, (8,), "cubic-pytorch"), image.resize(x, (8,), "cubic"))


def test_dtypes_and_method_names():
  x = np.arange(12, dtype=np.uint8).reshape(3, 4)
  assert image.resize(x, (6, 8), "bilinear").dtype == np.float32
  assert image.resize(x.astype(np.float16), (6, 8), "linear").dtype == np.float16
  for name, member in [("triangle", "LINEAR"), ("tricubic", "CUBIC"), ("lanczos5", "LANCZOS5"),
                       ("bicubic-pytorch", "CUBIC_PYTORCH"), ("area", "AREA")]:
    assert image.ResizeMethod.from_string(name) is image.ResizeMethod[member]
  np.testing.assert_array_equal(image.resize(x, (6, 8), image.ResizeMethod.LINEAR),
                                image.resize(x, (6, 8), "linear"))


def test_errors():
  x = jnp.ones((2, 3))
  with pytest.raises(ValueError, match="shape must have length equal to the number of dim"):
    image.resize(x, (4,), "linear")
  with pytest.raises(ValueError, match='Unknown resize method "bogus"'):
    image.resize(x, (4, 4), "bogus")
  with pytest.raises(ValueError, match="Nearest neighbor resampling is not currently supported"):
    image.scale_and_translate(x, (4, 4), (0,), jnp.ones(1), jnp.zeros(1), "nearest")


def test_jit_vmap_and_grad():
  x = np.random.default_rng(0).normal(size=(2, 4, 5)).astype(np.float32)
  resize = lambda v: image.resize(v, (7, 3), "cubic")
  np.testing.assert_allclose(jax.jit(resize)(x[0]), resize(x[0]), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(resize)(x), image.resize(x, (2, 7, 3), "cubic"),
                             rtol=1e-5, atol=1e-6)
  # Resizing is linear: the gradient of the sum is each input pixel's total weight; upsampling
  # by an integer factor with the triangle kernel gives every pixel the same total, 2.
  grad = jax.grad(lambda v: image.resize(v, (8,), "linear").sum())(jnp.arange(4.0))
  np.testing.assert_allclose(grad, [2.0, 2.0, 2.0, 2.0], rtol=1e-6)
  # Gradient with respect to the scale, by central differences.
  st_fn = lambda s: image.scale_and_translate(jnp.arange(5.0), (5,), (0,), s[None], jnp.zeros(1),
                                              "linear").sum()
  h = 1e-2
  fd = (st_fn(jnp.array(1.3 + h)) - st_fn(jnp.array(1.3 - h))) / (2 * h)
  np.testing.assert_allclose(jax.grad(st_fn)(jnp.array(1.3)), fd, rtol=2e-2)
