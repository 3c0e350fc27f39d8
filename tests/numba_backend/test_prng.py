"""The numba backend's PRNG lowerings give the reference's bits: JAX's
golden values (tests/data/prng.json), and the reference on
hypothesis-generated seeds, messages, shapes and bit widths, in both
threefry modes (`jax_threefry_partitionable` True and False); key arrays
through shape operations, indexing, select and comparisons."""

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax, prng, random
import refimpl.numpy as jnp

pytest.importorskip("numba")

SETTINGS = settings(max_examples=15, deadline=None)
GOLDEN = json.load(open(os.path.join(os.path.dirname(__file__), "..", "data", "prng.json")))
MODES = {True: "threefry_partitionable=True (default)",
         False: "threefry_partitionable=False (legacy)"}


def numba_jit(f):
  return jax.jit(f, backend="numba")


def assert_same(reference, backend):
  for r, b in zip(reference, backend):
    r, b = np.asarray(r), np.asarray(b)
    assert (r.dtype, r.shape) == (b.dtype, b.shape)
    np.testing.assert_array_equal(b, r)


def key_functions(seed, msg):
  """The golden data's key functions of PRNGKey(seed), as raw uint32 data."""
  key = random.PRNGKey(seed)
  return (key, random.split(key), random.split(key, 3), random.fold_in(key, msg),
          random.bits(key, (8,), np.uint32))


@pytest.mark.parametrize("partitionable", [True, False])
def test_golden_values(partitionable):
  golden = GOLDEN[MODES[partitionable]]
  with jax.threefry_partitionable(partitionable):
    seeds = [0, 1, 42, 123456789]
    for seed in seeds:
      key = numba_jit(lambda s: key_functions(s, np.uint32(7))[0])(np.int32(seed))
      np.testing.assert_array_equal(key, golden[f"PRNGKey({seed})"]["data"])
    outs0 = numba_jit(key_functions)(np.int32(0), np.uint32(7))
    outs1 = numba_jit(key_functions)(np.int32(1), np.uint32(7))
  for name, out in [("split(PRNGKey(0))", outs0[1]), ("split(PRNGKey(0), 3)", outs0[2]),
                    ("fold_in(PRNGKey(0), 7)", outs0[3]),
                    ("bits(PRNGKey(1), (8,), uint32)", outs1[4])]:
    expected = golden[name]
    np.testing.assert_array_equal(np.asarray(out).ravel(), expected["data"], err_msg=name)
    assert list(np.shape(out)) == expected["shape"], name


def test_threefry2x32_known_answers():
  cases = GOLDEN["threefry2x32 raw (key, count) -> out"]
  k1, k2, x1, x2 = (np.array([c[part][i] for c in cases], np.uint32)
                    for part, i in [("key", 0), ("key", 1), ("count", 0), ("count", 1)])
  y1, y2 = numba_jit(lambda *a: prng.threefry2x32_p.bind(*a))(k1, k2, x1, x2)
  np.testing.assert_array_equal(np.stack([y1, y2], 1), [c["out"] for c in cases])


seed_values = st.one_of(st.integers(-2**31, 2**31 - 1), st.sampled_from([0, -1, 2**31 - 1, -2**31]))
uint32s = st.integers(0, 2**32 - 1)
sizes = st.integers(0, 3)


def primitives(seeds, msgs, k1, k2, x1, x2, *, split_shape, bits_shape):
  """Every PRNG primitive on key arrays of seeds' shape, as raw data."""
  keys = prng.random_seed_p.bind(seeds, impl=prng.threefry_prng_impl)
  data = lambda k: prng.random_unwrap_p.bind(k)
  outs = [data(keys), data(prng.random_split_p.bind(keys, shape=split_shape)),
          data(prng.random_fold_in_p.bind(keys, msgs))]
  outs += [prng.random_bits_p.bind(keys, bit_width=w, shape=bits_shape) for w in (8, 16, 32)]
  outs += prng.threefry2x32_p.bind(k1, k2, x1, x2)
  outs += prng.iota_2x32_shape_p.bind(shape=bits_shape) if bits_shape else []
  wrapped = prng.random_wrap_p.bind(data(keys), impl=prng.threefry_prng_impl)
  return outs + [data(random.clone(wrapped))]


@pytest.mark.parametrize("partitionable", [True, False])
@SETTINGS
@given(data=st.data(), split_shape=st.tuples(sizes), bits_shape=st.tuples(sizes, sizes))
def test_primitives_agree(partitionable, data, split_shape, bits_shape):
  n = data.draw(st.integers(0, 3))
  seeds = np.array(data.draw(st.lists(seed_values, min_size=n, max_size=n)), np.int32)
  msgs = np.array(data.draw(st.lists(uint32s, min_size=n, max_size=n)), np.uint32)
  k1, x1 = (np.array(data.draw(st.lists(uint32s, min_size=n, max_size=n)), np.uint32)
            for _ in range(2))
  k2, x2 = np.uint32(data.draw(uint32s)), np.ones((1,) if n else (0,), np.uint32)
  args = (seeds, msgs, k1, k2, x1, x2)
  f = lambda *a: primitives(*a, split_shape=split_shape, bits_shape=bits_shape)
  with jax.threefry_partitionable(partitionable):
    assert_same(jax.jit(f)(*args), numba_jit(f)(*args))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32])
def test_seed_of_each_integer_dtype(dtype):
  info = np.iinfo(dtype)
  seeds = np.array([info.min, -1 if info.min else 1, 0, info.max], dtype)
  f = lambda s: prng.random_unwrap_p.bind(prng.random_seed_p.bind(s, impl=prng.threefry_prng_impl))
  assert_same([jax.jit(f)(seeds)], [numba_jit(f)(seeds)])


def key_operations(seed, i, pick):
  """Shape operations, indexing (filling too), select_n and comparisons on key arrays."""
  keys = random.split(random.key(seed), 4)
  grid = keys.reshape(2, 2)
  picked = lax.select(pick, keys, keys[::-1])
  outs = [keys[1], keys[i], jnp.stack([keys[0], keys[3]]), grid.T, grid[:, 1],
          jnp.broadcast_to(keys[2], (3,)), jnp.concatenate([keys, keys[:1]]), picked,
          lax.dynamic_slice(keys, (i,), (2,)), lax.dynamic_update_slice(keys, keys[:1], (i,)),
          keys.at[jnp.stack([i, i + 3])].get(mode="fill")]   # out of bounds: the fill key
  return [random.key_data(k) for k in outs] + [keys == keys[i], keys != picked]


@SETTINGS
@given(seed=seed_values, i=st.integers(-5, 5), pick=st.lists(st.booleans(), min_size=4, max_size=4))
def test_key_operations_agree(seed, i, pick):
  args = (np.int32(seed), np.int32(i), np.array(pick))
  assert_same(jax.jit(key_operations)(*args), numba_jit(key_operations)(*args))
