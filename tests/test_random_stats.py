"""Tests of conformance/random_stats.py: CDFs, pmfs and the statistical tests.

Reference values come from closed forms, printed tables, the exact
distribution of the Kolmogorov–Smirnov statistic, and samples drawn with
NumPy's own generators (`np.random.default_rng`), whose distributions are
known to be right. Each sampled check also runs against a wrong distribution,
which must be rejected, so the checks can fail.
"""

import math

import numpy as np
import pytest

from conformance import random_stats as rs

# --------------------------------------------------------------------------
# Special functions and CDFs at known values

KNOWN_VALUES = [
    # (expression, expected, relative tolerance)
    (lambda: rs.normal_cdf(1.96), 0.9750021048517795, 1e-14),
    (lambda: rs.normal_cdf(-10.0), 7.619853024160527e-24, 1e-12),
    (lambda: rs.normal_cdf(3.0, loc=1.0, scale=2.0), 0.8413447460685429, 1e-14),
    # chi-square 0.95 quantiles (tables): df 1, 10, 100
    (lambda: rs.chisquare_cdf(3.841458820694124, 1), 0.95, 1e-12),
    (lambda: rs.chisquare_cdf(18.307038053275146, 10), 0.95, 1e-12),
    (lambda: rs.chisquare_cdf(124.34211340400407, 100), 0.95, 1e-12),
    (lambda: rs.chisquare_cdf(0.10258658877510107, 2), 0.05, 1e-12),
    # gamma 0.95 quantile, shape 5 (= chi-square 10 / 2)
    (lambda: rs.gamma_cdf(9.153519026637573, 5.0), 0.95, 1e-12),
    (lambda: rs.beta_cdf(0.5, 2, 3), 0.6875, 1e-14),
    (lambda: rs.t_cdf(2.015048372669157, 5), 0.95, 1e-9),
    (lambda: rs.t_cdf(-2.015048372669157, 5), 0.05, 1e-8),
    (lambda: rs.f_cdf(3.325834530413011, 5, 10), 0.95, 1e-9),
    (lambda: rs.maxwell_cdf(1.5381722544550522), 0.5, 1e-10),   # Maxwell median
    (lambda: rs.lognormal_cdf(math.e, 1.0), 0.8413447460685429, 1e-14),
    (lambda: rs.pareto_cdf(2.0, 3.0), 0.875, 1e-14),
    (lambda: rs.weibull_min_cdf(2.0, 2.0, 1.5), 1 - math.exp(-1), 1e-14),
    (lambda: rs.rayleigh_cdf(2.0, 2.0), 1 - math.exp(-0.5), 1e-14),
    (lambda: rs.triangular_cdf(0.5, 0.0, 1.0, 2.0), 0.125, 1e-14),
    (lambda: rs.triangular_cdf(1.5, 0.0, 1.0, 2.0), 0.875, 1e-14),
    (lambda: rs.wald_cdf(1.0, 1.0), 0.6681020012231706, 1e-12),
    (lambda: rs.uniform_cdf(0.25, -1.0, 1.0), 0.625, 1e-14),
    (lambda: rs.cauchy_cdf(1.0), 0.75, 1e-14),
    (lambda: rs.laplace_cdf(-1.0), 0.5 * math.exp(-1), 1e-14),
    (lambda: rs.logistic_cdf(math.log(3.0)), 0.75, 1e-14),
    (lambda: rs.gumbel_cdf(0.0), math.exp(-1), 1e-14),
    (lambda: rs.exponential_cdf(math.log(2.0)), 0.5, 1e-14),
    # p-values: chi-square upper tails at the table's 0.05 and 0.001 points
    (lambda: rs.regularized_gamma_q(5 / 2, 11.070497693516351 / 2), 0.05, 1e-10),
    (lambda: rs.regularized_gamma_q(10 / 2, 29.58829844507442 / 2), 0.001, 1e-9),
    (lambda: rs.regularized_gamma_q(0.5, 100.0), math.erfc(10.0), 1e-12),
]


@pytest.mark.parametrize("i", range(len(KNOWN_VALUES)))
def test_known_values(i):
  fn, expected, rtol = KNOWN_VALUES[i]
  np.testing.assert_allclose(fn(), expected, rtol=rtol)


def test_regularized_gamma_against_closed_forms():
  x = np.array([1e-3, 0.3, 1.0, 2.5, 7.0, 20.0, 60.0])
  # P(1/2, x) = erf(√x)
  np.testing.assert_allclose(rs.regularized_gamma_p(0.5, x),
                             [math.erf(math.sqrt(v)) for v in x], rtol=1e-13)
  # integer a: Q(a, x) = e^{-x} Σ_{k<a} x^k / k!, in both the series and fraction regimes
  for a in (1, 3, 10, 30):
    q = [math.exp(-v) * sum(v ** k / math.factorial(k) for k in range(a)) for v in x]
    np.testing.assert_allclose(rs.regularized_gamma_q(a, x), q, rtol=1e-11)
    np.testing.assert_allclose(rs.regularized_gamma_p(a, x), 1 - np.array(q), rtol=1e-11,
                               atol=1e-15)
  assert rs.regularized_gamma_p(2.0, 0.0) == 0.0 and rs.regularized_gamma_q(2.0, 0.0) == 1.0
  assert rs.regularized_gamma_p(2.0, np.inf) == 1.0
  assert np.isnan(rs.regularized_gamma_p(-1.0, 1.0)) and np.isnan(rs.regularized_gamma_p(1.0, -1.0))


def test_regularized_beta_against_closed_forms():
  x = np.array([0.0, 1e-4, 0.1, 0.37, 0.5, 0.8, 0.999, 1.0])
  np.testing.assert_allclose(rs.regularized_beta(2.5, 1.0, x), x ** 2.5, rtol=1e-13)
  np.testing.assert_allclose(rs.regularized_beta(1.0, 4.0, x), 1 - (1 - x) ** 4, rtol=1e-12)
  np.testing.assert_allclose(rs.regularized_beta(0.5, 0.5, x),
                             2 / np.pi * np.arcsin(np.sqrt(x)), rtol=1e-12)
  # symmetry I_x(a, b) = 1 - I_{1-x}(b, a), with large parameters
  np.testing.assert_allclose(rs.regularized_beta(40.0, 7.0, x),
                             1 - rs.regularized_beta(7.0, 40.0, 1 - x),
                             rtol=1e-11, atol=1e-15)
  assert np.isnan(rs.regularized_beta(1.0, 1.0, 1.5))


def test_cdf_identities():
  t = np.linspace(-6, 6, 41)
  # t(1) is Cauchy, t(2) has a closed form, F(1, ν) is t(ν)²
  np.testing.assert_allclose(rs.t_cdf(t, 1.0), rs.cauchy_cdf(t), rtol=1e-12, atol=1e-15)
  np.testing.assert_allclose(rs.t_cdf(t, 2.0), 0.5 + t / (2 * np.sqrt(2 + t * t)),
                             rtol=1e-12, atol=1e-15)
  pos = t[t > 0]
  np.testing.assert_allclose(rs.f_cdf(pos ** 2, 1.0, 7.0), 2 * rs.t_cdf(pos, 7.0) - 1, rtol=1e-12)
  # generalized normal: p = 2 is N(0, 1/2), p = 1 is Laplace
  np.testing.assert_allclose(rs.generalized_normal_cdf(t, 2.0), rs.normal_cdf(t * math.sqrt(2)),
                             rtol=1e-12)
  np.testing.assert_allclose(rs.generalized_normal_cdf(t, 1.0), rs.laplace_cdf(t), rtol=1e-12)
  # Maxwell: erf(x/√2) - √(2/π) x e^{-x²/2}; double-sided version is symmetric
  m = np.abs(t)
  erf = np.array([math.erf(v / math.sqrt(2)) for v in m])
  np.testing.assert_allclose(rs.maxwell_cdf(m), erf - np.sqrt(2 / np.pi) * m * np.exp(-m * m / 2),
                             rtol=1e-12, atol=1e-15)
  np.testing.assert_allclose(rs.double_sided_maxwell_cdf(t, 1.0, 2.0),
                             1 - rs.double_sided_maxwell_cdf(2.0 - t, 1.0, 2.0),
                             rtol=1e-12, atol=1e-15)
  # chi-square 2 is exponential with scale 2; loggamma(1) is the log of an exponential
  np.testing.assert_allclose(rs.chisquare_cdf(m, 2.0), rs.exponential_cdf(m, 2.0), rtol=1e-12)
  np.testing.assert_allclose(rs.loggamma_cdf(t, 1.0), -np.expm1(-np.exp(t)),
                             rtol=1e-12, atol=1e-300)
  # truncated normal: 0 and 1 at the bounds, the renormalized Φ inside
  np.testing.assert_allclose(rs.truncated_normal_cdf([-3.0, -1.0, 0.0, 2.0, 3.0], -1.0, 2.0),
                             [0.0, 0.0, (0.5 - rs.normal_cdf(-1.0))
                              / (rs.normal_cdf(2.0) - rs.normal_cdf(-1.0)),
                              1.0, 1.0], rtol=1e-12)
  # off the support
  assert rs.gamma_cdf(-1.0, 2.0) == 0.0 and rs.beta_cdf(1.5, 2.0, 3.0) == 1.0
  assert rs.pareto_cdf(0.5, 2.0) == 0.0 and rs.wald_cdf(-1.0, 1.0) == 0.0


# --------------------------------------------------------------------------
# CDFs against NumPy's samplers

N = 4000


def _maxwell(rng, n):
  return np.linalg.norm(rng.standard_normal((n, 3)), axis=1)


def _truncated_normal(rng, n, lower, upper):
  x = rng.standard_normal(4 * n)
  return x[(x > lower) & (x < upper)][:n]


def _generalized_normal(rng, n, p):
  return rng.choice([-1.0, 1.0], n) * rng.gamma(1 / p, size=n) ** (1 / p)


# (name, sampler(rng, n), cdf, a plausible but wrong cdf)
CONTINUOUS = [
    ("normal", lambda r, n: r.standard_normal(n), rs.normal_cdf,
     lambda x: rs.normal_cdf(x, scale=1.2)),
    ("truncated_normal", lambda r, n: _truncated_normal(r, n, -1.0, 2.0),
     lambda x: rs.truncated_normal_cdf(x, -1.0, 2.0), lambda x: rs.uniform_cdf(x, -1.0, 2.0)),
    ("uniform", lambda r, n: r.uniform(-2.0, 3.0, n), lambda x: rs.uniform_cdf(x, -2.0, 3.0),
     lambda x: rs.uniform_cdf(x, -2.0, 3.3)),
    ("exponential", lambda r, n: r.exponential(size=n), rs.exponential_cdf,
     lambda x: rs.exponential_cdf(x, 1.15)),
    ("laplace", lambda r, n: r.laplace(size=n), rs.laplace_cdf, rs.normal_cdf),
    ("logistic", lambda r, n: r.logistic(size=n), rs.logistic_cdf,
     lambda x: rs.logistic_cdf(x, scale=1.25)),
    ("gumbel", lambda r, n: r.gumbel(size=n), rs.gumbel_cdf, lambda x: rs.gumbel_cdf(x, loc=0.15)),
    ("cauchy", lambda r, n: r.standard_cauchy(n), rs.cauchy_cdf, lambda x: rs.t_cdf(x, 2.0)),
    ("gamma_small", lambda r, n: r.gamma(0.3, size=n), lambda x: rs.gamma_cdf(x, 0.3),
     lambda x: rs.gamma_cdf(x, 0.35)),
    ("gamma_large", lambda r, n: r.gamma(50.0, size=n), lambda x: rs.gamma_cdf(x, 50.0),
     lambda x: rs.gamma_cdf(x, 51.0)),
    ("loggamma", lambda r, n: np.log(r.gamma(2.0, size=n)), lambda x: rs.loggamma_cdf(x, 2.0),
     lambda x: rs.loggamma_cdf(x, 2.3)),
    ("beta", lambda r, n: r.beta(0.7, 3.0, n), lambda x: rs.beta_cdf(x, 0.7, 3.0),
     lambda x: rs.beta_cdf(x, 0.8, 3.0)),
    ("chisquare", lambda r, n: r.chisquare(4.0, n), lambda x: rs.chisquare_cdf(x, 4.0),
     lambda x: rs.chisquare_cdf(x, 4.4)),
    ("t", lambda r, n: r.standard_t(3.0, n), lambda x: rs.t_cdf(x, 3.0), rs.normal_cdf),
    ("f", lambda r, n: r.f(5.0, 10.0, n), lambda x: rs.f_cdf(x, 5.0, 10.0),
     lambda x: rs.f_cdf(x, 8.0, 10.0)),
    ("lognormal", lambda r, n: r.lognormal(0.0, 0.5, n), lambda x: rs.lognormal_cdf(x, 0.5),
     lambda x: rs.lognormal_cdf(x, 0.6)),
    ("weibull_min", lambda r, n: 2.0 * r.weibull(1.5, n), lambda x: rs.weibull_min_cdf(x, 2.0, 1.5),
     lambda x: rs.weibull_min_cdf(x, 2.0, 1.8)),
    ("pareto", lambda r, n: r.pareto(3.0, n) + 1.0, lambda x: rs.pareto_cdf(x, 3.0),
     lambda x: rs.pareto_cdf(x, 3.4)),
    ("maxwell", _maxwell, rs.maxwell_cdf, lambda x: rs.chisquare_cdf(x * x, 3.5)),
    ("double_sided_maxwell", lambda r, n: 1.0 + 2.0 * r.choice([-1.0, 1.0], n) * _maxwell(r, n),
     lambda x: rs.double_sided_maxwell_cdf(x, 1.0, 2.0),
     lambda x: rs.double_sided_maxwell_cdf(x, 1.0, 2.3)),
    ("rayleigh", lambda r, n: r.rayleigh(1.5, n), lambda x: rs.rayleigh_cdf(x, 1.5),
     lambda x: rs.rayleigh_cdf(x, 1.6)),
    ("generalized_normal", lambda r, n: _generalized_normal(r, n, 3.0),
     lambda x: rs.generalized_normal_cdf(x, 3.0), lambda x: rs.generalized_normal_cdf(x, 1.5)),
    ("triangular", lambda r, n: r.triangular(-1.0, 0.5, 2.0, n),
     lambda x: rs.triangular_cdf(x, -1.0, 0.5, 2.0),
     lambda x: rs.triangular_cdf(x, -1.0, 0.8, 2.0)),
    ("wald", lambda r, n: r.wald(0.8, 1.0, n), lambda x: rs.wald_cdf(x, 0.8),
     lambda x: rs.wald_cdf(x, 0.9)),
]


@pytest.mark.parametrize("name, sample, cdf, wrong_cdf", CONTINUOUS, ids=[c[0] for c in CONTINUOUS])
def test_cdf_against_numpy_samples(name, sample, cdf, wrong_cdf):
  x = sample(np.random.default_rng(0), N)
  assert x.size == N
  _, p = rs.check_ks(x, cdf, min_p=1e-3, name=name)
  _, p_wrong = rs.ks_test(x, wrong_cdf)
  assert p_wrong < 1e-7, (name, p, p_wrong)


# (name, samples, values, pmf over values, a wrong pmf)
def _discrete_cases():
  rng = np.random.default_rng(0)
  ks = np.arange(60)
  probs = np.array([0.1, 0.2, 0.05, 0.4, 0.25])
  return [
      ("bernoulli", rng.random(N) < 0.3, [0, 1], rs.bernoulli_pmf([0, 1], 0.3),
       rs.bernoulli_pmf([0, 1], 0.34)),
      ("rademacher", rng.choice([-1, 1], N), [-1, 1], rs.rademacher_pmf([-1, 1]), [0.44, 0.56]),
      ("randint", rng.integers(-3, 7, N), np.arange(-3, 7), rs.randint_pmf(np.arange(-3, 7), -3, 7),
       rs.randint_pmf(np.arange(-3, 7), -3, 8)),
      ("categorical", rng.choice(5, N, p=probs), np.arange(5),
       rs.categorical_pmf(np.arange(5), probs),
       rs.categorical_pmf(np.arange(5), probs + [0.05, 0, 0, 0, 0])),
      ("poisson", rng.poisson(3.5, N), ks, rs.poisson_pmf(ks, 3.5), rs.poisson_pmf(ks, 3.8)),
      ("binomial", rng.binomial(20, 0.3, N), np.arange(21), rs.binomial_pmf(np.arange(21), 20, 0.3),
       rs.binomial_pmf(np.arange(21), 20, 0.33)),
      ("geometric", rng.geometric(0.2, N), ks, rs.geometric_pmf(ks, 0.2),
       rs.geometric_pmf(ks, 0.22)),
  ]


@pytest.mark.parametrize("case", _discrete_cases(), ids=lambda c: c[0])
def test_pmf_against_numpy_samples(case):
  name, x, values, pmf, wrong_pmf = case
  rs.check_chi_square(x, values, pmf, min_p=1e-3, name=name)
  _, p_wrong = rs.chi_square_samples(x, values, wrong_pmf)
  assert p_wrong < 1e-7, (name, p_wrong)


def test_pmfs_sum_to_one_and_vanish_off_support():
  k = np.arange(-5, 400)
  for pmf in (rs.poisson_pmf(k, 7.0), rs.binomial_pmf(k, 30, 0.4), rs.geometric_pmf(k, 0.1),
              rs.randint_pmf(k, -2, 9), rs.rademacher_pmf(k), rs.bernoulli_pmf(k, 0.2),
              rs.categorical_pmf(k, [1.0, 3.0])):
    np.testing.assert_allclose(pmf.sum(), 1.0, rtol=1e-12)
    assert pmf[0] == 0.0 and pmf[-1] < 1e-15
  np.testing.assert_allclose(rs.binomial_pmf(3, 5, 0.5), 10 / 32, rtol=1e-13)
  np.testing.assert_allclose(rs.poisson_pmf(2, 3.0), 4.5 * math.exp(-3), rtol=1e-13)
  assert rs.binomial_pmf(5, 5, 1.0) == 1.0 and rs.poisson_pmf(0, 0.0) == 1.0
  assert rs.poisson_pmf(2.5, 3.0) == 0.0


# --------------------------------------------------------------------------
# The tests themselves


def test_chi_square_statistic_and_bin_merging():
  # expected 50, 30, 15, 4, 1 for n = 100: the last two bins merge (5 expected)
  counts = [45, 35, 13, 6, 1]
  stat, p = rs.chi_square_test(counts, [0.5, 0.3, 0.15, 0.04, 0.01])
  expected_stat = 5 ** 2 / 50 + 5 ** 2 / 30 + 2 ** 2 / 15 + 2 ** 2 / 5
  assert stat == pytest.approx(expected_stat, rel=1e-13)
  assert p == pytest.approx(float(rs.regularized_gamma_q(1.5, expected_stat / 2)), rel=1e-13)
  # a small leading run merges forward; a small trailing rest merges backward
  obs, exp = rs._merge_small_bins([1, 2, 10, 20, 3], [1.0, 3.0, 10.0, 20.0, 2.0], 5.0)
  np.testing.assert_array_equal(obs, [13, 23])
  np.testing.assert_array_equal(exp, [14.0, 22.0])


def test_chi_square_validation():
  with pytest.raises(ValueError, match="sum to 1"):
    rs.chi_square_test([5, 5], [0.5, 0.6])
  with pytest.raises(ValueError, match="2 probabilities"):
    rs.chi_square_test([5, 5, 5], [0.5, 0.5])
  with pytest.raises(ValueError, match="fewer than 2 bins"):
    rs.chi_square_test([3, 3], [0.5, 0.5])


def test_chi_square_samples_rest_bin():
  # values 0..2 listed; the 3s fall in the rest bin, of probability 0.2
  x = np.repeat([0, 1, 2, 3], [20, 30, 30, 20])
  stat, p = rs.chi_square_samples(x, [0, 1, 2], [0.2, 0.3, 0.3])
  assert stat == pytest.approx(0.0, abs=1e-20) and p == pytest.approx(1.0)
  stat, _ = rs.chi_square_samples(x, [0, 1, 2], [0.25, 0.3, 0.3])
  assert stat == pytest.approx(5 ** 2 / 25 + 5 ** 2 / 15, rel=1e-13)


def test_kolmogorov_sf_table():
  # quantiles of the Kolmogorov distribution: K(1.2239) = 0.90, K(1.3581) = 0.95, K(1.6276) = 0.99
  for lam, p in ((1.2239, 0.10), (1.3581, 0.05), (1.6276, 0.01)):
    assert rs.kolmogorov_sf(lam) == pytest.approx(p, rel=1e-3)
  # the two series agree where they switch
  assert rs.kolmogorov_sf(1.18 - 1e-9) == pytest.approx(rs.kolmogorov_sf(1.18 + 1e-9), rel=1e-7)
  assert rs.kolmogorov_sf(0.0) == 1.0 and rs.kolmogorov_sf(0.2) == pytest.approx(1.0, abs=1e-12)


def _exact_ks_sf(n, d):
  """P(D_n ≥ d) exactly, by Marsaglia, Tsang and Wang's (2003) matrix power."""
  k = int(math.floor(n * d)) + 1
  m = 2 * k - 1
  h = k - n * d
  i = np.arange(m)
  diff = i[:, None] - i[None, :] + 1
  H = (diff >= 0).astype(np.float64)
  H[:, 0] -= h ** (i + 1)
  H[m - 1, :] -= h ** (m - i)
  if 2 * h - 1 > 0:
    H[m - 1, 0] += (2 * h - 1) ** m
  H /= np.vectorize(lambda v: float(math.factorial(v)))(np.maximum(diff, 0))
  power, log_scale = np.eye(m), math.lgamma(n + 1) - n * math.log(n)
  for _ in range(n):
    power = power @ H
    s = np.abs(power).max()
    power /= s
    log_scale += math.log(s)
  return 1.0 - power[k - 1, k - 1] * math.exp(log_scale)


def test_exact_ks_against_massey_table():
  # Massey (1951): critical values of D_n at the 0.05 level, rounded to 3 digits
  for n, d in ((10, 0.409), (20, 0.294), (30, 0.242)):
    assert _exact_ks_sf(n, d) == pytest.approx(0.05, abs=2e-3)


@pytest.mark.parametrize("n", [100, 400])
@pytest.mark.parametrize("lam, rtol", [(0.6, 0.02), (0.8, 0.02), (1.0, 0.02), (1.36, 0.02),
                                       (1.63, 0.02), (1.95, 0.025), (2.2, 0.03)])
def test_ks_p_value_accuracy(n, lam, rtol):
  d = lam / math.sqrt(n)
  x = (np.arange(n) + 0.5) / n                     # D = 1/(2n) against the uniform
  shift = d - 0.5 / n                              # shifting by s makes D = 1/(2n) + s
  stat, p = rs.ks_test(x + shift, rs.uniform_cdf)
  assert stat == pytest.approx(d, rel=1e-12)
  assert p == pytest.approx(_exact_ks_sf(n, d), rel=rtol)


def test_ks_validation():
  with pytest.raises(ValueError, match="NaN"):
    rs.ks_test([0.1, np.nan], rs.uniform_cdf)
  with pytest.raises(ValueError, match="at least one"):
    rs.ks_test([], rs.uniform_cdf)
  with pytest.raises(ValueError, match="shape"):
    rs.ks_test([0.1, 0.2], lambda x: 0.5)


def test_check_ks_failure_message():
  x = np.random.default_rng(0).standard_normal(1000)
  with pytest.raises(AssertionError,
                     match=r"shifted: Kolmogorov–Smirnov test rejects .* n = 1000"):
    rs.check_ks(x, lambda t: rs.normal_cdf(t, loc=0.5), name="shifted")


def test_check_chi_square_failure_message():
  x = np.random.default_rng(0).integers(0, 4, 1000)
  with pytest.raises(AssertionError, match=r"dice: chi-square test rejects"):
    rs.check_chi_square(x, np.arange(4), [0.4, 0.2, 0.2, 0.2], name="dice")


def test_check_moments():
  rng = np.random.default_rng(0)
  x = rng.exponential(size=20_000)
  m, v = rs.check_moments(x, mean=1.0, var=1.0, fourth_central_moment=9.0, name="exp")
  assert m == pytest.approx(x.mean()) and v == pytest.approx(x.var(ddof=1))
  rs.check_moments(x, mean=1.0)                    # mean only, against the sample variance
  with pytest.raises(AssertionError, match=r"exp: sample mean .* standard errors .* expected 1.05"):
    rs.check_moments(x, mean=1.05, var=1.0, fourth_central_moment=9.0, name="exp")
  with pytest.raises(AssertionError, match=r"exp: sample variance .* expected 1.1"):
    rs.check_moments(x, mean=1.0, var=1.1, fourth_central_moment=9.0, name="exp")
  # normal theory by default: right for normal samples, 3 variance SEs for 1.03 at n = 20000
  y = rng.standard_normal(20_000)
  rs.check_moments(y, mean=0.0, var=1.0)
  with pytest.raises(AssertionError, match="sample variance"):
    rs.check_moments(y, mean=0.0, var=1.1)
  with pytest.raises(ValueError, match="two samples"):
    rs.check_moments([1.0], mean=1.0)
