"""The threefry2x32 PRNG of `jax.random`: counter-based and splittable.

The data of a key is a `uint32[2]` array (a *raw key*). Everything random
is computed from keys by one hash, `threefry2x32` (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", SC 2011, with 20 rounds), applied to
counters:

* `threefry_seed(seed)` makes a key from an integer seed;
* `threefry_split(key, shape)` derives new keys, `threefry_fold_in(key, n)`
  one key per integer `n`;
* `threefry_random_bits(key, bit_width, shape)` derives an array of bits.

Split and random_bits have two algorithms, chosen by the config option
`jax_threefry_partitionable` (True by default, as in JAX; the context
manager `refimpl.threefry_partitionable(False)` selects the legacy one):

* partitionable: element i (row-major index, a 64-bit counter) of the
  result hashes the counter pair (hi32(i), lo32(i)) with the key, so every
  element depends only on its own index;
* legacy: the hash is applied to the counters 0, 1, ..., n-1 split in two
  halves (see `threefry_2x32`), so an element depends on the result's size.

Typed keys (second half of this module): `PRNGImpl` bundles an
implementation's key functions (`threefry_prng_impl`); `KeyTy` is the key
dtype `key<fry>` and `PRNGKeyArray` a concrete array of keys; the primitives
`random_seed`, `random_split`, `random_fold_in`, `random_bits`,
`random_wrap` and `random_unwrap` apply the implementation's functions to
every key of a key array, as JAX structures them.

`docs/random.md` restates the whole scheme precisely.
"""

import math
from typing import Callable, NamedTuple

import numpy as np

from refimpl import core, dtypes
from refimpl.array import Array
from refimpl.config import config
from refimpl.core import Primitive, ShapedArray
from refimpl.interpreters import ad, batching
from refimpl.lax.rules import broadcasting_shape

__all__ = [
    'threefry2x32_p', 'iota_2x32_shape_p', 'threefry_2x32', 'iota_2x32_shape',
    'threefry_seed', 'threefry_split', 'threefry_fold_in', 'threefry_random_bits',
    'UINT_DTYPES',
]

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16),
               32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}
"""The unsigned dtype of each bit width."""

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
"""Threefry-2x32's rotation distances: the 4 rounds of even groups use the
first row, the 4 rounds of odd groups the second."""

KEY_SCHEDULE_PARITY = 0x1BD11BDA
"""The constant in Threefry's third key word: k2 = k0 ^ k1 ^ 0x1BD11BDA."""


# --- the hash ---------------------------------------------------------------------

threefry2x32_p = Primitive("threefry2x32")
threefry2x32_p.multiple_results = True


@threefry2x32_p.def_impl
def _threefry2x32_impl(key1, key2, x1, x2):
  """The Threefry-2x32 block cipher with 20 rounds, elementwise: for each
  element, the key (key1, key2) encrypts the counter pair (x1, x2).

  All arithmetic is on uint32 and wraps modulo 2**32; `rotl(v, d)` is
  `(v << d) | (v >> (32 - d))`.

  * Key schedule: ks = [key1, key2, key1 ^ key2 ^ 0x1BD11BDA].
  * Initial key injection: a = x1 + ks[0]; b = x2 + ks[1].
  * Five groups g = 0..4 of four rounds. Each round with rotation r does
    a = a + b; b = rotl(b, r); b = a ^ b. Groups with even g use the
    rotations (13, 15, 26, 6), odd g use (17, 29, 16, 24). After group g:
    a = a + ks[(g + 1) % 3]; b = b + ks[(g + 2) % 3] + (g + 1).
  * The outputs are (a, b).

  Known answer (Random123): key (0, 0), counter (0, 0) gives
  (0x6b200159, 0x99ba4efe).

  Shape rule: the four operands broadcast as `add`'s do (rank-0 operands
  broadcast against anything, otherwise equal ranks with size-1 dimensions
  broadcasting); both outputs have the broadcast shape. Dtype rule: every
  operand must be uint32 (else TypeError); outputs are uint32. Empty
  operands give empty outputs.
  """
  operands = [np.asarray(v, np.uint32) for v in (key1, key2, x1, x2)]
  shape = np.broadcast_shapes(*(v.shape for v in operands))
  outs = [np.empty(shape, np.uint32), np.empty(shape, np.uint32)]
  if not math.prod(shape):
    return outs
  # Memory, not semantics: the rounds run in place on blocks of the
  # broadcast operands small enough to stay in cache.
  blocks = np.nditer([*operands, *outs], flags=["external_loop", "buffered"],
                     op_flags=[["readonly"]] * 4 + [["writeonly"]] * 2,
                     buffersize=_BLOCK)
  with blocks:
    for k0, k1, a, b, y0, y1 in blocks:
      _threefry2x32_rounds(k0, k1, a, b, y0, y1)
  return outs


_BLOCK = 1 << 14
"""Elements per block of the threefry2x32 rule."""


def _threefry2x32_rounds(key1, key2, x1, x2, a, b):
  """The 20 rounds of `_threefry2x32_impl` on 1-d uint32 blocks, written
  into the output blocks `a` and `b` (in-place NumPy operations, which wrap
  modulo 2**32)."""
  ks = [key1, key2, key1 ^ key2 ^ np.uint32(KEY_SCHEDULE_PARITY)]
  np.add(x1, ks[0], out=a)
  np.add(x2, ks[1], out=b)
  rotated_out = np.empty_like(b)
  for g in range(5):
    for r in ROTATIONS[g % 2]:
      a += b
      # b = rotl(b, r)
      np.right_shift(b, np.uint32(32 - r), out=rotated_out)
      b <<= np.uint32(r)
      b |= rotated_out
      b ^= a
    a += ks[(g + 1) % 3]
    b += ks[(g + 2) % 3]
    b += np.uint32(g + 1)


@threefry2x32_p.def_abstract_eval
def _threefry2x32_abstract_eval(*avals):
  if any(a.dtype != np.uint32 for a in avals):
    raise TypeError("Arguments to threefry2x32 must have uint32 type, got "
                    f"{', '.join(str(a) for a in avals)}")
  shape = broadcasting_shape("threefry2x32", *avals)
  return [ShapedArray(shape, np.uint32)] * 2


batching.defbroadcasting(threefry2x32_p)
ad.defjvp_zero(threefry2x32_p)


iota_2x32_shape_p = Primitive("iota_2x32_shape")
iota_2x32_shape_p.multiple_results = True


@iota_2x32_shape_p.def_impl
def _iota_2x32_shape_impl(*, shape):
  """The row-major positions 0, 1, ..., prod(shape) - 1 of an array of
  `shape`, as 64-bit counters split in two uint32 arrays (hi, lo) of `shape`:
  hi = position >> 32, lo = position & 0xFFFFFFFF.

  Shape rule: both outputs have `shape` (a non-empty tuple of sizes >= 0;
  TypeError for a negative size); dtype uint32.
  """
  size = math.prod(shape)
  if size <= 2 ** 32:   # (the same values, without 64-bit intermediates)
    return [np.zeros(shape, np.uint32), np.arange(size, dtype=np.uint32).reshape(shape)]
  counts = np.arange(size, dtype=np.uint64).reshape(shape)
  return [(counts >> np.uint64(32)).astype(np.uint32), counts.astype(np.uint32)]


@iota_2x32_shape_p.def_abstract_eval
def _iota_2x32_shape_abstract_eval(*, shape):
  _check_nonnegative("iota_2x32_shape", shape)
  return [ShapedArray(shape, np.uint32)] * 2


def _check_nonnegative(name, shape):
  """TypeError unless every size in `shape` is >= 0."""
  if any(d < 0 for d in shape):
    raise TypeError(f"{name} shape must have non-negative sizes, got {shape}")


ad.defjvp_zero(iota_2x32_shape_p)


def iota_2x32_shape(shape):
  """(hi, lo): the row-major positions in an array of `shape` as 64-bit
  counters, split in two uint32 arrays of `shape` (zeros for shape ())."""
  from refimpl import lax
  shape = core.canonicalize_shape(shape)
  if not shape:
    return (lax.full((), 0, np.uint32),) * 2
  return iota_2x32_shape_p.bind(shape=shape)


def threefry_2x32(keypair, count):
  """Hashes the uint32 array `count` with the key `keypair` (legacy layout).

  The flattened count (padded with one 0 when its size n is odd) is cut in
  two halves x1, x2; the hash of the pairs (x1[i], x2[i]) gives (y1, y2), and
  the result is concatenate(y1, y2) without the padding, reshaped to
  `count.shape`. Requires uint32 operands (TypeError otherwise).
  """
  from refimpl import lax
  import refimpl.numpy as jnp
  key1, key2 = keypair[0], keypair[1]
  if not lax.dtype(key1) == lax.dtype(key2) == lax.dtype(count) == np.uint32:
    raise TypeError("threefry_2x32 requires uint32 arguments, got "
                    f"{[lax.dtype(x) for x in (key1, key2, count)]}")
  flat = jnp.ravel(count)
  odd = flat.shape[0] % 2
  if odd:
    flat = jnp.concatenate([flat, np.zeros(1, np.uint32)])
  x1, x2 = jnp.split(flat, 2)
  out = jnp.concatenate(threefry2x32_p.bind(key1, key2, x1, x2))
  return lax.reshape(out[:-1] if odd else out, np.shape(count))


# --- the key functions --------------------------------------------------------------

def threefry_seed(seed):
  """The raw key of an integer scalar `seed`: [seed >> 32 (logical), seed &
  0xFFFFFFFF] as uint32, i.e. [0, seed mod 2**32] for a 32-bit seed and the
  high and low words of a 64-bit seed (x64 on).

  Raises TypeError for a non-scalar or non-integer seed.
  """
  from refimpl import lax
  import refimpl.numpy as jnp
  if np.shape(seed):
    raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
  if not dtypes.issubdtype(lax.dtype(seed), np.integer):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")

  def convert(k):
    return lax.expand_dims(lax.convert_element_type(k, np.uint32), [0])
  k1 = convert(lax.shift_right_logical(seed, np.array(32, lax.dtype(seed))))
  k2 = convert(jnp.bitwise_and(seed, np.uint32(0xFFFFFFFF)))
  return lax.concatenate([k1, k2], 0)


def threefry_split(key, shape):
  """`prod(shape)` new keys from `key`, as uint32[*shape, 2].

  Partitionable: key j (row-major) is threefry2x32(key, (hi32(j), lo32(j))).
  Legacy: the hash `threefry_2x32(key, [0, 1, ..., 2n - 1])` reshaped to
  (*shape, 2).
  """
  from refimpl import lax
  import refimpl.numpy as jnp
  shape = core.canonicalize_shape(shape)
  if config.jax_threefry_partitionable:
    counts1, counts2 = iota_2x32_shape(shape)
    bits1, bits2 = threefry2x32_p.bind(key[0], key[1], counts1, counts2)
    return jnp.stack([bits1, bits2], axis=len(shape))
  counts = lax.iota(np.uint32, math.prod(shape) * 2)
  return lax.reshape(threefry_2x32(key, counts), (*shape, 2))


def threefry_fold_in(key, data):
  """The key `threefry_2x32(key, threefry_seed(data))` for a uint32 scalar
  `data`: the hash of the counter pair (0, data). The same in both modes."""
  return threefry_2x32(key, threefry_seed(data))


def threefry_random_bits(key, bit_width, shape):
  """An array of `shape` of uniformly random uint<bit_width> from `key`.

  `bit_width` is 8, 16, 32 or 64 (TypeError otherwise); `key` must be a
  uint32[2] raw key (TypeError otherwise).
  """
  from refimpl import lax
  if not (np.shape(key) == (2,) and lax.dtype(key) == np.uint32):
    raise TypeError("threefry_random_bits got invalid prng key.")
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  shape = core.canonicalize_shape(shape)
  if config.jax_threefry_partitionable:
    return _random_bits_partitionable(key, bit_width, shape)
  return _random_bits_legacy(key, bit_width, shape)


def _random_bits_partitionable(key, bit_width, shape):
  """Element j (row-major) hashes the counter pair (hi32(j), lo32(j)) to
  (y1, y2); 64-bit results are (y1 << 32) | y2, 32-bit ones y1 ^ y2, 8- and
  16-bit ones the low bits of y1 ^ y2."""
  from refimpl import lax
  if math.prod(shape) > 2 ** 64:
    raise NotImplementedError('random bits array of size exceeding 2 ** 64')
  counts1, counts2 = iota_2x32_shape(shape)
  bits1, bits2 = threefry2x32_p.bind(key[0], key[1], counts1, counts2)
  dtype = UINT_DTYPES[bit_width]
  if bit_width == 64:
    bits_hi = lax.convert_element_type(bits1, dtype)
    bits_lo = lax.convert_element_type(bits2, dtype)
    return lax.shift_left(bits_hi, np.array(32, dtype)) | bits_lo
  if bit_width == 32:
    return bits1 ^ bits2
  return lax.convert_element_type(bits1 ^ bits2, dtype)


def _random_bits_legacy(key, bit_width, shape):
  """m = ceil(bit_width * n / 32) words `threefry_2x32(key, [0, ..., m-1])`
  (in blocks of 2**32 - 1 counters under split keys if m is that large).
  64-bit: word halves (w[:m/2] << 32) | w[m/2:]; 8/16-bit: each word's
  little-endian pieces in order; the first n values, reshaped to `shape`."""
  from refimpl import lax
  import refimpl.numpy as jnp
  size = math.prod(shape)
  max_count = -(-bit_width * size // 32)
  nblocks, rem = divmod(max_count, np.iinfo(np.uint32).max)
  if not nblocks:
    bits = threefry_2x32(key, lax.iota(np.uint32, rem))
  else:
    from refimpl.vectorize import vmap
    keys = threefry_split(key, (nblocks + 1,))
    blocks = vmap(threefry_2x32, in_axes=(0, None))(
        keys[:-1], lax.iota(np.uint32, np.iinfo(np.uint32).max))
    last = threefry_2x32(keys[-1], lax.iota(np.uint32, rem))
    bits = lax.concatenate([jnp.ravel(blocks), last], 0)
  dtype = UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi, lo = (lax.convert_element_type(x, dtype) for x in jnp.split(bits, 2))
    bits = lax.shift_left(hi, np.array(32, dtype)) | lo
  elif bit_width in (8, 16):
    pieces = lax.shift_right_logical(
        lax.broadcast(bits, (1,)),
        lax.mul(np.uint32(bit_width),
                lax.broadcasted_iota(np.uint32, (32 // bit_width, 1), 0)))
    bits = lax.bitwise_and(np.uint32(np.iinfo(dtype).max), pieces)
    bits = lax.reshape(bits, (max_count * 32 // bit_width,), (1, 0))
    bits = lax.convert_element_type(bits, dtype)[:size]
  return lax.reshape(bits, shape)


# --- PRNG implementations and typed keys --------------------------------------------

class PRNGImpl(NamedTuple):
  """A PRNG: the shape of its uint32 key data and its four key functions.

      seed :: int[] -> K
      split[shape] :: K -> K[*shape]
      fold_in :: K -> uint32[] -> K
      random_bits[bit_width, shape] :: K -> uint<bit_width>[*shape]

  where K is a `uint32[*key_shape]` array of key data. `name` names the
  implementation (`random.key(0, impl=name)`), `tag` is the short form in
  the key dtype's name (`key<fry>`).
  """
  key_shape: tuple
  seed: Callable
  split: Callable
  random_bits: Callable
  fold_in: Callable
  name: str
  tag: str

  def __repr__(self):
    """The tag: jaxprs show `random_seed[impl=fry]`."""
    return self.tag

  __str__ = __repr__


threefry_prng_impl = PRNGImpl(
    key_shape=(2,), seed=threefry_seed, split=threefry_split,
    random_bits=threefry_random_bits, fold_in=threefry_fold_in,
    name='threefry2x32', tag='fry')

prngs = {threefry_prng_impl.name: threefry_prng_impl}
"""The PRNG implementations, by name."""


class KeyTy(dtypes.ExtendedDType):
  """The dtype of typed PRNG keys of one implementation: `key<fry>` for
  threefry2x32. A key is an opaque element; its data (`random.key_data`)
  is `uint32[*impl.key_shape]`. Arrays of keys allow shape operations,
  indexing, control flow and equality, no arithmetic.

  A key is physically its data: the physical data of a key array of shape
  S is uint32[*S, *impl.key_shape] (`core.physical_aval`), what compiled
  programs take and return. The reference rules hold a NumPy array of shape
  S with one structured element per key (`numpy_dtype`, a single uint32
  field of the key shape named after the implementation);
  `to_physical`/`from_physical` convert.
  """

  type = dtypes.prng_key
  element_dtype = np.dtype(np.uint32)

  def __init__(self, impl):
    self._impl = impl
    self.element_shape = impl.key_shape
    self.numpy_dtype = np.dtype([(impl.name, np.uint32, impl.key_shape)])
    dtypes.register_extended(self)

  @property
  def name(self):
    return f'key<{self._impl.tag}>'

  def __eq__(self, other):
    return type(other) is KeyTy and self._impl == other._impl

  def __hash__(self):
    return hash((KeyTy, self._impl.name))


class PRNGKeyArray(Array):
  """A concrete array of typed PRNG keys (dtype `key<...>`).

  It prints its key data (`Array((), dtype=key<fry>) overlaying: [0 0]`)
  and refuses conversion to NumPy and Python numbers: use
  `random.key_data(keys)` for the uint32 data.
  """

  __slots__ = ("_dtype",)

  def __init__(self, data, dtype):
    super().__init__(data)
    self._dtype = dtype

  @property
  def aval(self):
    return ShapedArray(self._value.shape, self._dtype)

  def _conversion_error(self, *args, **kwargs):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. "
                    "Use jax.random.key_data(arr) if you wish to extract the underlying "
                    "integer array.")

  __array__ = __bool__ = __int__ = __float__ = __complex__ = __index__ = _conversion_error
  item = tolist = _conversion_error

  def __repr__(self):
    data = self._dtype.to_physical(self._value)
    return f'Array({self.shape}, dtype={self._dtype.name}) overlaying:\n{data}'

  __str__ = __repr__

  def __format__(self, spec):
    return format(repr(self), spec)

  def __reduce__(self):
    return (PRNGKeyArray, (np.array(self._value), self._dtype))

  def copy(self):
    return PRNGKeyArray(self._value, self._dtype)


KeyTy.array_type = PRNGKeyArray


def _key_dtype_of_data(keys):
  """The key dtype of key array data (structured elements of its `numpy_dtype`)."""
  return dtypes.extended_of_numpy(keys.dtype)


def _key_impl_of(aval, name):
  """The implementation of the key dtype of `aval`; TypeError for other dtypes."""
  if not isinstance(aval.dtype, KeyTy):
    raise TypeError(f"{name} takes a key array operand, got dtype {aval.dtype}")
  return aval.dtype._impl


def _map_over_keys(f, ndim):
  """`f` of one key's data mapped (with vmap) over `ndim` leading key axes."""
  from refimpl.vectorize import vmap
  for _ in range(ndim):
    f = vmap(f)
  return f


# --- the key primitives ---------------------------------------------------------------

random_seed_p = Primitive("random_seed")


@random_seed_p.def_impl
def _random_seed_impl(seeds, *, impl):
  """One key per element of the integer array `seeds`: the key whose data
  is `impl.seed(seed)` (threefry2x32: `threefry_seed`).

  Shape rule: keys of the shape of `seeds`. Dtype rule: `seeds` must be an
  integer array (TypeError); the result has dtype `key<impl.tag>`.
  """
  with core.eval_context():
    data = _map_over_keys(impl.seed, np.ndim(seeds))(seeds)
  return KeyTy(impl).from_physical(data)


@random_seed_p.def_abstract_eval
def _random_seed_abstract_eval(seeds, *, impl):
  if not dtypes.issubdtype(seeds.dtype, np.integer):
    raise TypeError(f"PRNG key seed must be an integer; got {seeds}")
  return ShapedArray(seeds.shape, KeyTy(impl))


random_split_p = Primitive("random_split")


@random_split_p.def_impl
def _random_split_impl(keys, *, shape):
  """For each key of `keys`, `impl.split(key, shape)`: the keys of shape
  (*keys.shape, *shape) (threefry2x32: `threefry_split`).

  Shape rule: (*keys.shape, *shape), the key dtype of `keys` (TypeError
  unless `keys` is a key array, or if `shape` has a negative size).
  """
  key_dtype = _key_dtype_of_data(keys)
  impl = key_dtype._impl
  with core.eval_context():
    data = _map_over_keys(lambda k: impl.split(k, shape), keys.ndim)(
        key_dtype.to_physical(keys))
  return key_dtype.from_physical(data)


@random_split_p.def_abstract_eval
def _random_split_abstract_eval(keys, *, shape):
  _key_impl_of(keys, "random_split")
  _check_nonnegative("random_split", shape)
  return ShapedArray((*keys.shape, *shape), keys.dtype)


random_fold_in_p = Primitive("random_fold_in")


@random_fold_in_p.def_impl
def _random_fold_in_impl(keys, msgs):
  """For each key and uint32 message, `impl.fold_in(key, msg)` (threefry2x32:
  `threefry_fold_in`), keys and messages broadcast against each other.

  Shape rule: `keys` and `msgs` broadcast as `add`'s operands do; the key
  dtype of `keys` (TypeError unless `keys` is a key array and `msgs` uint32).
  """
  key_dtype = _key_dtype_of_data(keys)
  impl = key_dtype._impl
  shape = np.broadcast_shapes(keys.shape, np.shape(msgs))
  data = np.broadcast_to(key_dtype.to_physical(keys), (*shape, *impl.key_shape))
  msgs = np.broadcast_to(msgs, shape)
  with core.eval_context():
    data = _map_over_keys(impl.fold_in, len(shape))(data, msgs)
  return key_dtype.from_physical(data)


@random_fold_in_p.def_abstract_eval
def _random_fold_in_abstract_eval(keys, msgs):
  _key_impl_of(keys, "random_fold_in")
  if msgs.dtype != np.uint32:
    raise TypeError(f"random_fold_in takes uint32 messages, got dtype {msgs.dtype}")
  return ShapedArray(broadcasting_shape("random_fold_in", keys, msgs), keys.dtype)


random_bits_p = Primitive("random_bits")


@random_bits_p.def_impl
def _random_bits_impl(keys, *, bit_width, shape):
  """For each key, `impl.random_bits(key, bit_width, shape)`: uniformly
  random uint<bit_width> values (threefry2x32: `threefry_random_bits`).

  Shape rule: (*keys.shape, *shape). Dtype rule: uint<bit_width> for a
  `bit_width` of 8, 16, 32 or 64. TypeError for another bit width, for
  `keys` that are not a key array and for a negative size in `shape`.
  """
  key_dtype = _key_dtype_of_data(keys)
  impl = key_dtype._impl
  with core.eval_context():
    bits = _map_over_keys(lambda k: impl.random_bits(k, bit_width, shape), keys.ndim)(
        key_dtype.to_physical(keys))
  return np.asarray(bits)


@random_bits_p.def_abstract_eval
def _random_bits_abstract_eval(keys, *, bit_width, shape):
  _key_impl_of(keys, "random_bits")
  _check_nonnegative("random_bits", shape)
  if bit_width not in UINT_DTYPES:
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  return ShapedArray((*keys.shape, *shape), UINT_DTYPES[bit_width])


random_wrap_p = Primitive("random_wrap")


@random_wrap_p.def_impl
def _random_wrap_impl(data, *, impl):
  """The keys whose data is the uint32 array `data` of shape
  (*S, *impl.key_shape): a key array of shape S.

  Dtype rule: `data` must be uint32 with at least one dimension and end in
  the key shape (TypeError, with JAX's messages); the result has dtype
  `key<impl.tag>`.
  """
  return KeyTy(impl).from_physical(data)


@random_wrap_p.def_abstract_eval
def _random_wrap_abstract_eval(data, *, impl):
  check_key_data(data, impl)
  return ShapedArray(data.shape[:data.ndim - len(impl.key_shape)], KeyTy(impl))


def check_key_data(aval, impl):
  """Raises TypeError, with JAX's messages, unless `aval` (an abstract value
  or array) is uint32[..., *impl.key_shape]. Values without `ndim`, `shape`
  and `dtype` (Python scalars, lists) are refused too."""
  if not all(hasattr(aval, attr) for attr in ("ndim", "shape", "dtype")):
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have "
                    f"ndim, shape, and dtype attributes. Got {aval}")
  shape, dtype = aval.shape, aval.dtype
  if len(shape) < 1:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                    f"got ndim={len(shape)}")
  if tuple(shape[len(shape) - len(impl.key_shape):]) != impl.key_shape:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to "
                    f"end with {impl.key_shape}; got shape={tuple(shape)} for "
                    f"impl={impl.name}")
  if dtype != np.uint32:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                    f"uint32; got dtype={dtype}")


random_unwrap_p = Primitive("random_unwrap")


@random_unwrap_p.def_impl
def _random_unwrap_impl(keys):
  """The uint32 data of the key array `keys`: shape (*keys.shape,
  *impl.key_shape). TypeError unless `keys` is a key array."""
  return _key_dtype_of_data(keys).to_physical(keys)


@random_unwrap_p.def_abstract_eval
def _random_unwrap_abstract_eval(keys):
  impl = _key_impl_of(keys, "random_unwrap")
  return ShapedArray((*keys.shape, *impl.key_shape), np.uint32)


def _random_wrap_batcher(args, dims, *, impl):
  (data,), (d,) = args, dims
  return random_wrap_p.bind(batching.bdim_at_front(data, d, None), impl=impl), 0


for _p in (random_seed_p, random_split_p, random_bits_p, random_unwrap_p):
  batching.defvectorized(_p)
batching.defbroadcasting(random_fold_in_p)
batching.primitive_batchers[random_wrap_p] = _random_wrap_batcher
for _p in (random_seed_p, random_split_p, random_fold_in_p, random_bits_p,
           random_wrap_p, random_unwrap_p):
  ad.defjvp_zero(_p)


def random_seed(seeds, impl):
  """Keys of `impl` from integer seeds (any shape). A Python int seed is
  taken as int64 first, so without x64 its low 32 bits count."""
  import refimpl.numpy as jnp
  seeds = jnp.asarray(np.int64(seeds)) if isinstance(seeds, int) else jnp.asarray(seeds)
  return random_seed_p.bind(seeds, impl=impl)


def random_split(keys, shape):
  return random_split_p.bind(keys, shape=core.canonicalize_shape(shape))


def random_fold_in(keys, msgs):
  import refimpl.numpy as jnp
  return random_fold_in_p.bind(keys, jnp.asarray(msgs))


def random_bits(keys, bit_width, shape):
  return random_bits_p.bind(keys, bit_width=bit_width, shape=core.canonicalize_shape(shape))


def random_wrap(data, *, impl):
  """The key array whose data is `data` (checked: TypeError with JAX's messages)."""
  check_key_data(data, impl)
  return random_wrap_p.bind(data, impl=impl)


def random_unwrap(keys):
  """The uint32 data of the key array `keys`."""
  if not dtypes.issubdtype(getattr(keys, "dtype", None), dtypes.prng_key):
    raise TypeError(f"random_unwrap takes key array operand, got keys.dtype={keys.dtype}")
  return random_unwrap_p.bind(keys)
