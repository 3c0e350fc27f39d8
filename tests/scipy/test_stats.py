"""Tests of refimpl/scipy/stats: each distribution against closed forms written
out here with Python's math module (SciPy is not a dependency), identities
(pdf = exp(logpdf), cdf + sf = 1, ppf inverts cdf), quadrature and exact sums of
densities, out-of-support and invalid-parameter values, dtypes, jit and grad."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl.config import enable_x64
from refimpl.scipy import stats
from conformance import strategies as S

F64 = np.float64
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(200)


def _integral(fn, lo, hi):
  t = (hi - lo) / 2 * _NODES + (hi + lo) / 2
  return (hi - lo) / 2 * np.sum(_WEIGHTS * np.asarray(fn(t), F64))


def _close(actual, expected, rtol=1e-10, atol=1e-12):
  np.testing.assert_allclose(np.asarray(actual, F64), expected, rtol=rtol, atol=atol)


def _floats(lo, hi, n=5):
  return S.arrays(F64, (n,), elements=st.floats(lo, hi))


def _phi(z):
  return 0.5 * math.erfc(-z / math.sqrt(2))


# --- continuous densities against closed forms ------------------------------------------------

# (module, parameters after x, reference log density of (x, *parameters), support check)
_LOC_SCALE = (1.5, 2.0)
_DENSITIES = {
    "norm": (_LOC_SCALE, lambda x, m, s: -0.5 * ((x - m) / s) ** 2
             - math.log(s * math.sqrt(2 * math.pi))),
    "laplace": (_LOC_SCALE, lambda x, m, s: -abs(x - m) / s - math.log(2 * s)),
    "logistic": (_LOC_SCALE, lambda x, m, s: -(x - m) / s - math.log(s)
                 - 2 * math.log1p(math.exp(-(x - m) / s))),
    "cauchy": (_LOC_SCALE, lambda x, m, s: -math.log(math.pi * s * (1 + ((x - m) / s) ** 2))),
    "t": ((3.5, 1.5, 2.0), lambda x, d, m, s: math.lgamma((d + 1) / 2) - math.lgamma(d / 2)
          - 0.5 * math.log(d * math.pi * s * s) - (d + 1) / 2 * math.log1p(((x - m) / s) ** 2 / d)),
    "gumbel_r": (_LOC_SCALE, lambda x, m, s: -(x - m) / s - math.exp(-(x - m) / s) - math.log(s)),
    "gumbel_l": (_LOC_SCALE, lambda x, m, s: (x - m) / s - math.exp((x - m) / s) - math.log(s)),
    "gennorm": ((1.7,), lambda x, b: math.log(b / 2) - math.lgamma(1 / b) - abs(x) ** b),
}


@pytest.mark.parametrize("name", sorted(_DENSITIES))
@given(x=_floats(-6, 6))
@settings(max_examples=10)
def test_real_line_densities_against_closed_forms(name, x):
  params, reference = _DENSITIES[name]
  module = getattr(stats, name)
  with enable_x64():
    log_density = module.logpdf(x, *params)
    _close(log_density, [reference(v, *params) for v in x], rtol=1e-12)
    _close(module.pdf(x, *params), np.exp(np.asarray(log_density)), rtol=1e-13)


@given(x=_floats(-1, 12))
@settings(max_examples=15)
def test_positive_densities_against_closed_forms(x):
  a, loc, scale = 2.5, -0.5, 1.5
  y = (x - loc) / scale
  with enable_x64(), np.errstate(divide="ignore", invalid="ignore"):
    for module, params, expected in [
        (stats.expon, (loc, scale), -y - math.log(scale)),
        (stats.gamma, (a, loc, scale), (a - 1) * np.log(y) - y - math.lgamma(a) - math.log(scale)),
        (stats.chi2, (2 * a, loc, scale), (a - 1) * np.log(y) - y / 2 - math.lgamma(a)
         - a * math.log(2) - math.log(scale)),
        (stats.pareto, (a, loc, scale),
         np.where(y >= 1, math.log(a / scale) - (a + 1) * np.log(y), -np.inf))]:
      _close(module.logpdf(x, *params), np.where(y >= 0, expected, -np.inf), rtol=1e-12)


@given(x=_floats(-0.5, 3.5), a=st.floats(0.5, 4), b=st.floats(0.5, 4))
@settings(max_examples=15)
def test_beta_and_uniform_densities(x, a, b):
  loc, scale = -0.25, 3.0
  with enable_x64():
    y = (x - loc) / scale
    inside = (y >= 0) & (y <= 1)
    with np.errstate(divide="ignore", invalid="ignore"):
      expected = ((a - 1) * np.log(y) + (b - 1) * np.log1p(-y) - math.lgamma(a) - math.lgamma(b)
                  + math.lgamma(a + b) - math.log(scale))
    _close(stats.beta.logpdf(x, a, b, loc, scale), np.where(inside, expected, -np.inf),
           rtol=1e-10)
    _close(stats.uniform.logpdf(x, loc, scale), np.where(inside, -math.log(scale), -np.inf))
    _close(stats.uniform.cdf(x, loc, scale), np.clip(y, 0, 1))


# --- distribution functions -----------------------------------------------------------------

@given(x=_floats(-8, 8))
@settings(max_examples=15)
def test_cdfs_against_closed_forms(x):
  m, s = 0.5, 1.5
  z = (x - m) / s
  with enable_x64():
    _close(stats.norm.cdf(x, m, s), [_phi(v) for v in z], atol=1e-15)
    _close(stats.norm.sf(x, m, s), [_phi(-v) for v in z], atol=1e-15)
    _close(stats.laplace.cdf(x, m, s), np.where(z <= 0, np.exp(z) / 2, 1 - np.exp(-z) / 2))
    _close(stats.logistic.cdf(x, m, s), 1 / (1 + np.exp(-z)))
    _close(stats.logistic.sf(x, m, s), 1 / (1 + np.exp(z)))
    _close(stats.cauchy.cdf(x, m, s), 0.5 + np.arctan(z) / np.pi)
    _close(stats.gumbel_r.cdf(x, m, s), np.exp(-np.exp(-z)))
    _close(stats.gumbel_l.cdf(x, m, s), -np.expm1(-np.exp(z)))
    _close(stats.expon.cdf(x, m, s), np.where(z < 0, 0, -np.expm1(-z)))
    _close(stats.pareto.cdf(x, 2.0, m, s), np.where(z < 1, 0, 1 - np.abs(z) ** -2.0))


_CONTINUOUS = [  # (module, parameters, a point x of the support, which functions exist)
    (stats.norm, (0.5, 1.5), 1.7, "cdf sf logcdf logsf ppf isf"),
    (stats.cauchy, (0.5, 1.5), 1.7, "cdf sf logcdf logsf ppf isf"),
    (stats.logistic, (0.5, 1.5), 1.7, "cdf sf ppf isf"),
    (stats.expon, (0.5, 1.5), 1.7, "cdf sf logcdf logsf ppf"),
    (stats.gamma, (2.5, 0.5, 1.5), 4.0, "cdf sf logcdf logsf"),
    (stats.chi2, (3.0, 0.5, 1.5), 4.0, "cdf sf logcdf logsf"),
    (stats.beta, (2.5, 1.5, 0.5, 2.0), 1.2, "cdf sf logcdf logsf"),
    (stats.pareto, (2.5, 0.5, 1.5), 3.0, "cdf sf logcdf logsf ppf"),
    (stats.gumbel_l, (0.5, 1.5), 1.7, "cdf sf logcdf logsf ppf"),
    (stats.gumbel_r, (0.5, 1.5), 1.7, "cdf sf logcdf logsf ppf"),
    (stats.truncnorm, (-1.0, 2.0, 0.5, 1.5), 1.7, "cdf sf logcdf logsf"),
]


@pytest.mark.parametrize("module,params,x,functions", _CONTINUOUS,
                         ids=[c[0].__name__.rsplit(".", 1)[1] for c in _CONTINUOUS])
def test_distribution_function_identities(module, params, x, functions):
  functions = functions.split()
  with enable_x64():
    cdf, sf = float(module.cdf(x, *params)), float(module.sf(x, *params))
    assert 0 < cdf < 1 and cdf + sf == pytest.approx(1, abs=1e-14)
    if "logcdf" in functions:
      assert float(module.logcdf(x, *params)) == pytest.approx(math.log(cdf), rel=1e-12)
      assert float(module.logsf(x, *params)) == pytest.approx(math.log(sf), rel=1e-12)
    if "ppf" in functions:
      assert float(module.ppf(cdf, *params)) == pytest.approx(x, rel=1e-10)
    if "isf" in functions:
      assert float(module.isf(sf, *params)) == pytest.approx(x, rel=1e-10)
    # the cdf's increments are the integrals of the density
    lo = x - 0.5
    integral = _integral(lambda t: module.pdf(t, *params), lo, x)
    assert integral == pytest.approx(cdf - float(module.cdf(lo, *params)), abs=1e-13)


@pytest.mark.parametrize("module,params,lo,hi", [
    (stats.t, (2.5,), -400, 400), (stats.gennorm, (1.7,), -30, 30),
    (stats.vonmises, (3.0,), -math.pi, math.pi), (stats.wrapcauchy, (0.6,), 0, 2 * math.pi),
    (stats.truncnorm, (-0.5, 3.0, 1.0, 2.0), 0, 7), (stats.laplace, (), -40, 40)])
def test_densities_integrate_to_one(module, params, lo, hi):
  with enable_x64():
    # split at the mode so each piece is smooth
    pieces = [(lo, 0.0), (0.0, hi)] if lo < 0 < hi else [(lo, hi)]
    total = sum(_integral(lambda t: module.pdf(t, *params), a, b) for a, b in pieces)
  assert total == pytest.approx(1, abs=2e-3 if module is stats.t else 1e-8)


def test_truncnorm_against_the_normal():
  a, b, loc, scale = -1.0, 2.0, 0.5, 1.5
  x = np.array([-1.0, 0.0, 1.7, 3.4])
  z = (x - loc) / scale
  mass = _phi(b) - _phi(a)
  with enable_x64():
    _close(stats.truncnorm.pdf(x, a, b, loc, scale),
           np.exp(-z ** 2 / 2) / math.sqrt(2 * math.pi) / scale / mass, rtol=1e-12)
    _close(stats.truncnorm.cdf(x, a, b, loc, scale),
           [(_phi(v) - _phi(a)) / mass for v in z], rtol=1e-12)
    outside = np.array([-2.0, 5.0])
    _close(stats.truncnorm.logpdf(outside, a, b, loc, scale), [-np.inf, -np.inf])
    _close(stats.truncnorm.cdf(outside, a, b, loc, scale), [0, 1])
    assert np.isnan(stats.truncnorm.pdf(0.0, 1.0, 1.0))
    # far in the tail the mass is computed in logs (Mills' ratio: mass ~ pdf(30) / 30)
    expected = -(30.5 ** 2 - 30 ** 2) / 2 + math.log(30) - math.log1p(-1 / 900 + 3 / 30 ** 4)
    assert float(stats.truncnorm.logpdf(30.5, 30.0, 31.0)) == pytest.approx(expected, rel=1e-6)


# --- discrete distributions -------------------------------------------------------------------

def test_discrete_pmfs_against_exact_formulas():
  k = np.arange(0.0, 9.0)
  n, p, mu = 6, 0.3, 2.5
  with enable_x64():
    _close(stats.binom.pmf(k, n, p),
           [math.comb(n, int(i)) * p ** i * (1 - p) ** (n - i) if i <= n else 0 for i in k],
           rtol=1e-12)
    _close(stats.poisson.pmf(k, mu), [math.exp(-mu) * mu ** i / math.factorial(int(i)) for i in k],
           rtol=1e-12)
    _close(stats.poisson.cdf(k, mu),
           np.cumsum([math.exp(-mu) * mu ** i / math.factorial(int(i)) for i in k]), rtol=1e-12)
    _close(stats.nbinom.pmf(k, 3, p),
           [math.comb(int(i) + 2, 2) * p ** 3 * (1 - p) ** i for i in k], rtol=1e-12)
    _close(stats.geom.pmf(k, p), [(1 - p) ** (i - 1) * p if i >= 1 else 0 for i in k], rtol=1e-12)
    _close(stats.bernoulli.pmf(k, p), [1 - p, p] + [0] * 7)
    a, b = 2.0, 3.5
    beta = lambda x, y: math.exp(math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y))
    _close(stats.betabinom.pmf(k, n, a, b),
           [math.comb(n, int(i)) * beta(i + a, n - i + b) / beta(a, b) if i <= n else 0
            for i in k], rtol=1e-12)


def test_discrete_pmfs_sum_to_one_and_loc_shifts():
  k = np.arange(0.0, 200.0)
  with enable_x64():
    for pmf in [lambda k: stats.poisson.pmf(k, 7.5), lambda k: stats.nbinom.pmf(k, 2.5, 0.4),
                lambda k: stats.geom.pmf(k, 0.2), lambda k: stats.binom.pmf(k, 12, 0.7),
                lambda k: stats.betabinom.pmf(k, 12, 0.5, 1.5)]:
      assert float(np.sum(pmf(k))) == pytest.approx(1, abs=1e-12)
    _close(stats.poisson.logpmf(k[:5] + 3, 2.0, loc=3), stats.poisson.logpmf(k[:5], 2.0))
    _close(stats.binom.logpmf(k[:5] + 3, 4, 0.5, loc=3), stats.binom.logpmf(k[:5], 4, 0.5))


def test_discrete_edge_cases():
  with enable_x64():
    assert float(stats.poisson.logpmf(1.5, 2.0)) == -np.inf    # not an integer
    assert float(stats.poisson.logpmf(-1.0, 2.0)) == -np.inf
    assert float(stats.poisson.cdf(-1.0, 2.0)) == 0
    assert float(stats.binom.logpmf(0.0, 0.0, 0.3)) == 0.0      # exactly, y = n = 0
    assert float(stats.binom.logpmf(7.0, 6.0, 0.3)) == -np.inf
    assert float(stats.binom.pmf(6.0, 6.0, 1.0)) == 1.0
    _close(stats.bernoulli.cdf(np.array([-1.0, 0.0, 0.5, 1.0, np.nan]), 0.3),
           [0, 0.7, 0.7, 1, np.nan])
    assert np.isnan(stats.bernoulli.cdf(0.5, 1.5))
    _close(stats.bernoulli.ppf(np.array([0.0, 0.7, 0.71, 1.0, 1.5]), 0.3), [0, 0, 1, 1, np.nan])
    assert np.isnan(stats.betabinom.logpmf(1.0, 3.0, -1.0, 2.0))
    assert float(stats.betabinom.logpmf(4.0, 3.0, 1.0, 2.0)) == -np.inf


def test_multinomial():
  x, p = np.array([1, 0, 3]), np.array([0.2, 0.3, 0.5])
  with enable_x64():
    _close(stats.multinomial.pmf(x, 4, p), 4 * 0.2 * 0.5 ** 3, rtol=1e-12)
    assert float(stats.multinomial.logpmf(x, 5, p)) == -np.inf
    with pytest.raises(ValueError, match="integer type"):
      stats.multinomial.logpmf(x.astype(float), 4, p)


# --- multivariate ---------------------------------------------------------------------------

def test_multivariate_normal_against_numpy():
  rng = np.random.default_rng(0)
  a = rng.normal(size=(3, 3))
  cov, mean = a @ a.T + np.eye(3), rng.normal(size=3)
  x = rng.normal(size=(4, 3))
  d = x - mean
  expected = (-0.5 * np.einsum("ij,jk,ik->i", d, np.linalg.inv(cov), d)
              - 0.5 * np.log(np.linalg.det(2 * np.pi * cov)))
  with enable_x64():
    _close(stats.multivariate_normal.logpdf(x, mean, cov), expected, rtol=1e-12)
    _close(stats.multivariate_normal.pdf(x, mean, cov), np.exp(expected), rtol=1e-12)
    _close(stats.multivariate_normal.logpdf(x, mean, 2.0),   # a scalar covariance: 2 I
           -0.5 * np.sum(d * d, 1) / 2 - 1.5 * math.log(4 * math.pi), rtol=1e-12)
    _close(stats.multivariate_normal.logpdf(1.0, 0.5, 4.0), stats.norm.logpdf(1.0, 0.5, 2.0))
  with pytest.raises(ValueError, match="incompatible shapes"):
    stats.multivariate_normal.logpdf(x, mean, np.eye(2))
  with pytest.raises(NotImplementedError):
    stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)


def test_dirichlet():
  alpha = np.array([1.5, 2.0, 3.0])
  x = np.array([[0.2, 0.5], [0.3, 0.25], [0.5, 0.25]])   # two points, one per column
  expected = (np.sum((alpha[:, None] - 1) * np.log(x), 0)
              - sum(math.lgamma(a) for a in alpha) + math.lgamma(alpha.sum()))
  with enable_x64():
    _close(stats.dirichlet.logpdf(x, alpha), expected, rtol=1e-12)
    _close(stats.dirichlet.logpdf(x[:2], alpha), expected, rtol=1e-12)   # K - 1 coordinates
    assert float(stats.dirichlet.logpdf(np.array([0.5, 0.6, 0.1]), alpha)) == -np.inf
  with pytest.raises(ValueError, match="one-dimensional"):
    stats.dirichlet.logpdf(x, alpha[None])
  with pytest.raises(ValueError, match="one entry fewer"):
    stats.dirichlet.logpdf(np.ones(5) / 5, alpha)


# --- edge cases, dtypes and transformations --------------------------------------------------

def test_out_of_support_and_invalid_parameters():
  with enable_x64():
    assert float(stats.expon.logpdf(-1.0)) == -np.inf and float(stats.expon.sf(-1.0)) == 1
    assert float(stats.gamma.logpdf(-1.0, 2.0)) == -np.inf
    assert float(stats.gamma.cdf(-1.0, 2.0)) == 0 and float(stats.gamma.sf(-1.0, 2.0)) == 1
    assert float(stats.chi2.logpdf(-1.0, 2.0)) == -np.inf
    assert float(stats.pareto.logpdf(0.5, 2.0)) == -np.inf
    assert float(stats.pareto.sf(0.5, 2.0)) == 1 and float(stats.pareto.logcdf(0.5, 2.0)) == -np.inf
    assert float(stats.beta.logpdf(1.5, 2.0, 2.0)) == -np.inf
    for value in [stats.beta.logpdf(0.5, 0.0, 2.0), stats.beta.logpdf(0.5, 2.0, 2.0, 0, -1),
                  stats.gumbel_l.logpdf(0.0, 0, -1), stats.gumbel_r.cdf(0.0, 0, 0),
                  stats.vonmises.logpdf(0.0, -1.0), stats.wrapcauchy.logpdf(1.0, 1.5)]:
      assert np.isnan(value)
    assert float(stats.wrapcauchy.logpdf(-0.1, 0.5)) == -np.inf
    q = np.array([-0.1, 1.1, np.nan])
    for ppf in [stats.uniform.ppf, stats.expon.ppf, lambda q: stats.pareto.ppf(q, 2.0),
                stats.gumbel_l.ppf, stats.gumbel_r.ppf]:
      assert np.all(np.isnan(ppf(q)))
    assert np.isnan(stats.gumbel_r.ppf(0.0)) and float(stats.expon.ppf(1.0)) == np.inf
    _close(stats.norm.ppf(np.array([0.0, 1.0])), [-np.inf, np.inf])


def test_far_tails_stay_finite_in_logs():
  with enable_x64():
    assert float(stats.norm.logcdf(-40.0)) == pytest.approx(-804.608, rel=1e-5)
    assert float(stats.norm.logsf(40.0)) == pytest.approx(-804.608, rel=1e-5)
    assert float(stats.gumbel_r.logsf(40.0)) == pytest.approx(-40.0, rel=1e-12)
    assert float(stats.expon.logsf(1e4)) == -1e4


@pytest.mark.parametrize("fn", [
    lambda x: stats.norm.logpdf(x, 1, 2), lambda x: stats.norm.cdf(x), lambda x: stats.norm.sf(x),
    lambda x: stats.gamma.logpdf(x, 2), lambda x: stats.beta.cdf(x, 2, 3),
    lambda x: stats.t.logpdf(x, 3), lambda x: stats.truncnorm.logcdf(x, -1, 1),
    lambda x: stats.poisson.logpmf(x, 2), lambda x: stats.gumbel_r.logsf(x),
    lambda x: stats.vonmises.logpdf(x, 2), lambda x: stats.logistic.isf(x)])
def test_float32_stays_float32_and_ints_promote(fn):
  x = np.array([0.25, 0.5], np.float32)
  assert fn(x).dtype == np.float32
  assert fn(np.array([0, 1])).dtype == np.float32


def test_norm_ppf_takes_floats_only_as_ndtri():
  assert stats.norm.ppf(np.float32(0.5)).dtype == np.float32
  with enable_x64():   # the default float type, whatever q's dtype
    assert stats.norm.ppf(np.float32(0.5)).dtype == np.float64
  with pytest.raises(TypeError, match="not supported"):
    stats.norm.ppf(np.array([0, 1]))


def test_jit_and_grad():
  with enable_x64():
    grad_x = jax.grad(stats.norm.logpdf)(0.7, 0.2, 1.5)
    assert float(grad_x) == pytest.approx(-(0.7 - 0.2) / 1.5 ** 2, rel=1e-12)
    # d/dx logcdf = pdf / cdf, through log_ndtr's custom derivative
    assert float(jax.grad(stats.norm.logcdf)(-3.0)) == pytest.approx(
        math.exp(-4.5) / math.sqrt(2 * math.pi) / _phi(-3.0), rel=1e-10)
    # d/da of the gamma log density: log(x) - digamma(a)
    h = 1e-6
    digamma = (math.lgamma(2.5 + h) - math.lgamma(2.5 - h)) / (2 * h)
    assert float(jax.grad(stats.gamma.logpdf, argnums=1)(1.3, 2.5)) == pytest.approx(
        math.log(1.3) - digamma, rel=1e-7)
    grad_cdf = jax.grad(lambda x: stats.beta.cdf(x, 2.0, 3.0))(0.4)
    assert float(grad_cdf) == pytest.approx(float(stats.beta.pdf(0.4, 2.0, 3.0)), rel=1e-8)
    x = np.array([[0.1, 0.2], [1.0, -1.0]])
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    jitted = jax.jit(stats.multivariate_normal.logpdf)
    _close(jitted(x, np.zeros(2), cov), stats.multivariate_normal.logpdf(x, np.zeros(2), cov),
           rtol=1e-14)
    _close(jax.jit(stats.truncnorm.sf)(0.3, -1.0, 2.0), stats.truncnorm.sf(0.3, -1.0, 2.0),
           rtol=1e-14)
