"""`jax.nn.initializers`: functions that make initial weights for layers.

An initializer is a function `init(key, shape, dtype=None)` returning an array
of `shape` and `dtype` (None: float32, float64 with x64). `zeros` and `ones`
are initializers; every other name builds one from its parameters. The random
ones draw from `refimpl.random` exactly as JAX 0.10 draws from `jax.random`
(same sampler, same key, same arithmetic), so the same key gives JAX's
numbers. Keys may be typed (`random.key`) or raw (`random.PRNGKey`).

The variance-scaling family (glorot/xavier, he/kaiming, lecun) scales a
standard sample so its variance is `scale / n`, with n counted from the
shape by `_compute_fans`: the product of the sizes of `in_axis` (fan in) or
`out_axis` (fan out), times the receptive field (the product of the axes
that are none of in_axis, out_axis, batch_axis). Complex dtypes draw from
the disk (uniform) or a modulus-truncated complex normal.
"""

import math
import typing

import numpy as np

from refimpl import core, dtypes, random
import refimpl.numpy as jnp

__all__ = [
    'Initializer', 'constant', 'delta_orthogonal', 'glorot_normal', 'glorot_uniform',
    'he_normal', 'he_uniform', 'kaiming_normal', 'kaiming_uniform', 'lecun_normal',
    'lecun_uniform', 'normal', 'ones', 'orthogonal', 'truncated_normal', 'uniform',
    'variance_scaling', 'xavier_normal', 'xavier_uniform', 'zeros',
]

# The standard deviation of a standard normal truncated to (-2, 2), and of a
# complex standard normal (variance 1) with modulus truncated to 2.
_TRUNCATED_NORMAL_STDDEV = .87962566103423978
_COMPLEX_TRUNCATED_NORMAL_STDDEV = .95311164380491208


@typing.runtime_checkable
class Initializer(typing.Protocol):
  """The type of an initializer: `init(key, shape, dtype=None) -> Array`."""

  def __call__(self, key, shape, dtype=None):
    raise NotImplementedError


def _dtype_or_default(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtype


# --- constant initializers ---------------------------------------------------

def zeros(key, shape, dtype=None, out_sharding=None):
  """An array of zeros of `shape` and `dtype`; `key` is ignored (`out_sharding`
  as `jnp.zeros`'s)."""
  return jnp.zeros(shape, _dtype_or_default(dtype), out_sharding=out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
  """An array of ones of `shape` and `dtype`; `key` is ignored (`out_sharding`
  as `jnp.ones`'s)."""
  return jnp.ones(shape, _dtype_or_default(dtype), out_sharding=out_sharding)


def constant(value, dtype=None):
  """An initializer filling its arrays with `value` (`jnp.full`); `dtype` is
  the initializer's default dtype."""
  def init(key, shape, dtype=dtype):
    return jnp.full(shape, value, dtype=_dtype_or_default(dtype))
  return init


# --- simple random initializers ------------------------------------------------

def uniform(scale=1e-2, dtype=None):
  """An initializer of uniform values in [0, scale):
  `random.uniform(key, shape, dtype) * scale` (scale as a `dtype` array)."""
  def init(key, shape, dtype=dtype):
    dtype = _dtype_or_default(dtype)
    return random.uniform(key, shape, dtype) * jnp.array(scale, dtype)
  return init


def normal(stddev=1e-2, dtype=None):
  """An initializer of normal values with mean 0 and standard deviation
  `stddev`: `random.normal(key, shape, dtype) * stddev`."""
  def init(key, shape, dtype=dtype):
    dtype = _dtype_or_default(dtype)
    return random.normal(key, shape, dtype) * jnp.array(stddev, dtype)
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
  """An initializer of `random.truncated_normal(key, lower, upper, shape,
  dtype) * stddev`: values in (lower * stddev, upper * stddev). Unlike the
  variance-scaling initializers, `stddev` is not corrected for the truncation."""
  def init(key, shape, dtype=dtype):
    dtype = _dtype_or_default(dtype)
    return random.truncated_normal(key, lower, upper, shape, dtype) * jnp.array(stddev, dtype)
  return init


# --- variance scaling ---------------------------------------------------------

def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
  """(fan_in, fan_out) of a weights shape, as floats.

  Each of in_axis, out_axis, batch_axis is an axis or a sequence of axes
  whose sizes multiply. The receptive field size is the size of the whole
  shape divided by the in, out and batch sizes (the kernel's spatial axes);
  fan_in = in size * receptive field, fan_out = out size * receptive field.
  Shapes of rank < 2 raise ValueError.
  """
  if len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}"
                     "-dimensional weights tensor. Must be at least 2D.")

  def size(axes):
    return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)

  in_size, out_size = size(in_axis), size(out_axis)
  receptive_field_size = math.prod(shape) / in_size / out_size / size(batch_axis)
  return in_size * receptive_field_size, out_size * receptive_field_size


def _split_complex(key, dtype):
  """(key_r, key_theta, real dtype, complex dtype) for a complex sampler."""
  key_r, key_theta = random.split(key)
  real_dtype = dtypes.to_real_dtype(dtype)
  return key_r, key_theta, real_dtype, dtypes.to_complex_dtype(real_dtype)


def _complex_uniform(key, shape, dtype):
  """Uniform values on the unit-variance disk |z| < sqrt(2): with
  key_r, key_theta = split(key), r = sqrt(2 * uniform(key_r)) and
  theta = 2 pi uniform(key_theta), the value r * exp(1j * theta)."""
  key_r, key_theta, real_dtype, dtype = _split_complex(key, dtype)
  r = jnp.sqrt(2 * random.uniform(key_r, shape, real_dtype)).astype(dtype)
  theta = 2 * jnp.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
  return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
  """Complex normal values (variance 1 before truncation) with modulus below
  `upper`, by inverting the modulus CDF: with key_r, key_theta = split(key),
  t = (1 - exp(-upper**2)) * uniform(key_r), r = sqrt(-log(1 - t)),
  theta = 2 pi uniform(key_theta), the value r * exp(1j * theta)."""
  key_r, key_theta, real_dtype, dtype = _split_complex(key, dtype)
  t = ((1 - jnp.exp(jnp.array(-(upper ** 2), dtype)))
       * random.uniform(key_r, shape, real_dtype).astype(dtype))
  r = jnp.sqrt(-jnp.log(1 - t))
  theta = 2 * jnp.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
  return r * jnp.exp(1j * theta)


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
  """An initializer whose values have mean 0 and variance `scale / n`.

  n is, by `mode`: "fan_in", "fan_out", "fan_avg" ((fan_in + fan_out) / 2)
  or "fan_geo_avg" (sqrt(fan_in * fan_out)), with the fans of `_compute_fans`
  over in_axis, out_axis and batch_axis. With variance v = scale / n as a
  `dtype` array, the values are, by `distribution`:

  * "truncated_normal": `random.truncated_normal(key, -2, 2, shape, dtype)
    * sqrt(v) / 0.87962566103423978` (the standard deviation of the truncated
    standard normal); complex dtypes: the complex normal truncated to modulus 2,
    times sqrt(v) / 0.95311164380491208;
  * "normal": `random.normal(key, shape, dtype) * sqrt(v)`;
  * "uniform": `random.uniform(key, shape, dtype, -1) * sqrt(3 v)`; complex
    dtypes: uniform on the unit-variance disk, times sqrt(v).

  A shape of rank < 2, an unknown mode or an unknown distribution raises
  ValueError when the initializer is called; a dtype that is neither float nor
  complex raises the sampler's ValueError.
  """
  def init(key, shape, dtype=dtype):
    shape = core.canonicalize_shape(shape)
    dtype = _dtype_or_default(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    if mode == "fan_in":
      denominator = fan_in
    elif mode == "fan_out":
      denominator = fan_out
    elif mode == "fan_avg":
      denominator = (fan_in + fan_out) / 2
    elif mode == "fan_geo_avg":
      denominator = (fan_in * fan_out) ** 0.5
    else:
      raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    variance = jnp.array(scale / denominator, dtype=dtype)
    is_real = dtypes.issubdtype(dtype, np.floating)

    if distribution == "truncated_normal":
      if is_real:
        stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_NORMAL_STDDEV, dtype)
        return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
      stddev = jnp.sqrt(variance) / jnp.array(_COMPLEX_TRUNCATED_NORMAL_STDDEV, dtype)
      return _complex_truncated_normal(key, 2, shape, dtype) * stddev
    if distribution == "normal":
      return random.normal(key, shape, dtype) * jnp.sqrt(variance)
    if distribution == "uniform":
      if is_real:
        return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
      return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

  return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot (Xavier) uniform: `variance_scaling(1.0, "fan_avg", "uniform")`."""
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot (Xavier) normal: `variance_scaling(1.0, "fan_avg", "truncated_normal")`."""
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun uniform: `variance_scaling(1.0, "fan_in", "uniform")`."""
  return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun normal: `variance_scaling(1.0, "fan_in", "truncated_normal")`."""
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He (Kaiming) uniform: `variance_scaling(2.0, "fan_in", "uniform")`."""
  return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He (Kaiming) normal: `variance_scaling(2.0, "fan_in", "truncated_normal")`."""
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


# --- orthogonal initializers ---------------------------------------------------

def orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """An initializer of `scale` times (semi-)orthogonal matrices.

  The shape (rank >= 2, else ValueError) is viewed as a matrix of n_cols =
  shape[column_axis] columns and n_rows = size / n_cols rows; the matrix is
  uniform among those with orthonormal columns (n_rows >= n_cols) or rows:
  `random.orthogonal(key, n_rows, (), dtype, n_cols)`. Its rows are reshaped
  to the other axes in order and its columns moved to `column_axis`. A shape
  with a 0 size gives zeros.
  """
  def init(key, shape, dtype=dtype):
    dtype = _dtype_or_default(dtype)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    if any(dim == 0 for dim in shape):
      return jnp.zeros(shape, dtype=dtype)
    n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
    q = random.orthogonal(key, n_rows, (), dtype, n_cols)
    q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
    q = jnp.moveaxis(q, -1, column_axis)
    return jnp.array(scale, dtype) * q
  return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """An initializer of delta-orthogonal convolution kernels (Xiao et al. 2018).

  The shape must have rank 3, 4 or 5 (ValueError) with shape[-1] >= shape[-2]
  (ValueError: fan_in <= fan_out). The kernel is zero except at the center of
  its spatial axes, index (k - 1) // 2 along each leading axis of size k,
  which holds `orthogonal(scale, column_axis, dtype)(key, shape[-2:])`.
  """
  def init(key, shape, dtype=dtype):
    dtype = _dtype_or_default(dtype)
    if len(shape) not in [3, 4, 5]:
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    ortho_matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(
        key, shape[-2:])
    center = tuple((k - 1) // 2 for k in shape[:-2])
    return jnp.zeros(shape, dtype=dtype).at[center].set(ortho_matrix)
  return init
