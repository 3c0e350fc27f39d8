"""Tests of the "simple" jax.random samplers against JAX 0.10.2's golden values
(tests/data/prng.json) and their distributions (conformance/random_stats.py).

Integer samplers (choice, permutation, categorical, rademacher, geometric)
are bit-exact. Float samplers apply log/log1p/tan/exp/sqrt/erf_inv/pow,
which XLA computes with its own float32 approximations: the measured max
difference from the golden values is ULPS[name] (gumbel 2, logistic 0,
laplace 0, exponential 0, cauchy 1, maxwell 0, double_sided_maxwell 0,
weibull_min 0, pareto 1, triangular 0, lognormal 1, rayleigh 1; maxwell and
double_sided_maxwell are normals, whose erf_inv is XLA's); the tests allow
those bounds.
"""

import json
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import random
from conformance import random_stats as rs

SAMPLERS = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())[
    "samplers (threefry_partitionable=True)"]
SEEDS = (3, 2024)
ULPS = {"gumbel": 2, "laplace": 0, "logistic": 0, "exponential": 0, "cauchy": 1,
        "maxwell": 0, "double_sided_maxwell": 0, "weibull_min": 0, "pareto": 1,
        "triangular": 0, "lognormal": 1, "rayleigh": 1}

# golden-key label (with {s} for the seed) -> function of the key
GOLDEN_CASES = {
    "choice(PRNGKey({s}), 10, (3,), replace=False)":
        lambda k: random.choice(k, 10, (3,), replace=False),
    "choice(PRNGKey({s}), 5, (4,), p=[.1,.2,.3,.2,.2])":
        lambda k: random.choice(k, 5, (4,), p=jnp.array([.1, .2, .3, .2, .2])),
    "permutation(PRNGKey({s}), 8)": lambda k: random.permutation(k, 8),
    "permutation(PRNGKey({s}), arange(6).reshape(3,2), axis=0, independent=False)":
        lambda k: random.permutation(k, jnp.arange(6).reshape(3, 2), axis=0),
    "categorical(PRNGKey({s}), log([.2,.3,.5]), shape=(6,))":
        lambda k: random.categorical(k, jnp.log(jnp.array([.2, .3, .5])), shape=(6,)),
    "rademacher(PRNGKey({s}), (6,))": lambda k: random.rademacher(k, (6,)),
    "geometric(PRNGKey({s}), 0.3, (6,))": lambda k: random.geometric(k, 0.3, (6,)),
    "gumbel(PRNGKey({s}), (4,))": lambda k: random.gumbel(k, (4,)),
    "laplace(PRNGKey({s}), (4,))": lambda k: random.laplace(k, (4,)),
    "logistic(PRNGKey({s}), (4,))": lambda k: random.logistic(k, (4,)),
    "exponential(PRNGKey({s}), (4,))": lambda k: random.exponential(k, (4,)),
    "cauchy(PRNGKey({s}), (4,))": lambda k: random.cauchy(k, (4,)),
    "maxwell(PRNGKey({s}), (4,))": lambda k: random.maxwell(k, (4,)),
    "double_sided_maxwell(PRNGKey({s}), 0., 1., (4,))":
        lambda k: random.double_sided_maxwell(k, 0., 1., (4,)),
    "weibull_min(PRNGKey({s}), 1., 1.5, (4,))": lambda k: random.weibull_min(k, 1., 1.5, (4,)),
    "pareto(PRNGKey({s}), 3., (4,))": lambda k: random.pareto(k, 3., (4,)),
    "triangular(PRNGKey({s}), 0., 1., 3., (4,))":
        lambda k: random.triangular(k, 0., 1., 3., (4,)),
    "lognormal(PRNGKey({s}), 0.5, (4,))": lambda k: random.lognormal(k, 0.5, (4,)),
    "rayleigh(PRNGKey({s}), 2., (4,))": lambda k: random.rayleigh(k, 2., (4,)),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("label", list(GOLDEN_CASES))
def test_golden(label, seed):
  entry = SAMPLERS[label.format(s=seed)]
  want = np.array(entry["data"], entry["dtype"]).reshape(entry["shape"])
  got = np.asarray(GOLDEN_CASES[label](random.PRNGKey(seed)))
  assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
  name = label.split("(")[0]
  if name in ULPS:
    assert rs.ulp_distance(got, want) <= ULPS[name]
  else:
    np.testing.assert_array_equal(got, want)


# --- distributions ------------------------------------------------------------------

N = 5000
KEY = random.PRNGKey(11)
CONTINUOUS = {
    "gumbel": (lambda k: random.gumbel(k, (N,)), rs.gumbel_cdf, np.euler_gamma, np.pi ** 2 / 6),
    "gumbel high": (lambda k: random.gumbel(k, (N,), mode="high"), rs.gumbel_cdf,
                    np.euler_gamma, np.pi ** 2 / 6),
    "gumbel highest": (lambda k: random.gumbel(k, (N,), mode="highest"), rs.gumbel_cdf,
                       np.euler_gamma, np.pi ** 2 / 6),
    "laplace": (lambda k: random.laplace(k, (N,)), rs.laplace_cdf, 0., 2.),
    "logistic": (lambda k: random.logistic(k, (N,)), rs.logistic_cdf, 0., np.pi ** 2 / 3),
    "exponential": (lambda k: random.exponential(k, (N,)), rs.exponential_cdf, 1., 1.),
    "cauchy": (lambda k: random.cauchy(k, (N,)), rs.cauchy_cdf, None, None),
    "maxwell": (lambda k: random.maxwell(k, (N,)), rs.maxwell_cdf,
                2 * np.sqrt(2 / np.pi), 3 - 8 / np.pi),
    "double_sided_maxwell": (lambda k: random.double_sided_maxwell(k, 1., 2., (N,)),
                             lambda x: rs.double_sided_maxwell_cdf(x, 1., 2.), 1., 12.),
    "weibull_min": (lambda k: random.weibull_min(k, 2., 1.5, (N,)),
                    lambda x: rs.weibull_min_cdf(x, 2., 1.5), None, None),
    "pareto": (lambda k: random.pareto(k, 3., (N,)), lambda x: rs.pareto_cdf(x, 3.), 1.5, None),
    "triangular": (lambda k: random.triangular(k, 0., 1., 3., (N,)),
                   lambda x: rs.triangular_cdf(x, 0., 1., 3.), 4 / 3, 7 / 18),
    "lognormal": (lambda k: random.lognormal(k, 0.5, (N,)),
                  lambda x: rs.lognormal_cdf(x, 0.5), np.exp(0.125), None),
    "rayleigh": (lambda k: random.rayleigh(k, 2., (N,)), lambda x: rs.rayleigh_cdf(x, 2.),
                 2 * np.sqrt(np.pi / 2), (4 - np.pi) / 2 * 4),
}


@pytest.mark.parametrize("name", list(CONTINUOUS))
def test_continuous_distribution(name):
  sample, cdf, mean, var = CONTINUOUS[name]
  x = np.asarray(sample(KEY), np.float64)
  rs.check_ks(x, cdf, name=name)
  if mean is not None:
    rs.check_moments(x, mean, var, name=name,
                     fourth_central_moment=None if var is None else 10 * var * var)


def test_discrete_distributions():
  x = np.asarray(random.rademacher(KEY, (N,)))
  rs.check_chi_square(x, [-1, 1], [.5, .5], name="rademacher")
  x = np.asarray(random.geometric(KEY, 0.3, (N,)))
  k = np.arange(1, 30)
  rs.check_chi_square(x, k, rs.geometric_pmf(k, 0.3), name="geometric")
  rs.check_moments(x, 1 / 0.3, 0.7 / 0.09, fourth_central_moment=20 * (0.7 / 0.09) ** 2)
  probs = np.array([.1, .2, .3, .4])
  x = np.asarray(random.categorical(KEY, jnp.log(jnp.asarray(probs, np.float32)), shape=(N,)))
  rs.check_chi_square(x, np.arange(4), probs, name="categorical")
  x = np.asarray(random.choice(KEY, 4, (N,), p=jnp.asarray(probs, np.float32)))
  rs.check_chi_square(x, np.arange(4), probs, name="choice with p")
  x = np.asarray(random.choice(KEY, 5, (N,)))
  rs.check_chi_square(x, np.arange(5), np.full(5, .2), name="choice")


def test_permutation_uniform():
  # first element of permutation(k, 4) over many keys is uniform on 0..3
  keys = random.split(KEY, 2000)
  firsts = np.array([int(random.permutation(k, 4)[0]) for k in np.asarray(keys)[:400]])
  rs.check_chi_square(firsts, np.arange(4), np.full(4, .25), name="permutation[0]")


# --- shapes, dtypes, errors ---------------------------------------------------------

def test_shapes_and_dtypes():
  k = KEY
  assert random.exponential(k, (2, 3)).shape == (2, 3)
  assert random.gumbel(k, (), jnp.float16).dtype == np.float16
  assert random.laplace(k, (5,), jnp.bfloat16).dtype == jnp.bfloat16
  assert random.rademacher(k, (3,), jnp.int8).dtype == np.int8
  assert set(np.asarray(random.rademacher(k, (50,), jnp.float32)).tolist()) == {-1., 1.}
  assert random.pareto(k, jnp.ones((2, 3))).shape == (2, 3)
  assert random.rayleigh(k, jnp.ones(3), (2, 3)).shape == (2, 3)
  assert random.geometric(k, jnp.full((4,), .5)).dtype == np.int32
  assert random.triangular(k, 0., jnp.full((3,), .5), 1.).shape == (3,)
  assert random.lognormal(k).shape == ()
  assert random.double_sided_maxwell(k, jnp.zeros(2), 1., (3,)).shape == (3, 2)
  assert random.weibull_min(k, 1., 2., (4,), jnp.float16).dtype == np.float16
  assert random.categorical(k, jnp.zeros((2, 5))).shape == (2,)
  assert random.categorical(k, jnp.zeros((2, 5)), axis=0).shape == (5,)
  assert random.categorical(k, jnp.zeros((2, 5)), shape=(7, 2)).shape == (7, 2)
  assert random.choice(k, jnp.arange(12.).reshape(3, 4), (2,), axis=1).shape == (3, 2)
  assert random.choice(k, 3, (0,)).shape == (0,)
  x = jnp.arange(12).reshape(3, 4)
  p = np.asarray(random.permutation(k, x, axis=1, independent=True))
  assert (np.sort(p, axis=1) == np.asarray(x)).all()
  p = np.asarray(random.permutation(k, x, axis=1))
  assert sorted(p[0].tolist()) == [0, 1, 2, 3] and (p[1] == p[0] + 4).all()


def test_without_replacement_distinct():
  x = np.asarray(random.choice(KEY, 20, (20,), replace=False))
  assert sorted(x.tolist()) == list(range(20))
  x = np.asarray(random.choice(KEY, 6, (4,), replace=False, p=jnp.full(6, 1 / 6)))
  assert len(set(x.tolist())) == 4
  x = np.asarray(random.categorical(KEY, jnp.zeros((3, 5)), shape=(5, 3), replace=False))
  assert x.shape == (5, 3) and all(sorted(x[:, j].tolist()) == list(range(5)) for j in range(3))


def _truncated_fraction(words):
  """(hi * 2**32 + lo) / 2**64 truncated to 24 significant bits, exactly."""
  n = int(words[0]) * 2 ** 32 + int(words[1])
  drop = max(n.bit_length() - 24, 0)
  return float((n >> drop) << drop) / 2.0 ** 64


@given(st.lists(st.tuples(st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1)),
                min_size=1, max_size=20)
       | st.just([(0, 0), (0, 1), (1, 0), (2 ** 31, 0), (2 ** 32 - 1, 2 ** 32 - 1)]))
def test_fixed_point_to_float32_truncates(pairs):
  bits = np.array(pairs, np.uint32).T
  got = np.asarray(random._fixed_point_to_float32(bits))
  want = np.array([_truncated_fraction(w) if w[0] or w[1] else 2.0 ** -65 for w in pairs],
                  np.float32)
  np.testing.assert_array_equal(got, want)


@given(st.integers(0, 2 ** 31 - 1))
@settings(max_examples=10)
def test_gumbel_highest_from_64_bit_fixed_point(seed):
  """mode="highest" (float32): each value is the Gumbel transform of the
  64-bit fraction u = (hi * 2**32 + lo) / 2**64 of two bits words, reflected
  to 1 - u for u >= 1/2 and truncated to float32 (float64 logs of the same
  float32 fraction agree to float32 rounding)."""
  k = random.key(seed)
  hi, lo = (w.astype(object) for w in np.asarray(random.bits(k, (2, 64), np.uint32)))
  flip = hi < 2 ** 31
  u = hi * 2 ** 32 + lo
  v = np.where(flip, u, 2 ** 64 - u)
  x = np.array([_truncated_fraction(divmod(int(n), 2 ** 32)) for n in v])
  want = np.where(flip, -np.log(-np.log1p(-x)), -np.log(-np.log(x)))
  np.testing.assert_allclose(random.gumbel(k, (64,), mode="highest"), want,
                             rtol=1e-6, atol=1e-6)
  assert random.gumbel(k, (3,), jnp.float16, mode="highest").dtype == np.float16


def test_errors():
  k = KEY
  with pytest.raises(ValueError, match="must be a float dtype"):
    random.exponential(k, (2,), jnp.int32)
  with pytest.raises(ValueError, match="must be an int dtype"):
    random.geometric(k, 0.5, (2,), jnp.float32)
  with pytest.raises(ValueError, match="valid mode for gumbel"):
    random.gumbel(k, mode="medium")
  with pytest.raises(TypeError, match="must be a sequence"):
    random.choice(k, 5, 3)
  with pytest.raises(ValueError, match="Cannot take a larger sample"):
    random.choice(k, 3, (4,), replace=False)
  with pytest.raises(ValueError, match="p must be None or a 1D vector"):
    random.choice(k, 3, (2,), p=jnp.ones(4) / 4)
  with pytest.raises(ValueError, match="a must be greater than 0"):
    random.choice(k, 0, (2,))
  with pytest.raises(TypeError, match="x must be an integer"):
    random.permutation(k, 3.0)
  with pytest.raises(ValueError, match="broadcast-compatible"):
    random.rayleigh(k, jnp.ones((2, 3)), (3,))
  with pytest.raises(ValueError, match="cannot exceed number"):
    random.categorical(k, jnp.zeros(3), shape=(4,), replace=False)
  with pytest.raises(TypeError, match="invalid PRNG key"):
    random.laplace(jnp.zeros(3, jnp.uint32))


# --- transformations ------------------------------------------------------------------

@pytest.mark.parametrize("f", [
    lambda k: random.exponential(k, (3,)), lambda k: random.gumbel(k, (3,), mode="high"),
    lambda k: random.cauchy(k, (3,)), lambda k: random.maxwell(k, (3,)),
    lambda k: random.rademacher(k, (3,)), lambda k: random.geometric(k, .4, (3,)),
    lambda k: random.triangular(k, 0., .2, 1., (3,)), lambda k: random.permutation(k, 5),
    lambda k: random.choice(k, 5, (3,), p=jnp.full(5, .2)),
    lambda k: random.categorical(k, jnp.zeros(4), shape=(3,)),
])
def test_jit_and_vmap(f):
  keys = random.split(KEY, 3)
  eager = np.stack([np.asarray(f(k)) for k in keys])
  np.testing.assert_array_equal(np.asarray(jax.jit(f)(keys[0])), eager[0])
  np.testing.assert_array_equal(np.asarray(jax.vmap(f)(keys)), eager)


def test_reparameterized_gradients():
  # d/db exp(e / b) = -e / b**2 * exp(e / b); d/dscale of rayleigh = sample / scale
  e = random.exponential(KEY, (4,))
  g = jax.grad(lambda b: random.pareto(KEY, b, (4,)).sum())(3.)
  np.testing.assert_allclose(g, np.sum(-e / 9 * np.exp(e / 3)), rtol=1e-5)
  r = random.rayleigh(KEY, 2., (4,))
  g = jax.grad(lambda s: random.rayleigh(KEY, s, (4,)).sum())(2.)
  np.testing.assert_allclose(g, np.sum(r) / 2, rtol=1e-5)
