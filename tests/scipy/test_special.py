"""Tests of refimpl/scipy/special.py: each function against independent
computations (Python's math module, exact sums, closed forms, quadrature and
identities; SciPy is not a dependency), in float64 (under x64) and float32,
plus argument handling and edge cases."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
import refimpl.numpy as jnp
from refimpl.config import enable_x64
from refimpl.scipy import special as sp
from conformance import strategies as S

F64 = np.float64
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(400)


def _gauss_legendre(fn, lo, hi):
  t = (hi - lo) / 2 * _NODES + (hi + lo) / 2
  return (hi - lo) / 2 * np.sum(_WEIGHTS * fn(t))


def _close(actual, expected, rtol, atol=0.0):
  actual = np.asarray(actual)
  np.testing.assert_allclose(actual.astype(np.complex128 if actual.dtype.kind == "c" else F64),
                             expected, rtol=rtol, atol=atol)


def _floats(lo, hi, n=6):
  return S.arrays(F64, (n,), elements=st.floats(lo, hi))


def test_every_name_of_jax_scipy_special_is_here():
  assert len(sp.__all__) == 53 and all(callable(getattr(sp, n)) for n in sp.__all__)


# --- gamma and beta ----------------------------------------------------------------------------

@given(S.arrays(F64, (6,), elements=S.non_integer_floats(-30, 30, 1e-2)))
def test_gamma_family_against_math(x):
  with enable_x64():
    _close(sp.gammaln(x), [math.lgamma(v) for v in x], rtol=1e-12, atol=1e-14)
    _close(sp.gamma(x), [math.gamma(v) for v in x], rtol=1e-12)
    _close(sp.gammasgn(x), [math.copysign(1, math.gamma(v)) for v in x], rtol=0)
    _close(sp.digamma(x), [(math.lgamma(v + 1e-7) - math.lgamma(v - 1e-7)) / 2e-7 for v in x],
           rtol=1e-6, atol=1e-6)
  _close(sp.gamma(x.astype(np.float32)), [math.gamma(v) for v in x.astype(np.float32)],
         rtol=3e-5)


def test_gamma_edge_cases():
  x = np.array([0.0, -0.0, -2.0, np.inf, -np.inf, np.nan], np.float32)
  np.testing.assert_array_equal(sp.gammasgn(x), [1, -1, np.nan, 1, np.nan, np.nan])
  np.testing.assert_array_equal(sp.gamma(x), [np.inf, -np.inf, np.nan, np.inf, np.nan, np.nan])
  np.testing.assert_array_equal(sp.loggamma(np.float32([-1.5, 0.0, 2.0])),
                                [np.nan, np.nan, 0.0])
  with pytest.raises(ValueError, match="gammaln does not support complex"):
    sp.gammaln(np.complex64(1))


def test_complex_gamma_reflection_and_recurrence():
  z = np.array([0.5 + 1j, -2.5 + 0.3j, 3 - 2j, 10 + 0.1j])
  with enable_x64():
    g = np.asarray(sp.gamma(z))
    _close(sp.gamma(z + 1), z * g, rtol=1e-13)
    _close(g * np.asarray(sp.gamma(1 - z)), np.pi / np.sin(np.pi * z), rtol=1e-13)
  assert np.isnan(np.asarray(sp.gamma(np.complex64(-3))))


# B_2k / (2k (2k - 1)), k = 1..8: the coefficients of Stirling's series for log Gamma.
_STIRLING = [Fraction(1, 6) / 2, Fraction(-1, 30) / 12, Fraction(1, 42) / 30,
             Fraction(-1, 30) / 56, Fraction(5, 66) / 90, Fraction(-691, 2730) / 132,
             Fraction(7, 6) / 182, Fraction(-3617, 510) / 240]


def _loggamma_oracle(z):
  """log Gamma(z), principal branch, in complex128: log Gamma(z + n) minus the
  principal logs of z, z + 1, ..., z + n - 1 (JAX's recurrence, adding k as
  JAX does, which turns an imaginary -0.0 into +0.0), with Re(z + n) >= 15
  and Stirling's series there."""
  z = np.asarray(z, np.complex128)
  shift = np.maximum(0, np.ceil(15 - z.real))
  logs = sum(np.where(k < shift, np.log(z + k), 0) for k in range(int(shift.max(initial=0))))
  w = z + shift
  series = sum(float(c) * w ** (1 - 2 * j) for j, c in enumerate(_STIRLING, start=1))
  return (w - 0.5) * np.log(w) - w + 0.5 * math.log(2 * math.pi) + series - logs


_COMPLEX_PARTS = S.non_integer_floats(-30, 30, 1e-3)


@given(S.arrays(np.complex128, (8,), elements=st.builds(complex, _COMPLEX_PARTS,
                                                        st.floats(-30, 30))))
def test_complex_loggamma_against_the_recurrence_and_stirling(z):
  expected = _loggamma_oracle(z)
  scale = np.maximum(1, np.abs(expected))
  with enable_x64():
    actual = np.asarray(sp.loggamma(z))
  assert actual.dtype == np.complex128
  assert np.all(np.abs(actual - expected) <= 1e-13 * scale)
  actual = np.asarray(sp.loggamma(z.astype(np.complex64)))
  assert actual.dtype == np.complex64
  expected = _loggamma_oracle(z.astype(np.complex64))
  assert np.all(np.abs(actual - expected) <= 3e-6 * np.maximum(1, np.abs(expected)))


def test_complex_loggamma_identities_and_edge_cases():
  z = np.array([0.3 + 0.1j, -4.5 + 2j, 2 - 7j, -0.2 - 40j, 50 + 1j, -123.4 + 0.5j])
  with enable_x64():
    lg = np.asarray(sp.loggamma(z))
    _close(sp.loggamma(z + 1), lg + np.log(z), rtol=1e-13)   # no 2 pi i jumps: principal
    _close(sp.loggamma(np.conj(z)), np.conj(lg), rtol=1e-14)
    _close(np.exp(lg), sp.gamma(z), rtol=1e-12)
    # On the cut: log|Gamma(-2.5)| = log(8 sqrt(pi) / 15), and the limit from
    # above, Im = -3 pi, also for a -0.0 imaginary part (as JAX).
    on_cut = np.asarray(sp.loggamma(np.array([complex(-2.5, 0.0), complex(-2.5, -0.0)])))
    _close(on_cut, [math.log(8 * math.sqrt(math.pi) / 15) - 3j * math.pi] * 2, rtol=1e-14)
    _close(sp.loggamma(np.complex128(0.5)), math.log(math.pi) / 2, rtol=1e-14)
  # Half-integers on the cut in complex64: sin(pi x) is exactly -1 + 0j there.
  _close(sp.loggamma(np.complex64([-0.5, -1.5])),
         [math.log(2 * math.sqrt(math.pi)) - 1j * math.pi,
          math.log(4 * math.sqrt(math.pi) / 3) - 2j * math.pi], rtol=1e-6)
  special = np.array([0, -3, complex(np.nan, 1), complex(1, np.nan), complex(np.inf, 0)],
                     np.complex64)
  out = np.asarray(sp.loggamma(special))
  assert out.dtype == np.complex64 and np.isnan(out.real).all() and np.isnan(out.imag).all()


@given(_floats(0.01, 1e6), _floats(0.01, 1e6))
def test_betaln_and_beta(a, b):
  exact = [math.lgamma(p) + math.lgamma(q) - math.lgamma(p + q) for p, q in zip(a, b)]
  # the reference itself loses about 1e-16 * max(|lgamma|) absolute
  scale = np.array([abs(math.lgamma(p)) + abs(math.lgamma(q)) for p, q in zip(a, b)])
  with enable_x64():
    _close(sp.betaln(a, b), exact, rtol=1e-12, atol=1e-15 * np.max(scale) + 1e-14)
  # float32 keeps relative accuracy even where the three lgamma values cancel
  a32, b32 = a.astype(np.float32), b.astype(np.float32)
  exact32 = np.array([math.lgamma(p) + math.lgamma(q) - math.lgamma(p + q)
                      for p, q in zip(a32.astype(F64), b32.astype(F64))])
  _close(sp.betaln(a32, b32), exact32, rtol=2e-5, atol=1e-5)
  with enable_x64():
    _close(sp.beta(a, b), np.exp(np.array(exact)), rtol=1e-15 * np.max(scale) + 1e-12,
           atol=1e-300)


def test_beta_signs_and_betainc():
  with enable_x64():
    _close(sp.beta(F64(-0.5), F64(2)), math.gamma(-0.5) / math.gamma(1.5), rtol=1e-13)
    _close(sp.betainc(2, 3, F64(0.25)), 0.26171875, rtol=1e-14)   # 1 - (1-x)^3 (1 + 3x)
  with pytest.raises(ValueError, match="betainc does not support complex"):
    sp.betainc(1, 1, np.complex64(0.5))


def test_factorial_comb_poch_multigammaln():
  n = np.arange(0, 20)
  _close(sp.factorial(n), [math.factorial(k) for k in n], rtol=1e-5)
  _close(sp.factorial(np.float32(-1)), 0, rtol=0)
  with pytest.raises(NotImplementedError):
    sp.factorial(3, exact=True)
  N, k = np.meshgrid(np.arange(-1, 12), np.arange(-1, 12))
  expected = [[math.comb(a, b) if 0 <= b <= a else 0 for a, b in zip(ra, rb)]
              for ra, rb in zip(N, k)]
  _close(sp.comb(N, k), expected, rtol=1e-5)
  _close(sp.comb(np.float32(4), np.float32(2), repetition=True), 10, rtol=1e-6)   # C(5, 2)
  _close(sp.comb(np.float32(4), np.float32(0), repetition=True), 1, rtol=0)
  with enable_x64():
    _close(sp.poch(F64(3.5), F64(4)), 3.5 * 4.5 * 5.5 * 6.5, rtol=1e-13)
    _close(sp.poch(F64(2), F64(0)), 1, rtol=0)
    a = F64(4.3)
    _close(sp.multigammaln(a, 3), 3 * 2 / 4 * math.log(math.pi)
           + sum(math.lgamma(a - j / 2) for j in range(3)), rtol=1e-14)


def test_polygamma_and_zeta_wrappers():
  with enable_x64():
    _close(sp.polygamma(np.int32(1), F64(1)), math.pi ** 2 / 6, rtol=1e-15)
    _close(sp.zeta(4, F64(1)), math.pi ** 4 / 90, rtol=1e-15)
  with pytest.raises(ValueError, match="Argument `n` to polygamma must be of integer type"):
    sp.polygamma(1.0, 2.0)
  with pytest.raises(NotImplementedError, match="Riemann zeta"):
    sp.zeta(2.0)


def test_gammainc_wrappers_promote():
  out = sp.gammainc(1, np.arange(3))
  assert out.dtype == np.float32
  _close(out, -np.expm1(-np.arange(3.0)), rtol=1e-6)
  _close(np.asarray(sp.gammaincc(2.5, 1.5)) + sp.gammainc(2.5, 1.5), 1, rtol=1e-6)


def test_bernoulli():
  exact = [Fraction(1), Fraction(-1, 2), Fraction(1, 6), 0, Fraction(-1, 30), 0, Fraction(1, 42),
           0, Fraction(-1, 30), 0, Fraction(5, 66), 0, Fraction(-691, 2730), 0, Fraction(7, 6)]
  with enable_x64():
    _close(sp.bernoulli(14), [float(v) for v in exact], rtol=1e-15)
    b = np.asarray(sp.bernoulli(100))
    assert b.shape == (101,)
    # B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) / (2 pi)^(2k)
    for m in (60, 62, 100):
      zeta_m = math.fsum(j ** -float(m) for j in range(1, 5))
      expected = (-1) ** (m // 2 + 1) * 2 * math.factorial(m) * zeta_m / (2 * math.pi) ** m
      _close(b[m], expected, rtol=1e-13)
  assert sp.bernoulli(2).dtype == np.float32 and sp.bernoulli(0).shape == (1,)
  with pytest.raises(ValueError):
    sp.bernoulli(-1)


# --- error functions and the Faddeeva function ----------------------------------------------

@given(_floats(-5, 25))
def test_erfcx_and_erf_family(x):
  with enable_x64():
    _close(sp.erfcx(x), [math.exp(v * v) * math.erfc(v) for v in x], rtol=1e-12)
    _close(sp.erf(x), [math.erf(v) for v in x], rtol=1e-15)
    _close(sp.erfc(x), [math.erfc(v) for v in x], rtol=1e-15, atol=1e-300)
    y = np.tanh(x / 10)
    _close([math.erf(v) for v in np.asarray(sp.erfinv(y))], y, rtol=1e-14, atol=1e-300)
  _close(sp.erfcx(x.astype(np.float32)), [math.exp(v * v) * math.erfc(v)
                                         for v in x.astype(np.float32).astype(F64)], rtol=2e-6)


def _dawson_reference(x):
  """exp(-x**2) * integral of exp(t**2) over [0, x] = integral of exp((t-x)(t+x))."""
  return _gauss_legendre(lambda t: np.exp((t - x) * (t + x)), 0.0, x)


@given(_floats(-10, 10))
def test_dawsn_and_wofz_on_the_real_line(x):
  expected = [_dawson_reference(v) for v in x]
  with enable_x64():
    _close(sp.dawsn(x), expected, rtol=1e-11, atol=1e-300)
    w = np.asarray(sp.wofz(x))
    _close(w, np.exp(-x * x) + 2j / math.sqrt(math.pi) * np.array(expected), rtol=1e-11)
  _close(sp.dawsn(x.astype(np.float32)), [_dawson_reference(v)
                                         for v in x.astype(np.float32).astype(F64)], rtol=2e-6)


def test_wofz_off_the_real_line():
  # w(z) = (i/pi) integral of exp(-t^2) / (z - t) for Im z > 0, by quadrature
  z = np.array([0.3 + 1j, -2 + 0.7j, 4 + 3j, 0.5j, 10 + 1j])
  t = np.linspace(-12, 12, 200001)
  expected = [1j / np.pi * np.trapezoid(np.exp(-t * t) / (v - t), t) for v in z]
  with enable_x64():
    _close(sp.wofz(z), expected, rtol=1e-9)
    # below the real axis: w(-z) = 2 exp(-z^2) - w(z)
    _close(sp.wofz(-z), 2 * np.exp(-z ** 2) - np.array(expected), rtol=1e-9)
    _close(sp.erfcx(1j * z), sp.wofz(-z), rtol=1e-13)
  assert sp.wofz(np.float32(1)).dtype == np.complex64


def test_error_function_edge_cases():
  x = np.array([np.inf, -np.inf, 0.0], np.float32)
  np.testing.assert_allclose(sp.erfcx(x), [0, np.inf, 1], rtol=2e-7)
  np.testing.assert_array_equal(sp.dawsn(x), [0, 0, 0])
  assert sp.erfcx(np.float16(1)).dtype == np.float16


# --- normal distribution, Owen's T -------------------------------------------------------------

@given(_floats(-35, 35))
def test_ndtr_ndtri_log_ndtr(x):
  cdf = [0.5 * math.erfc(-v / math.sqrt(2)) for v in x]
  with enable_x64():
    _close(sp.ndtr(x), cdf, rtol=1e-12, atol=1e-300)
    lower = x < 0.5   # p = ndtr(x) represents these x accurately
    _close(np.asarray(sp.ndtri(np.array(cdf)))[lower], x[lower], rtol=1e-12, atol=1e-13)
    _close(sp.log_ndtr(x), [math.log(c) if c > 1e-300 else -math.inf for c in cdf],
           rtol=1e-9, atol=1e-15)


def test_normal_distribution_tails_and_dtypes():
  with enable_x64():
    x = F64(-100.0)
    tail = (-x * x / 2 - math.log(-x) - 0.5 * math.log(2 * math.pi)
            + math.log1p(-1 / x ** 2 + 3 / x ** 4))
    _close(sp.log_ndtr(x), tail, rtol=1e-14)
    _close(sp.ndtri(F64(1e-300)), -37.0471, rtol=1e-5)
  np.testing.assert_array_equal(sp.ndtri(np.float32([0, 1, 2])), [-np.inf, np.inf, np.nan])
  for fn in (sp.ndtr, sp.ndtri, sp.log_ndtr, sp.spence):
    with pytest.raises(TypeError, match="is not supported"):
      fn(np.float16(0.5))
  with pytest.raises(ValueError, match="series_order"):
    sp.log_ndtr(np.float32(1), series_order=31)


@given(_floats(-6, 6), _floats(-8, 8))
def test_owens_t_matches_its_integral(h, a):
  expected = [_gauss_legendre(lambda t: np.exp(-hv * hv * (1 + t * t) / 2) / (1 + t * t), 0, av)
              / (2 * math.pi) for hv, av in zip(h, a)]
  with enable_x64():
    _close(sp.owens_t(h, a), expected, rtol=2e-6, atol=1e-12)


def test_owens_t_special_values():
  with enable_x64():
    _close(sp.owens_t(F64(0), F64(2)), math.atan(2) / (2 * math.pi), rtol=1e-14)
    phi = 0.5 * math.erfc(-1.5 / math.sqrt(2))
    _close(sp.owens_t(F64(1.5), F64(1)), phi * (1 - phi) / 2, rtol=1e-13)
  assert np.isnan(sp.owens_t(np.float32(np.nan), np.float32(1)))


# --- logistic, entropies, logsumexp --------------------------------------------------------------

def test_expit_logit_xlogy_entropies():
  x = np.array([-3.0, -0.5, 0.0, 2.0], np.float32)
  _close(sp.expit(x), 1 / (1 + np.exp(-x.astype(F64))), rtol=1e-6)
  _close(sp.logit(sp.expit(x)), x, rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(sp.xlogy(np.float32([0, 0, 2]), np.float32([0, np.nan, 1])),
                                [0, np.nan, 0])
  np.testing.assert_array_equal(sp.xlog1py(np.float32([0, 1]), np.float32([-1, 0])), [0, 0])
  np.testing.assert_array_equal(sp.entr(np.float32([-1, 0])), [-np.inf, 0])
  _close(sp.entr(np.float32(0.5)), 0.5 * math.log(2), rtol=1e-6)
  p = np.float32([0, 0, 1, 2, -1, 1])
  q = np.float32([0, 2, 0, 0.5, 1, -1])
  inf = np.inf
  _close(sp.rel_entr(p, q), [0, 0, inf, 2 * math.log(4), inf, inf], rtol=1e-6)
  _close(sp.kl_div(p, q), [0, 2, inf, 2 * math.log(4) - 1.5, inf, inf], rtol=1e-6)


@given(_floats(0.01, 20), _floats(-3, 3))
def test_boxcox(x, lmbda):
  expected = [math.log(v) if l == 0 else math.expm1(l * math.log(v)) / l for v, l in zip(x, lmbda)]
  expected1p = [math.log1p(v) if l == 0 else math.expm1(l * math.log1p(v)) / l
                for v, l in zip(x, lmbda)]
  with enable_x64():
    _close(sp.boxcox(x, lmbda), expected, rtol=1e-13)
    _close(sp.boxcox1p(x, lmbda), expected1p, rtol=1e-13)
    _close(sp.boxcox(x, F64(0)), np.log(x), rtol=1e-15)


@given(S.arrays(F64, (3, 4), elements=st.floats(-50, 50)), st.sampled_from([None, 0, 1, (0, 1)]),
       st.booleans())
def test_logsumexp_matches_the_direct_formula(a, axis, keepdims):
  with enable_x64():
    # (absolute tolerances: log of a sum near 1 is only good to about 1e-16 absolute)
    _close(sp.logsumexp(a, axis=axis, keepdims=keepdims),
           np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims)), rtol=1e-13, atol=1e-14)
    b = np.where(np.arange(4) % 2 == 0, 2.0, -0.5)
    total = np.sum(b * np.exp(a), axis=axis, keepdims=keepdims)
    out, sign = sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)
    _close(out, np.log(np.abs(total)), rtol=1e-12, atol=1e-14)
    _close(sign, np.sign(total), rtol=0)
    where = a > 0
    masked = np.sum(np.exp(a), axis=axis, keepdims=keepdims, where=where)
    with np.errstate(divide="ignore"):
      _close(sp.logsumexp(a, axis=axis, keepdims=keepdims, where=where), np.log(masked),
             rtol=1e-13, atol=1e-14)


def test_logsumexp_edge_cases():
  big = np.float32([1e30, 1e30])
  _close(sp.logsumexp(big), 1e30, rtol=1e-6)
  np.testing.assert_array_equal(sp.logsumexp(np.float32([-np.inf, -np.inf])), -np.inf)
  np.testing.assert_array_equal(sp.logsumexp(np.float32([1, np.inf])), np.inf)
  assert np.isnan(sp.logsumexp(np.float32([0, 0]), b=np.float32([1, -2])))
  z = np.complex64([0.5, 1j, 2 - 1j])
  _close(sp.logsumexp(z), np.log(np.sum(np.exp(z.astype(complex)))), rtol=1e-6)
  x = np.float32([[1, 2], [3, 4]])
  _close(sp.softmax(x), np.exp(x) / np.exp(x).sum(), rtol=1e-6)
  _close(sp.log_softmax(x, axis=1), x - np.log(np.exp(x).sum(1, keepdims=True)), rtol=1e-6)


# --- exponential, sine and cosine integrals, dilogarithm ------------------------------------

def _expn_reference(n, x):
  """E_n(x) = exp(-x)/x * integral over s >= 0 of exp(-s) (1 + s/x)**-n, with
  s = u / (1 - u) on [0, 1) and Gauss-Legendre."""
  def f(u):
    s = u / (1 - u)
    return np.exp(-s) * (1 + s / x) ** -n / (1 - u) ** 2
  return math.exp(-x) / x * _gauss_legendre(f, 0.0, 1.0)


@given(st.integers(0, 30), st.floats(0.3, 60))
def test_expn_matches_its_integral(n, x):
  with enable_x64():
    _close(sp.expn(n, F64(x)), _expn_reference(n, x), rtol=1e-10)
    if n == 1:
      _close(sp.exp1(F64(x)), _expn_reference(1, x), rtol=1e-10)


@settings(max_examples=10)
@given(_floats(1e-3, 5), st.integers(1, 20))
def test_expn_recurrence_and_small_x(x, n):
  with enable_x64():
    # n E_{n+1}(x) = exp(-x) - x E_n(x)
    _close(n * np.asarray(sp.expn(n + 1, x)), np.exp(-x) - x * np.asarray(sp.expn(n, x)),
           rtol=1e-10, atol=1e-14)
  _close(sp.expn(np.float32(n), x.astype(np.float32)),
         sp.expn(n, x.astype(np.float32).astype(F64)), rtol=3e-6)


def test_expn_edge_cases():
  n = np.float32([-1, 1.5, 1, 3, 0, 2])
  x = np.float32([1, 1, 0, 0, 2, -1])
  np.testing.assert_array_equal(sp.expn(n, x)[:5], [np.nan, np.nan, np.inf, 0.5,
                                                    np.float32(np.exp(-2) / 2)])
  assert np.isnan(sp.expn(n, x)[5])
  np.testing.assert_array_equal(sp.exp1(np.float32([0, np.inf])), [np.inf, 0])


def _e1_reference(x):
  """E_1(x): -gamma - log x - sum (-x)**k / (k k!) (exact sum) for x <= 2, else quadrature."""
  if x > 2:
    return _expn_reference(1, x)
  return -0.5772156649015329 - math.log(x) - math.fsum(
      (-x) ** k / (k * math.factorial(k)) for k in range(1, 60))


def _ei_series(x):
  """Ei(x) for x > 0: gamma + log x + sum x**k / (k k!), positive terms (exact sum)."""
  terms, term, k = [], 1.0, 0
  while k < x or terms[-1] > 1e-18 * terms[0]:   # past the largest term, until negligible
    k += 1
    term *= x / k
    terms.append(term / k)
  return 0.5772156649015329 + math.log(x) + math.fsum(terms)


@given(_floats(1e-4, 300))
def test_expi_matches_its_series(x):
  x = x[np.abs(x - 0.3725) > 0.01]   # relative accuracy is lost at Ei's root
  with enable_x64():
    _close(sp.expi(x), [_ei_series(v) for v in x], rtol=1e-13)
    _close(sp.expi(-x), [-_e1_reference(v) for v in x], rtol=1e-10)
  # float32 exp(x) alone is good to about x * 6e-8; Ei overflows float32 beyond x = 93
  x32 = x[x < 90].astype(np.float32)
  _close(sp.expi(x32), [_ei_series(v) for v in x32.astype(F64)], rtol=1e-5)


def test_expi_edge_cases():
  np.testing.assert_array_equal(sp.expi(np.float32([0, np.inf, -np.inf])), [-np.inf, np.inf, 0])


def _sici_reference(x):
  """(Si, Ci): exact power series (math.fsum) for |x| <= 10, the asymptotic
  expansion (6 terms) beyond."""
  ax = abs(x)
  if ax <= 10:
    si = math.fsum((-1) ** k * ax ** (2 * k + 1) / ((2 * k + 1) * math.factorial(2 * k + 1))
                   for k in range(60))
    ci = 0.5772156649015329 + math.log(ax) + math.fsum(
        (-1) ** k * ax ** (2 * k) / (2 * k * math.factorial(2 * k)) for k in range(1, 60))
  else:
    f = math.fsum((-1) ** k * math.factorial(2 * k) / ax ** (2 * k + 1) for k in range(6))
    g = math.fsum((-1) ** k * math.factorial(2 * k + 1) / ax ** (2 * k + 2) for k in range(6))
    si = math.pi / 2 - f * math.cos(ax) - g * math.sin(ax)
    ci = f * math.sin(ax) - g * math.cos(ax)
  return math.copysign(si, x), ci


@given(st.one_of(_floats(-10, 10), _floats(60, 1e4), _floats(-1e4, -60)))
def test_sici_matches_series_and_asymptotics(x):
  x = np.where(x == 0, 1.0, x)
  si_ref, ci_ref = zip(*[_sici_reference(v) for v in x])
  with enable_x64():
    si, ci = sp.sici(x)
    _close(si, si_ref, rtol=1e-11, atol=1e-14)
    _close(ci, ci_ref, rtol=1e-9, atol=1e-12)   # absolute near Ci's zeros


def test_sici_edge_cases():
  si, ci = sp.sici(np.float32([0, np.inf, -np.inf]))
  np.testing.assert_array_equal(si, np.float32([0, np.pi / 2, -np.pi / 2]))
  np.testing.assert_array_equal(ci, [-np.inf, 0, np.nan])


@given(_floats(1e-3, 1e6))
def test_spence_identities(x):
  with enable_x64():
    # spence(x) + spence(1/x) = -log(x)**2 / 2
    _close(np.asarray(sp.spence(x)) + sp.spence(1 / x), -np.log(x) ** 2 / 2, rtol=1e-12,
           atol=1e-13)
    near = x[np.abs(1 - x) <= 0.9]   # Li2(1 - x) by its power series
    _close(sp.spence(near), [math.fsum((1 - v) ** k / k ** 2 for k in range(1, 500))
                             for v in near], rtol=1e-12, atol=1e-15)


def test_spence_special_values():
  np.testing.assert_allclose(sp.spence(np.float32([0, 1, 2, np.inf])),
                             [math.pi ** 2 / 6, 0, -math.pi ** 2 / 12, -np.inf], rtol=1e-6)
  assert np.isnan(sp.spence(np.float32(-1)))


@given(_floats(-6, 6))
def test_fresnel_matches_its_integrals(x):
  s_ref = [_gauss_legendre(lambda t: np.sin(np.pi * t * t / 2), 0.0, v) for v in x]
  c_ref = [_gauss_legendre(lambda t: np.cos(np.pi * t * t / 2), 0.0, v) for v in x]
  with enable_x64():
    s, c = sp.fresnel(x)
    _close(s, s_ref, rtol=1e-11, atol=1e-15)
    _close(c, c_ref, rtol=1e-11, atol=1e-15)
  s32, c32 = sp.fresnel(x.astype(np.float32))
  _close(s32, s_ref, rtol=1e-5, atol=1e-6)
  _close(c32, c_ref, rtol=1e-5, atol=1e-6)


def test_fresnel_large_arguments_and_edges():
  with enable_x64():
    x = F64(1000.5)
    s, c = sp.fresnel(x)
    phase = math.pi / 2 * (1000 ** 2 + 1000 + 0.25)   # exactly pi x^2 / 2
    # the auxiliary functions f ~ 1/(pi x), g ~ 1/(pi^2 x^3), to relative order x^-4
    f, g = 1 / (math.pi * x), 1 / (math.pi ** 2 * x ** 3)
    _close(s, 0.5 - f * math.cos(phase) - g * math.sin(phase), rtol=1e-13)
    _close(c, 0.5 + f * math.sin(phase) - g * math.cos(phase), rtol=1e-13)
  s, c = sp.fresnel(np.float32([np.inf, -np.inf, 0]))
  np.testing.assert_array_equal(s, [0.5, -0.5, 0])
  np.testing.assert_array_equal(c, [0.5, -0.5, 0])
  assert sp.fresnel(np.float16(1))[0].dtype == np.float16


# --- Bessel functions and spherical harmonics ---------------------------------------------------

def _bessel_i(order, x):
  """I_order(x) by its power series (exact sum)."""
  return math.fsum((x / 2) ** (2 * k + order) / (math.factorial(k) * math.factorial(k + order))
                   for k in range(80))


@given(_floats(-40, 40))
def test_modified_bessel(x):
  with enable_x64():
    _close(sp.i0(x), [_bessel_i(0, v) for v in x], rtol=1e-13)
    _close(sp.i1(x), [_bessel_i(1, v) for v in x], rtol=1e-13, atol=1e-300)
    _close(sp.i0e(x), [_bessel_i(0, v) * math.exp(-abs(v)) for v in x], rtol=1e-13)
    _close(sp.i1e(x), [_bessel_i(1, v) * math.exp(-abs(v)) for v in x], rtol=1e-13, atol=1e-300)


def _bessel_j(n, z):
  """J_n(z) = (1/pi) integral over [0, pi] of cos(n t - z sin t) (trapezoid, spectral)."""
  t = np.linspace(0, np.pi, 2001)
  f = np.cos(n * t - z * np.sin(t))
  return (np.sum(f) - (f[0] + f[-1]) / 2) * (t[1] - t[0]) / np.pi


def test_bessel_jn():
  z = np.array([0.1, 1.0, 2.5, 7.0, 20.0])
  with enable_x64():
    out = np.asarray(sp.bessel_jn(z, v=5))
  assert out.shape == (6, 5)
  _close(out, [[_bessel_j(n, v) for v in z] for n in range(6)], rtol=1e-10, atol=1e-13)
  out32 = sp.bessel_jn(z.astype(np.float32), v=2)   # no float32 overflow at small z
  assert out32.dtype == np.float32
  _close(out32, [[_bessel_j(n, v) for v in z] for n in range(3)], rtol=2e-5, atol=1e-6)


def test_sph_harm_y_known_harmonics():
  theta = np.array([0.3, 1.2, 2.9])
  phi = np.array([0.5, 4.0, 6.0])
  c, s = np.cos(theta), np.sin(theta)
  expected = {
      (0, 0): np.full(3, 0.5 / math.sqrt(math.pi)),
      (1, 0): math.sqrt(3 / (4 * math.pi)) * c,
      (1, 1): -math.sqrt(3 / (8 * math.pi)) * s * np.exp(1j * phi),
      (2, 0): math.sqrt(5 / math.pi) / 4 * (3 * c * c - 1),
      (2, 1): -math.sqrt(15 / (2 * math.pi)) / 2 * s * c * np.exp(1j * phi),
      (2, 2): math.sqrt(15 / (2 * math.pi)) / 4 * s * s * np.exp(2j * phi),
  }
  with enable_x64():
    for (n, m), value in expected.items():
      n_, m_ = np.full(3, n), np.full(3, m)
      _close(sp.sph_harm_y(n_, m_, theta, phi, n_max=3), value, rtol=1e-13, atol=1e-15)
      _close(sp.sph_harm_y(n_, -m_, theta, phi, n_max=3), (-1) ** m * np.conj(value), rtol=1e-13,
             atol=1e-15)
  with pytest.raises(NotImplementedError):
    sp.sph_harm_y(n_, m_, theta, phi, diff_n=1)


@given(st.integers(0, 9), st.floats(0, math.pi), st.floats(0, 2 * math.pi))
def test_sph_harm_y_addition_theorem(n, theta, phi):
  # the sum over m of |Y_n^m|^2 is (2n + 1) / (4 pi) (Unsold's theorem)
  m = np.arange(-n, n + 1)
  with enable_x64():
    y = np.asarray(sp.sph_harm_y(np.full_like(m, n), m, F64(theta), F64(phi)))
  _close(np.sum(np.abs(y) ** 2), (2 * n + 1) / (4 * math.pi), rtol=1e-12)


# --- hypergeometric functions -------------------------------------------------------------------

@given(_floats(-60, 60))
def test_hyp1f1_closed_forms(x):
  with enable_x64():
    _close(sp.hyp1f1(F64(1), F64(2), x), np.expm1(x) / np.where(x == 0, 1, x)
           + (x == 0), rtol=1e-12)
    _close(sp.hyp1f1(F64(2.5), F64(2.5), x), np.exp(x), rtol=1e-14)
    small = x[np.abs(x) < 5] + 0.1
    _close(sp.hyp1f1(F64(0.5), F64(1.5), -small ** 2),
           [math.sqrt(math.pi) / (2 * v) * math.erf(v) if v else 1.0 for v in small],
           rtol=1e-12)
    # Laguerre polynomial: 1F1(-n; 1; x) = L_n(x)
    _close(sp.hyp1f1(F64(-4), F64(1), x),
           [math.fsum((-1) ** k * math.comb(4, k) * v ** k / math.factorial(k) for k in range(5))
            for v in x], rtol=1e-10, atol=1e-10)


def test_hyp1f1_asymptotic_region_and_special_values():
  with enable_x64():
    x = F64(150.0)   # 1F1(1; 3; x) = 2 (e^x - 1 - x) / x^2
    _close(sp.hyp1f1(F64(1), F64(3), x), 2 * (math.exp(150) - 1 - 150) / 150 ** 2, rtol=1e-12)
    _close(sp.hyp1f1(F64(1), F64(3), -x), 2 * (math.exp(-150) - 1 + 150) / 150 ** 2, rtol=1e-12)
  np.testing.assert_array_equal(
      sp.hyp1f1(np.float32([0, 2, 1]), np.float32([3, 2, 0]), np.float32([5, 0, 1])),
      [1, 1, np.inf])


@settings(max_examples=10)
@given(_floats(-50, 0.99))
def test_hyp2f1_closed_forms(x):
  with enable_x64():
    xs = np.where(x == 0, 1e-3, x)
    # c - a - b is an integer here: the series converges slowly near 1 (x near -inf or 1)
    moderate = xs[(xs > -9) & (xs < 0.9)]
    _close(sp.hyp2f1(F64(1), F64(1), F64(2), moderate), -np.log1p(-moderate) / moderate,
           rtol=1e-11)
    _close(sp.hyp2f1(F64(0.7), F64(2.3), F64(2.3), x), (1 - x) ** -0.7, rtol=1e-13)
    y = np.sqrt(np.abs(xs))
    _close(sp.hyp2f1(F64(0.5), F64(1), F64(1.5), -y * y), np.arctan(y) / y, rtol=1e-11)
    inside = y[y < 0.995]
    _close(sp.hyp2f1(F64(0.5), F64(0.5), F64(1.5), inside ** 2), np.arcsin(inside) / inside,
           rtol=1e-10)
    # a terminating series: 2F1(-3, b; c; x), exactly
    b, c = 2.5, 1.25
    poly = [math.fsum(math.prod((-3 + j) * (b + j) / ((c + j) * (j + 1)) for j in range(k)) * v ** k
                      for k in range(4)) for v in x]
    _close(sp.hyp2f1(F64(-3), F64(b), F64(c), x), poly, rtol=1e-11, atol=1e-11)


def test_hyp2f1_special_values():
  with enable_x64():
    a, b, c = 0.5, 0.25, 2.0   # Gauss' sum at x = 1
    _close(sp.hyp2f1(F64(a), F64(b), F64(c), F64(1)),
           math.gamma(c) * math.gamma(c - a - b) / (math.gamma(c - a) * math.gamma(c - b)),
           rtol=1e-13)
  np.testing.assert_array_equal(
      sp.hyp2f1(np.float32([1, 1, 1, 1, 0]), np.float32([1, 1, 2, 1, 2]),
                np.float32([2, -2, 2, 1.5, 3]), np.float32([1.5, 0.5, 1, 0.5, 0.7])),
      [np.inf, np.inf, np.inf, np.float32(math.asin(math.sqrt(.5)) / .5), 1])


# --- dtypes and tracing ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gammaln", "digamma", "erf", "erfc", "erfinv", "expit",
                                  "logit", "i0e", "i1e", "i0", "i1", "entr", "erfcx", "dawsn",
                                  "expi", "exp1", "gamma", "gammasgn"])
def test_integer_inputs_promote_to_float32(name):
  out = getattr(sp, name)(np.int32(1))
  assert out.dtype == np.float32


def test_functions_trace_under_jit():
  x = np.float32([0.5, 2.0])
  f = lambda x: (sp.expi(x) + sp.sici(x)[1] + sp.fresnel(x)[0] + sp.hyp2f1(x, x, 3.0, x / 4)
                 + sp.spence(x) + sp.erfcx(x) + sp.owens_t(x, x) + sp.ndtri(x / 4))
  np.testing.assert_allclose(jax.jit(f)(x), f(x), rtol=1e-6)
  assert "jit[" in str(jax.make_jaxpr(sp.expi)(x))
  assert "igamma" in str(jax.make_jaxpr(sp.gammainc)(x, x))
  assert "regularized_incomplete_beta" in str(jax.make_jaxpr(sp.betainc)(x, x, x))
  assert jnp.allclose(sp.softmax(x), jax.nn.softmax(x, axis=None))
