"""`refimpl.image`: image resampling, as `jax.image`.

Resampling is separable: along each resized dimension the output is the
input contracted with an (input size, output size) weight matrix, all of
them in one einsum. Output pixel j samples the input at the half-pixel
centred position (j + 0.5) / scale - translation / scale - 0.5; the weight of
input pixel i is kernel(|position - i| / kernel_scale), normalized to sum to
one over the input pixels, and zero when the position lies outside
[-0.5, size - 0.5]. With `antialias` the kernel is stretched by 1 / scale
when downsampling (kernel_scale = max(1 / scale, 1)), a low-pass filter;
upsampling only interpolates. So `resize` is not SciPy's `zoom`: a 2x linear
upsampling of [a, b] gives [a, .75a + .25b, .25a + .75b, b].

Kernels: 'linear' (triangle), 'cubic' (Keys, a = -0.5), 'lanczos3',
'lanczos5', 'cubic-pytorch' (a = -0.75 with edge pixels repeated, used
without antialias; with it, the Keys kernel), and 'area' (the overlap of
the output pixel's footprint with each input pixel). 'nearest' picks input
pixel floor((j + 0.5) * in / out) and is only available in `resize`.
"""

import enum
import functools

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.api import jit
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy import (
    absolute, arange, clip, divide, einsum, floor, logical_and, maximum, minimum, sin, where,
    zeros)
from refimpl.numpy.util import promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


def _lanczos_kernel(radius, x):
  """sinc(x) sinc(x / radius) for x <= radius (1 near 0), else 0."""
  y = radius * sin(np.pi * x) * sin(np.pi * x / radius)
  out = where(x > 1e-3, divide(y, where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
  return where(x > radius, 0., out)


def _keys_cubic_kernel(x):
  """Keys' cubic convolution kernel with a = -0.5 (Pillow's, TensorFlow's)."""
  out = ((1.5 * x - 2.5) * x) * x + 1.
  out = where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
  return where(x >= 2., 0., out)


def _opencv_cubic_kernel(x):
  """The cubic convolution kernel with a = -0.75 (OpenCV's, PyTorch's without antialias)."""
  a = -0.75
  out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
  out = where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
  return where(x >= 2.0, 0.0, out)


def _triangle_kernel(x):
  return maximum(0, 1 - absolute(x))


_AREA_KERNEL = object()
"""Marks the area method, whose weights are overlaps rather than kernel values."""


class ResizeMethod(enum.Enum):
  """The resampling methods; `from_string` maps their names (and aliases) to them."""

  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s):
    if s == 'nearest':
      return ResizeMethod.NEAREST
    if s in ['linear', 'bilinear', 'trilinear', 'triangle']:
      return ResizeMethod.LINEAR
    if s == 'lanczos3':
      return ResizeMethod.LANCZOS3
    if s == 'lanczos5':
      return ResizeMethod.LANCZOS5
    if s in ['cubic', 'bicubic', 'tricubic']:
      return ResizeMethod.CUBIC
    if s in ['cubic-pytorch', 'bicubic-pytorch']:
      return ResizeMethod.CUBIC_PYTORCH
    if s == 'area':
      return ResizeMethod.AREA
    raise ValueError(f'Unknown resize method "{s}"')


# Each method's (radius, kernel).
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle_kernel),
    ResizeMethod.LANCZOS3: (3, functools.partial(_lanczos_kernel, 3.)),
    ResizeMethod.LANCZOS5: (5, functools.partial(_lanczos_kernel, 5.)),
    ResizeMethod.CUBIC: (2, _keys_cubic_kernel),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic_kernel),
    ResizeMethod.AREA: (1, _AREA_KERNEL),
}


def _normalized(weights):
  """Columns divided by their sums; zero where a sum is below 1000 float32 eps."""
  total = weights.sum(axis=0, keepdims=True)
  return where(absolute(total) > 1000. * float(np.finfo(np.float32).eps),
               divide(weights, where(total != 0, total, 1)), 0)


def _weight_matrix(input_size, output_size, scale, translation, kernel, antialias,
                   edge_padding, radius):
  """The (input_size, output_size) resampling weights along one dimension.

  With `edge_padding` the kernel also covers `radius` pixels beyond each edge,
  whose weights are added onto the edge pixels (edges repeated)."""
  dtype = dtypes.result_type(scale, translation)
  inv_scale = 1. / scale
  kernel_scale = maximum(inv_scale, 1.) if antialias else 1.
  sample_f = (arange(output_size, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale - 0.5
  k = radius if edge_padding else 0
  expanded_indices = arange(-k, input_size + k, dtype=dtype)
  if kernel is _AREA_KERNEL:
    left_out = arange(output_size, dtype=dtype) * inv_scale - translation * inv_scale
    right_out = left_out + inv_scale
    left_in = arange(input_size, dtype=dtype)
    right_in = left_in + 1.0
    weights = maximum(0.0, minimum(right_out[np.newaxis, :], right_in[:, np.newaxis])
                      - maximum(left_out[np.newaxis, :], left_in[:, np.newaxis]))
  else:
    weights = kernel(absolute(sample_f[np.newaxis, :] - expanded_indices[:, np.newaxis])
                     / kernel_scale)
  if edge_padding:
    clamped = clip(expanded_indices.astype(np.int32), 0, input_size - 1)
    columns = lax.broadcast_in_dim(arange(output_size), (expanded_indices.shape[0], output_size),
                                   (1,))
    weights = zeros((input_size, output_size), dtype=dtype).at[
        clamped[:, np.newaxis], columns].add(weights)
    return _normalized(weights)
  inside = logical_and(sample_f >= -0.5, sample_f <= input_size - 0.5)
  return where(inside[np.newaxis, :], _normalized(weights), 0)


def _scale_and_translate(x, output_shape, spatial_dims, scale, translation, kernel, antialias,
                         precision, edge_padding=False, radius=None):
  """x contracted with one weight matrix per spatial dimension (a single einsum)."""
  if len(spatial_dims) == 0:
    return x
  contractions = []
  in_indices = list(range(len(output_shape)))
  out_indices = list(range(len(output_shape)))
  for i, d in enumerate(spatial_dims):
    d = canonicalize_axis(d, x.ndim)
    w = _weight_matrix(x.shape[d], output_shape[d], scale[i], translation[i], kernel,
                       antialias, edge_padding=edge_padding, radius=radius).astype(x.dtype)
    contractions += [w, [d, len(output_shape) + i]]
    out_indices[d] = len(output_shape) + i
  contractions.append(out_indices)
  return einsum(x, in_indices, *contractions, precision=precision)


def _check_rank(shape, image):
  if len(shape) != image.ndim:
    raise ValueError('shape must have length equal to the number of dimensions of x; '
                     f' {shape} vs {image.shape}')


def _kernel_for(method, antialias):
  """(radius, kernel, edge_padding) of a method other than nearest."""
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  return radius, kernel, method == ResizeMethod.CUBIC_PYTORCH


def scale_and_translate(image, shape, spatial_dims, scale, translation, method, antialias=True,
                        precision=lax.Precision.HIGHEST):
  """`image` resampled to `shape`, mapping input position x (half-pixel centred) along
  spatial_dims[i] to x * scale[i] + translation[i]; output pixels whose sample falls
  outside the input are zero. The image, and scale with translation, are promoted to
  inexact dtypes; 'nearest' is not supported (ValueError)."""
  shape = core.canonicalize_shape(shape)
  _check_rank(shape, image)
  if isinstance(method, str):
    method = ResizeMethod.from_string(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError('Nearest neighbor resampling is not currently supported '
                     'for scale_and_translate.')
  radius, kernel, edge_padding = _kernel_for(method, antialias)
  image, = promote_dtypes_inexact(image)
  scale, translation = promote_dtypes_inexact(scale, translation)
  return _scale_and_translate(image, shape, spatial_dims, scale, translation, kernel, antialias,
                              precision, edge_padding=edge_padding, radius=radius)


def _resize_nearest(x, output_shape):
  """Along each resized dimension, output j takes input floor((j + 0.5) * in / out)
  (computed in float32, as JAX)."""
  for d, (m, n) in enumerate(zip(x.shape, output_shape)):
    if m == n:
      continue
    offsets = (arange(n, dtype=np.float32) + 0.5) * m / n
    offsets = floor(offsets.astype(np.float32)).astype(np.int32)
    indices = [slice(None)] * x.ndim
    indices[d] = offsets
    x = x[tuple(indices)]
  return x


@functools.partial(jit, static_argnums=(1, 2, 3, 4))
def _resize(image, shape, method, antialias, precision):
  _check_rank(shape, image)
  if isinstance(method, str):
    method = ResizeMethod.from_string(method)
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  image, = promote_dtypes_inexact(image)
  spatial_dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
  radius, kernel, edge_padding = _kernel_for(method, antialias)
  scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
  return _scale_and_translate(image, shape, spatial_dims, scale, [0.] * len(spatial_dims),
                              kernel, antialias, precision, edge_padding=edge_padding,
                              radius=radius)


def resize(image, shape, method, antialias=True, precision=lax.Precision.HIGHEST):
  """`image` resampled to `shape` (every dimension; a dimension whose size is kept is
  left as it is) by `method` (a ResizeMethod or its name: 'nearest', 'linear',
  'cubic', 'lanczos3', 'lanczos5', 'cubic-pytorch', 'area'), with scale
  out_size / in_size and no translation; inexact results except for 'nearest'."""
  return _resize(image, core.canonicalize_shape(shape), method, antialias, precision)
