"""Typed PRNG keys in refimpl.random: `key`, `key_data`, `wrap_key_data`,
`key_impl`, `key_dtype`, the PRNG config options, and typed keys through
every sampler and transformation (tests/test_key_arrays.py covers key
arrays in lax/jnp operations)."""

import json
import pathlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import dtypes, lax, prng, random

GOLDEN = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())
seeds = st.integers(0, 2 ** 31 - 1)


def data(keys):
  return np.asarray(random.key_data(keys))


@pytest.mark.parametrize("mode", [True, False])
def test_key_data_golden(mode):
  name = ("threefry_partitionable=True (default)" if mode
          else "threefry_partitionable=False (legacy)")
  entry = GOLDEN[name]["key_data(key(1701))"]
  with jax.threefry_partitionable(mode):
    got = random.key_data(random.key(1701))
  assert got.dtype == np.uint32 and got.shape == tuple(entry["shape"])
  np.testing.assert_array_equal(np.asarray(got), entry["data"])


def test_key_array_basics():
  k = random.key(1701)
  assert isinstance(k, jax.Array) and isinstance(k, prng.PRNGKeyArray)
  assert k.shape == () and k.ndim == 0 and k.size == 1
  assert str(k.dtype) == "key<fry>" and k.dtype.name == "key<fry>" and k.dtype.itemsize == 8
  assert k.dtype == random.key_dtype() == random.key_dtype("threefry2x32")
  assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[   0 1701]"
  assert jnp.issubdtype(k.dtype, dtypes.prng_key) and jnp.issubdtype(k.dtype, dtypes.extended)
  assert jnp.issubdtype(k.dtype, np.generic) and jnp.issubdtype(k.dtype, k.dtype)
  assert not jnp.issubdtype(k.dtype, np.integer) and not jnp.issubdtype(k.dtype, np.number)
  with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
    np.asarray(k)
  with pytest.raises(TypeError, match="unhashable"):
    hash(k)


@given(seeds)
@settings(max_examples=10)
def test_typed_and_raw_keys_agree(seed):
  k, r = random.key(seed), random.PRNGKey(seed)
  np.testing.assert_array_equal(data(k), np.asarray(r))
  np.testing.assert_array_equal(data(random.split(k, 3)), np.asarray(random.split(r, 3)))
  np.testing.assert_array_equal(data(random.split(k, (2, 2))),
                                np.asarray(random.split(r, (2, 2))))
  np.testing.assert_array_equal(data(random.fold_in(k, 5)), np.asarray(random.fold_in(r, 5)))
  np.testing.assert_array_equal(random.bits(k, (4,)), random.bits(r, (4,)))


SAMPLERS = {
    "uniform": lambda k: random.uniform(k, (3,)),
    "normal": lambda k: random.normal(k, (3,)),
    "randint": lambda k: random.randint(k, (3,), 0, 9),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (3,)),
    "choice": lambda k: random.choice(k, 5, (3,), replace=False),
    "permutation": lambda k: random.permutation(k, 5),
    "categorical": lambda k: random.categorical(k, jnp.zeros(4), shape=(3,)),
    "gumbel": lambda k: random.gumbel(k, (3,)),
    "gamma": lambda k: random.gamma(k, 0.7, (3,)),
    "loggamma": lambda k: random.loggamma(k, 0.7, (3,)),
    "beta": lambda k: random.beta(k, 2., 3., (3,)),
    "dirichlet": lambda k: random.dirichlet(k, jnp.ones(3)),
    "t": lambda k: random.t(k, 3., (3,)),
    "poisson": lambda k: random.poisson(k, 4., (3,)),
    "binomial": lambda k: random.binomial(k, 10., 0.3, (3,)),
    "multinomial": lambda k: random.multinomial(k, 10., jnp.array([.2, .8])),
    "truncated_normal": lambda k: random.truncated_normal(k, -1., 1., (3,)),
    "multivariate_normal": lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2)),
    "orthogonal": lambda k: random.orthogonal(k, 2),
    "wald": lambda k: random.wald(k, 1., (3,)),
    "ball": lambda k: random.ball(k, 2),
    "generalized_normal": lambda k: random.generalized_normal(k, 1.5, (3,)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_samplers_same_values_for_typed_and_raw_keys(name):
  """A typed key and its raw data draw the same numbers, eagerly, under jit
  and under vmap over a batch of keys."""
  f = SAMPLERS[name]
  k, r = random.key(11), random.PRNGKey(11)
  np.testing.assert_array_equal(f(k), f(r))
  np.testing.assert_array_equal(jax.jit(f)(k), f(r))
  keys = random.split(k, 2)
  batched = jax.vmap(f)(keys)
  for i in range(2):
    np.testing.assert_array_equal(batched[i], f(random.key_data(keys)[i]))


def test_wrap_key_data_round_trip():
  raw = np.arange(24, dtype=np.uint32).reshape(3, 4, 2)
  keys = random.wrap_key_data(raw)
  assert keys.shape == (3, 4) and keys.dtype == random.key_dtype()
  np.testing.assert_array_equal(data(keys), raw)
  np.testing.assert_array_equal(data(random.wrap_key_data(raw, impl="threefry2x32")), raw)
  np.testing.assert_array_equal(data(jax.jit(random.wrap_key_data)(raw)), raw)
  np.testing.assert_array_equal(jax.jit(random.key_data)(keys), raw)
  np.testing.assert_array_equal(random.key_data(raw[0, 0]), raw[0, 0])  # raw keys pass through
  with pytest.raises(TypeError, match="expected key_data.shape to end with"):
    random.wrap_key_data(np.zeros((2, 3), np.uint32))
  with pytest.raises(TypeError, match="expected key_data.dtype = uint32"):
    random.wrap_key_data(np.zeros(2, np.int32))
  with pytest.raises(TypeError, match="key_data.ndim >= 1"):
    random.wrap_key_data(np.uint32(0))


def test_key_impl_and_impl_arguments():
  k = random.key(42)
  assert random.key_impl(k) == "threefry2x32"
  assert random.key_impl(random.PRNGKey(42)) == "threefry2x32"
  assert random.key_impl(random.split(k, 3)) == "threefry2x32"   # key arrays allowed
  for impl in ("threefry2x32", random.key_impl(k), prng.threefry_prng_impl,
               random.PRNGSpec(prng.threefry_prng_impl)):
    np.testing.assert_array_equal(data(random.key(42, impl=impl)), data(k))
    np.testing.assert_array_equal(random.PRNGKey(42, impl=impl), data(k))
  assert repr(random.PRNGSpec(prng.threefry_prng_impl)) == "PRNGSpec('threefry2x32')"
  with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
    random.key(42, impl="unlikely name")
  with pytest.raises(TypeError, match="unrecognized type .* PRNG"):
    random.key(42, impl=object())
  with pytest.raises(NotImplementedError, match="'rbg' PRNG implementation"):
    random.key(42, impl="rbg")
  with jax.default_prng_impl("unsafe_rbg"):
    with pytest.raises(NotImplementedError, match="unsafe_rbg"):
      random.key(0)


def test_seed_errors():
  with pytest.raises(TypeError, match="key accepts a scalar seed, but was given a PRNG key"):
    random.key(random.key(0))
  with pytest.raises(TypeError, match="PRNGKey accepts a scalar seed"):
    random.PRNGKey(random.key(0))
  with pytest.raises(TypeError, match="key accepts a scalar seed"):
    random.key(np.arange(4))
  with pytest.raises(TypeError, match="PRNG key seed must be an integer"):
    random.key(np.pi)


def test_seeds_with_x64():
  with jax.enable_x64():
    np.testing.assert_array_equal(data(random.key(-3)), [2 ** 32 - 1, 2 ** 32 - 3])
    np.testing.assert_array_equal(data(random.key(2 ** 40 + 3)), [256, 3])
  np.testing.assert_array_equal(data(random.key(-3)), [0, 2 ** 32 - 3])
  np.testing.assert_array_equal(data(jax.jit(random.key)(7)), [0, 7])


def test_legacy_prng_key_option():
  raw, bad = jnp.zeros(2, jnp.uint32), jnp.zeros(1, jnp.float32)
  msg = "Legacy uint32 key array passed as key to jax.random function"
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    random.uniform(raw)                         # 'allow', the default
  with jax.legacy_prng_key("warn"):
    with pytest.warns(UserWarning, match=msg):
      random.uniform(raw)
  with jax.legacy_prng_key("error"):
    with pytest.raises(ValueError, match=msg):
      random.uniform(raw)
    with pytest.raises(TypeError, match="JAX encountered invalid PRNG key data"):
      random.uniform(bad)                       # an invalid key takes precedence
    random.uniform(random.key(0))               # typed keys are fine
  with pytest.raises(ValueError, match="must be one of \\['allow', 'warn', 'error'\\]"):
    jax.legacy_prng_key("sometimes")


def test_enable_custom_prng_option():
  with jax.enable_custom_prng():
    k = random.PRNGKey(3)
    assert k.dtype == random.key_dtype() and k.shape == ()
    with pytest.warns(FutureWarning, match="Raw arrays as random keys"):
      keys = random.split(np.asarray(random.key_data(k)))
    assert keys.dtype == random.key_dtype()
  assert random.PRNGKey(3).dtype == np.uint32


def test_jaxprs_show_the_key_primitives():
  assert str(jax.make_jaxpr(random.key)(0)) == (
      "{ lambda ; a:i32[]. let b:key<fry>[] = random_seed[impl=fry] a in (b,) }")
  assert str(jax.make_jaxpr(random.PRNGKey)(0)) == (
      "{ lambda ; a:i32[]. let\n    b:key<fry>[] = random_seed[impl=fry] a\n"
      "    c:u32[2] = random_unwrap b\n  in (c,) }")
  k = random.key(0)
  assert str(jax.make_jaxpr(lambda k: random.split(k, 3))(k)) == (
      "{ lambda ; a:key<fry>[]. let\n    b:key<fry>[3] = random_split[shape=(3,)] a\n"
      "  in (b,) }")
  assert "random_fold_in a 7:u32[]" in str(jax.make_jaxpr(lambda k: random.fold_in(k, 7))(k))
  assert "random_bits[bit_width=32 shape=(2,)] a" in str(
      jax.make_jaxpr(lambda k: random.bits(k, (2,)))(k))
  assert "random_wrap[impl=fry] a" in str(jax.make_jaxpr(random.split)(random.PRNGKey(0)))


def test_vmap_of_key_functions():
  seeds_ = jnp.arange(4, dtype=jnp.uint32)
  keys = jax.vmap(random.key)(seeds_)
  assert keys.shape == (4,) and keys.dtype == random.key_dtype()
  np.testing.assert_array_equal(data(keys), [data(random.key(s)) for s in range(4)])
  split = jax.vmap(random.split)(keys)
  assert split.shape == (4, 2)
  for i in range(4):
    np.testing.assert_array_equal(data(split[i]), data(random.split(keys[i])))
  folded = jax.vmap(random.fold_in, in_axes=(0, None))(keys, 3)
  np.testing.assert_array_equal(data(folded), [data(random.fold_in(k, 3)) for k in keys])
  wrapped = jax.vmap(random.wrap_key_data, in_axes=1)(data(keys).T)
  np.testing.assert_array_equal(data(wrapped), data(keys))


def test_fold_in_axis_index_equals_split():
  """Partitionable threefry: fold_in(key, i) is the i-th key of split(key, n)."""
  k = random.key(72)
  folded = jax.vmap(lambda _: random.fold_in(k, lax.axis_index("batch")),
                    axis_name="batch")(jnp.ones(3))
  np.testing.assert_array_equal(data(folded), data(random.split(k, 3)))


def test_keys_through_scan_and_jit():
  keys = random.split(random.key(5), 4)

  def step(total, k):
    return total + random.normal(k), random.split(k, 2)

  total, subkeys = lax.scan(step, 0., keys)
  assert subkeys.shape == (4, 2) and subkeys.dtype == keys.dtype
  assert np.allclose(total, sum(random.normal(k) for k in keys), rtol=1e-6)
  jit_total, jit_subkeys = jax.jit(lambda ks: lax.scan(step, 0., ks))(keys)
  np.testing.assert_array_equal(data(jit_subkeys), data(subkeys))
  assert np.allclose(jit_total, total, rtol=1e-6)
  out = jax.jit(random.split)(random.key(1))
  assert isinstance(out, prng.PRNGKeyArray) and out.shape == (2,)


def test_gradients_with_typed_keys():
  k = random.key(3)
  g_typed = jax.grad(lambda a: random.gamma(k, a))(2.0)
  g_raw = jax.grad(lambda a: random.gamma(random.key_data(k), a))(2.0)
  assert g_typed == g_raw and np.isfinite(g_typed)
  out, f_vjp = jax.vjp(lambda s: random.key(s), 1)        # integer input: no crash
  assert out.dtype == random.key_dtype()
  primal, tangent = jax.jvp(lambda x: x * random.normal(k), (2.0,), (1.0,))
  assert tangent == random.normal(k)
