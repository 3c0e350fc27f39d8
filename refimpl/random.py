"""`jax.random`: keys and samplers.

Keys come in two kinds, as in JAX. A *typed key* (`key(seed)`) is a scalar
array of dtype `key<fry>` (`refimpl.prng.KeyTy`); arrays of typed keys are
made by `split` and handled like other arrays. A *raw key* (`PRNGKey(seed)`)
is the key's data, a `uint32[2]` array. Every function accepts both: a raw
key is wrapped into a typed key on entry (the `random_wrap` primitive) and
key results are unwrapped again (`random_unwrap`), so raw keys give raw
keys back. The key primitives and the threefry2x32 hash live in
`refimpl.prng`.

Every function is deterministic in its key: the same key gives the same
numbers, so fresh numbers need a fresh key from `split` or `fold_in`. Each
sampler's docstring states how it turns bits into values, bit for bit as
JAX does. Samplers, `split` and `fold_in` take a single key: a key array of
another shape raises ValueError (map over keys with `vmap`).

A sampler checks its arguments and hands them to a jitted private function
(`_uniform`, `_normal`, `_gamma`, ...) wherever JAX 0.10 does, with JAX's
static arguments: the body is a compiled program, so its multiply-adds are
fused as XLA's CPU compiler fuses them (`refimpl.interpreters.eval.run_jaxpr`),
eagerly as well as under `jit` and `vmap`. `bits`, `beta`, `choice`,
`categorical`, `orthogonal`, `multinomial`, `generalized_normal`, `ball` and
the key functions are not jitted in JAX and run op by op.
"""

import functools
import math
import warnings

import numpy as np

from refimpl import core, dtypes, lax, prng
from refimpl.api import jit
from refimpl.config import config
from refimpl.interpreters import ad, batching
from refimpl.lax.shapes import canonicalize_axis as _canonicalize_axis
from refimpl.numpy.util import check_arraylike, is_arraylike
from refimpl.sharding import check_out_sharding

__all__ = ['PRNGKey', 'key', 'key_data', 'key_impl', 'key_dtype', 'wrap_key_data',
           'split', 'fold_in', 'clone', 'bits', 'uniform', 'normal', 'randint',
           'bernoulli', 'default_prng_impl',
           # simple samplers
           'choice', 'permutation', 'categorical', 'rademacher', 'gumbel', 'laplace',
           'logistic', 'exponential', 'cauchy', 'double_sided_maxwell', 'maxwell',
           'rayleigh', 'weibull_min', 'pareto', 'lognormal', 'triangular', 'geometric',
           # other samplers
           'truncated_normal', 'poisson', 'binomial', 'multinomial',
           'multivariate_normal', 'orthogonal', 'wald',
           # gamma samplers
           'gamma', 'loggamma', 'random_gamma_p', 'beta', 'dirichlet', 'chisquare',
           'f', 't', 'generalized_normal', 'ball']


# --- implementations -------------------------------------------------------------

def default_prng_impl():
  """The PRNG implementation that the `jax_default_prng_impl` option names."""
  return resolve_prng_impl(config.jax_default_prng_impl)


class PRNGSpec:
  """Names a PRNG implementation (what `key_impl` returns for an unregistered
  one); accepted wherever an `impl` argument is."""

  __slots__ = ['_impl']

  def __init__(self, impl):
    self._impl = impl

  def __repr__(self):
    return f"PRNGSpec({self._impl.name!r})"

  def __str__(self):
    return str(self._impl)

  def __hash__(self):
    return hash(self._impl)

  def __eq__(self, other):
    return isinstance(other, PRNGSpec) and self._impl == other._impl


_UNBUILT_IMPLS = ('rbg', 'unsafe_rbg')
"""JAX's PRNG implementations on XLA's RngBitGenerator, which refimpl lacks."""


def resolve_prng_impl(impl_spec):
  """The `prng.PRNGImpl` that `impl_spec` (None for the default, a name, a
  PRNGSpec, a key dtype or a PRNGImpl) names. Unknown names raise
  ValueError, other types TypeError, and 'rbg'/'unsafe_rbg'
  NotImplementedError."""
  if impl_spec is None:
    return default_prng_impl()
  if type(impl_spec) is prng.PRNGImpl:
    return impl_spec
  if type(impl_spec) is PRNGSpec or isinstance(impl_spec, prng.KeyTy):
    return impl_spec._impl
  if type(impl_spec) is str:
    if impl_spec in prng.prngs:
      return prng.prngs[impl_spec]
    if impl_spec in _UNBUILT_IMPLS:
      raise NotImplementedError(
          f"the {impl_spec!r} PRNG implementation (on XLA's RngBitGenerator) is not "
          "built in refimpl; use 'threefry2x32'.")
    names = ', '.join(f'"{s}"' for s in (*prng.prngs, *_UNBUILT_IMPLS))
    raise ValueError(f'unrecognized PRNG implementation "{impl_spec}". '
                     f'Did you mean one of: {names}?')
  raise TypeError(f'unrecognized type {type(impl_spec)} for specifying PRNG implementation.')


# --- keys --------------------------------------------------------------------------

def _is_typed_key(x):
  return dtypes.issubdtype(getattr(x, "dtype", None), dtypes.prng_key)


def _check_prng_key(name, key, *, allow_batched=False):
  """(typed key, whether `key` was raw and got wrapped).

  A raw key (uint32 data) is wrapped with the default implementation,
  after checking its data (TypeError); `jax_legacy_prng_key` 'warn' or
  'error' then warns (UserWarning) or raises (ValueError), and with
  `jax_enable_custom_prng` on it warns FutureWarning. Unless
  `allow_batched`, a key array of shape other than () raises ValueError.
  """
  if _is_typed_key(key):
    typed_key, wrapped = key, False
  elif is_arraylike(key):
    typed_key, wrapped = prng.random_wrap(key, impl=default_prng_impl()), True
    message = ('Legacy uint32 key array passed as key to jax.random function. Please '
               'create keys using jax.random.key(). If use of a raw key array was '
               'intended, set jax_legacy_prng_key="allow".')
    if config.jax_legacy_prng_key == 'error':
      raise ValueError(message)
    if config.jax_legacy_prng_key == 'warn':
      warnings.warn(message, UserWarning, stacklevel=3)
    elif config.jax_enable_custom_prng:
      warnings.warn('Raw arrays as random keys to jax.random functions are deprecated. '
                    'Assuming valid threefry2x32 key for now.', FutureWarning, stacklevel=3)
  else:
    raise TypeError(f'unexpected PRNG key type {type(key)}')
  if not allow_batched and typed_key.ndim:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{np.shape(key)} != (). Use jax.vmap for batching.")
  return typed_key, wrapped


def _return_prng_keys(was_wrapped, keys):
  """Key results as the caller's keys were: raw if they came in raw (unless
  `jax_enable_custom_prng` is on), typed otherwise."""
  if was_wrapped and not config.jax_enable_custom_prng:
    return prng.random_unwrap(keys)
  return keys


def _key(ctor_name, seed, impl_spec):
  impl = resolve_prng_impl(impl_spec)
  if _is_typed_key(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of "
                    f"shape {np.shape(seed)} != (). Use jax.vmap for batching")
  return prng.random_seed(seed, impl=impl)


def key(seed, *, impl=None, dtype=None):
  """A typed key (a scalar array of dtype `key<fry>`) from an integer seed:
  its data is `[seed >> 32, seed & 0xFFFFFFFF]` (`prng.threefry_seed`).

  A Python int seed is taken as int64 first, so without x64 only its low
  32 bits count ([0, seed mod 2**32]); with x64 a 64-bit seed gives both
  words. `impl` (or `dtype`, a key dtype or a name; not both: ValueError)
  names the implementation (default: `jax_default_prng_impl`).
  """
  return _key('key', seed, _impl_or_dtype(impl, dtype, "jax.random.key"))


def _impl_or_dtype(impl, dtype, name):
  if dtype is None:
    return impl
  if impl is not None:
    raise ValueError(f"Cannot specify both `impl` and `dtype` arguments to {name}")
  return dtype


def PRNGKey(seed, *, impl=None):
  """The raw key (uint32[2] data) of `key(seed, impl=impl)`: [seed >> 32,
  seed & 0xFFFFFFFF]. With `jax_enable_custom_prng` on, the typed key."""
  return _return_prng_keys(True, _key('PRNGKey', seed, impl))


def key_data(keys):
  """The uint32 data of a key array: shape (*keys.shape, 2) for threefry2x32
  (raw keys are returned as they are)."""
  keys, _ = _check_prng_key("key_data", keys, allow_batched=True)
  return prng.random_unwrap(keys)


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """The key array whose data is `key_bits_array` (uint32, ending in the key
  shape (2,); TypeError otherwise): keys of its leading shape. `impl` or
  `dtype` (not both) names the implementation, as in `key`."""
  impl = _impl_or_dtype(impl, dtype, "jax.random.wrap_key_data")
  return prng.random_wrap(key_bits_array, impl=resolve_prng_impl(impl))


def key_impl(keys):
  """The implementation of a key array: its name ('threefry2x32') when it is
  registered, else a `PRNGSpec`."""
  keys, _ = _check_prng_key("key_impl", keys, allow_batched=True)
  impl = keys.dtype._impl
  return impl.name if impl.name in prng.prngs else PRNGSpec(impl)


def key_dtype(impl_spec=None):
  """The key dtype of an implementation (default: `jax_default_prng_impl`):
  `key<fry>` for threefry2x32."""
  return prng.KeyTy(resolve_prng_impl(impl_spec))


def _split(key, num=2):
  """`num` (an int or a shape) new typed keys from the typed key `key`."""
  if key.ndim:
    raise TypeError("split accepts a single key, but was given a key array of shape "
                    f"{key.shape} != (). Use jax.vmap for batching.")
  shape = tuple(num) if isinstance(num, (tuple, list)) else (num,)
  return prng.random_split(key, shape)


def split(key, num=2):
  """`num` new keys (an array of shape `num`, which may be a tuple) derived
  from `key` by the `random_split` primitive (`prng.threefry_split`)."""
  typed_key, wrapped = _check_prng_key("split", key)
  return _return_prng_keys(wrapped, _split(typed_key, num))


def fold_in(key, data):
  """The key that `key` and the integer `data` determine by `random_fold_in`:
  `threefry_2x32(key data, [0, uint32(data)])` (`prng.threefry_fold_in`)."""
  import refimpl.numpy as jnp
  typed_key, wrapped = _check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of"
                    f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
  return _return_prng_keys(wrapped, prng.random_fold_in(typed_key, jnp.uint32(data)))


random_clone_p = core.Primitive("random_clone")


@random_clone_p.def_impl
def _random_clone_impl(x):
  """`x` unchanged: a copy of a key that key-reuse checking would let be
  consumed again (refimpl does no key-reuse checking, so it is the
  identity). Shape, dtype and weak type: x's."""
  return x


random_clone_p.def_abstract_eval(lambda x: x)
batching.defvectorized(random_clone_p)
ad.defjvp_zero(random_clone_p)


def clone(key):
  """The key, through the `random_clone` primitive (the identity here: see
  `_random_clone_impl`)."""
  return random_clone_p.bind(key)


def _random_bits(key, bit_width, shape):
  return prng.random_bits(key, bit_width, shape)


# --- samplers --------------------------------------------------------------------

def bits(key, shape=(), dtype=None, *, out_sharding=None):
  """Uniformly random unsigned integers: `prng.threefry_random_bits(key,
  8 * itemsize, shape)` as they come. `dtype` (default uint32, uint64 with
  x64) must be unsigned (ValueError)."""
  check_out_sharding(out_sharding, "bits")
  key, _ = _check_prng_key("bits", key)
  if dtype is None:
    dtype = dtypes.canonicalize_dtype(np.uint64)
  else:
    dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.unsignedinteger):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = core.canonicalize_shape(shape)
  return _random_bits(key, dtype.itemsize * 8, shape)


def uniform(key, shape=(), dtype=None, minval=0., maxval=1., *, out_sharding=None):
  """Uniform floats in [minval, maxval).

  With nbits = the dtype's width and nmant its explicit mantissa bits, the
  draw is b = random bits of width nbits (8 bits widened if nmant < 8); the
  float with sign 0, exponent of 1.0 and mantissa b >> (nbits - nmant) lies
  in [1, 2); minus 1 gives f in [0, 1) (a multiple of 2**-nmant). The result
  is max(minval, f * (maxval - minval) + minval), computed in `dtype`.
  """
  check_out_sharding(out_sharding, "uniform")
  key, _ = _check_prng_key("uniform", key)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  shape = core.canonicalize_shape(shape)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dtype}")
  return _uniform(key, shape, dtypes.canonicalize_dtype(dtype), minval, maxval)


@functools.partial(jit, static_argnums=(1, 2))
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


def normal(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard normal floats: u = uniform(key, shape, dtype, lo, 1) with lo
  the float after -1 towards 0, then sqrt(2) * erf_inv(u), in `dtype`.

  Complex dtypes: (re + 1j * im) / sqrt(2) with re, im the real normals of
  the two keys of split(key).
  """
  check_out_sharding(out_sharding, "normal")
  key, _ = _check_prng_key("normal", key)
  shape = core.canonicalize_shape(shape)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, "
                     f"got {dtype}")
  return _normal(key, shape, dtypes.canonicalize_dtype(dtype))


@functools.partial(jit, static_argnums=(1, 2))
def _normal(key, shape, dtype):
  if dtypes.is_complex(dtype):
    real_dtype = dtypes.to_real_dtype(dtype)
    key_re, key_im = _split(key)
    re = lax.convert_element_type(_normal_real(key_re, shape, real_dtype), dtype)
    im = lax.convert_element_type(_normal_real(key_im, shape, real_dtype), dtype)
    return (re + 1j * im) / np.array(np.sqrt(2), dtype)
  return _normal_real(key, shape, dtype)


@functools.partial(jit, static_argnums=(1, 2))
def _normal_real(key, shape, dtype):
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  u = _uniform(key, shape, dtype, lo, np.array(1., dtype))
  return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
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
  check_out_sharding(out_sharding, "randint")
  key, _ = _check_prng_key("randint", key)
  dtype = int if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = core.canonicalize_shape(shape)
  check_arraylike("randint", minval, maxval)
  return _randint(key, shape, minval, maxval, dtype)


@functools.partial(jit, static_argnums=(1, 4))
def _randint(key, shape, minval, maxval, dtype):
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  import refimpl.numpy as jnp
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
  k1, k2 = _split(key)
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


def bernoulli(key, p=0.5, shape=None, mode='low', *, out_sharding=None):
  """Booleans with P(True) = p; `shape` defaults to p's.

  mode "low": uniform(key, shape, dtype of p) < p. mode "high" (resolution
  2**-2nmant, for small p): u1, u2 = the two halves of uniform(key, (2,
  *shape)); u2 * 2**-nmant < p - u1. Other modes raise ValueError.
  """
  check_out_sharding(out_sharding, "bernoulli")
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  if mode not in ('high', 'low'):
    raise ValueError(f"got {mode=}, expected 'high' or 'low'")
  key, _ = _check_prng_key("bernoulli", key)
  dtype = dtypes.canonicalize_dtype(lax.dtype(p))
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  p = lax.convert_element_type(p, dtype)
  return _bernoulli(key, p, shape, mode)


@functools.partial(jit, static_argnums=(2, 3))
def _bernoulli(key, p, shape, mode):
  if shape is None:
    shape = np.shape(p)
  else:
    _check_shape("bernoulli", shape, np.shape(p))
  dtype = lax.dtype(p)
  if mode == 'high':
    both = _uniform(key, (2, *shape), dtype, 0., 1.)
    u1, u2 = both[0], both[1] * _const(dtype, 2. ** -dtypes.finfo(dtype).nmant)
    return u2 < p - u1
  return _uniform(key, shape, dtype, 0., 1.) < p


def _check_broadcast_shapes(name, shape, *params):
  """The result shape: `shape` (canonicalized, and checked to be what the
  parameters broadcast with it to: ValueError), or by default the
  broadcast shape of the parameters."""
  param_shapes = [np.shape(x) for x in params]
  if shape is None:
    return lax.broadcast_shapes(*param_shapes) if param_shapes else ()
  shape = core.canonicalize_shape(shape)
  _check_shape(name, shape, *param_shapes)
  return shape


def _check_all_safe_to_cast(name, dtype, *params):
  """TypePromotionError unless every parameter converts to `dtype` without
  loss: promoting it with `dtype` gives `dtype` (a Python scalar always does;
  a float64 array with a float32 dtype under x64 does not)."""
  for x in params:
    if dtypes.result_type(x, dtype) != dtype:
      raise dtypes.TypePromotionError(
          f"In arguments to {name}, cannot safely cast argument of type "
          f"{dtypes.dtype(x)} to {dtype}")


def _check_shape(name, shape, *param_shapes):
  """ValueError unless the parameter shapes broadcast to `shape`."""
  if param_shapes:
    shape_ = lax.broadcast_shapes(shape, *param_shapes)
    if shape != shape_:
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       "argument, and the result of broadcasting the shapes must equal "
                       f"the shape argument, but got result {shape_} for shape argument "
                       f"{shape}.")


# --- simple samplers ---------------------------------------------------------------
# Inverse-CDF and transform samplers, all built from `_uniform` / `_normal`
# bits as JAX 0.10 builds them; `choice`, `permutation` and `categorical`.

def _float_sampler(name, key, dtype, shape, *params):
  """Checks `key`, the parameters (arrays or scalars: TypeError, before they
  reach the jitted body, where a list would be a pytree) and the float
  `dtype` (ValueError otherwise, as JAX); returns (key, canonical dtype,
  canonical shape or None)."""
  key, _ = _check_prng_key(name, key)
  check_arraylike(name, *params)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  return key, dtypes.canonicalize_dtype(dtype), shape


def _const(dtype, value):
  return np.array(value, dtype)


def exponential(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard exponential floats: -log1p(-u) with u = uniform(key, shape, dtype)
  in [0, 1) (so 1 - u lies in (0, 1] and the result is finite, >= 0)."""
  check_out_sharding(out_sharding, "exponential")
  key, dtype, shape = _float_sampler("exponential", key, dtype, shape)
  return _exponential(key, shape, dtype)


@functools.partial(jit, static_argnums=(1, 2))
def _exponential(key, shape, dtype):
  u = _uniform(key, shape, dtype, 0., 1.)
  return lax.neg(lax.log1p(lax.neg(u)))


def gumbel(key, shape=(), dtype=None, mode=None, *, out_sharding=None):
  """Standard Gumbel floats.

  mode None is "high" when the option `jax_high_dynamic_range_gumbel` is on,
  else "low". mode "low": u = uniform(key, shape, dtype, tiny, 1)
  with tiny the dtype's smallest normal, result -log(-log(u)).
  mode "high": high, low = the two halves of uniform(key, (2,) + shape,
  dtype); x = high if high >= 0.5 else high + 2**-nmant * low + tiny (a
  uniform with twice the mantissa bits near 0); result -log(-log1p(-x)).
  mode "highest", float32: hi, lo = the two halves of 32-bit random bits of
  shape (2,) + shape, read as the 64-bit fixed-point fraction
  u = (hi * 2**32 + lo) / 2**64; x = u if u < 1/2 (hi < 2**31) else 1 - u
  (the 64-bit two's complement), converted to float32 by truncation
  (`_fixed_point_to_float32`); result -log(-log1p(-x)) where u < 1/2, else
  -log(-log(x)). For other dtypes "highest" is "high". Any other mode
  raises ValueError.
  """
  check_out_sharding(out_sharding, "gumbel")
  key, dtype, shape = _float_sampler("gumbel", key, dtype, shape)
  if mode is None:
    mode = "high" if config.jax_high_dynamic_range_gumbel else "low"
  if mode not in ("high", "low", "highest"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return _gumbel(key, shape, dtype, mode)


@functools.partial(jit, static_argnums=(1, 2, 3))
def _gumbel(key, shape, dtype, mode):
  info = dtypes.finfo(dtype)
  if mode == "highest" and dtype == np.float32:
    import refimpl.numpy as jnp
    bits = _random_bits(key, 32, (2,) + shape)
    neg = lax.bitwise_not(bits)
    carry = lax.convert_element_type(neg[1] == np.uint32(0xFFFFFFFF), np.uint32)
    neg = neg + jnp.stack([carry, jnp.ones_like(carry)])   # 2**64 - u, in two words
    flip = bits[0] < np.uint32(1 << 31)
    x = _fixed_point_to_float32(jnp.where(flip, bits, neg))
    return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))
  if mode in ("high", "highest"):
    both = _uniform(key, (2,) + shape, dtype, 0., 1.)
    high, low = both[0], both[1]
    x = lax.select(high >= _const(dtype, 0.5), high,
                   high + _const(dtype, 2. ** -info.nmant) * low + _const(dtype, info.tiny))
    return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
  u = _uniform(key, shape, dtype, info.tiny, 1.)
  return lax.neg(lax.log(lax.neg(lax.log(u))))


def _fixed_point_to_float32(bits):
  """The float32 of the 64-bit fixed-point fraction (hi * 2**32 + lo) / 2**64
  held in uint32 bits[0] = hi, bits[1] = lo, rounded toward zero: the 24
  bits after the leading one are the significand (c = the count of leading
  zeros of the 64 bits: clz(hi), or 32 + clz(lo) when hi = 0), the exponent
  field is 126 - c (so 0, with c = 64, gives 2**-65)."""
  import refimpl.numpy as jnp
  hi, lo = bits[0], bits[1]
  hi_clz, lo_clz = lax.clz(hi), lax.clz(lo)
  top = lax.bitwise_or(lax.shift_left(hi, hi_clz),
                       jnp.where(hi_clz == 32, lax.shift_left(lo, lo_clz),
                                 lax.shift_right_logical(lo, np.uint32(32) - hi_clz)))
  mantissa = lax.bitwise_and(lax.shift_right_logical(top, np.uint32(8)),
                             np.uint32((1 << 23) - 1))
  clz = jnp.where(hi_clz == 32, np.uint32(32) + lo_clz, hi_clz)
  exponent = lax.bitwise_and(lax.shift_left(np.uint32(126) - clz, np.uint32(23)),
                             np.uint32((1 << 30) - (1 << 22)))
  return lax.bitcast_convert_type(lax.bitwise_or(exponent, mantissa), np.float32)


def laplace(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard Laplace floats: u = uniform(key, shape, dtype, -1 + epsneg, 1)
  (epsneg = 2**-(nmant+1), so |u| < 1), result sign(u) * log1p(-|u|)."""
  check_out_sharding(out_sharding, "laplace")
  key, dtype, shape = _float_sampler("laplace", key, dtype, shape)
  return _laplace(key, shape, dtype)


@functools.partial(jit, static_argnums=(1, 2))
def _laplace(key, shape, dtype):
  u = _uniform(key, shape, dtype, -1. + float(dtypes.finfo(dtype).epsneg), 1.)
  return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard logistic floats: u = uniform(key, shape, dtype, tiny, 1)
  (tiny the dtype's smallest normal), result log(u) - log1p(-u)."""
  check_out_sharding(out_sharding, "logistic")
  key, dtype, shape = _float_sampler("logistic", key, dtype, shape)
  return _logistic(key, shape, dtype)


@functools.partial(jit, static_argnums=(1, 2))
def _logistic(key, shape, dtype):
  u = _uniform(key, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.)
  return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


def cauchy(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard Cauchy floats: u = uniform(key, shape, dtype, eps, 1),
  result tan(pi * (u - 0.5))."""
  check_out_sharding(out_sharding, "cauchy")
  key, dtype, shape = _float_sampler("cauchy", key, dtype, shape)
  return _cauchy(key, shape, dtype)


@functools.partial(jit, static_argnums=(1, 2))
def _cauchy(key, shape, dtype):
  u = _uniform(key, shape, dtype, float(dtypes.finfo(dtype).eps), 1.)
  return lax.tan(lax.mul(_const(dtype, np.pi), lax.sub(u, _const(dtype, 0.5))))


def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
  """-1 or 1 with probability 1/2 each, in `dtype` (int32 by default):
  b = bernoulli(key, 0.5, shape) as `dtype`, result 2 * b - 1."""
  check_out_sharding(out_sharding, "rademacher")
  key, _ = _check_prng_key("rademacher", key)
  dtype = int if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = core.canonicalize_shape(shape)
  return _rademacher(key, shape, dtype)


@functools.partial(jit, static_argnums=(1, 2))
def _rademacher(key, shape, dtype):
  p = _const(dtypes.canonicalize_dtype(float), 0.5)
  b = _bernoulli(key, p, shape, 'low')
  return (2 * b.astype(dtype) - 1).astype(dtype)


def maxwell(key, shape=(), dtype=None, *, out_sharding=None):
  """One-sided Maxwell floats: the Euclidean norm of the last axis of
  normal(key, shape + (3,), dtype), i.e. sqrt(x² + y² + z²)."""
  check_out_sharding(out_sharding, "maxwell")
  key, dtype, shape = _float_sampler("maxwell", key, dtype, shape)
  return _maxwell(key, shape, dtype)


@functools.partial(jit, static_argnums=(1, 2))
def _maxwell(key, shape, dtype):
  import refimpl.numpy as jnp
  return jnp.linalg.norm(_normal(key, shape + (3,), dtype), axis=-1)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """Double-sided Maxwell floats, sign * maxwell * scale + loc.

  The result shape is `shape + broadcast_shapes(shape(loc), shape(scale))`
  (`shape` () means the parameters' shape alone, as in JAX). With
  k1, k2 = split(key): maxwell(k1, that shape) and rademacher(k2, that
  shape, dtype).
  """
  key, dtype, shape = _float_sampler("double_sided_maxwell", key, dtype, shape, loc, scale)
  return _double_sided_maxwell(key, loc, scale, shape, dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _double_sided_maxwell(key, loc, scale, shape, dtype):
  params_shape = lax.broadcast_shapes(np.shape(loc), np.shape(scale))
  shape = (shape or params_shape) + params_shape
  k1, k2 = _split(key)
  maxwell_samples = _maxwell(k1, shape, dtype)
  return _rademacher(k2, shape, dtype) * maxwell_samples * scale + loc


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull floats: (-log1p(-u)) ** (1 / concentration) * scale with
  u = uniform(key, shape, dtype) (the inverse CDF)."""
  key, dtype, shape = _float_sampler("weibull_min", key, dtype, shape, scale, concentration)
  return _weibull_min(key, scale, concentration, shape, dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _weibull_min(key, scale, concentration, shape, dtype):
  import refimpl.numpy as jnp
  u = _uniform(key, shape, dtype, 0., 1.)
  return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
  """Pareto floats on [1, inf): exp(e / b) with e = exponential(key, shape,
  dtype). `shape` defaults to b's shape."""
  check_out_sharding(out_sharding, "pareto")
  key, dtype, shape = _float_sampler("pareto", key, dtype, shape, b)
  shape = _check_broadcast_shapes("pareto", shape, b)
  _check_all_safe_to_cast("pareto", dtype, b)
  return _pareto(key, b, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _pareto(key, b, shape, dtype):
  b = lax.convert_element_type(b, dtype)
  return lax.exp(_exponential(key, shape, dtype) / b)


def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
  """Rayleigh floats: scale * sqrt(-2 * log(u)) with u = uniform(key, shape,
  dtype). `shape` defaults to scale's shape (and must broadcast with it)."""
  check_out_sharding(out_sharding, "rayleigh")
  key, dtype, shape = _float_sampler("rayleigh", key, dtype, shape, scale)
  shape = _check_broadcast_shapes("rayleigh", shape, scale)
  _check_all_safe_to_cast("rayleigh", dtype, scale)
  return _rayleigh(key, scale, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _rayleigh(key, scale, shape, dtype):
  import refimpl.numpy as jnp
  u = _uniform(key, shape, dtype, 0., 1.)
  scale = jnp.broadcast_to(lax.convert_element_type(scale, dtype), shape)
  return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), _const(dtype, -2))))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None, *, out_sharding=None):
  """Log-normal floats: exp(normal(key, shape, dtype) * sigma), sigma
  converted to `dtype`. `shape` defaults to sigma's shape. A complex dtype
  is accepted as JAX does (the normal is then complex)."""
  check_out_sharding(out_sharding, "lognormal")
  key, _ = _check_prng_key("lognormal", key)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError("dtype argument to `lognormal` must be a float or complex dtype, "
                     f"got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  check_arraylike("lognormal", sigma)
  shape = _check_broadcast_shapes("lognormal", shape, sigma)
  _check_all_safe_to_cast("lognormal", dtype, sigma)
  return _lognormal(key, sigma, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3), inline=True)
def _lognormal(key, sigma, shape, dtype):
  return lax.exp(_normal(key, shape, dtype) * lax.convert_element_type(sigma, dtype))


def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
  """Triangular floats on [left, right] with peak `mode` (inverse CDF).

  fc = (mode - left) / (right - left); u = uniform(key, shape, dtype);
  left + sqrt(u (right - left)(mode - left)) where u < fc, else
  right - sqrt((1 - u)(right - left)(right - mode)). `shape` defaults to
  the parameters' broadcast shape.
  """
  check_out_sharding(out_sharding, "triangular")
  key, dtype, shape = _float_sampler("triangular", key, dtype, shape, left, mode, right)
  return _triangular(key, left, mode, right, shape, dtype)


@functools.partial(jit, static_argnums=(4, 5), inline=True)
def _triangular(key, left, mode, right, shape, dtype):
  import refimpl.numpy as jnp
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(left), np.shape(mode), np.shape(right))
  else:
    _check_shape("triangular", shape, np.shape(left), np.shape(mode), np.shape(right))
  left, mode, right = (jnp.broadcast_to(v, shape) for v in (left, mode, right))
  fc = (mode - left) / (right - left)
  u = _uniform(key, shape, dtype, 0., 1.)
  out1 = left + lax.sqrt(u * (right - left) * (mode - left))
  out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
  return lax.select(u < fc, out1, out2)


def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
  """Geometric integers >= 1 (trials until the first success):
  floor(log(u) / log1p(-p)) + 1 with u = uniform(key, shape, p's inexact
  dtype), converted to `dtype` (int32 by default; float dtypes raise
  ValueError)."""
  check_out_sharding(out_sharding, "geometric")
  key, _ = _check_prng_key("geometric", key)
  dtype = int if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.integer):
    raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  check_arraylike("geometric", p)
  return _geometric(key, p, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _geometric(key, p, shape, dtype):
  import refimpl.numpy as jnp
  from refimpl.numpy.util import promote_dtypes_inexact
  if shape is None:
    shape = np.shape(p)
  else:
    _check_shape("geometric", shape, np.shape(p))
  p, = promote_dtypes_inexact(p)
  log_u = lax.log(_uniform(key, shape, p.dtype, 0., 1.))
  log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
  return (lax.floor(lax.div(log_u, log_one_minus_p)) + 1).astype(dtype)


def permutation(key, x, axis=0, independent=False, *, out_sharding=None):
  """A random permutation of arange(x) (int x) or of `x` along `axis`.

  The shuffle sorts by random 32-bit keys: for each of
  ceil(3 ln(max(1, n)) / ln(2**32 - 1)) rounds (n = x.size; one round up to
  about 1600 elements), key, sub = split(key), and x is reordered along
  `axis` by a stable sort of bits(sub, 32, x.shape). A multi-dimensional
  `x` with independent=False is shuffled as a whole along `axis`: the
  permuted index arange(x.shape[axis]) (shuffled as above) takes slices of
  `x`; independent=True shuffles each 1-D slice with its own sort keys.
  """
  check_out_sharding(out_sharding, "permutation")
  import refimpl.numpy as jnp
  key, _ = _check_prng_key("permutation", key)
  check_arraylike("permutation", x)
  axis = _canonicalize_axis(axis, np.ndim(x) or 1)
  if not np.ndim(x):
    if not dtypes.issubdtype(lax.dtype(x), np.integer):
      raise TypeError("x must be an integer or at least 1-dimensional")
    return _shuffle(key, jnp.arange(int(x)), axis)
  x = jnp.asarray(x)
  if independent or x.ndim == 1:
    return _shuffle(key, x, axis)
  ind = _shuffle(key, jnp.arange(x.shape[axis]), 0)
  return jnp.take(x, ind, axis, unique_indices=True)


@functools.partial(jit, static_argnums=(2,))
def _shuffle(key, x, axis):
  num_rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
  for _ in range(num_rounds):
    key, subkey = _split(key)
    sort_keys = _random_bits(subkey, 32, x.shape)
    _, x = lax.sort_key_val(sort_keys, x, axis)
  return x


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """Samples from `a` (an array, along `axis`, or arange(a) for an int).

  The result has shape `shape` (int a) or a.shape with a.shape[axis]
  replaced by `shape`. With n = a.shape[axis] (or a):
  * p None, replace: indices randint(key, shape, 0, n).
  * p None, no replace: the first prod(shape) of permutation(key, a, axis).
  * p given, replace: c = cumsum(p); r = c[-1] * (1 - uniform(key, shape,
    p's dtype)); indices searchsorted(c, r) (left).
  * p given, no replace: the top_k indices of gumbel(key, (n,), p's dtype,
    mode) + log(p) (the Gumbel top-k trick).
  Errors as JAX: a non-sequence shape (TypeError), n <= 0 with draws, more
  draws than n without replacement, p not of shape (n,) (ValueError).
  """
  import refimpl.numpy as jnp
  from refimpl.numpy.util import promote_dtypes_inexact
  key, _ = _check_prng_key("choice", key)
  if not isinstance(shape, (tuple, list)):
    raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
  check_arraylike("choice", a)
  arr = jnp.asarray(a)
  if arr.ndim == 0:
    n_inputs = int(a)
  else:
    axis = _canonicalize_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than "
                     f"population (size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(key, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    else:
      slices = (slice(None),) * axis + (slice(n_draws),)
      result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
  else:
    check_arraylike("choice", p)
    p_arr, = promote_dtypes_inexact(p)
    if p_arr.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = jnp.cumsum(p_arr)
      r = p_cuml[-1] * (1 - _uniform(key, tuple(shape), p_cuml.dtype, 0., 1.))
      ind = jnp.searchsorted(p_cuml, r).astype(int)
    else:
      g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
      ind = lax.top_k(g, n_draws)[1].astype(int)
    result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
  return result.reshape(tuple(shape) if arr.ndim == 0 else
                        arr.shape[:axis] + tuple(shape) + arr.shape[axis + 1:])


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None, *,
               out_sharding=None):
  """Indices drawn from softmax(logits) along `axis` (int32 by default).

  The result shape is `shape` (default: logits' shape without `axis`),
  which must end with that batch shape. With replacement (Gumbel max):
  argmax over `axis` of gumbel(key, prefix + logits' shape with the batch
  dims taken from `shape`, logits' dtype, mode) + logits, where prefix =
  shape's leading dims beyond the batch. Without replacement (Gumbel
  top-k): k = prod(prefix) indices, the top_k of logits + gumbel(key,
  logits.shape) moved to the last axis, their k axis moved to the front
  and reshaped to `shape` (k > the number of categories: ValueError).
  """
  check_out_sharding(out_sharding, "categorical")
  import refimpl.numpy as jnp
  key, _ = _check_prng_key("categorical", key)
  check_arraylike("categorical", logits)
  logits = jnp.asarray(logits)
  batch_shape = tuple(np.delete(logits.shape, axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = core.canonicalize_shape(shape)
    _check_shape("categorical", shape, batch_shape)
  prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    if axis >= 0:
      axis -= logits.ndim
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % logits.ndim, logits.shape[axis])
    g = gumbel(key, (*prefix, *logits_shape), logits.dtype, mode=mode)
    return jnp.argmax(g + lax.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
  logits = logits + gumbel(key, logits.shape, logits.dtype, mode=mode)
  k = math.prod(prefix)
  if k > logits.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                     f"of categories ({logits.shape[axis]}).")
  _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
  dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
  return lax.reshape(indices, shape, dimensions)


# --- other samplers ------------------------------------------------------------------
# truncated_normal, poisson, binomial, multinomial, multivariate_normal, orthogonal,
# wald: JAX 0.10's algorithms, drawing from the key exactly as JAX does.

def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
  """Standard normals restricted to the open interval (lower, upper).

  With a = erf(lower / sqrt(2)) and b = erf(upper / sqrt(2)) (in `dtype`), u =
  uniform(key, shape, dtype, a, b) (one draw of bits of `key`, no split) and the
  result is sqrt(2) * erf_inv(u), clipped to [nextafter(lower, +inf),
  nextafter(upper, -inf)]. `shape` defaults to the broadcast shape of lower and
  upper and must otherwise be broadcast-compatible with them (ValueError).
  """
  check_out_sharding(out_sharding, "truncated_normal")
  key, dtype, shape = _float_sampler("truncated_normal", key, dtype, shape, lower, upper)
  return _truncated_normal(key, lower, upper, shape, dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _truncated_normal(key, lower, upper, shape, dtype):
  import refimpl.numpy as jnp
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(lower), np.shape(upper))
  else:
    _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
  sqrt2 = np.array(np.sqrt(2), dtype)
  lower = lax.convert_element_type(lower, dtype)
  upper = lax.convert_element_type(upper, dtype)
  a, b = lax.erf(lower / sqrt2), lax.erf(upper / sqrt2)
  u = _uniform(key, shape, dtype, a, b)
  out = sqrt2 * lax.erf_inv(u)
  return jnp.clip(out,
                  lax.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype)),
                  lax.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype)))


def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
  """Poisson counts of rate `lam` (cast to float32), in integer `dtype` (int32; int64
  with x64). `shape` defaults to lam's shape; lam is broadcast to it.

  Two samplers run on the same `key`, each a `lax.while_loop` over the whole
  array, and `lax.select` picks per element (lam < 10 or NaN: Knuth; else
  rejection); lam == 0 gives 0.
  Knuth (rate lam' = lam, or 0 where rejection is used): k = 0, s = 0; while any
  s > -lam': key, sub = split(key); k += 1 where s > -lam'; s += log(uniform(sub,
  shape, float32)). Result k - 1 (NaN lam gives -1).
  Transformed rejection (Hörmann; rate lam, or 1e5 where Knuth is used): b =
  0.931 + 2.53 sqrt(lam), a = -0.059 + 0.02483 b, inv_alpha = 1.1239 + 1.1328 / (b -
  3.4), v_r = 0.9277 - 3.6224 / (b - 2); while some element is unaccepted: key, k0,
  k1 = split(key, 3); u = uniform(k0) - 0.5, v = uniform(k1), us = 0.5 - |u|,
  k = floor((2a / us + b) u + lam + 0.43); accept where (us >= 0.07 and v <= v_r) or
  (not (k < 0 or (us < 0.013 and v > us)) and log(v inv_alpha / (a / us² + b)) <=
  -lam + k log(lam) - lgamma(k + 1)); an element keeps its first accepted k.
  """
  check_out_sharding(out_sharding, "poisson")
  key, _ = _check_prng_key("poisson", key)
  dtype = int if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  import refimpl.numpy as jnp
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = np.shape(lam) if shape is None else core.canonicalize_shape(shape)
  lam = lax.convert_element_type(jnp.broadcast_to(lam, shape), np.float32)
  return _poisson(key, lam, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _poisson(key, lam, shape, dtype):
  use_knuth = lax.ne(lam, lam) | (lam < 10)
  lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
  lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
  max_iters = dtype.type(dtypes.iinfo(dtype).max)
  result = lax.select(use_knuth,
                      _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                      _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
  return lax.select(lam == 0, lax.full_like(result, 0), result)


@functools.partial(jit, static_argnums=(2, 3, 4))
def _poisson_knuth(key, lam, shape, dtype, max_iters):
  import refimpl.numpy as jnp

  def body(carry):
    i, k, key, log_prod = carry
    key, subkey = _split(key, 2)
    k = lax.select(log_prod > -lam, k + 1, k)
    u = _uniform(subkey, shape, np.dtype(np.float32), 0., 1.)
    return i + 1, k, key, log_prod + jnp.log(u)

  def cond(carry):
    i, log_prod = carry[0], carry[3]
    return jnp.any(log_prod > -lam) & (i < max_iters)

  init = (0, lax.full_like(lam, 0, dtype, shape), key,
          lax.full_like(lam, 0, np.float32, shape))
  k = lax.while_loop(cond, body, init)[1]
  return (k - 1).astype(dtype)


@functools.partial(jit, static_argnums=(2, 3, 4))
def _poisson_rejection(key, lam, shape, dtype, max_iters):
  import refimpl.numpy as jnp
  log_lam = lax.log(lam)
  b = 0.931 + 2.53 * lax.sqrt(lam)
  a = -0.059 + 0.02483 * b
  inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
  v_r = 0.9277 - 3.6224 / (b - 2)

  def body(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _split(key, 3)
    u = _uniform(subkey_0, shape, lam.dtype, 0., 1.) - 0.5
    v = _uniform(subkey_1, shape, lam.dtype, 0., 1.)
    u_shifted = 0.5 - abs(u)
    k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
    s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
    t = -lam + k * log_lam - lax.lgamma(k + 1)
    accept1 = (u_shifted >= 0.07) & (v <= v_r)
    reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
    accept = accept1 | (~reject & (s <= t))
    return i + 1, lax.select(accept, k, k_out), accepted | accept, key

  def cond(carry):
    i, accepted = carry[0], carry[2]
    return jnp.any(~accepted) & (i < max_iters)

  init = (0, lax.full_like(lam, -1, lam.dtype, shape),
          lax.full_like(lam, False, np.bool_, shape), key)
  return lax.while_loop(cond, body, init)[1].astype(dtype)


def binomial(key, n, p, shape=None, dtype=None):
  """Binomial counts of n trials with success probability p, as floats of `dtype`.

  p is promoted to an inexact dtype and n converted to it; both are broadcast to
  `shape` (default: their broadcast shape). With q = min(p, 1 - p) (0.01 where q is
  NaN or < 0), two samplers run on the same `key`, each a `lax.while_loop`, and
  `lax.select` picks per element: n*q <= 10 (or n NaN/negative): inversion, else
  BTRS; n is floored first. The count of q successes is flipped to n - count where
  p >= 0.5. NaN or negative n, or q NaN/negative: NaN; n = +inf: +inf.
  Inversion (n' = n, or 0 where BTRS is used): num = 0, sum = 0; while any sum <= n':
  sub, key = split(key) (note the order); num += 1 where sum <= n'; sum +=
  ceil(log(uniform(sub)) / log1p(-q)). Result num - 1.
  BTRS (Hormann; n' = n or 1e4, q' = q or 0.5 where inversion is used): with sd =
  sqrt(n q (1-q)), b = 1.15 + 2.53 sd, a = -0.0873 + 0.0248 b + 0.01 q, c = n q +
  0.5, v_r = 0.92 - 4.2 / b, r = q / (1-q), alpha = (2.83 + 5.1 / b) sd, m = floor((n
  + 1) q); while some element is unaccepted: key, k0, k1 = split(key, 3); u =
  uniform(k0) - 0.5, v = uniform(k1), us = 0.5 - |u|, k = floor((2a / us + b) u + c);
  accept where (us >= 0.07 and v <= v_r) or (0 <= k <= n and log(v alpha / (a / us²
  + b)) <= the Stirling bound of TF's random_binomial_op).
  """
  key, dtype, shape = _float_sampler("binomial", key, dtype, shape, n, p)
  return _binomial(key, n, p, shape, dtype)


@functools.partial(jit, static_argnums=(3, 4), inline=True)
def _binomial(key, count, prob, shape, dtype):
  import refimpl.numpy as jnp
  from refimpl.numpy.util import promote_dtypes_inexact
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(count), np.shape(prob))
  else:
    _check_shape("binomial", shape, np.shape(count), np.shape(prob))
  prob, = promote_dtypes_inexact(prob)
  count = lax.convert_element_type(count, prob.dtype)
  count = jnp.broadcast_to(count, shape)
  prob = jnp.broadcast_to(prob, shape)
  p_lt_half = prob < 0.5
  q = lax.select(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = lax.ne(count, count) | (count < 0.0)
  count_inf = jnp.isinf(count)
  q_is_nan = lax.ne(q, q)
  q_l_0 = q < 0.0
  q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = jnp.floor(count)
  count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
  count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
  q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
  max_iters = dtype.type(dtypes.finfo(dtype).max)
  samples = lax.select(use_inversion,
                       _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
                       _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
  samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dtype),
                       samples)
  return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf,
                    samples, count.astype(dtype) - samples)


@functools.partial(jit, static_argnums=(3, 4, 5), inline=True)
def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
  import refimpl.numpy as jnp
  log1minusprob = jnp.log1p(-prob)

  def body(carry):
    i, num_geom, geom_sum, key = carry
    subkey, key = _split(key, 2)
    num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = _uniform(subkey, shape, prob.dtype, 0., 1.)
    geom = jnp.ceil(jnp.log(u) / log1minusprob)
    return i + 1, num_geom_out, geom_sum + geom, key

  def cond(carry):
    i, geom_sum = carry[0], carry[2]
    return jnp.any(geom_sum <= count) & (i < max_iters)

  init = (0, lax.full_like(prob, 0, prob.dtype, shape),
          lax.full_like(prob, 0, prob.dtype, shape), key)
  k = lax.while_loop(cond, body, init)[1]
  return (k - 1).astype(dtype)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
  """log(k!) - (its Stirling approximation): a table for k <= 9, else the series
  (1/12 - (1/360 - 1/1260/(k+1)²)/(k+1)²)/(k+1) with k clamped to [0, 9] (as JAX)."""
  import refimpl.numpy as jnp
  tail_values = jnp.array(_STIRLING_TAIL, dtype=k.dtype)
  use_tail_values = k <= 9
  k = lax.clamp(np.array(0., k.dtype), k, np.array(9., k.dtype))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  k = jnp.floor(k)
  return lax.select(use_tail_values, tail_values[jnp.int32(k)], approx)


@functools.partial(jit, static_argnums=(3, 4, 5), inline=True)
def _btrs(key, count, prob, shape, dtype, max_iters):
  import refimpl.numpy as jnp
  stddev = jnp.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = jnp.floor((count + 1) * prob)

  def body(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _split(key, 3)
    u = _uniform(subkey_0, shape, prob.dtype, 0., 1.)
    v = _uniform(subkey_1, shape, prob.dtype, 0., 1.)
    u = u - 0.5
    us = 0.5 - jnp.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = jnp.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = jnp.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
          + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
          + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
          + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
          - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
    accept = accept1 | (~reject & (v <= ub))
    return i + 1, lax.select(accept, k, k_out), accepted | accept, key

  def cond(carry):
    i, accepted = carry[0], carry[2]
    return jnp.any(~accepted) & (i < max_iters)

  init = (0, lax.full_like(prob, -1, prob.dtype, shape),
          jnp.full(shape, False, np.bool_), key)
  return lax.while_loop(cond, body, init)[1].astype(dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Counts of n trials over the categories of p (last axis), as floats of `dtype`.

  n and p are promoted together to an inexact dtype; `shape` (default p's shape)
  is the full result shape: p is broadcast to it and n to shape[:-1]. With the
  categories moved to the front, ratios_i = p_i / (sum_{j>=i} p_j) (divisor 1
  where that sum is 0) and keys = split(key, K); a `lax.scan` over (ratios,
  keys), carrying the remainder r = n, draws count_i = binomial(key_i, r,
  clip(ratio_i, 0, 1), dtype of r) and sets r -= count_i. `unroll` is passed to scan.
  """
  import refimpl.numpy as jnp
  from refimpl.numpy.util import promote_dtypes_inexact
  key, _ = _check_prng_key("multinomial", key)
  check_arraylike("multinomial", n, p)
  n, p = promote_dtypes_inexact(n, p)
  if shape is None:
    shape = p.shape
  n = jnp.broadcast_to(n, shape[:-1])
  p = jnp.broadcast_to(p, shape)

  def step(remainder, ratio_key):
    ratio, key = ratio_key
    count = binomial(key, remainder, ratio.clip(0, 1), dtype=remainder.dtype)
    return remainder - count, count

  p = jnp.moveaxis(p, -1, 0)
  remaining_probs = lax.cumsum(p, 0, reverse=True)
  ratios = p / jnp.where(remaining_probs == 0, 1, remaining_probs)
  keys = _split(key, ratios.shape[0])
  _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
  return jnp.moveaxis(counts, 0, -1).astype(dtype)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method='cholesky', *,
                       out_sharding=None):
  """Normal vectors with mean `mean` (..., n) and covariance `cov` (..., n, n).

  mean and cov are promoted together to an inexact dtype (`dtype` defaults to it;
  must be a float dtype). The factor A with A Aᵀ = cov is cholesky(cov)
  ('cholesky'), u * sqrt(s) from svd(cov) ('svd') or v * sqrt(w) from eigh(cov)
  ('eigh'); z = normal(key, shape + (n,), dtype) (one draw, no split) and the
  result is mean + einsum('...ij,...j->...i', A, z). `shape` defaults to the
  broadcast of mean.shape[:-1] and cov.shape[:-2].
  """
  check_out_sharding(out_sharding, "multivariate_normal")
  from refimpl.numpy.util import promote_dtypes_inexact
  key, _ = _check_prng_key("multivariate_normal", key)
  if dtype is not None:
    dtypes.check_user_dtype_supported(dtype)
  mean, cov = promote_dtypes_inexact(mean, cov)
  if method not in {'svd', 'eigh', 'cholesky'}:
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  if dtype is None:
    dtype = mean.dtype
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `multivariate_normal` must be a float "
                     f"dtype, got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  return _multivariate_normal(key, mean, cov, shape, dtype, method)


@functools.partial(jit, static_argnums=(3, 4, 5))
def _multivariate_normal(key, mean, cov, shape, dtype, method):
  import refimpl.numpy as jnp
  if not np.ndim(mean) >= 1:
    raise ValueError("multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{np.ndim(mean)}")
  if not np.ndim(cov) >= 2:
    raise ValueError("multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                     f"{np.ndim(cov)}")
  n = mean.shape[-1]
  if np.shape(cov)[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                     f"but got cov.shape == {np.shape(cov)}.")
  if shape is None:
    shape = lax.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
  else:
    _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
  if method == 'svd':
    u, s, _ = jnp.linalg.svd(cov)
    factor = u * jnp.sqrt(s[..., None, :])
  elif method == 'eigh':
    w, v = jnp.linalg.eigh(cov)
    factor = v * jnp.sqrt(w[..., None, :])
  else:
    factor = jnp.linalg.cholesky(cov)
  normal_samples = _normal(key, shape + mean.shape[-1:], dtype)
  return mean + jnp.einsum('...ij,...j->...i', factor, normal_samples)


def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
  """Matrices (*shape, n, m) (m defaults to n) uniform (Haar) on the orthogonal
  group O(n) (unitary U(n) for a complex dtype), semi-orthogonal when m != n:
  z = normal(key, (*shape, max(n, m), min(n, m)), dtype), q, r = qr(z), and q
  with column j multiplied by d_j / |d_j|, d = diagonal(r) (Mezzadri 2007);
  transposed (rows orthonormal) when n < m. `n` and `m` must be concrete
  integers."""
  check_out_sharding(out_sharding, "orthogonal")
  import operator
  import refimpl.numpy as jnp
  m = n if m is None else m
  shape = core.canonicalize_shape(shape)
  key, _ = _check_prng_key("orthogonal", key)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  _check_shape("orthogonal", shape)
  n, m = operator.index(n), operator.index(m)
  z = normal(key, (*shape, max(n, m), min(n, m)), dtype)
  q, r = jnp.linalg.qr(z)
  d = jnp.diagonal(r, 0, -2, -1)
  x = lax.mul(q, lax.expand_dims(lax.div(d, abs(d).astype(d.dtype)), [-2]))
  return jnp.swapaxes(x, -1, -2) if n < m else x


def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
  """Wald (inverse Gaussian) samples with mean `mean` and shape parameter 1.

  k1, k2 = split(key); v = normal(k1, shape, dtype), z = uniform(k2, shape, dtype);
  with y = v², x = mean + mean² y / 2 - mean / 2 * sqrt(4 mean y + mean² y²), the
  result is x where z <= mean / (mean + x), else mean² / x (Michael, Schucany and
  Haas). `shape` defaults to mean's shape; mean is broadcast to it.
  """
  check_out_sharding(out_sharding, "wald")
  key, dtype, shape = _float_sampler("wald", key, dtype, shape, mean)
  shape = _check_broadcast_shapes("wald", shape, mean)
  _check_all_safe_to_cast("wald", dtype, mean)
  return _wald(key, mean, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _wald(key, mean, shape, dtype):
  import refimpl.numpy as jnp
  k1, k2 = _split(key, 2)
  mean = jnp.broadcast_to(jnp.asarray(mean).astype(dtype), shape)
  v = _normal(k1, shape, dtype)
  z = _uniform(k2, shape, dtype, 0., 1.)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
  x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
  return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


# --- gamma samplers ---------------------------------------------------------------
# gamma and loggamma bind `random_gamma_p`, whose reference rule runs JAX's
# Marsaglia-Tsang sampler on each element; beta, dirichlet, chisquare, f, t,
# generalized_normal and ball are built from gamma/loggamma as in JAX.

def _gamma_one(key, alpha, log_space):
  """One Gamma(alpha) sample (its log with `log_space`) from one raw key,
  by Marsaglia and Tsang's rejection method, consuming bits as JAX does.

  For alpha < 1 the sample is boosted: Gamma(alpha) = Gamma(alpha + 1) *
  U**(1/alpha). With a = alpha (or alpha + 1), d = a - 1/3, c = 1/3 / sqrt(d):
  key, subkey = split(key); then the outer loop, from (key, X=0, V=1, U=2),
  repeats while U >= 1 - 0.0331 X**2 and log U >= X/2 + d (1 - V + log V):
  key, xkey, ukey = split(key, 3); an inner loop from (xkey, x=0, v=-1)
  repeats while v <= 0: xkey, k = split(xkey), x = normal(k), v = 1 + c x;
  then X = x*x, V = v*v*v, U = uniform(ukey). The sample is d V times
  (1 - uniform(subkey)) ** (1/alpha) if alpha < 1; in log space it is
  log d + log V + (-exponential(subkey)) / alpha (the boost term taken as 0
  where alpha >= 1 or the exponential is 0).
  """
  dtype = lax.dtype(alpha)
  zero, one = _const(dtype, 0), _const(dtype, 1)
  boost_mask = lax.ge(alpha, one)
  a = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(a, _const(dtype, 1 / 3))
  c = lax.div(_const(dtype, 1 / 3), lax.sqrt(d))

  def reject(state):
    _, X, V, U = state
    squeeze = lax.ge(U, lax.sub(one, lax.mul(_const(dtype, 0.0331), lax.mul(X, X))))
    log_test = lax.ge(lax.log(U), lax.add(lax.mul(X, _const(dtype, 0.5)),
                                          lax.mul(d, lax.add(lax.sub(one, V), lax.log(V)))))
    return lax.bitwise_and(squeeze, log_test)

  def next_normal(state):
    key, subkey = _split(state[0])
    x = _normal(subkey, (), dtype)
    return key, x, lax.add(one, lax.mul(x, c))

  def propose(state):
    keys = _split(state[0], 3)
    _, x, v = lax.while_loop(lambda s: lax.le(s[2], zero), next_normal,
                             (keys[1], zero, _const(dtype, -1)))
    U = _uniform(keys[2], (), dtype, 0., 1.)
    return keys[0], lax.mul(x, x), lax.mul(lax.mul(v, v), v), U

  key, subkey = _split(key)
  _, _, V, _ = lax.while_loop(reject, propose, (key, zero, one, _const(dtype, 2)))
  if log_space:
    log_u = lax.neg(_exponential(subkey, (), dtype))
    log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_u, zero)), zero,
                           lax.mul(log_u, lax.div(one, alpha)))
    return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
  u = lax.sub(one, _uniform(subkey, (), dtype, 0., 1.))
  boost = lax.select(boost_mask, one, lax.pow(u, lax.div(one, alpha)))
  return lax.mul(lax.mul(d, V), boost)


random_gamma_p = core.Primitive("random_gamma")


@random_gamma_p.def_impl
def _random_gamma_impl(keys, a, *, log_space):
  """Gamma(a) samples, one per element of `a` (their logs if `log_space`).

  `keys` is a key array whose shape is a prefix of a's shape (a single key
  for a whole array). Each key is split into as many keys as a's elements
  under it (split(key, n), in row-major order), and element i is
  `_gamma_one(keys[i], a[i], log_space)`: JAX's Marsaglia-Tsang rejection
  loop (`lax.while_loop`), run here vectorized with `vmap`, which gives the
  values of JAX's per-element loop.
  Shape and dtype: a's (a floating dtype). a = 0 gives 0 (the boost
  u ** (1/0)); NaN, or a <= -2/3 (d <= 0), gives NaN (the loop stops at
  once); -2/3 < a < 0 gives the formula's value, no Gamma sample; a = inf
  gives inf. Empty `a`: an empty result.
  """
  from refimpl.vectorize import vmap
  if a.size == 0:
    return np.empty(a.shape, a.dtype)
  count = math.prod(a.shape[keys.ndim:])
  with core.eval_context():
    keys = core.make_array(keys, core.get_aval(keys))
    keys = vmap(lambda k: _split(k, count))(keys.reshape(-1))
    samples = vmap(lambda k, x: _gamma_one(k, x, log_space))(
        keys.reshape(-1), a.reshape(-1))
  return np.asarray(samples).reshape(a.shape)


@random_gamma_p.def_abstract_eval
def _random_gamma_abstract_eval(keys, a, *, log_space):
  """a's shape and dtype; `keys` must be a key array whose shape is a prefix
  of a's shape, and a floating (TypeError/ValueError)."""
  if not dtypes.issubdtype(keys.dtype, dtypes.prng_key):
    raise TypeError(f"random_gamma requires a key array, got {keys.str_short()}")
  if a.shape[:keys.ndim] != keys.shape:
    raise ValueError(f"random_gamma key shape {keys.shape} is not a prefix "
                     f"of the shape {a.shape} of a")
  if not dtypes.issubdtype(a.dtype, np.floating):
    raise TypeError(f"random_gamma requires a floating a, got {a.dtype}")
  return core.ShapedArray(a.shape, a.dtype)


def _gamma_grad(sample, a, log_space):
  """d sample / d a by implicit differentiation (`lax.random_gamma_grad`);
  in log space divided by exp(sample) (the dtype's tiny where that is 0)."""
  if not log_space:
    return lax.random_gamma_grad(a, sample)
  x = lax.exp(sample)
  x = lax.select(lax.eq(x, lax.full_like(x, 0)),
                 lax.full_like(x, dtypes.finfo(lax.dtype(x)).tiny), x)
  return lax.div(lax.random_gamma_grad(a, x), x)


def _random_gamma_batch(args, dims, *, log_space):
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not batching.not_mapped)
  key, a = (batching.bdim_at_front(x, d, size) for x, d in zip(args, dims))
  return random_gamma_p.bind(key, a, log_space=log_space), 0


ad.defjvp2(random_gamma_p, None,
           lambda t, ans, key, a, *, log_space: lax.mul(t, _gamma_grad(ans, a, log_space)))
batching.primitive_batchers[random_gamma_p] = _random_gamma_batch


def gamma(key, a, shape=None, dtype=None, *, out_sharding=None):
  """Gamma(a) floats (shape a, scale 1): `random_gamma_p` on a converted to
  `dtype` and broadcast to `shape` (default a's shape), so element i uses
  the i-th key of split(key, size) (see `_gamma_one` for the draws).
  Differentiable in a by the implicit gradient (`lax.random_gamma_grad`)."""
  check_out_sharding(out_sharding, "gamma")
  key, dtype, shape = _float_sampler("gamma", key, dtype, shape, a)
  return _gamma(key, a, shape=shape, dtype=dtype)


def loggamma(key, a, shape=None, dtype=None, *, out_sharding=None):
  """log of Gamma(a) floats, drawn as `gamma` draws them (the same bits:
  exp(loggamma(...)) is gamma(...) up to rounding) but computed in log
  space, so that tiny samples (small a) keep their precision."""
  check_out_sharding(out_sharding, "loggamma")
  key, _ = _check_prng_key("loggamma", key)
  check_arraylike("loggamma", a)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  if not dtypes.issubdtype(dtype, np.floating):  # JAX's message names `gamma`
    raise ValueError(f"dtype argument to `gamma` must be a float dtype, got {dtype}")
  dtype = dtypes.canonicalize_dtype(dtype)
  if shape is not None:
    shape = core.canonicalize_shape(shape)
  return _gamma(key, a, shape=shape, dtype=dtype, log_space=True)


@functools.partial(jit, static_argnames=('shape', 'dtype', 'log_space'))
def _gamma(key, a, shape, dtype, log_space=False):
  import refimpl.numpy as jnp
  if shape is None:
    shape = np.shape(a)
  else:
    _check_shape("gamma", shape, np.shape(a))
  a = lax.convert_element_type(a, dtype)
  if np.shape(a) != shape:
    a = jnp.broadcast_to(a, shape)
  return random_gamma_p.bind(key, a, log_space=log_space)


def beta(key, a, b, shape=None, dtype=None, *, out_sharding=None):
  """Beta(a, b) floats: with key_a, key_b = split(key), la = loggamma(key_a,
  a) and lb = loggamma(key_b, b) (a, b broadcast to `shape`, default their
  broadcast shape), m = max(la, lb), the result is exp(la - m) /
  (exp(la - m) + exp(lb - m)): Ga / (Ga + Gb) without underflow."""
  check_out_sharding(out_sharding, "beta")
  import refimpl.numpy as jnp
  key, dtype, shape = _float_sampler("beta", key, dtype, shape, a, b)
  _check_all_safe_to_cast("beta", dtype, a, b)
  shape = _check_broadcast_shapes("beta", shape, a, b)
  a, b = lax.convert_element_type(a, dtype), lax.convert_element_type(b, dtype)
  key_a, key_b = _split(key)
  log_gamma_a = loggamma(key_a, jnp.broadcast_to(a, shape), shape, dtype)
  log_gamma_b = loggamma(key_b, jnp.broadcast_to(b, shape), shape, dtype)
  log_max = lax.max(log_gamma_a, log_gamma_b)
  gamma_a_scaled = jnp.exp(log_gamma_a - log_max)
  gamma_b_scaled = jnp.exp(log_gamma_b - log_max)
  return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
  """Dirichlet(alpha) floats over alpha's last axis (n categories): the
  softmax over the last axis of loggamma(key, alpha, shape + (n,)), with
  the max subtracted (through stop_gradient). `shape` is the batch shape
  (default alpha.shape[:-1]); alpha.ndim >= 1 (ValueError)."""
  check_out_sharding(out_sharding, "dirichlet")
  key, dtype, shape = _float_sampler("dirichlet", key, dtype, shape, alpha)
  return _dirichlet(key, alpha, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _dirichlet(key, alpha, shape, dtype):
  import refimpl.numpy as jnp
  if not np.ndim(alpha) >= 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
  if shape is None:
    shape = np.shape(alpha)[:-1]
  else:
    _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
  alpha = lax.convert_element_type(alpha, dtype)
  log_gamma_samples = loggamma(key, alpha, shape + np.shape(alpha)[-1:], dtype)
  x_max = jnp.max(log_gamma_samples, -1, keepdims=True)
  unnormalized = jnp.exp(log_gamma_samples - lax.stop_gradient(x_max))
  return unnormalized / unnormalized.sum(-1, keepdims=True)


def chisquare(key, df, shape=None, dtype=None, *, out_sharding=None):
  """Chi-square(df) floats: exp(loggamma(key, df / 2, shape)) * 2."""
  check_out_sharding(out_sharding, "chisquare")
  key, dtype, shape = _float_sampler("chisquare", key, dtype, shape, df)
  shape = _check_broadcast_shapes("chisquare", shape, df)
  _check_all_safe_to_cast("chisquare", dtype, df)
  return _chisquare(key, df, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _chisquare(key, df, shape, dtype):
  import refimpl.numpy as jnp
  df = lax.convert_element_type(df, dtype)
  two = _const(dtype, 2)
  log_g = loggamma(key, lax.div(df, two), shape, dtype)
  return lax.mul(jnp.exp(log_g), two)


def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
  """F(dfnum, dfden) floats: with key_dfd, key_dfn = split(key), the ratio
  (chisquare(key_dfn, dfnum) / dfnum) / (chisquare(key_dfd, dfden) / dfden)
  (shape defaults to the broadcast shape of dfden and dfnum)."""
  check_out_sharding(out_sharding, "f")
  key, dtype, shape = _float_sampler("f", key, dtype, shape, dfnum, dfden)
  shape = _check_broadcast_shapes("f", shape, dfnum, dfden)
  _check_all_safe_to_cast("f", dtype, dfnum, dfden)
  return _f(key, dfnum, dfden, shape, dtype)


@functools.partial(jit, static_argnums=(3, 4))
def _f(key, dfnum, dfden, shape, dtype):
  import refimpl.numpy as jnp
  dfden = lax.convert_element_type(dfden, dtype)
  dfnum = lax.convert_element_type(dfnum, dtype)
  key_dfd, key_dfn = _split(key)
  chi2_dfn = chisquare(key_dfn, dfnum, shape, dtype)
  chi2_dfd = chisquare(key_dfd, dfden, shape, dtype)
  num = lax.div(chi2_dfn, jnp.broadcast_to(dfnum, shape))
  den = lax.div(chi2_dfd, jnp.broadcast_to(dfden, shape))
  return lax.div(num, den)


def t(key, df, shape=None, dtype=None, *, out_sharding=None):
  """Student's t(df) floats: with key_n, key_g = split(key), n =
  normal(key_n, shape) and g = gamma(key_g, df / 2, shape), the result is
  n * sqrt((df / 2) / g)."""
  check_out_sharding(out_sharding, "t")
  key, dtype, shape = _float_sampler("t", key, dtype, shape, df)
  return _t(key, df, shape, dtype)


@functools.partial(jit, static_argnums=(2, 3))
def _t(key, df, shape, dtype):
  import refimpl.numpy as jnp
  if shape is None:
    shape = np.shape(df)
  else:
    _check_shape("t", shape, np.shape(df))
  df = lax.convert_element_type(df, dtype)
  key_n, key_g = _split(key)
  n = _normal(key_n, shape, dtype)
  half_df = lax.div(df, _const(dtype, 2))
  g = gamma(key_g, half_df, shape, dtype)
  return n * jnp.sqrt(half_df / g)


def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
  """Generalized normal floats (density proportional to exp(-|x|**p)): with
  k0, k1 = split(key), g = gamma(k0, 1 / p, shape) and r =
  rademacher(k1, shape, dtype), the result is r * g ** (1 / p)."""
  check_out_sharding(out_sharding, "generalized_normal")
  shape = core.canonicalize_shape(shape)
  key, _ = _check_prng_key("generalized_normal", key)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  _check_shape("generalized_normal", shape)
  k0, k1 = _split(key)
  g = gamma(k0, 1 / p, shape, dtype)
  r = rademacher(k1, shape, dtype)
  return r * g ** (1 / p)


def ball(key, d, p=2, shape=(), dtype=None, *, out_sharding=None):
  """Uniform floats in the unit Lp ball of dimension d, shape (*shape, d):
  with k1, k2 = split(key), g = generalized_normal(k1, p, (*shape, d)) and
  e = exponential(k2, shape), the result is g / (sum(|g| ** p, -1) + e) **
  (1 / p) (Barthe, Guedon, Mendelson and Naor's construction)."""
  check_out_sharding(out_sharding, "ball")
  import operator
  import refimpl.numpy as jnp
  shape = core.canonicalize_shape(shape)
  key, _ = _check_prng_key("ball", key)
  dtype = float if dtype is None else dtype
  dtypes.check_user_dtype_supported(dtype)
  _check_shape("ball", shape)
  d = operator.index(d)
  k1, k2 = _split(key)
  g = generalized_normal(k1, p, (*shape, d), dtype)
  e = exponential(k2, shape, dtype)
  return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]
