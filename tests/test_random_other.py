"""Tests of the "other samplers" of refimpl/random.py: truncated_normal, poisson,
binomial, multinomial, multivariate_normal, orthogonal, wald.

Golden values are JAX 0.10.2's (tests/data/prng.json, threefry_partitionable).
Exact: poisson and binomial (integer-valued results; the loops' accept/reject
decisions all agree), truncated_normal, and wald (its jitted body contracts
4 mean y + mean² y² and (mean + mean² y / 2) - (mean / 2) sqrt_term into
multiply-adds, as XLA does). Within a few ulp, measured against the golden
values:
* multivariate_normal (cholesky): the normals are exact (erf_inv is XLA's);
  the Cholesky factor and the einsum could round differently (they do not at
  the recorded keys). Bound: 1e-6 absolute.
* orthogonal: QR (LAPACK's Householder vs refimpl's) rounds differently; at
  most 7 ulp (absolute error under 2e-7). Bound: 1e-6 absolute.
`test_jit_and_vmap_over_keys_equal_eager` covers every sampler whose body JAX jits.
"""

import json
import pathlib

import numpy as np
import pytest

import refimpl as jax
import refimpl.numpy as jnp
from refimpl import random
from conformance import random_stats as rs

SAMPLERS = json.loads((pathlib.Path(__file__).parent / "data" / "prng.json").read_text())[
    "samplers (threefry_partitionable=True)"]
LINALG_ATOL = 1e-6          # measured: 2e-7 (orthogonal, 7 ulp)
COV = [[2., .5], [.5, 1.]]
K = random.PRNGKey


def expected(name):
  entry = SAMPLERS[name]
  return np.array(entry["data"], entry["dtype"]).reshape(entry["shape"])


# --- golden values ------------------------------------------------------------------

GOLDEN_EXACT = {
    "poisson(PRNGKey({}), 3.5, (6,))": lambda k: random.poisson(k, 3.5, (6,)),
    "poisson(PRNGKey({}), 40., (4,))": lambda k: random.poisson(k, 40., (4,)),
    "binomial(PRNGKey({}), 10., 0.3, (6,))": lambda k: random.binomial(k, 10., 0.3, (6,)),
    "truncated_normal(PRNGKey({}), -1, 2, (4,))":
        lambda k: random.truncated_normal(k, -1, 2, (4,)),
    "wald(PRNGKey({}), 1.5, (4,))": lambda k: random.wald(k, 1.5, (4,)),
}
GOLDEN_CLOSE = {
    "multivariate_normal(PRNGKey({}), zeros(2), [[2,.5],[.5,1]], (3,))":
        lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.array(COV), (3,)),
    "orthogonal(PRNGKey({}), 3)": lambda k: random.orthogonal(k, 3),
}


@pytest.mark.parametrize("seed", [3, 2024])
@pytest.mark.parametrize("name", list(GOLDEN_EXACT))
def test_golden_exact(name, seed):
  x, want = GOLDEN_EXACT[name](K(seed)), expected(name.format(seed))
  assert x.dtype == want.dtype and x.shape == want.shape
  np.testing.assert_array_equal(np.asarray(x), want)


@pytest.mark.parametrize("seed", [3, 2024])
@pytest.mark.parametrize("name", list(GOLDEN_CLOSE))
def test_golden_linalg(name, seed):
  x, want = GOLDEN_CLOSE[name](K(seed)), expected(name.format(seed))
  assert x.dtype == want.dtype and x.shape == want.shape
  np.testing.assert_allclose(np.asarray(x), want, rtol=0, atol=LINALG_ATOL)


# --- distributions --------------------------------------------------------------------

N = 6000


def test_truncated_normal_distribution():
  x = np.asarray(random.truncated_normal(K(0), -1.5, 0.5, (N,)))
  assert x.min() > -1.5 and x.max() < 0.5
  rs.check_ks(x, lambda t: rs.truncated_normal_cdf(t, -1.5, 0.5))


@pytest.mark.parametrize("lam", [3.5, 40.])   # Knuth, then transformed rejection
def test_poisson_distribution(lam):
  x = np.asarray(random.poisson(K(1), lam, (N,)))
  values = np.arange(int(lam * 3 + 20))
  rs.check_chi_square(x, values, rs.poisson_pmf(values, lam))
  rs.check_moments(x, lam, lam, fourth_central_moment=lam * (1 + 3 * lam))


def test_poisson_mixed_rates_and_edge_cases():
  lam = jnp.array([0., 2., 25., np.nan], jnp.float32)
  x = np.asarray(random.poisson(K(2), lam, (N, 4)))
  assert (x[:, 0] == 0).all() and (x[:, 3] == -1).all()   # rate 0; NaN (as JAX)
  for j, rate in [(1, 2.), (2, 25.)]:
    values = np.arange(60)
    rs.check_chi_square(x[:, j], values, rs.poisson_pmf(values, rate), name=f"lam={rate}")


@pytest.mark.parametrize("n,p", [(10., 0.3), (100., 0.7), (40., 0.05)])  # inversion, BTRS
def test_binomial_distribution(n, p):
  x = np.asarray(random.binomial(K(3), n, p, (N,)))
  values = np.arange(int(n) + 1)
  rs.check_chi_square(x, values, rs.binomial_pmf(values, n, p))
  v = n * p * (1 - p)
  rs.check_moments(x, n * p, v, fourth_central_moment=v * (1 + 3 * (n - 2) * p * (1 - p)))


def test_binomial_edge_cases():
  n = jnp.array([np.nan, -1., np.inf, 5., 5., 7.5, 0.])
  p = jnp.array([0.3, 0.3, 0.3, np.nan, 1., 0.5, 0.5])
  x = np.asarray(random.binomial(K(4), n, p))
  assert np.isnan(x[:2]).all() and x[2] == np.inf and np.isnan(x[3])
  assert x[4] == 5. and 0 <= x[5] <= 7 and x[6] == 0.


def test_multinomial_distribution():
  n, p = 20., np.array([0.2, 0.3, 0.5], np.float32)
  x = np.asarray(random.multinomial(K(5), n, p, shape=(2000, 3)))
  assert x.shape == (2000, 3) and x.dtype == np.float32
  np.testing.assert_array_equal(x.sum(-1), n)
  values = np.arange(21)
  for j in range(3):   # each margin is binomial(n, p_j)
    rs.check_chi_square(x[:, j], values, rs.binomial_pmf(values, n, p[j]), name=f"cat {j}")
  # scan over categories: category j is binomial(key_j, n - counts so far, ratio_j)
  keys = random.split(K(6), 3)
  first = random.binomial(keys[0], 20., 0.2)
  assert random.multinomial(K(6), 20., p)[0] == first


def test_multinomial_unnormalized_and_zero_probs():
  x = np.asarray(random.multinomial(K(7), jnp.array([5., 9.]), jnp.array([2., 0., 2.]),
                                    shape=(2, 3), dtype=jnp.int32))
  assert x.dtype == np.int32 and (x[:, 1] == 0).all()
  np.testing.assert_array_equal(x.sum(-1), [5, 9])


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_distribution(method):
  mean = np.array([1., -2.], np.float32)
  x = np.asarray(random.multivariate_normal(K(8), mean, jnp.array(COV), (N,), method=method))
  assert x.shape == (N, 2)
  for a in ([1., 0.], [0., 1.], [1., -1.]):   # a·x ~ N(a·mean, aᵀ cov a)
    a = np.array(a)
    loc, var = a @ mean, a @ np.array(COV) @ a
    rs.check_ks(x @ a, lambda t: rs.normal_cdf(t, loc, np.sqrt(var)), name=f"{method} {a}")


def test_multivariate_normal_methods_agree_on_diagonal_cov():
  """For a diagonal covariance every factor is diag(sqrt(var)) up to column
  order and signs; with sorted equal variances the three coincide up to sign."""
  cov = jnp.eye(3) * 4.
  outs = [np.asarray(random.multivariate_normal(K(9), jnp.zeros(3), cov, method=m))
          for m in ("cholesky", "eigh", "svd")]
  for o in outs[1:]:
    np.testing.assert_allclose(np.abs(o), np.abs(outs[0]), rtol=1e-6)


def test_orthogonal_distribution():
  q = np.asarray(random.orthogonal(K(10), 3, (3000,)))
  assert q.shape == (3000, 3, 3)
  np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(3), q.shape),
                             atol=2e-6)
  # Haar on O(3): each entry is uniform on [-1, 1]; det is ±1 with probability 1/2
  rs.check_ks(q[:, 0, 0], lambda t: rs.uniform_cdf(t, -1., 1.))
  rs.check_chi_square(np.sign(np.linalg.det(q)), [-1., 1.], [0.5, 0.5])


def test_orthogonal_complex_is_unitary():
  q = np.asarray(random.orthogonal(K(11), 4, dtype=jnp.complex64))
  assert q.dtype == np.complex64
  np.testing.assert_allclose(q @ q.conj().T, np.eye(4), atol=2e-6)


@pytest.mark.parametrize("mean", [0.5, 2.])
def test_wald_distribution(mean):
  x = np.asarray(random.wald(K(12), mean, (N,)))
  assert (x > 0).all()
  rs.check_ks(x, lambda t: rs.wald_cdf(t, mean))
  rs.check_moments(x, mean, mean ** 3, fourth_central_moment=mean ** 6 * (3 + 15 * mean))


def test_wald_draws_normal_then_uniform_from_split():
  k1, k2 = random.split(K(13))
  mean = 1.5
  y = np.asarray(random.normal(k1, (5,)), np.float64) ** 2
  z = np.asarray(random.uniform(k2, (5,)))
  x = mean + mean ** 2 * y / 2 - mean / 2 * np.sqrt(4 * mean * y + mean ** 2 * y ** 2)
  want = np.where(z <= mean / (mean + x), x, mean ** 2 / x)
  np.testing.assert_allclose(np.asarray(random.wald(K(13), mean, (5,))), want, rtol=1e-5)


# --- shapes, dtypes, transformations, errors -------------------------------------------

def test_default_shapes_and_dtypes():
  k = K(0)
  assert random.truncated_normal(k, jnp.zeros(3), jnp.ones((2, 1))).shape == (2, 3)
  assert random.truncated_normal(k, 0., 1., dtype=jnp.float16).dtype == np.float16
  assert random.poisson(k, jnp.ones((2, 3))).shape == (2, 3)
  assert random.poisson(k, 1., (4,), dtype=jnp.int16).dtype == np.int16
  assert random.binomial(k, jnp.ones(3) * 5, 0.5).shape == (3,)
  assert random.binomial(k, 5, jnp.full((2, 1), 0.5), (2, 4)).shape == (2, 4)
  assert random.multinomial(k, 10., jnp.ones((2, 4)) / 4).shape == (2, 4)
  assert random.multivariate_normal(k, jnp.zeros((4, 2)), jnp.eye(2)).shape == (4, 2)
  assert random.multivariate_normal(k, jnp.zeros(2), jnp.stack([jnp.eye(2)] * 3)).shape == (3, 2)
  assert random.orthogonal(k, 2, (5,)).shape == (5, 2, 2)
  assert random.wald(k, jnp.ones(3)).shape == (3,)
  assert random.wald(k, 1., (2, 2), jnp.float16).dtype == np.float16


def test_errors():
  k = K(0)
  with pytest.raises(ValueError, match="must be a float dtype"):
    random.truncated_normal(k, 0., 1., dtype=jnp.int32)
  with pytest.raises(ValueError, match="broadcast-compatible"):
    random.truncated_normal(k, jnp.zeros((2, 3)), 1., (3,))
  with pytest.raises(ValueError, match="must be a float dtype"):
    random.binomial(k, 5, 0.5, dtype=jnp.int32)
  with pytest.raises(ValueError, match="must be a float dtype"):
    random.wald(k, 1., dtype=jnp.int32)
  with pytest.raises(ValueError, match="broadcast-compatible"):
    random.wald(k, jnp.ones((2, 3)), (3,))
  with pytest.raises(ValueError, match="method must be one of"):
    random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2), method="qr")
  with pytest.raises(ValueError, match="mean.ndim >= 1"):
    random.multivariate_normal(k, 0., jnp.eye(2))
  with pytest.raises(ValueError, match="cov.ndim >= 2"):
    random.multivariate_normal(k, jnp.zeros(2), jnp.ones(2))
  with pytest.raises(ValueError, match=r"cov.shape == \(..., n, n\) for n=2"):
    random.multivariate_normal(k, jnp.zeros(2), jnp.eye(3))
  with pytest.raises(ValueError, match="must be a float dtype"):
    random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2), dtype=jnp.int32)
  with pytest.raises(TypeError):
    random.orthogonal(k, 2.5)
  with pytest.raises(TypeError, match="binomial"):
    random.binomial(k, [5], 0.5)


SAMPLER_FNS = {
    # every sampler whose body JAX jits (ranges and scales that are not powers of
    # two, so that a multiply-add fused in one evaluation and not the other shows)
    "uniform": lambda k: random.uniform(k, (3,), minval=-2., maxval=5.),
    "normal": lambda k: random.normal(k, (3,)),
    "normal complex64": lambda k: random.normal(k, (3,), jnp.complex64),
    "randint": lambda k: random.randint(k, (3,), -5, 100),
    "permutation": lambda k: random.permutation(k, jnp.arange(6).reshape(3, 2)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (3,)),
    "bernoulli high": lambda k: random.bernoulli(k, 0.3, (3,), mode="high"),
    "cauchy": lambda k: random.cauchy(k, (3,)),
    "exponential": lambda k: random.exponential(k, (3,)),
    "gumbel": lambda k: random.gumbel(k, (3,)),
    "gumbel high": lambda k: random.gumbel(k, (3,), mode="high"),
    "gumbel highest": lambda k: random.gumbel(k, (3,), mode="highest"),
    "laplace": lambda k: random.laplace(k, (3,)),
    "logistic": lambda k: random.logistic(k, (3,)),
    "rademacher": lambda k: random.rademacher(k, (3,)),
    "maxwell": lambda k: random.maxwell(k, (3,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 0.7, 1.3, (3,)),
    "weibull_min": lambda k: random.weibull_min(k, 1.3, 1.5, (3,)),
    "pareto": lambda k: random.pareto(k, 3., (3,)),
    "rayleigh": lambda k: random.rayleigh(k, 1.3, (3,)),
    "lognormal": lambda k: random.lognormal(k, 0.7, (3,)),
    "triangular": lambda k: random.triangular(k, 0., .3, 1., (3,)),
    "geometric": lambda k: random.geometric(k, 0.3, (3,)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1., 2., (3,)),
    "poisson": lambda k: random.poisson(k, jnp.array([3., 30.]), (2,)),
    "binomial": lambda k: random.binomial(k, jnp.array([10., 200.]), 0.4),
    "multivariate_normal": lambda k: random.multivariate_normal(
        k, jnp.zeros(2), jnp.array(COV), (2,)),
    "wald": lambda k: random.wald(k, 1.5, (3,)),
    "gamma": lambda k: random.gamma(k, jnp.array([0.3, 2.5])),
    "loggamma": lambda k: random.loggamma(k, jnp.array([0.3, 2.5])),
    "dirichlet": lambda k: random.dirichlet(k, jnp.array([.5, 1., 2.])),
    "chisquare": lambda k: random.chisquare(k, 3., (3,)),
    "f": lambda k: random.f(k, 3., 5., (3,)),
    "t": lambda k: random.t(k, 3., (3,)),
    # not jitted in JAX
    "multinomial": lambda k: random.multinomial(k, 10., jnp.array([.2, .3, .5])),
    "orthogonal": lambda k: random.orthogonal(k, 2),
}


@pytest.mark.parametrize("name", list(SAMPLER_FNS))
def test_jit_and_vmap_over_keys_equal_eager(name):
  """Eager, jit and vmap give the same bits: a sampler's jitted body is a
  compiled program however it is called."""
  f = SAMPLER_FNS[name]
  keys = random.split(K(14), 3)
  eager = [np.asarray(f(k)) for k in keys]
  batched = np.asarray(jax.vmap(f)(keys))
  for i in range(3):
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(keys[i])), eager[i])
    np.testing.assert_array_equal(batched[i], eager[i])


# --- gradients ----------------------------------------------------------------------

def test_multivariate_normal_grad_wrt_mean_and_cov_factor():
  k = K(15)
  g = jax.grad(lambda m: random.multivariate_normal(k, m, jnp.array(COV)).sum())(jnp.zeros(2))
  np.testing.assert_allclose(np.asarray(g), [1., 1.])
  # d/ds of mvn(mean, s² I) = z (the standard normal draw)
  z = np.asarray(random.normal(k, (2,)))
  g = jax.grad(lambda s: random.multivariate_normal(
      k, jnp.zeros(2), s * s * jnp.eye(2))[0])(jnp.float32(1.5))
  np.testing.assert_allclose(float(g), z[0], rtol=1e-5)


def test_wald_grad_wrt_mean_matches_finite_difference():
  k = K(16)
  f = lambda m: random.wald(k, m, (4,)).sum()
  g = float(jax.grad(f)(jnp.float32(1.5)))
  eps = 1e-2
  fd = (float(f(jnp.float32(1.5 + eps))) - float(f(jnp.float32(1.5 - eps)))) / (2 * eps)
  np.testing.assert_allclose(g, fd, rtol=1e-2)


def test_truncated_normal_grad_wrt_bounds():
  """u = a + f (b - a) with a, b = erf(bounds / sqrt 2): the sample moves with the
  bounds through a and b (the clip bounds are stop_gradient)."""
  k = K(17)
  f = lambda lo, hi: random.truncated_normal(k, lo, hi)
  x = float(f(-1., 2.))
  dlo, dhi = jax.grad(f, argnums=(0, 1))(jnp.float32(-1.), jnp.float32(2.))
  phi = lambda t: np.exp(-t * t / 2)
  # x = Φ⁻¹((1-w) Φ(lo) + w Φ(hi)): dx/dlo = (1-w) φ(lo) / φ(x), dx/dhi = w φ(hi) / φ(x)
  w = (rs.normal_cdf(x) - rs.normal_cdf(-1.)) / (rs.normal_cdf(2.) - rs.normal_cdf(-1.))
  np.testing.assert_allclose(float(dlo), (1 - w) * phi(-1.) / phi(x), rtol=1e-3)
  np.testing.assert_allclose(float(dhi), w * phi(2.) / phi(x), rtol=1e-3)
