"""`jax.random` with raw keys: the key functions and the basic samplers.

A key is a raw `uint32[2]` array made by `PRNGKey(seed)` (typed keys,
`random.key`, are not built yet). Every function is deterministic in its
key: the same key gives the same numbers, so fresh numbers need a fresh key
from `split` or `fold_in`. The bits come from `refimpl.prng` (threefry2x32,
in the mode `jax_threefry_partitionable` selects); each sampler's docstring
states how it turns bits into values, bit for bit as JAX does. A batch of
keys (shape (..., 2)) is accepted with JAX's FutureWarning and mapped over.
"""

import math
import warnings

import numpy as np

from refimpl import core, dtypes, lax, prng
from refimpl.numpy.util import check_arraylike, is_arraylike

__all__ = ['PRNGKey', 'split', 'fold_in', 'clone', 'bits', 'uniform', 'normal',
           'randint', 'bernoulli']


# --- keys --------------------------------------------------------------------------

def _check_key_data(key):
  """Raises TypeError, with JAX's messages, unless `key` is uint32[..., 2]."""
  if np.ndim(key) < 1:
    raise TypeError("JAX encountered invalid PRNG key data: expected "
                    f"key_data.ndim >= 1; got ndim={np.ndim(key)}")
  if np.shape(key)[-1:] != (2,):
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to "
                    f"end with (2,); got shape={np.shape(key)} for impl=threefry2x32")
  if lax.dtype(key) != np.uint32:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                    f"uint32; got dtype={lax.dtype(key)}")


def _check_prng_key(name, key):
  """`key` as a raw key array, checked; a batch of keys warns as in JAX."""
  if not is_arraylike(key):
    raise TypeError(f'unexpected PRNG key type {type(key)}')
  _check_key_data(key)
  if np.ndim(key) > 1:
    warnings.warn(f"{name} accepts a single key, but was given a key array of shape "
                  f"{np.shape(key)} != (). Use jax.vmap for batching. In a future JAX "
                  "version, this will be an error.", FutureWarning, stacklevel=3)
  import refimpl.numpy as jnp
  return jnp.asarray(key)


def _map_keys(f, key):
  """`f` (of one raw key) applied to each key of a batch `key` of shape (..., 2)."""
  from refimpl.vectorize import vmap
  for _ in range(np.ndim(key) - 1):
    f = vmap(f)
  return f(key)


def PRNGKey(seed):
  """The raw key uint32[2] of an integer `seed`: [seed >> 32, seed & 0xFFFFFFFF].

  A Python int seed is taken as int64 first, so without x64 its low 32 bits
  count ([0, seed mod 2**32]); with x64 a 64-bit seed gives both words.
  """
  import refimpl.numpy as jnp
  if np.ndim(seed):
    raise TypeError("PRNGKey accepts a scalar seed, but was given an array of "
                    f"shape {np.shape(seed)} != (). Use jax.vmap for batching")
  seed = jnp.asarray(np.int64(seed)) if isinstance(seed, int) else jnp.asarray(seed)
  return prng.threefry_seed(seed)


def split(key, num=2):
  """`num` new keys (uint32[num, 2]; `num` may be a shape) derived from `key`
  by `prng.threefry_split`."""
  key = _check_prng_key("split", key)
  if np.ndim(key) > 1:
    raise TypeError("split accepts a single key, but was given a key array of "
                    f"shape {np.shape(key)[:-1]} != (). Use jax.vmap for batching.")
  shape = tuple(num) if isinstance(num, (tuple, list)) else (num,)
  return prng.threefry_split(key, shape)


def fold_in(key, data):
  """The key that `key` and the integer `data` determine:
  `threefry_2x32(key, [0, uint32(data)])` (`prng.threefry_fold_in`)."""
  import refimpl.numpy as jnp
  key = _check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of"
                    f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
  data = jnp.uint32(data)
  return _map_keys(lambda k: prng.threefry_fold_in(k, data), key)


def clone(key):
  """`key` itself: raw keys carry no reuse tracking to reset."""
  return _check_prng_key("clone", key)


def _random_bits(key, bit_width, shape):
  return _map_keys(lambda k: prng.threefry_random_bits(k, bit_width, shape), key)


# --- samplers --------------------------------------------------------------------

def bits(key, shape=(), dtype=None):
  """Uniformly random unsigned integers: `prng.threefry_random_bits(key,
  8 * itemsize, shape)` as they come. `dtype` (default uint32, uint64 with
  x64) must be unsigned (ValueError)."""
  key = _check_prng_key("bits", key)
  if dtype is None:
    dtype = dtypes.canonicalize_dtype(np.uint64)
  else:
    dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.unsignedinteger):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = core.canonicalize_shape(shape)
  return _random_bits(key, dtype.itemsize * 8, shape)


def uniform(key, shape=(), dtype=float, minval=0., maxval=1.):
  """Uniform floats in [minval, maxval).

  With nbits = the dtype's width and nmant its explicit mantissa bits, the
  draw is b = random bits of width nbits (8 bits widened if nmant < 8); the
  float with sign 0, exponent of 1.0 and mantissa b >> (nbits - nmant) lies
  in [1, 2); minus 1 gives f in [0, 1) (a multiple of 2**-nmant). The result
  is max(minval, f * (maxval - minval) + minval), computed in `dtype`.
  """
  key = _check_prng_key("uniform", key)
  dtypes.check_user_dtype_supported(dtype)
  shape = core.canonicalize_shape(shape)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dtype}")
  return _uniform(key, shape, dtypes.canonicalize_dtype(dtype), minval, maxval)


def _uniform(key, shape, dtype, minval, maxval):
  minval = lax.broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
  maxval = lax.broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(shape))
  finfo = dtypes.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  rng_bits = 8 if nmant < 8 else nbits
  uint_dtype = prng.UINT_DTYPES[nbits]
  bits = _random_bits(key, rng_bits, shape)
  if rng_bits != nbits:
    bits = lax.convert_element_type(bits, uint_dtype)
  float_bits = lax.bitwise_or(
      lax.shift_right_logical(bits, np.array(rng_bits - nmant, uint_dtype)),
      np.array(1.0, dtype).view(uint_dtype))
  floats = lax.bitcast_convert_type(float_bits, dtype) - np.array(1., dtype)
  return lax.max(minval, lax.reshape(floats * (maxval - minval) + minval, shape))


def normal(key, shape=(), dtype=float):
  """Standard normal floats: u = uniform(key, shape, dtype, lo, 1) with lo
  the float after -1 towards 0, then sqrt(2) * erf_inv(u), in `dtype`.

  Complex dtypes: (re + 1j * im) / sqrt(2) with re, im the real normals of
  the two keys of split(key).
  """
  key = _check_prng_key("normal", key)
  shape = core.canonicalize_shape(shape)
  dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, "
                     f"got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  if dtypes.is_complex(dtype):
    real_dtype = dtypes.to_real_dtype(dtype)
    key_re, key_im = _map_keys(lambda k: prng.threefry_split(k, (2,)), key)
    re = lax.convert_element_type(_normal_real(key_re, shape, real_dtype), dtype)
    im = lax.convert_element_type(_normal_real(key_im, shape, real_dtype), dtype)
    return (re + 1j * im) / np.array(np.sqrt(2), dtype)
  return _normal_real(key, shape, dtype)


def _normal_real(key, shape, dtype):
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  u = _uniform(key, shape, dtype, lo, np.array(1., dtype))
  return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def randint(key, shape, minval, maxval, dtype=int):
  """Integers in [minval, maxval) of `dtype` (int32, int64 with x64).

  minval and maxval are clipped to `dtype`'s range. The draw is computed in
  nbits = max(32, bits of dtype): 8- and 16-bit dtypes compute in the
  32-bit integer of their signedness and convert the result (JAX 0.10 does
  so to limit the modulo bias). span = maxval - minval as unsigned nbits
  (1 if maxval <= minval; plus 1 when maxval exceeds the dtype's maximum).
  With k1, k2 = split(key), hi and lo are nbits-wide random bits of k1 and
  k2, and m = (2**(nbits/2) % span)**2 % span (unsigned nbits arithmetic);
  the result is minval + ((hi % span) * m + lo % span) % span.
  """
  key = _check_prng_key("randint", key)
  dtypes.check_user_dtype_supported(dtype)
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = core.canonicalize_shape(shape)
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  import refimpl.numpy as jnp
  check_arraylike("randint", minval, maxval)
  minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
  if not dtypes.issubdtype(minval.dtype, np.integer):
    minval = minval.astype(int)
  if not dtypes.issubdtype(maxval.dtype, np.integer):
    maxval = maxval.astype(int)
  maxval_out_of_range = lax.gt(
      maxval, _convert_and_clip_integer(jnp.array(dtypes.iinfo(dtype).max, dtype),
                                        maxval.dtype))
  nbits = max(32, dtypes.iinfo(dtype).bits)
  wide = dtype if nbits == dtypes.iinfo(dtype).bits else np.dtype(dtype.kind + "4")
  minval, maxval = (
      lax.broadcast_to_rank(lax.convert_element_type(
          _convert_and_clip_integer(v, dtype), wide), len(shape))
      for v in (minval, maxval))
  k1, k2 = _map_keys(lambda k: prng.threefry_split(k, (2,)), key)
  higher_bits, lower_bits = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
  unsigned = prng.UINT_DTYPES[nbits]
  span = lax.convert_element_type(maxval - minval, unsigned)
  span = lax.select(maxval <= minval, lax.full_like(span, 1), span)
  span = lax.select(maxval_out_of_range & (maxval > minval),
                    lax.add(span, np.array(1, unsigned)), span)
  multiplier = lax.rem(np.array(2 ** (nbits // 2), unsigned), span)
  multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
  offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier),
                   lax.rem(lower_bits, span))
  offset = lax.rem(offset, span)
  return lax.convert_element_type(lax.add(minval, lax.convert_element_type(offset, wide)),
                                  dtype)


def _convert_and_clip_integer(val, dtype):
  """Integer `val` converted to integer `dtype`, clipped to its range (not wrapped)."""
  info, val_info = dtypes.iinfo(dtype), dtypes.iinfo(val.dtype)
  lo = np.array(max(info.min, val_info.min), val.dtype)
  hi = np.array(min(info.max, val_info.max), val.dtype)
  return lax.convert_element_type(lax.clamp(lo, val, hi), dtype)


def bernoulli(key, p=np.float32(0.5), shape=None):
  """Booleans: uniform(key, shape, dtype of p) < p (shape defaults to p's)."""
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  key = _check_prng_key("bernoulli", key)
  dtype = dtypes.canonicalize_dtype(lax.dtype(p))
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  p = lax.convert_element_type(p, dtype)
  if shape is None:
    shape = np.shape(p)
  else:
    _check_shape("bernoulli", shape, np.shape(p))
  return _uniform(key, shape, dtype, 0., 1.) < p


def _check_shape(name, shape, *param_shapes):
  """ValueError unless the parameter shapes broadcast to `shape`."""
  if param_shapes:
    shape_ = lax.broadcast_shapes(shape, *param_shapes)
    if shape != shape_:
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       "argument, and the result of broadcasting the shapes must equal "
                       f"the shape argument, but got result {shape_} for shape argument "
                       f"{shape}.")
