"""Tests of the gamma samplers of refimpl/random.py: gamma, loggamma (the
`random_gamma` primitive), beta, dirichlet, chisquare, f, t,
generalized_normal and ball.

Golden values (tests/data/prng.json, JAX 0.10.2, PRNGKey(3) and
PRNGKey(2024)): the bits and the rejection decisions are exact; the values go
through log, sqrt, pow and exp (XLA's float32 polynomials in JAX, correctly
rounded in refimpl; erf_inv is XLA's in both), so they differ by a few ulp.
Measured maxima: gamma 2, loggamma 0, beta 2, dirichlet 2, chisquare 1, f 4,
t 1, generalized_normal 0, ball 2; tested with the bound GAMMA_ULPS = 8.
"""

import json
import math
import pathlib

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from conformance import random_stats as rs
from refimpl import lax, random

SAMPLERS = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())[
    "samplers (threefry_partitionable=True)"]
GAMMA_ULPS = 8   # measured: 4 (f); see the module docstring
K = random.PRNGKey
N = 6000


GOLDEN_CALLS = {
    "gamma(PRNGKey({}), 2.5, (4,))": lambda k: random.gamma(k, 2.5, (4,)),
    "gamma(PRNGKey({}), 0.3, (4,))": lambda k: random.gamma(k, 0.3, (4,)),
    "loggamma(PRNGKey({}), 0.5, (4,))": lambda k: random.loggamma(k, 0.5, (4,)),
    "beta(PRNGKey({}), 2., 3., (4,))": lambda k: random.beta(k, 2., 3., (4,)),
    "dirichlet(PRNGKey({}), [1.,2.,3.], (2,))":
        lambda k: random.dirichlet(k, jnp.array([1., 2., 3.]), (2,)),
    "chisquare(PRNGKey({}), 3., (4,))": lambda k: random.chisquare(k, 3., (4,)),
    "f(PRNGKey({}), 3., 5., (4,))": lambda k: random.f(k, 3., 5., (4,)),
    "t(PRNGKey({}), 5., (4,))": lambda k: random.t(k, 5., (4,)),
    "generalized_normal(PRNGKey({}), 1.5, (4,))":
        lambda k: random.generalized_normal(k, 1.5, (4,)),
    "ball(PRNGKey({}), 3, shape=(2,))": lambda k: random.ball(k, 3, shape=(2,)),
}


# --- golden values ---------------------------------------------------------------------

@pytest.mark.parametrize("seed", [3, 2024])
@pytest.mark.parametrize("name", list(GOLDEN_CALLS))
def test_golden(name, seed):
  entry = SAMPLERS[name.format(seed)]
  want = np.array(entry["data"], entry["dtype"]).reshape(entry["shape"])
  x = GOLDEN_CALLS[name](K(seed))
  assert x.dtype == want.dtype and x.shape == want.shape
  assert rs.ulp_distance(x, want) <= GAMMA_ULPS


def test_loggamma_is_log_of_gamma_with_the_same_bits():
  for a in (0.05, 0.3, 1.0, 4.0):
    g = random.gamma(K(5), a, (200,))
    lg = random.loggamma(K(5), a, (200,))
    normal = np.asarray(g) >= np.finfo(np.float32).tiny   # gamma underflows below
    np.testing.assert_allclose(np.exp(np.asarray(lg, np.float64))[normal], g[normal],
                               rtol=2e-5)
    assert normal.sum() >= 190


# --- statistics ------------------------------------------------------------------------

@pytest.mark.parametrize("a", [0.3, 1.0, 2.5, 20.0])
def test_gamma_distribution(a):
  x = random.gamma(K(11), a, (N,))
  rs.check_ks(x, lambda v: rs.gamma_cdf(v, a))
  rs.check_moments(x, a, a, 3 * a * a + 6 * a)


def test_loggamma_distribution():
  rs.check_ks(random.loggamma(K(12), 0.1, (N,)), lambda v: rs.loggamma_cdf(v, 0.1))
  # small a: about 12% of gamma(0.02) samples underflow to 0 in float32 (below
  # e**-103); their logs stay finite
  lg = random.loggamma(K(12), 0.02, (N,))
  assert np.isfinite(lg).all() and (np.asarray(lg) < -104).mean() > 0.08
  rs.check_ks(lg, lambda v: rs.loggamma_cdf(v, 0.02))


def test_beta_distribution():
  a, b = 2.0, 0.5
  x = random.beta(K(13), a, b, (N,))
  rs.check_ks(x, lambda v: rs.beta_cdf(v, a, b))
  rs.check_moments(x, a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1)))


def test_dirichlet_distribution():
  alpha = np.array([0.5, 2.0, 3.5], np.float32)
  x = random.dirichlet(K(14), alpha, (N,))
  assert x.shape == (N, 3)
  np.testing.assert_allclose(np.sum(x, -1), 1, rtol=1e-6)
  total = alpha.sum()
  for i in range(3):   # each marginal is Beta(alpha_i, sum - alpha_i)
    rs.check_ks(x[:, i], lambda v: rs.beta_cdf(v, alpha[i], total - alpha[i]))


def test_chisquare_f_t_distributions():
  rs.check_ks(random.chisquare(K(15), 3.0, (N,)), lambda v: rs.chisquare_cdf(v, 3.0))
  rs.check_moments(random.chisquare(K(16), 4.0, (N,)), 4.0, 8.0, 12 * 16 + 48 * 4)
  rs.check_ks(random.f(K(17), 3.0, 7.0, (N,)), lambda v: rs.f_cdf(v, 3.0, 7.0))
  rs.check_ks(random.t(K(18), 2.5, (N,)), lambda v: rs.t_cdf(v, 2.5))
  rs.check_moments(random.t(K(19), 10.0, (N,)), 0.0, 10 / 8, 3 * 100 / (8 * 6))


@pytest.mark.parametrize("p", [0.7, 1.5, 4.0])
def test_generalized_normal_distribution(p):
  x = random.generalized_normal(K(20), p, (N,))
  rs.check_ks(x, lambda v: rs.generalized_normal_cdf(v, p))
  var = math.gamma(3 / p) / math.gamma(1 / p)
  rs.check_moments(x, 0.0, var, math.gamma(5 / p) / math.gamma(1 / p))


@pytest.mark.parametrize("d, p", [(3, 2), (2, 1.0), (4, 3.0)])
def test_ball_is_uniform_in_the_ball(d, p):
  x = np.asarray(random.ball(K(21), d, p, (N,)), np.float64)
  assert x.shape == (N, d)
  radius = np.sum(np.abs(x) ** p, -1) ** (1 / p)
  assert (radius < 1).all()
  rs.check_ks(radius, lambda r: np.clip(r, 0, 1) ** d)   # uniform: P(|x| <= r) = r**d
  # the direction is uniform too: each coordinate is symmetric with the same law
  rs.check_moments(np.sign(x[:, 0]), 0.0, 1.0)


# --- shapes, dtypes, transformations -----------------------------------------------------

def test_shapes_dtypes_and_broadcasting():
  a = np.array([[0.5], [2.0]], np.float32)
  assert random.gamma(K(0), a).shape == (2, 1)
  assert random.gamma(K(0), a, (2, 3)).shape == (2, 3)
  assert random.loggamma(K(0), 1.0, (3,), np.float16).dtype == np.float16
  assert random.gamma(K(0), 1.0).dtype == np.float32 and random.gamma(K(0), 1.0).shape == ()
  assert random.beta(K(0), np.ones(3), np.ones((2, 1))).shape == (2, 3)
  assert random.f(K(0), np.ones(3), 2.0).shape == (3,)
  assert random.chisquare(K(0), np.ones(2)).shape == (2,)
  assert random.t(K(0), 3.0, (2, 2)).shape == (2, 2)
  assert random.dirichlet(K(0), np.ones((2, 4))).shape == (2, 4)
  assert random.dirichlet(K(0), np.ones(4), (5, 2)).shape == (5, 2, 4)
  assert random.ball(K(0), 5).shape == (5,)
  assert random.gamma(K(0), np.ones((0, 3))).shape == (0, 3)
  with jax.enable_x64():
    assert random.gamma(K(0), 2.0, (2,)).dtype == np.float64
    assert random.beta(K(0), 2.0, 3.0, dtype=np.float32).dtype == np.float32
  # elements use distinct keys: split(key, size) in row-major order
  x = random.gamma(K(1), np.array([2.0, 2.0, 2.0], np.float32))
  assert len(set(np.asarray(x).tolist())) == 3
  np.testing.assert_array_equal(random.gamma(K(1), 2.0, (2, 2)).ravel(),
                                random.gamma(K(1), 2.0, (4,)))


def test_gamma_edge_values():
  # a = 0: the boost u ** (1 / 0) is 0; a <= -2/3 (d = a + 1 - 1/3 <= 0) or NaN:
  # NaN; a = inf: inf
  x = random.gamma(K(2), np.array([0.0, -0.7, -1.0, np.nan, np.inf], np.float32))
  assert x[0] == 0 and np.isnan(x[1:4]).all() and x[4] == np.inf


def test_jit_equals_eager():
  for fn in (lambda k, a: random.gamma(k, a, (3,)),
             lambda k, a: random.loggamma(k, a, (3,)),
             lambda k, a: random.beta(k, a, 2.0, (3,)),
             lambda k, a: random.dirichlet(k, jnp.stack([a, a + 1])),
             lambda k, a: random.t(k, a, (3,)),
             lambda k, a: random.f(k, a, 3.0, (3,))):
    np.testing.assert_array_equal(jax.jit(fn)(K(4), 1.5), fn(K(4), 1.5))
  np.testing.assert_array_equal(jax.jit(random.ball, static_argnums=1)(K(4), 3),
                                random.ball(K(4), 3))


def test_make_jaxpr_binds_random_gamma():
  """In a jitted `_gamma` of the key and `a` (shape, dtype and log_space
  static), as JAX."""
  jaxpr = str(jax.make_jaxpr(lambda k, a: random.loggamma(k, a, (2,)))(K(0), 1.0))
  for piece in ("= jit[", "name=_gamma", "jaxpr={ lambda ; e:key<fry>[] f:f32[]. let",
                "random_gamma[log_space=True]"):
    assert piece in jaxpr, jaxpr
  assert random.random_gamma_p.name == "random_gamma"


def test_vmap_over_keys_and_parameters():
  keys = random.split(K(6), 4)
  a = np.array([0.3, 1.0, 2.5, 7.0], np.float32)
  batched = jax.vmap(lambda k, x: random.gamma(k, x, (2,)))(keys, a)
  np.testing.assert_array_equal(
      batched, np.stack([random.gamma(k, x, (2,)) for k, x in zip(keys, a)]))
  batched = jax.vmap(lambda k: random.beta(k, 2.0, 3.0, (3,)))(keys)
  np.testing.assert_array_equal(batched, np.stack([random.beta(k, 2.0, 3.0, (3,)) for k in keys]))
  # unbatched key, batched a: random_gamma's batching rule broadcasts the key
  batched = jax.vmap(lambda x: random.gamma(K(7), x))(a)
  np.testing.assert_array_equal(batched, [random.gamma(K(7), x) for x in a])
  np.testing.assert_array_equal(jax.vmap(lambda k: random.chisquare(k, 2.0, (2,)))(keys),
                                np.stack([random.chisquare(k, 2.0, (2,)) for k in keys]))


def test_errors():
  with pytest.raises(ValueError, match="dtype argument to `gamma` must be a float"):
    random.gamma(K(0), 1.0, dtype=np.int32)
  with pytest.raises(ValueError, match="dtype argument to `gamma` must be a float"):
    random.loggamma(K(0), 1.0, dtype=np.int32)
  for name, call in (("beta", lambda: random.beta(K(0), 1., 1., dtype=int)),
                     ("dirichlet", lambda: random.dirichlet(K(0), np.ones(2), dtype=int)),
                     ("chisquare", lambda: random.chisquare(K(0), 1., dtype=int)),
                     ("f", lambda: random.f(K(0), 1., 1., dtype=int)),
                     ("t", lambda: random.t(K(0), 1., dtype=int))):
    with pytest.raises(ValueError, match=f"dtype argument to `{name}` must be a float"):
      call()
  with pytest.raises(ValueError, match="gamma parameter shapes must be broadcast-compatible"):
    random.gamma(K(0), np.ones(3), (1,))
  with pytest.raises(ValueError, match="beta parameter shapes"):
    random.beta(K(0), np.ones(3), 1.0, (1,))
  with pytest.raises(ValueError, match="dirichlet requires alpha.ndim >= 1"):
    random.dirichlet(K(0), 1.0)
  with pytest.raises(ValueError, match="t parameter shapes"):
    random.t(K(0), np.ones(3), (1,))
  assert random.t(K(0), np.ones(3)).shape == (3,)   # shape=None: df's shape, as JAX 0.10
  with pytest.raises(TypeError):
    random.ball(K(0), 2.5)
  with pytest.raises(TypeError, match="invalid PRNG key data"):
    random.gamma(np.zeros(3, np.uint32), 1.0)
  with pytest.raises(TypeError, match="random_gamma requires a key array"):
    random.random_gamma_p.bind(jnp.zeros(2, jnp.float32), jnp.ones(2), log_space=False)
  with pytest.raises(ValueError, match="is not a prefix of the shape"):
    random.random_gamma_p.bind(random.split(random.key(0), 3), jnp.ones(2), log_space=False)


# --- gradients ---------------------------------------------------------------------------

def test_gamma_gradient_is_the_implicit_gradient():
  a = np.array([0.2, 1.0, 3.0, 10.0], np.float32)
  x, jvp = jax.jvp(lambda a: random.gamma(K(8), a), (a,), (np.ones_like(a),))
  np.testing.assert_allclose(jvp, lax.random_gamma_grad(a, x), rtol=1e-6)
  # the CDF at the sample stays put: d/da P(a, x(a)) = 0 (implicit differentiation)
  _, dp = jax.jvp(lambda a: lax.igamma(a, random.gamma(K(8), a)), (a,), (np.ones_like(a),))
  np.testing.assert_allclose(dp, 0, atol=1e-5)
  # loggamma's gradient is that of log(gamma)
  lg_jvp = jax.jvp(lambda a: random.loggamma(K(8), a), (a,), (np.ones_like(a),))[1]
  np.testing.assert_allclose(lg_jvp, jvp / x, rtol=1e-4)


def test_gradients_are_unbiased():
  """E[gamma(a)] = a and E[beta(a, b)] = a / (a + b): the mean of the
  reparameterized gradients estimates the derivative of the mean."""
  grads = jax.grad(lambda a: random.gamma(K(9), a, (3000,)).mean())(1.7)
  assert abs(float(grads) - 1.0) < 0.05
  a, b = 2.0, 3.0
  grads = jax.grad(lambda a: random.beta(K(10), a, b, (3000,)).mean())(a)
  assert abs(float(grads) - b / (a + b) ** 2) < 0.01
  grads = jax.grad(lambda df: random.chisquare(K(11), df, (3000,)).mean())(3.0)
  assert abs(float(grads) - 1.0) < 0.05


def test_grad_under_jit_and_vmap():
  g = lambda a: jax.grad(lambda a: random.gamma(K(12), a))(a)
  a = np.array([0.5, 2.0, 5.0], np.float32)
  np.testing.assert_allclose(jax.jit(jax.vmap(g))(a), [g(x) for x in a], rtol=1e-6)
