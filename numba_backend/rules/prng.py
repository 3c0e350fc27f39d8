"""Lowering rules of the PRNG primitives (refimpl/prng.py): Numba kernels
computing the reference's bits; random_gamma (refimpl/random.py) as the
program of the reference's sampler. The kernels loop over scalar functions
of one key, counter or value (`threefry_pair`, `split_pair`, ...), which
numba_backend/cuda/prng.py's kernels call too. A key
array is its physical data, uint32[*S, 2] (`core.physical_aval`); the
shape and indexing rules (rules/shapes.py, rules/indexing.py) lower their
primitives on key arrays as their rules on that data, with the key's axis
appended (as JAX lowers them, `physical_element_aval`); copy, select_n and
the comparisons on keys are lowered here.

`jax_threefry_partitionable` picks split's and random_bits' algorithm: the
reference reads it when it evaluates the equation, under the tracing config
that jit's cache key includes, so the lowering reads it when compiling."""

import functools
import math

import numba
import numpy as np

import refimpl
from refimpl import prng, random
from refimpl.config import config
from refimpl.core import physical_aval
from refimpl.lax import elementwise
from refimpl.vectorize import vmap
from numba_backend.kernels import broadcast_strides, kernel_jit
from numba_backend.lower import LoweringError, register, register_for_keys
from numba_backend.rules.calls import inline

_MASK = np.uint64(0xFFFFFFFF)
_R0, _R1 = prng.ROTATIONS
_PARITY = np.uint32(prng.KEY_SCHEDULE_PARITY)


def _inlined(fn):
  """A scalar function of the kernels that Numba inlines into its callers
  (LLVM does not inline one holding threefry's rounds into the loop calling
  it, which it then does not vectorize)."""
  return numba.njit(inline="always")(fn)


@kernel_jit
def _rotate_left(v, r):
  """v rotated left by r bits (uint32; Numba computes uint32 arithmetic in
  int64, so each result is cast back)."""
  return np.uint32((v << np.uint32(r)) | (v >> np.uint32(32 - r)))


@kernel_jit
def _four_rounds(a, b, r0, r1, r2, r3):
  """Four rounds of Threefry's mix: a += b; b = rotate(b, r) ^ a."""
  a = np.uint32(a + b)
  b = np.uint32(_rotate_left(b, r0) ^ a)
  a = np.uint32(a + b)
  b = np.uint32(_rotate_left(b, r1) ^ a)
  a = np.uint32(a + b)
  b = np.uint32(_rotate_left(b, r2) ^ a)
  a = np.uint32(a + b)
  b = np.uint32(_rotate_left(b, r3) ^ a)
  return a, b


@kernel_jit
def threefry_pair(key1, key2, x1, x2):
  """Threefry-2x32 (20 rounds) of the counter pair (x1, x2) under the key
  (key1, key2), as `prng._threefry2x32_impl` states it, in uint32 arithmetic
  (modulo 2**32) written out round by round, so that LLVM vectorizes a loop
  of it."""
  k0, k1 = np.uint32(key1), np.uint32(key2)
  k2 = np.uint32(k0 ^ k1 ^ _PARITY)
  a, b = np.uint32(x1 + k0), np.uint32(x2 + k1)
  a, b = _four_rounds(a, b, _R0[0], _R0[1], _R0[2], _R0[3])
  a, b = np.uint32(a + k1), np.uint32(b + k2 + np.uint32(1))
  a, b = _four_rounds(a, b, _R1[0], _R1[1], _R1[2], _R1[3])
  a, b = np.uint32(a + k2), np.uint32(b + k0 + np.uint32(2))
  a, b = _four_rounds(a, b, _R0[0], _R0[1], _R0[2], _R0[3])
  a, b = np.uint32(a + k0), np.uint32(b + k1 + np.uint32(3))
  a, b = _four_rounds(a, b, _R1[0], _R1[1], _R1[2], _R1[3])
  a, b = np.uint32(a + k1), np.uint32(b + k2 + np.uint32(4))
  a, b = _four_rounds(a, b, _R0[0], _R0[1], _R0[2], _R0[3])
  return np.uint32(a + k2), np.uint32(b + k0 + np.uint32(5))


@kernel_jit
def counter_words(k):
  """The 64-bit counter k as its two uint32 words (hi, lo)."""
  return np.uint32(np.uint64(k) >> np.uint64(32)), np.uint32(np.uint64(k) & _MASK)


@kernel_jit
def threefry_kernel(key1, key2, x1, x2, y1, y2):
  for k in range(y1.size):
    y1[k], y2[k] = threefry_pair(key1[k], key2[k], x1[k], x2[k])


def physical(ctx):
  """The physical avals (`core.physical_aval`) of the equation's operands and results."""
  return [physical_aval(a) for a in ctx.avals_in], [physical_aval(a) for a in ctx.avals_out]


def broadcast_flat(ctx, x, aval, shape):
  """A flat uint32 array of x broadcast to `shape` (as NumPy broadcasts:
  missing leading axes and size-1 axes broadcast); x's own flat view when
  it has that shape."""
  if aval.shape == tuple(shape):
    return ctx.flat(x, aval)
  strides = broadcast_strides(aval.shape, range(len(shape) - len(aval.shape), len(shape)), shape)
  out = ctx.fresh()
  ctx.emit(f"{out} = {ctx.lowering.allocation(ctx.dim(math.prod(shape)), 'np.uint32')}")
  ctx.lowering.strided_copy(ctx.flat(x, aval), "0", ctx.ints(strides), ctx.ints(shape), out)
  return out


@register(prng.threefry2x32_p)
def _threefry2x32(ctx, *operands):
  avals_in, avals_out = physical(ctx)
  shape = avals_out[0].shape
  flats = [broadcast_flat(ctx, x, a, shape) for x, a in zip(operands, avals_in)]
  (y1, f1), (y2, f2) = ctx.empty_flat(avals_out[0]), ctx.empty_flat(avals_out[1])
  ctx.emit(f"{ctx.function(threefry_kernel)}({', '.join(flats)}, {f1}, {f2})")
  return [ctx.result(y1, avals_out[0]), ctx.result(y2, avals_out[1])]


@kernel_jit
def iota_kernel(hi, lo):
  for k in range(hi.size):
    hi[k], lo[k] = counter_words(k)


@register(prng.iota_2x32_shape_p)
def _iota_2x32_shape(ctx, *, shape):
  (aval, _) = ctx.avals_out
  (hi, fh), (lo, fl) = ctx.empty_flat(aval), ctx.empty_flat(aval)
  ctx.emit(f"{ctx.function(iota_kernel)}({fh}, {fl})")
  return [ctx.result(hi, aval), ctx.result(lo, aval)]


@kernel_jit
def legacy_word(key1, key2, t, m):
  """Word t of `threefry_2x32(key, [0, 1, ..., m - 1])`: the counters padded
  to an even count 2h with a 0, halves (t, t + h) hashed, (y1..., y2...)."""
  h = (m + 1) // 2
  pair = t if t < h else t - h
  second = pair + h if pair + h < m else 0
  y1, y2 = threefry_pair(key1, key2, np.uint32(pair), np.uint32(second))
  return y1 if t < h else y2


@kernel_jit
def seed_words(seed, wide):
  """The key of an integer `seed`: [seed >> 32 (logical; 0 unless `wide`, a
  64-bit dtype), seed mod 2**32]."""
  v = np.int64(seed)
  return np.uint32((v >> 32) & 0xFFFFFFFF) if wide else np.uint32(0), np.uint32(v & 0xFFFFFFFF)


@kernel_jit
def seed_kernel(seeds, wide, out):
  for k in range(seeds.size):
    out[2 * k], out[2 * k + 1] = seed_words(seeds[k], wide)


@register(prng.random_seed_p)
@register_for_keys(prng.random_seed_p)
def _random_seed(ctx, seeds, *, impl):
  (aval,), (out_aval,) = physical(ctx)
  out, flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(seed_kernel)}({ctx.flat(seeds, aval)}, "
           f"{aval.dtype.itemsize == 8}, {flat})")
  return ctx.result(out, out_aval)


@_inlined
def split_pair(key1, key2, j, n, partitionable):
  """Key j of the n keys split from the key (key1, key2) (`prng.threefry_split`)."""
  if partitionable:
    hi, lo = counter_words(j)
    return threefry_pair(key1, key2, hi, lo)
  return legacy_word(key1, key2, 2 * j, 2 * n), legacy_word(key1, key2, 2 * j + 1, 2 * n)


@kernel_jit
def split_kernel(keys, n, partitionable, out):
  """The n new keys of each key, flat."""
  for key in range(keys.size // 2):
    key1, key2 = keys[2 * key], keys[2 * key + 1]
    base = 2 * n * key
    for j in range(n):
      out[base + 2 * j], out[base + 2 * j + 1] = split_pair(key1, key2, j, n, partitionable)


@register(prng.random_split_p)
@register_for_keys(prng.random_split_p)
def _random_split(ctx, keys, *, shape):
  (aval,), (out_aval,) = physical(ctx)
  out, flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(split_kernel)}({ctx.flat(keys, aval)}, {ctx.dim(math.prod(shape))}, "
           f"{bool(config.jax_threefry_partitionable)}, {flat})")
  return ctx.result(out, out_aval)


@kernel_jit
def fold_in_kernel(keys, msgs, out):
  """Key k folded with message k: the hash of the counters (0, msg)."""
  for k in range(msgs.size):
    out[2 * k], out[2 * k + 1] = threefry_pair(keys[2 * k], keys[2 * k + 1], np.uint32(0),
                                               msgs[k])


@register(prng.random_fold_in_p)
@register_for_keys(prng.random_fold_in_p)
def _random_fold_in(ctx, keys, msgs):
  (key_aval, msg_aval), (out_aval,) = physical(ctx)
  shape = out_aval.shape[:-1]
  key_flat = broadcast_flat(ctx, keys, key_aval, out_aval.shape)
  msg_flat = broadcast_flat(ctx, msgs, msg_aval, shape)
  out, flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(fold_in_kernel)}({key_flat}, {msg_flat}, {flat})")
  return ctx.result(out, out_aval)


@_inlined
def partitionable_bits(key1, key2, j, bit_width):
  """Value j of the bit_width-bit values of the key (key1, key2) by the
  partitionable algorithm, as a uint64: the hash (y1, y2) of counter j
  gives (y1 << 32) | y2 (64 bits), else the low bit_width bits of y1 ^ y2."""
  hi, lo = counter_words(j)
  y1, y2 = threefry_pair(key1, key2, hi, lo)
  if bit_width == 64:
    return (np.uint64(y1) << np.uint64(32)) | np.uint64(y2)
  return (np.uint64(y1) ^ np.uint64(y2)) & ((np.uint64(1) << np.uint64(bit_width)) - np.uint64(1))


@_inlined
def legacy_pair(key1, key2, p, n, bit_width, out, base):
  """out[base + j] for the values j of the n bit_width-bit values of the key
  (key1, key2) by the legacy algorithm that counter pair p gives. Its
  m = ceil(bit_width * n / 32) words are `threefry_2x32(key, [0, ..., m - 1])`:
  with h = ceil(m / 2), pair p hashes the counters (p, p + h, or 0 past m)
  to words p and p + h. 64-bit value p is (word p << 32) | word p + h
  (m = 2n); value j of the others is piece j % (32 / bit_width) of word
  j // (32 / bit_width), low bits first. (It calls no function taking an
  array, so that its Python runs in the CUDA simulator.)"""
  m = (bit_width * n + 31) // 32
  second = p + (m + 1) // 2
  y1, y2 = threefry_pair(key1, key2, np.uint32(p), np.uint32(second if second < m else 0))
  if bit_width == 64:
    out[base + p] = (np.uint64(y1) << np.uint64(32)) | np.uint64(y2)
    return
  per_word = 32 // bit_width
  mask = (np.uint64(1) << np.uint64(bit_width)) - np.uint64(1)
  for i in range(2 * per_word):
    word, t = (y1, p) if i < per_word else (y2, second)
    j = t * per_word + i % per_word
    if t < m and j < n:
      out[base + j] = (np.uint64(word) >> np.uint64(bit_width * (i % per_word))) & mask


@kernel_jit
def bits_kernel(keys, n, bit_width, partitionable, pairs, out):
  """The n values of bit_width bits of each key (`prng.threefry_random_bits`),
  flat; the legacy algorithm's by its `pairs` counter pairs."""
  for key in range(keys.size // 2):
    key1, key2 = keys[2 * key], keys[2 * key + 1]
    if partitionable:
      for j in range(n):
        out[n * key + j] = partitionable_bits(key1, key2, j, bit_width)
    else:
      for p in range(pairs):
        legacy_pair(key1, key2, p, n, bit_width, out, n * key)


def bits_counts(bit_width, shape):
  """(the number of values of each key, whether the algorithm is the
  partitionable one, the number of counter pairs the legacy one hashes);
  LoweringError where the legacy one would hash in blocks of 2**32 - 1."""
  n = math.prod(shape)
  partitionable = bool(config.jax_threefry_partitionable)
  m = 0 if partitionable else -(-bit_width * n // 32)
  if m >= np.iinfo(np.uint32).max:
    raise LoweringError(f"random_bits: the legacy threefry algorithm in blocks of 2**32 - 1 "
                        f"counters ({n} values of {bit_width} bits) is not lowered")
  return n, partitionable, (m + 1) // 2


@register(prng.random_bits_p)
@register_for_keys(prng.random_bits_p)
def _random_bits(ctx, keys, *, bit_width, shape):
  (aval,), (out_aval,) = physical(ctx)
  n, partitionable, pairs = bits_counts(bit_width, shape)
  out, flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(bits_kernel)}({ctx.flat(keys, aval)}, {ctx.dim(n)}, {bit_width}, "
           f"{partitionable}, {ctx.dim(pairs)}, {flat})")
  return ctx.result(out, out_aval)


@functools.lru_cache(maxsize=None)
def _gamma_program(keys_aval, a_aval, log_space):
  """The ClosedJaxpr of `random._random_gamma_impl` on (keys, a): each key
  split into one key per element of a under it, and element i drawn by
  `random._gamma_one` (Marsaglia-Tsang, its rejection loops as `while`s),
  vectorized with vmap as the reference runs it."""
  count = math.prod(a_aval.shape[len(keys_aval.shape):])

  def sample(keys, a):
    keys = vmap(lambda k: random._split(k, count))(keys.reshape(-1))
    samples = vmap(lambda k, x: random._gamma_one(k, x, log_space))(keys.reshape(-1),
                                                                    a.reshape(-1))
    return samples.reshape(a.shape)

  return refimpl.make_jaxpr(sample)(refimpl.ShapeDtypeStruct(keys_aval.shape, keys_aval.dtype),
                                    refimpl.ShapeDtypeStruct(a_aval.shape, a_aval.dtype))


@register(random.random_gamma_p)
@register_for_keys(random.random_gamma_p)
def _random_gamma(ctx, keys, a, *, log_space):
  keys_aval, a_aval = ctx.avals_in
  if not math.prod(a_aval.shape):
    return ctx.empty(a_aval)
  (out,) = inline(ctx, _gamma_program(keys_aval.update(weak_type=False),
                                      a_aval.update(weak_type=False), log_space), [keys, a])
  return out


@register(prng.random_wrap_p)
@register_for_keys(prng.random_wrap_p)
def _random_wrap(ctx, data, *, impl):
  return data


@register(prng.random_unwrap_p)
@register_for_keys(prng.random_unwrap_p)
def _random_unwrap(ctx, keys):
  return keys


# --- key arrays as their data (the shape and indexing rules handle keys themselves) ---

@register_for_keys(elementwise.copy_p)
def _copy_keys(ctx, x):
  return x


@kernel_jit
def clamped_case(which, last):
  """The case select_n picks for the value `which`: clamped to [0, last]."""
  return min(max(np.int64(which), 0), last)


@kernel_jit
def select_words(which, j, last, case, words, out):
  """out's words of element k are case's where clamped_case(which[k]) == j
  (a one-element `which` for every element)."""
  for k in range(out.size // words):
    if clamped_case(which[k if which.size != 1 else 0], last) == j:
      for e in range(words):
        out[k * words + e] = case[k * words + e]


def select_keys_rule(select):
  """The rule of select_n on key arrays whose copies are `select(ctx, which,
  which_aval, cases, words, out)`: `cases` the sources of the cases' flat
  data, `words` (a source) the words of a key, `out` the result's flat data."""
  def rule(ctx, which, *cases):
    which_aval, *case_avals = ctx.avals_in
    out_aval = physical_aval(ctx.avals_out[0])
    words = ctx.dim(math.prod(out_aval.shape[len(ctx.avals_out[0].shape):]))
    out, flat = ctx.empty_flat(out_aval)
    select(ctx, which, which_aval, [ctx.flat(case, physical_aval(aval))
                                    for case, aval in zip(cases, case_avals)], words, flat)
    return ctx.result(out, out_aval)
  return rule


def _select_words(ctx, which, which_aval, cases, words, out):
  """A kernel call for each case, writing the elements that pick it."""
  for j, case in enumerate(cases):
    ctx.emit(f"{ctx.function(select_words)}({ctx.flat(which, which_aval)}, {j}, "
             f"{len(cases) - 1}, {case}, {words}, {out})")


register_for_keys(elementwise.select_n_p)(select_keys_rule(_select_words))


@_inlined
def same_words(x, y, k, words):
  """Whether all the words of keys k of x and y are equal."""
  same = True
  for e in range(words):
    same = same and x[k * words + e] == y[k * words + e]
  return same


@kernel_jit
def equal_words(x, y, words, equal, out):
  """out[k] = whether keys k of x and y are equal (`equal`), or not (not `equal`)."""
  for k in range(out.size):
    out[k] = same_words(x, y, k, words) == equal


def compare_keys_rule(equal, compare):
  """The rule of eq (`equal`) or ne on key arrays whose comparisons are
  `compare(ctx, x, y, words, equal, out)`: `x` and `y` the sources of the
  operands' flat data broadcast to the result's shape, `words` (a source)
  the words of a key, `out` the result's flat bool array."""
  def rule(ctx, x, y):
    x_aval, y_aval = (physical_aval(a) for a in ctx.avals_in)
    (out_aval,) = ctx.avals_out
    key_shape = out_aval.shape + x_aval.shape[len(ctx.avals_in[0].shape):]
    words = ctx.dim(math.prod(key_shape[len(out_aval.shape):]))
    out, out_flat = ctx.empty_flat(out_aval)
    compare(ctx, broadcast_flat(ctx, x, x_aval, key_shape),
            broadcast_flat(ctx, y, y_aval, key_shape), words, equal, out_flat)
    return ctx.result(out, out_aval)
  return rule


def _equal_words(ctx, x, y, words, equal, out):
  ctx.emit(f"{ctx.function(equal_words)}({x}, {y}, {words}, {equal}, {out})")


register_for_keys(elementwise.eq_p)(compare_keys_rule(True, _equal_words))
register_for_keys(elementwise.ne_p)(compare_keys_rule(False, _equal_words))
