"""The PRNG primitives on the numba-cuda backend: kernels of a thread per
result element (a counter pair's hash, a key, a value, or a key's word),
each calling the CPU rules' scalar functions of numba_backend/rules/prng.py
(threefry's 20 rounds in uint32 arithmetic; numba-cuda compiles them for
the device), so the bits are the CPU's and the reference's; no thread
reads what another writes. random_gamma is the CPU's rule, the program of
the reference's sampler (its loops run by the host program); random_wrap,
random_unwrap and copy on keys are the CPU's rules, gather and scatter on
keys this target's (whole keys), and the shape primitives' CPU rules run on
keys too (numba_backend/cuda/rules.py)."""

import math

from refimpl import prng, random
from refimpl.config import config
from refimpl.lax import elementwise, indexing
from numba_backend.cuda import indexing as _indexing  # noqa: F401 (gather's and scatter's rules)
from numba_backend.cuda.kernels import device_version
from numba_backend.cuda.lower import CUDA_KEY_RULES, CUDA_RULES, named
from numba_backend.lower import KEY_RULES, RULES
from numba_backend.rules import prng as cpu
from numba_backend.rules.prng import broadcast_flat, physical


legacy_pair = device_version(cpu.legacy_pair, __name__)
same_words = device_version(cpu.same_words, __name__)


def _elements(ctx, x, aval, shape):
  """A function of an index k's source giving the source of element k
  (row-major) of the uint32 value x (of physical `aval`) broadcast to
  `shape`: x itself for rank 0 (a host scalar the kernel takes)."""
  if not aval.shape:
    return lambda k: x
  flat = named(ctx, broadcast_flat(ctx, x, aval, shape))
  return lambda k: f"{flat}[{k}]"


def _output(ctx, aval):
  """(a new array of `aval`, a name of its flat view)."""
  out, flat = ctx.empty_flat(aval)
  return out, named(ctx, flat)


def _threefry2x32(ctx, *operands):
  avals_in, (aval, _) = physical(ctx)
  words = [_elements(ctx, x, a, aval.shape) for x, a in zip(operands, avals_in)]
  (y1, f1), (y2, f2), k = _output(ctx, aval), _output(ctx, aval), ctx.fresh("k")
  with ctx.lowering.elements(k, ctx.dim(math.prod(aval.shape))):
    ctx.emit(f"{f1}[{k}], {f2}[{k}] = "
             f"{ctx.function(cpu.threefry_pair)}({', '.join(w(k) for w in words)})")
  return [ctx.result(y1, aval), ctx.result(y2, aval)]


def _iota_2x32_shape(ctx, *, shape):
  (aval, _) = ctx.avals_out
  (hi, fh), (lo, fl), k = _output(ctx, aval), _output(ctx, aval), ctx.fresh("k")
  with ctx.lowering.elements(k, ctx.dim(math.prod(shape))):
    ctx.emit(f"{fh}[{k}], {fl}[{k}] = {ctx.function(cpu.counter_words)}({k})")
  return [ctx.result(hi, aval), ctx.result(lo, aval)]


def _random_seed(ctx, seeds, *, impl):
  (aval,), (out_aval,) = physical(ctx)
  seed = _elements(ctx, seeds, aval, aval.shape)
  (out, flat), k = _output(ctx, out_aval), ctx.fresh("k")
  with ctx.lowering.elements(k, ctx.dim(math.prod(aval.shape))):
    ctx.emit(f"{flat}[2 * {k}], {flat}[2 * {k} + 1] = "
             f"{ctx.function(cpu.seed_words)}({seed(k)}, {aval.dtype.itemsize == 8})")
  return ctx.result(out, out_aval)


def _keys(ctx, keys, aval):
  """A function of a key index's source giving the sources of the key's two words."""
  flat = named(ctx, ctx.flat(keys, aval))
  return lambda i: f"{flat}[2 * ({i})], {flat}[2 * ({i}) + 1]"


def _random_split(ctx, keys, *, shape):
  """Thread t writes new key t % n of key t // n."""
  (aval,), (out_aval,) = physical(ctx)
  key, n = _keys(ctx, keys, aval), ctx.dim(math.prod(shape))
  (out, flat), t = _output(ctx, out_aval), ctx.fresh("t")
  partitionable = bool(config.jax_threefry_partitionable)
  with ctx.lowering.elements(t, ctx.dim(math.prod(out_aval.shape[:-1]))):
    ctx.emit(f"{flat}[2 * {t}], {flat}[2 * {t} + 1] = {ctx.function(cpu.split_pair)}("
             f"{key(f'{t} // {n}')}, {t} % {n}, {n}, {partitionable})")
  return ctx.result(out, out_aval)


def _random_fold_in(ctx, keys, msgs):
  (key_aval, msg_aval), (out_aval,) = physical(ctx)
  key = named(ctx, broadcast_flat(ctx, keys, key_aval, out_aval.shape))
  msg = _elements(ctx, msgs, msg_aval, out_aval.shape[:-1])
  (out, flat), k = _output(ctx, out_aval), ctx.fresh("k")
  with ctx.lowering.elements(k, ctx.dim(math.prod(out_aval.shape[:-1]))):
    ctx.emit(f"{flat}[2 * {k}], {flat}[2 * {k} + 1] = {ctx.function(cpu.threefry_pair)}("
             f"{key}[2 * {k}], {key}[2 * {k} + 1], np.uint32(0), {msg(k)})")
  return ctx.result(out, out_aval)


def _random_bits(ctx, keys, *, bit_width, shape):
  """Partitionable: thread t writes value t % n of key t // n. Legacy:
  thread t writes the values of counter pair t % pairs of key t // pairs."""
  (aval,), (out_aval,) = physical(ctx)
  n, partitionable, pairs = cpu.bits_counts(bit_width, shape)
  per_key = n if partitionable else pairs
  key, (out, flat), t = _keys(ctx, keys, aval), _output(ctx, out_aval), ctx.fresh("t")
  size, own = ctx.dim(n), ctx.dim(per_key)
  with ctx.lowering.elements(t, ctx.dim(math.prod(aval.shape[:-1]) * per_key)):
    i, j = f"{t} // {own}", f"{t} % {own}"
    if partitionable:
      ctx.emit(f"{flat}[{t}] = {ctx.function(cpu.partitionable_bits)}({key(i)}, {j}, "
               f"{bit_width})")
    else:
      ctx.emit(f"{ctx.function(legacy_pair)}({key(i)}, {j}, {size}, {bit_width}, {flat}, "
               f"({i}) * {size})")
  return ctx.result(out, out_aval)


def _select_words(ctx, which, which_aval, cases, words, out):
  """One kernel: thread t copies word t of the case its element picks."""
  cases, out = [named(ctx, case) for case in cases], named(ctx, out)
  pick = _elements(ctx, which, which_aval, which_aval.shape)
  t, c = ctx.fresh("t"), ctx.fresh("c")
  with ctx.lowering.elements(t, f"{out}.size"):
    ctx.emit(f"{c} = {ctx.function(cpu.clamped_case)}({pick(f'{t} // {words}')}, "
             f"{len(cases) - 1})")
    ctx.emit(f"{out}[{t}] = " + "".join(f"{case}[{t}] if {c} == {j} else "
                                        for j, case in enumerate(cases[:-1]))
             + f"{cases[-1]}[{t}]")


def _equal_words(ctx, x, y, words, equal, out):
  """Thread k compares keys k."""
  x, y, out, k = named(ctx, x), named(ctx, y), named(ctx, out), ctx.fresh("k")
  with ctx.lowering.elements(k, f"{out}.size"):
    same = f"{ctx.function(same_words)}({x}, {y}, {k}, {words})"
    ctx.emit(f"{out}[{k}] = {same if equal else f'not {same}'}")


_OWN = {prng.threefry2x32_p: _threefry2x32, prng.iota_2x32_shape_p: _iota_2x32_shape}
_ON_KEYS = {prng.random_seed_p: _random_seed, prng.random_split_p: _random_split,
            prng.random_fold_in_p: _random_fold_in, prng.random_bits_p: _random_bits,
            random.random_gamma_p: RULES[random.random_gamma_p],
            prng.random_wrap_p: RULES[prng.random_wrap_p],
            prng.random_unwrap_p: RULES[prng.random_unwrap_p]}
CUDA_RULES.update(_OWN)
CUDA_RULES.update(_ON_KEYS)
CUDA_KEY_RULES.update(_ON_KEYS)
CUDA_KEY_RULES.update({
    elementwise.copy_p: KEY_RULES[elementwise.copy_p],
    elementwise.select_n_p: cpu.select_keys_rule(_select_words),
    elementwise.eq_p: cpu.compare_keys_rule(True, _equal_words),
    elementwise.ne_p: cpu.compare_keys_rule(False, _equal_words),
    indexing.gather_p: CUDA_RULES[indexing.gather_p],   # (whole keys, as on the CPU)
    indexing.scatter_p: CUDA_RULES[indexing.scatter_p]})
