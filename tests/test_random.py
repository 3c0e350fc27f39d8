"""Tests of refimpl/random.py against JAX 0.10.2's values (tests/data/prng.json).

Bit-exact everywhere (`normal` too: the reference erf_inv is XLA's, see
tests/test_random_xla_numerics.py) except one documented case: `uniform` with
a range other than [0, 1), where XLA on CPU fuses `floats * (maxval - minval)
+ minval` into one multiply-add (one rounding) and the reference rounds the
product and the sum; at most 1 ulp.
"""

import json
import pathlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import random
from conformance.random_stats import ulp_distance

GOLDEN = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())
MODES = {True: GOLDEN["threefry_partitionable=True (default)"],
         False: GOLDEN["threefry_partitionable=False (legacy)"]}
SAMPLERS = GOLDEN["samplers (threefry_partitionable=True)"]
RANGE_ULPS = 1    # measured: 1
seeds = st.integers(0, 2 ** 31 - 1)


def expected(entry):
  dtype = ml_dtypes.bfloat16 if entry["dtype"] == "bfloat16" else entry["dtype"]
  return np.array(entry["data"], dtype).reshape(entry["shape"])


def assert_exact(x, entry):
  want = expected(entry)
  assert x.dtype == want.dtype and x.shape == want.shape, (x.dtype, x.shape)
  np.testing.assert_array_equal(np.asarray(x), want)


def assert_ulps(x, entry, ulps):
  want = expected(entry)
  assert x.dtype == want.dtype and x.shape == want.shape, (x.dtype, x.shape)
  assert ulp_distance(x, want) <= ulps


# --- golden values ----------------------------------------------------------------

@pytest.mark.parametrize("mode", [True, False])
def test_golden_both_modes(mode):
  g, K = MODES[mode], random.PRNGKey
  with jax.threefry_partitionable(mode):
    for seed in (0, 1, 42, 123456789):
      assert_exact(K(seed), g[f"PRNGKey({seed})"])
    assert_exact(random.split(K(0)), g["split(PRNGKey(0))"])
    assert_exact(random.split(K(0), 3), g["split(PRNGKey(0), 3)"])
    assert_exact(random.fold_in(K(0), 7), g["fold_in(PRNGKey(0), 7)"])
    assert_exact(random.bits(K(1), (8,), np.uint32), g["bits(PRNGKey(1), (8,), uint32)"])
    assert_exact(random.uniform(K(1), (5,)), g["uniform(PRNGKey(1), (5,))"])
    assert_exact(random.randint(K(1), (6,), 0, 10), g["randint(PRNGKey(1), (6,), 0, 10)"])
    assert_exact(random.bernoulli(K(1), 0.3, (8,)), g["bernoulli(PRNGKey(1), 0.3, (8,))"])
    assert_exact(random.normal(K(1), (5,)), g["normal(PRNGKey(1), (5,))"])
    assert_exact(random.normal(K(1), (2, 3)), g["normal(PRNGKey(1), (2, 3))"])


@pytest.mark.parametrize("seed", [3, 2024])
def test_golden_samplers(seed):
  K, g = random.PRNGKey, lambda name: SAMPLERS[name.format(seed)]
  assert_exact(random.uniform(K(seed), (4,), dtype=np.float16),
               g("uniform(PRNGKey({}), (4,), dtype=float16)"))
  assert_exact(random.uniform(K(seed), (4,), dtype=ml_dtypes.bfloat16),
               g("uniform(PRNGKey({}), (4,), dtype=bfloat16)"))
  assert_ulps(random.uniform(K(seed), (4,), minval=-2, maxval=5),
              g("uniform(PRNGKey({}), (4,), minval=-2, maxval=5)"), RANGE_ULPS)
  assert_exact(random.normal(K(seed), (4,), dtype=np.float16),
               g("normal(PRNGKey({}), (4,), dtype=float16)"))
  assert_exact(random.normal(K(seed), (4,)), g("normal(PRNGKey({}), (4,))"))
  assert_exact(random.bernoulli(K(seed), 0.5, (6,)), g("bernoulli(PRNGKey({}), 0.5, (6,))"))
  assert_exact(random.randint(K(seed), (6,), -5, 100),
               g("randint(PRNGKey({}), (6,), -5, 100)"))
  assert_exact(random.randint(K(seed), (4,), -128, 127, np.int8),
               g("randint(PRNGKey({}), (4,), int8 min, int8 max, int8)"))


# --- keys ----------------------------------------------------------------------------

def test_prngkey_seeds():
  np.testing.assert_array_equal(np.asarray(random.PRNGKey(-1)), [0, 2 ** 32 - 1])
  np.testing.assert_array_equal(np.asarray(random.PRNGKey(2 ** 40 + 3)), [0, 3])
  np.testing.assert_array_equal(np.asarray(random.PRNGKey(np.int32(5))), [0, 5])
  with jax.enable_x64():
    np.testing.assert_array_equal(np.asarray(random.PRNGKey(2 ** 40 + 3)), [256, 3])
    np.testing.assert_array_equal(np.asarray(random.PRNGKey(-1)), [2 ** 32 - 1] * 2)
  assert np.asarray(jax.jit(random.PRNGKey)(7)).tolist() == [0, 7]


def test_split_fold_in_shapes():
  k = random.PRNGKey(0)
  assert random.split(k, (2, 3)).shape == (2, 3, 2)
  assert random.split(k, 1).dtype == np.uint32
  assert random.fold_in(k, 3).shape == (2,)
  np.testing.assert_array_equal(np.asarray(random.clone(k)), np.asarray(k))


def test_key_reuse_gives_the_same_numbers():
  k = random.PRNGKey(17)
  for f in (lambda k: random.normal(k, (3,)), lambda k: random.bits(k, (4,)),
            lambda k: random.randint(k, (3,), 0, 9)):
    np.testing.assert_array_equal(np.asarray(f(k)), np.asarray(f(k)))
  a, b = random.split(k)
  assert not np.array_equal(np.asarray(random.uniform(a, (4,))),
                            np.asarray(random.uniform(b, (4,))))


@pytest.mark.parametrize("mode", [True, False])
def test_jit_and_vmap_equal_eager(mode):
  with jax.threefry_partitionable(mode):
    k = random.PRNGKey(5)
    for f in (random.split, lambda k: random.bits(k, (3,)),
              lambda k: random.uniform(k, (2, 3)), lambda k: random.normal(k, (3,)),
              lambda k: random.randint(k, (4,), -3, 7)):
      np.testing.assert_array_equal(np.asarray(jax.jit(f)(k)), np.asarray(f(k)))
      keys = random.split(k, 4)
      batched = np.asarray(jax.vmap(f)(keys))
      for i in range(4):
        np.testing.assert_array_equal(batched[i], np.asarray(f(keys[i])))


def test_fold_in_under_vmap_over_data():
  k = random.PRNGKey(0)
  out = np.asarray(jax.vmap(lambda d: random.fold_in(k, d))(jnp.arange(3)))
  for d in range(3):
    np.testing.assert_array_equal(out[d], np.asarray(random.fold_in(k, d)))


SINGLE_KEY_FUNCTIONS = {
    "split": random.split, "fold_in": lambda k: random.fold_in(k, 1),
    "bits": lambda k: random.bits(k, (2,)), "uniform": random.uniform,
    "normal": lambda k: random.normal(k, (2,), np.complex64),
    "randint": lambda k: random.randint(k, (), 0, 3), "bernoulli": random.bernoulli,
    "gamma": lambda k: random.gamma(k, 1.5), "poisson": lambda k: random.poisson(k, 3.),
    "binomial": lambda k: random.binomial(k, 4., 0.5),
    "multinomial": lambda k: random.multinomial(k, 3., jnp.array([0.5, 0.5])),
    "wald": lambda k: random.wald(k, 1.), "permutation": lambda k: random.permutation(k, 3),
    "choice": lambda k: random.choice(k, 3),
}


@pytest.mark.parametrize("name", sorted(SINGLE_KEY_FUNCTIONS))
@pytest.mark.parametrize("typed", [False, True])
def test_batched_keys_raise_and_vmap_maps(name, typed):
  """A key array of shape other than () raises JAX's ValueError; vmap over
  the keys gives each key's result."""
  f = SINGLE_KEY_FUNCTIONS[name]
  keys = random.split(random.key(0) if typed else random.PRNGKey(0), 3)
  with pytest.raises(ValueError, match=f"{name} accepts a single key, but was given a "
                     r"key array of shape \(3,?( 2)?\) != \(\)"):
    f(keys)
  batched = jax.vmap(f)(keys)
  for i in range(3):
    expected = f(keys[i])
    if typed and name in ("split", "fold_in"):
      batched_i, expected = random.key_data(batched[i]), random.key_data(expected)
    else:
      batched_i = batched[i]
    np.testing.assert_array_equal(np.asarray(batched_i), np.asarray(expected))


def test_key_errors():
  with pytest.raises(TypeError, match="expected key_data.shape to end with"):
    random.uniform(np.zeros(3, np.uint32))
  with pytest.raises(TypeError, match="expected key_data.dtype = uint32"):
    random.normal(np.zeros(2, np.int32))
  with pytest.raises(TypeError, match="key_data.ndim >= 1"):
    random.bits(np.uint32(0))
  with pytest.raises(TypeError, match="unexpected PRNG key type"):
    random.split([0, 0])
  with pytest.raises(TypeError, match="accepts a scalar seed"):
    random.PRNGKey(np.array([1, 2]))
  with pytest.raises(TypeError, match="must be an integer"):
    random.PRNGKey(1.5)
  with pytest.raises(TypeError, match="fold_in accepts a scalar"):
    random.fold_in(random.PRNGKey(0), np.arange(2))


# --- samplers ------------------------------------------------------------------------

def test_sampler_dtype_errors():
  k = random.PRNGKey(0)
  with pytest.raises(ValueError, match="must be an unsigned int dtype"):
    random.bits(k, (2,), np.int32)
  with pytest.raises(ValueError, match="must be a float dtype"):
    random.uniform(k, (2,), np.int32)
  with pytest.raises(ValueError, match="must be a float or complex dtype"):
    random.normal(k, (2,), np.int32)
  with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
    random.randint(k, (2,), 0, 3, np.float32)
  with pytest.raises(TypeError, match="must have a floating dtype"):
    random.bernoulli(k, 1, (2,))
  with pytest.raises(ValueError, match="broadcast-compatible"):
    random.randint(k, (3,), np.zeros((2, 3), np.int32), 5)
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    random.randint(k, (2,), np.zeros(3, np.int32), 5)
  with pytest.raises(TypeError, match="Shapes must be 1D sequences"):
    random.uniform(k, (2.5,))


def test_bits_default_dtype():
  assert random.bits(random.PRNGKey(0)).dtype == np.uint32
  with jax.enable_x64():
    assert random.bits(random.PRNGKey(0), (2,)).dtype == np.uint64


@given(seeds)
def test_uniform_is_a_grid_in_unit_interval(seed):
  """float32 uniforms are multiples of 2**-23 in [0, 1): the mantissa of 1.0
  filled with the top 23 of 32 random bits, minus 1."""
  k = random.PRNGKey(seed)
  u = np.asarray(random.uniform(k, (16,)))
  bits = np.asarray(random.bits(k, (16,)))
  np.testing.assert_array_equal(u, (bits >> 9).astype(np.float32) * np.float32(2 ** -23))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_uniform_range_and_dtype(dtype):
  u = random.uniform(random.PRNGKey(4), (200,), dtype, minval=-3., maxval=2.)
  assert u.dtype == np.dtype(dtype) and u.shape == (200,)
  v = np.asarray(u).astype(np.float32)
  assert v.min() >= -3 and v.max() <= 2


def test_uniform_float64_with_x64():
  with jax.enable_x64():
    u = np.asarray(random.uniform(random.PRNGKey(0), (100,), jnp.float64))
    bits = np.asarray(random.bits(random.PRNGKey(0), (100,), np.uint64))
  assert u.dtype == np.float64
  np.testing.assert_array_equal(u, (bits >> np.uint64(12)).astype(np.float64) * 2.0 ** -52)


def test_normal_complex():
  z = random.normal(random.PRNGKey(0), (5,), np.complex64)
  assert z.dtype == np.complex64 and z.shape == (5,)
  k_re, k_im = random.split(random.PRNGKey(0))
  np.testing.assert_allclose(np.asarray(z).real * np.sqrt(2),
                             np.asarray(random.normal(k_re, (5,))), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32])
def test_randint_near_dtype_limits(dtype):
  """Bounds as arrays of `dtype` (a Python int beyond int32 overflows, as in JAX)."""
  info, bound = np.iinfo(dtype), lambda v: np.array(v, dtype)
  k = random.PRNGKey(8)
  full = np.asarray(random.randint(k, (500,), bound(info.min), bound(info.max), dtype))
  assert full.dtype == dtype and full.min() >= info.min and full.max() < info.max
  assert full.min() < info.min + (int(info.max) - int(info.min)) // 10
  top = np.asarray(random.randint(k, (200,), bound(info.max - 2), bound(info.max), dtype))
  assert set(top.tolist()) == {info.max - 2, info.max - 1}


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_randint_bounds_beyond_the_dtype(dtype):
  """maxval above the dtype's maximum makes the maximum possible; minval
  below its minimum is clipped to it."""
  info, k = np.iinfo(dtype), random.PRNGKey(8)
  hi = np.asarray(random.randint(k, (300,), info.max - 1, int(info.max) + 1, dtype))
  assert set(hi.tolist()) == {info.max - 1, info.max}
  lo = np.asarray(random.randint(k, (300,), int(info.min) - 5, info.min + 2, dtype))
  assert set(lo.tolist()) == {info.min, info.min + 1}
  every = np.asarray(random.randint(k, (3000,), info.min, int(info.max) + 1, dtype))
  assert every.max() == info.max or dtype in (np.int16, np.uint16)


def test_randint_int32_beyond_range_with_x64():
  with jax.enable_x64():
    out = np.asarray(random.randint(random.PRNGKey(3), (300,), 2 ** 31 - 2, 2 ** 31,
                                    np.int32))
  assert set(out.tolist()) == {2 ** 31 - 2, 2 ** 31 - 1}


def test_randint_empty_range_gives_minval():
  out = np.asarray(random.randint(random.PRNGKey(1), (5,), 3, 3))
  np.testing.assert_array_equal(out, [3] * 5)
  out = np.asarray(random.randint(random.PRNGKey(1), (5,), 3, -4))
  np.testing.assert_array_equal(out, [3] * 5)


def test_randint_array_bounds():
  out = np.asarray(random.randint(random.PRNGKey(2), (2, 3), np.array([0, 10, 20]), 25))
  assert out.shape == (2, 3)
  assert (out >= [0, 10, 20]).all() and (out < 25).all()


def test_bernoulli_shapes_and_extremes():
  k = random.PRNGKey(6)
  assert random.bernoulli(k).shape == () and random.bernoulli(k).dtype == np.bool_
  p = np.array([0., 1., 0.5], np.float32)
  out = np.asarray(random.bernoulli(k, p, (4, 3)))
  assert out.shape == (4, 3) and not out[:, 0].any() and out[:, 1].all()
  assert random.bernoulli(k, p).shape == (3,)


def test_make_jaxpr_uniform():
  """Raw keys are wrapped on entry, the draw is a jitted `_uniform` of the key
  and the bounds, and bits come from the random_bits primitive, as JAX."""
  jaxpr = str(jax.make_jaxpr(lambda k: random.uniform(k, (3,)))(random.PRNGKey(0)))
  for piece in ("b:key<fry>[] = random_wrap[impl=fry] a", "c:f32[3] = jit[",
                "name=_uniform", "jaxpr={ lambda ; d:key<fry>[] e:f32[] f:f32[]. let",
                "u32[3] = random_bits[bit_width=32 shape=(3,)] d", "shift_right_logical",
                "bitcast_convert_type[new_dtype=float32]", "max", "] b 0.0:f32[] 1.0:f32[]"):
    assert piece in jaxpr, jaxpr
