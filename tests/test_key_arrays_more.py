"""Typed PRNG keys at the edges: out-of-bounds gathers of keys, invalid key
data and shapes, keys reaching Python callbacks (debug.print/callback,
pure_callback), device_get and nbytes of key arrays, as in JAX 0.10."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import prng, random

UINT32_MAX = np.iinfo(np.uint32).max


def data(k):
  return np.asarray(random.key_data(k))


def keys(n, seed=0):
  return random.split(random.key(seed), n)


both = pytest.mark.parametrize("mode", ["eager", "jit"])


def run(mode, f, *args):
  return (f if mode == "eager" else jax.jit(f))(*args)


# --- out-of-bounds gathers -------------------------------------------------------

@given(st.lists(st.integers(-7, 9), min_size=1, max_size=5))
def test_fill_gather_of_keys(indices):
  """mode='fill' gives the key whose data words are all 0xFFFFFFFF for an
  out-of-bounds index (JAX's default fill for key arrays); negative indices
  count from the end."""
  ks = keys(4)
  idx = np.array(indices)
  expected = np.stack([data(ks)[i] if -4 <= i < 4 else np.full(2, UINT32_MAX, np.uint32)
                       for i in indices])
  for f in (lambda k, i: k.at[i].get(mode="fill"),
            lambda k, i: jnp.take(k, i, mode="fill")):
    got = f(ks, jnp.asarray(idx))
    assert isinstance(got, prng.PRNGKeyArray)
    np.testing.assert_array_equal(data(got), expected)
    np.testing.assert_array_equal(data(jax.jit(f)(ks, jnp.asarray(idx))), expected)


def test_fill_gather_of_keys_under_vmap():
  ks = keys(3 * 4).reshape(3, 4)
  out = jax.vmap(lambda k: k.at[jnp.array([1, 9])].get(mode="fill"))(ks)
  expected = np.stack([data(ks)[:, 1], np.full((3, 2), UINT32_MAX, np.uint32)], axis=1)
  np.testing.assert_array_equal(data(out), expected)


def test_fill_gather_explicit_fill_value_fills_key_data():
  ks = keys(4)
  np.testing.assert_array_equal(data(ks.at[10].get(mode="fill", fill_value=7)), [7, 7])
  np.testing.assert_array_equal(data(ks.at[10].get(mode="clip")), data(ks)[3])


# --- invalid key data and shapes ---------------------------------------------------

@pytest.mark.parametrize("value", [0, 1.5, [0, 1], (0, 1), None])
def test_wrap_key_data_needs_an_array(value):
  with pytest.raises(TypeError, match="expected key_data to have ndim, shape, and dtype"):
    random.wrap_key_data(value)


@pytest.mark.parametrize("value", [0, 1.5, np.uint32(3)])
def test_scalar_raw_keys_are_type_errors(value):
  """Python and NumPy scalars are array-like, so they are checked as key data
  (JAX's TypeErrors), never an AttributeError."""
  for f in (random.uniform, random.split, random.key_data,
            lambda k: random.fold_in(k, 1), lambda k: random.normal(k, (2,))):
    with pytest.raises(TypeError, match="invalid PRNG key data"):
      f(value)


@pytest.mark.parametrize("value", [[0, 1], (0, 1), None, "key"])
def test_non_arraylike_keys_are_type_errors(value):
  with pytest.raises(TypeError, match="unexpected PRNG key type"):
    random.uniform(value)


@both
@pytest.mark.parametrize("f, name", [
    (lambda k: random.split(k, -1), "random_split"),
    (lambda k: random.split(k, (2, -1)), "random_split"),
    (lambda k: random.bits(k, (-1,)), "random_bits"),
    (lambda k: random.uniform(k, (3, -2)), "random_bits"),
    (lambda k: random.normal(k, (-1,)), "random_bits"),
])
def test_negative_sizes_are_type_errors(mode, f, name):
  for k in (random.key(0), random.PRNGKey(0)):
    with pytest.raises(TypeError, match=f"{name} shape must have non-negative sizes"):
      run(mode, f, k)
  with pytest.raises(TypeError, match="iota_2x32_shape shape must have non-negative"):
    prng.iota_2x32_shape_p.bind(shape=(-1,))


@both
def test_empty_splits(mode):
  k = random.key(0)
  out = run(mode, lambda k: random.split(k, 0), k)
  assert out.shape == (0,) and data(out).shape == (0, 2)
  out = run(mode, lambda k: random.split(k, (3, 0)), k)
  assert out.shape == (3, 0) and data(out).shape == (3, 0, 2)
  assert run(mode, lambda k: random.split(k, 0), random.PRNGKey(0)).shape == (0, 2)
  assert jax.vmap(random.uniform)(out[0]).shape == (0,)


# --- keys in Python callbacks ---------------------------------------------------------

@pytest.mark.parametrize("transform", ["eager", "jit", "vmap"])
def test_debug_callback_receives_key_arrays(transform):
  ks = keys(2)
  seen = []

  def f(k):
    jax.debug.callback(lambda k: seen.append(k), k)
    return k
  if transform == "vmap":
    jax.vmap(f)(ks)
    expected = [data(ks[0]), data(ks[1])]
  else:
    run(transform, f, ks[1])
    expected = [data(ks[1])]
  assert all(isinstance(k, prng.PRNGKeyArray) and k.shape == () for k in seen)
  np.testing.assert_array_equal([data(k) for k in seen], expected)


@both
def test_debug_print_of_a_key(mode, capsys):
  k = random.key(42)
  run(mode, lambda k: jax.debug.print("k={k} x={x}", k=k, x=1.5), k)
  assert capsys.readouterr().out == f"k={k!r} x=1.5\n"
  assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[ 0 42]"


def _second_word(k):
  """A pure callback of a key: its second data word as float32."""
  assert isinstance(k, prng.PRNGKeyArray)
  return np.asarray(data(k)[..., 1], np.float32)


@both
def test_pure_callback_receives_key_arrays(mode):
  spec = jax.ShapeDtypeStruct((), jnp.float32)
  f = lambda k: jax.pure_callback(_second_word, spec, k)
  assert float(run(mode, f, random.key(5))) == 5.
  ks = keys(3)
  g = lambda k: jax.pure_callback(_second_word, spec, k, vmap_method="sequential")
  np.testing.assert_array_equal(run(mode, jax.vmap(g), ks), data(ks)[:, 1].astype(np.float32))
  h = lambda k: jax.pure_callback(_second_word, spec, k, vmap_method="expand_dims")
  np.testing.assert_array_equal(jax.vmap(h)(ks), data(ks)[:, 1].astype(np.float32))


def test_pure_callback_cannot_return_keys():
  k = random.key(0)
  with pytest.raises(TypeError, match="pure_callback results cannot have an extended dtype"):
    jax.pure_callback(lambda: k, jax.ShapeDtypeStruct((), k.dtype))


# --- host transfer and sizes ----------------------------------------------------------

def test_device_get_keeps_key_arrays():
  ks = keys(3)
  out = jax.device_get({"k": ks, "x": jnp.ones(2)})
  assert isinstance(out["k"], prng.PRNGKeyArray)
  np.testing.assert_array_equal(data(out["k"]), data(ks))
  assert type(out["x"]) is np.ndarray
  with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
    np.asarray(ks)


def test_nbytes():
  assert keys(3).nbytes == 24 and random.key(0).nbytes == 8
  assert keys(0).nbytes == 0
  assert jnp.ones(3).nbytes == 12


def test_custom_rules_with_float0_tangents_and_cotangents():
  """custom_jvp rules may return float0 zeros as the tangent of a key or
  integer output; custom_vjp bwd rules may return float0 zeros (or anything:
  JAX discards it) as the cotangent of a key input."""
  from refimpl import random

  @jax.custom_jvp
  def f(x, key):
    return x * random.normal(key), random.split(key, 2)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, key = primals
    out = f(x, key)
    return out, (tangents[0] * random.normal(key),
                 np.zeros(out[1].shape, jax.dtypes.float0))

  k = random.key(3)
  primal, tangent = jax.jvp(lambda x: f(x, k)[0], (2.0,), (1.0,))
  assert tangent == random.normal(k) and primal == 2.0 * random.normal(k)

  @jax.custom_vjp
  def g(x, key):
    return x * random.normal(key)

  g.defvjp(lambda x, key: (g(x, key), key),
           lambda key, ct: (ct * random.normal(key), np.zeros((), jax.dtypes.float0)))
  assert jax.grad(g)(2.0, k) == random.normal(k)
  g.defvjp(lambda x, key: (g(x, key), key),
           lambda key, ct: (ct * random.normal(key), jnp.float32(5.0)))
  assert jax.grad(g)(2.0, k) == random.normal(k)
  grads = jax.grad(g, argnums=(0, 1), allow_int=True)(2.0, k)
  assert grads[1].dtype == jax.dtypes.float0 and grads[1].shape == ()
