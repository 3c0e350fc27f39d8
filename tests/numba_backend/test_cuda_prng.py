"""The PRNG primitives on the numba-cuda backend: its programs in numba's
CUDA simulator give JAX's golden values (tests/data/prng.json) and the
reference's bits on drawn seeds, messages, shapes (empty and odd sizes)
and bit widths, for raw and typed keys, in both threefry modes
(`jax_threefry_partitionable` True and False); key arrays through shape
operations, indexing, select and comparisons; and the kernels compiled to
PTX for compute capability 9.0 hash in 32-bit integer arithmetic."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax, prng, random
import refimpl.numpy as jnp
from tests.numba_backend.test_elementwise import run_x64
from tests.numba_backend.test_prng import (GOLDEN, MODES, key_operations, primitives,
                                           seed_values, sizes, uint32s)
from tests.numba_backend.ptx import compiled_ptx, instructions

SETTINGS = settings(max_examples=6, deadline=None)


def cuda_jit(f):
  return jax.jit(f, backend="numba-cuda")


def _data(x):
  """The data of a key array, else x."""
  return random.key_data(x) if dtypes.issubdtype(x.dtype, dtypes.prng_key) else x


def _check(f, *args):
  """f's results on numba-cuda are the reference's, bit for bit (keys' data)."""
  got = jax.tree_util.tree_leaves(cuda_jit(f)(*args))
  want = jax.tree_util.tree_leaves(jax.jit(f, backend="reference")(*args))
  assert len(got) == len(want)
  for i, (g, w) in enumerate(zip(got, want)):
    g, w = np.asarray(_data(g)), np.asarray(_data(w))
    assert (g.dtype, g.shape) == (w.dtype, w.shape), i
    np.testing.assert_array_equal(g, w, err_msg=f"result {i}")


def _golden_functions(seed, msg):
  """The golden data's functions of PRNGKey(seed) (raw keys)."""
  key = random.PRNGKey(seed)
  return {"split": random.split(key), "split3": random.split(key, 3),
          "fold_in": random.fold_in(key, msg), "bits": random.bits(key, (8,), np.uint32),
          "uniform": random.uniform(key, (5,)), "normal": random.normal(key, (5,)),
          "normal23": random.normal(key, (2, 3)), "randint": random.randint(key, (6,), 0, 10),
          "bernoulli": random.bernoulli(key, 0.3, (8,))}


_GOLDEN_NAMES = {
    0: {"split": "split(PRNGKey(0))", "split3": "split(PRNGKey(0), 3)",
        "fold_in": "fold_in(PRNGKey(0), 7)"},
    1: {"bits": "bits(PRNGKey(1), (8,), uint32)", "uniform": "uniform(PRNGKey(1), (5,))",
        "normal": "normal(PRNGKey(1), (5,))", "normal23": "normal(PRNGKey(1), (2, 3))",
        "randint": "randint(PRNGKey(1), (6,), 0, 10)",
        "bernoulli": "bernoulli(PRNGKey(1), 0.3, (8,))"}}


def _assert_golden(out, entry, name):
  out = np.asarray(out)
  np.testing.assert_array_equal(out.ravel(), np.array(entry["data"], entry["dtype"]).ravel(),
                                err_msg=name)
  assert list(out.shape) == entry["shape"] and out.dtype == entry["dtype"], name


@pytest.mark.parametrize("partitionable", [True, False])
def test_golden_values(partitionable):
  golden = GOLDEN[MODES[partitionable]]
  with jax.threefry_partitionable(partitionable):
    keys = cuda_jit(lambda s: jax.vmap(random.PRNGKey)(s))(np.array([0, 1, 42, 123456789],
                                                                    np.int32))
    for seed, key in zip([0, 1, 42, 123456789], np.asarray(keys)):
      _assert_golden(key, golden[f"PRNGKey({seed})"], seed)
    outs = {seed: cuda_jit(_golden_functions)(np.int32(seed), np.uint32(7)) for seed in (0, 1)}
    typed = cuda_jit(lambda: random.key_data(random.key(1701)))()
  for seed, names in _GOLDEN_NAMES.items():
    for short, name in names.items():
      _assert_golden(outs[seed][short], golden[name], name)
  _assert_golden(typed, golden["key_data(key(1701))"], "key(1701)")


def test_threefry2x32_known_answers():
  cases = GOLDEN["threefry2x32 raw (key, count) -> out"]
  k1, k2, x1, x2 = (np.array([c[part][i] for c in cases], np.uint32)
                    for part, i in [("key", 0), ("key", 1), ("count", 0), ("count", 1)])
  y1, y2 = cuda_jit(lambda *a: prng.threefry2x32_p.bind(*a))(k1, k2, x1, x2)
  np.testing.assert_array_equal(np.stack([y1, y2], 1), [c["out"] for c in cases])


@pytest.mark.parametrize("partitionable", [True, False])
@SETTINGS
@given(data=st.data(), split_shape=st.tuples(sizes), bits_shape=st.tuples(sizes, sizes))
def test_primitives_agree(partitionable, data, split_shape, bits_shape):
  """Every PRNG primitive on drawn seeds, messages and counters (scalar and
  broadcast operands of threefry2x32), empty and odd shapes among them."""
  n = data.draw(st.integers(0, 3))
  seeds = np.array(data.draw(st.lists(seed_values, min_size=n, max_size=n)), np.int32)
  msgs = np.array(data.draw(st.lists(uint32s, min_size=n, max_size=n)), np.uint32)
  k1, x1 = (np.array(data.draw(st.lists(uint32s, min_size=n, max_size=n)), np.uint32)
            for _ in range(2))
  k2, x2 = np.uint32(data.draw(uint32s)), np.ones((1,) if n else (0,), np.uint32)
  with jax.threefry_partitionable(partitionable):
    _check(lambda *a: primitives(*a, split_shape=split_shape, bits_shape=bits_shape),
           seeds, msgs, k1, k2, x1, x2)


@pytest.mark.parametrize("partitionable", [True, False])
def test_64_bit_values_and_seeds(partitionable):
  """random_bits of 64 bits (odd counts too) and 64-bit seeds, under x64."""
  def f(seeds):
    keys = prng.random_seed_p.bind(seeds, impl=prng.threefry_prng_impl)
    return [prng.random_unwrap_p.bind(keys)] + [
        prng.random_bits_p.bind(keys, bit_width=64, shape=shape) for shape in [(3,), (0, 2)]]
  seeds = np.array([0, -1, 2**40 + 3, -2**63, 2**63 - 1], np.int64)
  with jax.threefry_partitionable(partitionable):
    run_x64(np.int64, lambda: _check(f, seeds))
    run_x64(np.uint64, lambda: _check(f, seeds.view(np.uint64)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32])
def test_seed_of_each_integer_dtype(dtype):
  info = np.iinfo(dtype)
  seeds = np.array([info.min, -1 if info.min else 1, 0, info.max], dtype)
  _check(lambda s: random.key_data(jax.vmap(random.key)(s)), seeds)


_SAMPLERS = {
    "uniform": lambda k, s: random.uniform(k, s),
    "uniform_range": lambda k, s: random.uniform(k, s, minval=-2.0, maxval=5.0),
    "uniform_f16": lambda k, s: random.uniform(k, s, dtype=np.float16),
    "uniform_bf16": lambda k, s: random.uniform(k, s, dtype=dtypes.bfloat16),
    "normal": lambda k, s: random.normal(k, s),
    "normal_f16": lambda k, s: random.normal(k, s, dtype=np.float16),
    "randint": lambda k, s: random.randint(k, s, -5, 100),
    "randint_int8": lambda k, s: random.randint(k, s, -128, 127, np.int8),
    "bernoulli": lambda k, s: random.bernoulli(k, 0.3, s),
    "truncated_normal": lambda k, s: random.truncated_normal(k, -1.0, 2.0, s),
    "gumbel": lambda k, s: random.gumbel(k, s), "laplace": lambda k, s: random.laplace(k, s),
    "logistic": lambda k, s: random.logistic(k, s),
    "exponential": lambda k, s: random.exponential(k, s),
    "cauchy": lambda k, s: random.cauchy(k, s),
    "rademacher": lambda k, s: random.rademacher(k, s),
    "bits16": lambda k, s: random.bits(k, s, np.uint16),
    "bits8": lambda k, s: random.bits(k, s, np.uint8)}


@pytest.mark.parametrize("partitionable", [True, False])
@SETTINGS
@given(names=st.lists(st.sampled_from(sorted(_SAMPLERS)), min_size=2, max_size=3, unique=True),
       shape=st.sampled_from([(0,), (1,), (3,), (2, 3), (5,), (3, 0)]), typed=st.booleans(),
       seed=seed_values)
def test_samplers_agree(partitionable, names, shape, typed, seed):
  """Samplers of raw (PRNGKey) and typed (key) keys, split and folded first."""
  def f(seed):
    key = (random.key if typed else random.PRNGKey)(seed)
    a, b = random.split(random.fold_in(key, 3))
    return [_SAMPLERS[name](k, shape) for name, k in zip(names, [a, b, key])]
  with jax.threefry_partitionable(partitionable):
    _check(f, np.int32(seed))


def _more_key_operations(seed, i):
  """Shape operations and scatter on key arrays beyond `key_operations`'."""
  keys = random.split(random.key(seed), (2, 3))
  flat = keys.reshape(-1)
  outs = [keys[:, ::-1], lax.rev(flat, (0,)), jnp.tile(flat[:2], 2), flat.at[i].set(flat[0]),
          jax.lax.squeeze(keys[:1], (0,)), jnp.split(flat, 3)[1], jnp.copy(flat),
          jax.lax.select_n(jnp.arange(6) % 3, flat, flat[::-1], random.split(flat[0], 6)),
          lax.select(i > 0, flat, flat[::-1])]
  return [random.key_data(k) for k in outs] + [flat[0] == flat[i]]


@SETTINGS
@given(seed=seed_values, i=st.integers(-5, 5), pick=st.lists(st.booleans(), min_size=4, max_size=4))
def test_key_operations_agree(seed, i, pick):
  _check(key_operations, np.int32(seed), np.int32(i), np.array(pick))
  _check(_more_key_operations, np.int32(seed), np.int32(i))


@pytest.mark.parametrize("partitionable", [True, False])
def test_gamma_agrees(partitionable):
  """random_gamma (the reference's sampler, its rejection loops): a < 1 and
  a >= 1, per key and per element."""
  a = np.array([[0.3, 1.0, 2.5], [7.0, 0.05, 1.5]], np.float32)
  with jax.threefry_partitionable(partitionable):
    _check(lambda k, a: (random.gamma(k, a), random.gamma(random.split(k)[1], 2.0, (3,)),
                         random.loggamma(k, a[0])), random.PRNGKey(5), a)


_PTX_CHECK = """
import json, numpy as np
import refimpl as jax
from refimpl import lax, prng, random
from numba_backend.cuda import device
key, x = np.array([0, 42], np.uint32), np.arange(6, dtype=np.uint32)
keyed = lambda k: prng.random_wrap_p.bind(k, impl=prng.threefry_prng_impl)
programs = {
    "threefry2x32": lambda k, x: prng.threefry2x32_p.bind(k[0], k[1], x, x[::-1]),
    "iota_2x32_shape": lambda k, x: prng.iota_2x32_shape_p.bind(shape=(2, 3)),
    "seed": lambda k, x: random.key_data(jax.vmap(random.key)(x)),
    "split": lambda k, x: random.split(k, 3),
    "fold_in": lambda k, x: jax.vmap(random.fold_in, (None, 0))(k, x),
    "bits": lambda k, x: [prng.random_bits_p.bind(keyed(k), bit_width=w, shape=(5,))
                          for w in (8, 16, 32)],
    "keys": lambda k, x: (random.split(random.key(1), 3) == random.split(random.key(2), 3),
                          random.key_data(lax.select(x[:3] > 2, random.split(random.key(1), 3),
                                                     random.split(random.key(2), 3))))}
found = {}
for partitionable in (True, False):
  with jax.threefry_partitionable(partitionable):
    for name, f in programs.items():
      with device.compiling_to_ptx() as ptx:
        jax.jit(f, backend="numba-cuda")(key, x)
      found[f"{name}/{partitionable}"] = ptx
print(json.dumps(found))
"""



def test_kernels_compile_to_ptx_and_hash_in_32_bit_integers():
  found = compiled_ptx(_PTX_CHECK)
  for name, kernels in found.items():
    assert kernels, name
    for kernel, ptx in kernels:
      assert ".target sm_90" in ptx and ".entry" in ptx, (name, kernel)
      assert ".extern .func" not in ptx, (name, kernel)   # nothing called outside it
      assert not instructions(ptx, ".f64") and not instructions(ptx, ".f32"), (name, kernel)
    # threefry's rounds are 32-bit: each hash's 20 rotations are 32-bit
    # funnel shifts, its 20 xors 32-bit xors (the 64-bit ones are indices')
    hashes = [ptx for _, ptx in kernels if instructions(ptx, "shf.l.wrap.b32")]
    assert bool(hashes) == (name.split("/")[0] not in ("seed", "iota_2x32_shape")), name
    for ptx in hashes:
      rotations = len(instructions(ptx, "shf.l.wrap.b32"))
      assert rotations % 20 == 0 and len(instructions(ptx, "xor.b32")) >= rotations, name
