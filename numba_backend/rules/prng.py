"""Lowering rules of the PRNG primitives (refimpl/prng.py): Numba kernels
computing the reference's bits; random_gamma (refimpl/random.py) as the
program of the reference's sampler. A key
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
def threefry_kernel(key1, key2, x1, x2, y1, y2):
  for k in range(y1.size):
    y1[k], y2[k] = threefry_pair(key1[k], key2[k], x1[k], x2[k])


def _physical(ctx):
  return [physical_aval(a) for a in ctx.avals_in], [physical_aval(a) for a in ctx.avals_out]


def _broadcast_flat(ctx, x, aval, shape):
  """A flat array of x broadcast to `shape` (as NumPy broadcasts: missing
  leading axes and size-1 axes broadcast); x's own flat view when it has
  that shape."""
  if aval.shape == tuple(shape):
    return ctx.flat(x, aval)
  strides = broadcast_strides(aval.shape, range(len(shape) - len(aval.shape), len(shape)), shape)
  out = ctx.fresh()
  ctx.emit(f"{out} = np.empty({ctx.dim(math.prod(shape))}, np.uint32)")
  ctx.emit(f"K.strided_copy({ctx.flat(x, aval)}, 0, {ctx.ints(strides)}, {ctx.ints(shape)}, {out})")
  return out


@register(prng.threefry2x32_p)
def _threefry2x32(ctx, *operands):
  avals_in, avals_out = _physical(ctx)
  shape = avals_out[0].shape
  flats = [_broadcast_flat(ctx, x, a, shape) for x, a in zip(operands, avals_in)]
  (y1, f1), (y2, f2) = ctx.empty_flat(avals_out[0]), ctx.empty_flat(avals_out[1])
  ctx.emit(f"{ctx.function(threefry_kernel)}({', '.join(flats)}, {f1}, {f2})")
  return [ctx.result(y1, avals_out[0]), ctx.result(y2, avals_out[1])]


@kernel_jit
def iota_kernel(hi, lo):
  for k in range(hi.size):
    hi[k] = np.uint32(np.uint64(k) >> np.uint64(32))
    lo[k] = np.uint32(np.uint64(k) & _MASK)


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
def seed_kernel(seeds, wide, out):
  """Key k is [seed >> 32 (logical; 0 unless `wide`, a 64-bit dtype), seed mod 2**32]."""
  for k in range(seeds.size):
    v = np.int64(seeds[k])
    out[2 * k] = np.uint32((v >> 32) & 0xFFFFFFFF) if wide else np.uint32(0)
    out[2 * k + 1] = np.uint32(v & 0xFFFFFFFF)


@register(prng.random_seed_p)
@register_for_keys(prng.random_seed_p)
def _random_seed(ctx, seeds, *, impl):
  (aval,), (out_aval,) = _physical(ctx)
  out, flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(seed_kernel)}({ctx.flat(seeds, aval)}, "
           f"{aval.dtype.itemsize == 8}, {flat})")
  return ctx.result(out, out_aval)


@kernel_jit
def split_kernel(keys, n, partitionable, out):
  """The n new keys of each key (`prng.threefry_split`), flat."""
  for key in range(keys.size // 2):
    key1, key2 = keys[2 * key], keys[2 * key + 1]
    base = 2 * n * key
    for j in range(n):
      if partitionable:
        y1, y2 = threefry_pair(key1, key2, np.uint32(np.uint64(j) >> np.uint64(32)),
                               np.uint32(np.uint64(j) & _MASK))
      else:
        y1 = legacy_word(key1, key2, 2 * j, 2 * n)
        y2 = legacy_word(key1, key2, 2 * j + 1, 2 * n)
      out[base + 2 * j] = y1
      out[base + 2 * j + 1] = y2


@register(prng.random_split_p)
@register_for_keys(prng.random_split_p)
def _random_split(ctx, keys, *, shape):
  (aval,), (out_aval,) = _physical(ctx)
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
  (key_aval, msg_aval), (out_aval,) = _physical(ctx)
  shape = out_aval.shape[:-1]
  key_flat = _broadcast_flat(ctx, keys, key_aval, out_aval.shape)
  msg_flat = _broadcast_flat(ctx, msgs, msg_aval, shape)
  out, flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(fold_in_kernel)}({key_flat}, {msg_flat}, {flat})")
  return ctx.result(out, out_aval)


@kernel_jit
def bits_kernel(keys, n, bit_width, partitionable, words, out):
  """The n random values of bit_width bits of each key
  (`prng.threefry_random_bits`); `words` is scratch for the legacy
  algorithm's m = ceil(bit_width * n / 32) words of one key."""
  m = words.size
  mask = (np.uint64(1) << np.uint64(bit_width)) - np.uint64(1) if bit_width < 64 else \
      np.uint64(0xFFFFFFFFFFFFFFFF)
  per_word = 32 // bit_width if bit_width < 64 else 1
  for key in range(keys.size // 2):
    key1, key2 = keys[2 * key], keys[2 * key + 1]
    base = n * key
    if partitionable:
      for j in range(n):
        y1, y2 = threefry_pair(key1, key2, np.uint32(np.uint64(j) >> np.uint64(32)),
                               np.uint32(np.uint64(j) & _MASK))
        if bit_width == 64:
          out[base + j] = (np.uint64(y1) << np.uint64(32)) | np.uint64(y2)
        else:
          out[base + j] = (np.uint64(y1) ^ np.uint64(y2)) & mask
      continue
    for t in range(m):
      words[t] = legacy_word(key1, key2, t, m)
    for j in range(n):
      if bit_width == 64:
        out[base + j] = (np.uint64(words[j]) << np.uint64(32)) | np.uint64(words[n + j])
      else:
        piece = np.uint64(bit_width * (j % per_word))
        out[base + j] = (np.uint64(words[j // per_word]) >> piece) & mask


@register(prng.random_bits_p)
@register_for_keys(prng.random_bits_p)
def _random_bits(ctx, keys, *, bit_width, shape):
  (aval,), (out_aval,) = _physical(ctx)
  n = math.prod(shape)
  partitionable = bool(config.jax_threefry_partitionable)
  m = 0 if partitionable else -(-bit_width * n // 32)
  if m >= np.iinfo(np.uint32).max:
    raise LoweringError(f"random_bits: the legacy threefry algorithm in blocks of 2**32 - 1 "
                        f"counters ({n} values of {bit_width} bits) is not lowered")
  out, flat = ctx.empty_flat(out_aval)
  ctx.emit(f"{ctx.function(bits_kernel)}({ctx.flat(keys, aval)}, {ctx.dim(n)}, {bit_width}, "
           f"{partitionable}, np.empty({ctx.dim(m)}, np.uint32), {flat})")
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
def select_words(which, j, last, case, words, out):
  """out's words of element k are case's where clamp(which[k], 0, last) == j
  (a one-element `which` for every element)."""
  for k in range(out.size // words):
    w = min(max(np.int64(which[k if which.size != 1 else 0]), 0), last)
    if w == j:
      for e in range(words):
        out[k * words + e] = case[k * words + e]


@register_for_keys(elementwise.select_n_p)
def _select_n_keys(ctx, which, *cases):
  which_aval, *case_avals = ctx.avals_in
  out_aval = physical_aval(ctx.avals_out[0])
  words = ctx.dim(math.prod(out_aval.shape[len(ctx.avals_out[0].shape):]))
  out, flat = ctx.empty_flat(out_aval)
  for j, (case, aval) in enumerate(zip(cases, case_avals)):
    ctx.emit(f"{ctx.function(select_words)}({ctx.flat(which, which_aval)}, {j}, "
             f"{len(cases) - 1}, {ctx.flat(case, physical_aval(aval))}, {words}, {flat})")
  return ctx.result(out, out_aval)


@kernel_jit
def equal_words(x, y, words, equal, out):
  """out[k] = whether all the words of keys k of x and y are equal (`equal`),
  or not all (not `equal`)."""
  for k in range(out.size):
    same = True
    for e in range(words):
      same = same and x[k * words + e] == y[k * words + e]
    out[k] = same == equal


def _compare_keys(equal):
  def rule(ctx, x, y):
    x_aval, y_aval = (physical_aval(a) for a in ctx.avals_in)
    (out_aval,) = ctx.avals_out
    key_shape = out_aval.shape + x_aval.shape[len(ctx.avals_in[0].shape):]
    words = ctx.dim(math.prod(key_shape[len(out_aval.shape):]))
    out, out_flat = ctx.empty_flat(out_aval)
    ctx.emit(f"{ctx.function(equal_words)}({_broadcast_flat(ctx, x, x_aval, key_shape)}, "
             f"{_broadcast_flat(ctx, y, y_aval, key_shape)}, {words}, {equal}, {out_flat})")
    return ctx.result(out, out_aval)
  return rule


register_for_keys(elementwise.eq_p)(_compare_keys(True))
register_for_keys(elementwise.ne_p)(_compare_keys(False))
