"""Tests of refimpl/lax/special.py: each special-function primitive against
independent float64 computations (closed forms, exact sums with math.fsum,
Gauss-Legendre and trapezoid quadrature) and identities, plus edge cases,
dtypes, shape rules and jaxpr printing."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import refimpl as jax
from refimpl import lax
from refimpl.config import enable_x64
from conformance import strategies as S

F64 = np.float64
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(200)


def _f64(*values):
  return [np.asarray(v, F64) for v in values]


def _gauss_legendre(fn, lo, hi):
  """The integral of fn over [lo, hi] by 200-point Gauss-Legendre quadrature."""
  t = (hi - lo) / 2 * _NODES + (hi + lo) / 2
  return (hi - lo) / 2 * np.sum(_WEIGHTS * fn(t))


def _close(actual, expected, rtol, atol=0.0):
  np.testing.assert_allclose(np.asarray(actual, F64), expected, rtol=rtol, atol=atol)


# --- incomplete gamma --------------------------------------------------------------------------

def _poisson_upper(n, x):
  """Q(n, x) for integer n: exp(-x) sum over k < n of x**k / k!, exactly summed."""
  return math.fsum(math.exp(k * math.log(x) - x - math.lgamma(k + 1)) for k in range(n))


@given(st.integers(1, 60), st.floats(1e-3, 150))
def test_igamma_integer_a_is_a_poisson_sum(n, x):
  q = _poisson_upper(n, x)
  with enable_x64():
    p_val, q_val = lax.igamma(F64(n), F64(x)), lax.igammac(F64(n), F64(x))
  _close(q_val, q, rtol=1e-11, atol=1e-300)
  _close(p_val, 1 - q, rtol=1e-11, atol=1e-12)   # 1 - q itself is only good to ~1e-13


def _log_poisson_pmf(k, x):
  """log(x**k e**-x / k!) for large k without cancellation: with s = (x - k)/k,
  -k (s - log1p(s)) - log(2 pi k)/2 - (Stirling's correction of log k!)."""
  s = (x - k) / k
  s_minus_log1p = (math.fsum((-s) ** j / j for j in range(2, 40)) if abs(s) < 0.1
                   else s - math.log1p(s))
  return (-k * s_minus_log1p - 0.5 * math.log(2 * math.pi * k)
          - (1 / (12 * k) - 1 / (360 * k ** 3) + 1 / (1260 * k ** 5)))


def test_igamma_uses_temme_expansion_for_large_a():
  n = 150_000
  for x in (n - 1300.0, float(n), n + 1600.0):
    q = math.fsum(math.exp(_log_poisson_pmf(k, x)) for k in range(n - 10_000, n))
    with enable_x64():
      _close(lax.igammac(F64(n), F64(x)), q, rtol=1e-12)
      _close(lax.igamma(F64(n), F64(x)), 1 - q, rtol=1e-12)


@given(S.arrays(F64, (6,), elements=st.floats(0.05, 50)),
       S.arrays(F64, (6,), elements=st.floats(1e-3, 80)))
def test_igamma_closed_forms_and_complement(a, x):
  with enable_x64():
    _close(lax.igamma(F64(1), x), -np.expm1(-x), rtol=1e-13)
    _close(lax.igamma(F64(0.5), x), [math.erf(math.sqrt(v)) for v in x], rtol=1e-13)
    _close(np.asarray(lax.igamma(a, x)) + lax.igammac(a, x), 1.0, rtol=1e-14)
    # P(a + 1, x) = P(a, x) - x**a exp(-x) / Gamma(a + 1)
    step = np.exp(a * np.log(x) - x - np.array([math.lgamma(v + 1) for v in a]))
    _close(lax.igamma(a + 1, x), np.asarray(lax.igamma(a, x)) - step, rtol=1e-10, atol=1e-15)


def test_igammac_small_a_keeps_relative_accuracy():
  # Q(a, x) ~ a E1(x) for tiny a; E1(0.5) = 0.5597735947761608.
  with enable_x64():
    _close(lax.igammac(F64(1e-12), F64(0.5)), 1e-12 * 0.5597735947761608, rtol=1e-9)


def test_igamma_edge_cases():
  nan, inf = np.nan, np.inf
  a = np.array([nan, 1, -1, 1, 0, 2, 0, 2, inf, inf], np.float32)
  x = np.array([1, nan, 1, -1, 0, 0, 3, inf, 3, inf], np.float32)
  np.testing.assert_array_equal(lax.igamma(a, x), [nan, nan, nan, nan, nan, 0, 1, 1, 0, 1])
  np.testing.assert_array_equal(lax.igammac(a, x), [nan, nan, nan, nan, nan, 1, 0, 0, 1, nan])


def _igamma_reference(a, x):
  """(P(a, x), dP/da) by quadrature of the integrals of t**(a-1) e**-t (and
  of its product with log t) over [0, x], with t = x u**6 (which makes the
  integrands smooth enough for a >= 1/2), and a finite-difference digamma."""
  def integral(fn):
    return _gauss_legendre(lambda u: 6 * x ** a * u ** (6 * a - 1) * np.exp(-x * u ** 6) * fn(u),
                           0.0, 1.0)
  gamma = math.gamma(a)
  h = 1e-3
  psi = (math.lgamma(a - 2 * h) - 8 * math.lgamma(a - h) + 8 * math.lgamma(a + h)
         - math.lgamma(a + 2 * h)) / (12 * h)
  p = integral(lambda u: 1.0) / gamma
  dp = integral(lambda u: np.log(x) + 6 * np.log(u)) / gamma - psi * p
  return p, dp


@given(st.floats(0.5, 30), st.floats(0.05, 60))
def test_igamma_grad_a_and_random_gamma_grad_match_quadrature(a, x):
  p, dp = _igamma_reference(a, x)
  density = math.exp((a - 1) * math.log(x) - x - math.lgamma(a))
  with enable_x64():
    _close(lax.igamma(F64(a), F64(x)), p, rtol=1e-8, atol=1e-12)
    _close(lax.igamma_grad_a(F64(a), F64(x)), dp, rtol=1e-6, atol=1e-10)
    _close(lax.random_gamma_grad(F64(a), F64(x)), -dp / density, rtol=1e-6,
           atol=1e-10 / density)


def test_igamma_grad_a_for_large_a_matches_finite_differences():
  a, x = 3e5, 3e5 + 400.0
  with enable_x64():
    h = 1.0
    numeric = (float(lax.igamma(F64(a + h), F64(x))) - float(lax.igamma(F64(a - h), F64(x)))) / 2
    _close(lax.igamma_grad_a(F64(a), F64(x)), numeric, rtol=1e-6)


def test_igamma_grad_edge_cases():
  nan = np.nan
  a = np.array([0, -1, 1, 1, 2], np.float32)
  x = np.array([1, 1, -1, 0, 0], np.float32)
  np.testing.assert_array_equal(lax.igamma_grad_a(a, x), [nan, nan, nan, 0, 0])
  with enable_x64():   # x / a rounds to 0 in Temme's expansion: P is 0 there, and so is dP/da
    huge = np.array([2.0 ** 53, 2.0 ** 60, 1e30])
    np.testing.assert_array_equal(lax.igamma_grad_a(huge, np.ones(3)), [0, 0, 0])
    np.testing.assert_array_equal(lax.igamma(huge, np.ones(3)), [0, 0, 0])
  np.testing.assert_array_equal(lax.random_gamma_grad(a, x), [nan, nan, nan, 0, 0])


# --- log gamma, digamma, polygamma, zeta ---------------------------------------------------------

@given(S.arrays(F64, (8,), elements=st.floats(1.01, 60)),
       S.arrays(F64, (8,), elements=st.floats(0.01, 100)))
def test_zeta_recurrence_and_direct_sum(x, q):
  with enable_x64():
    _close(np.asarray(lax.zeta(x, q)) - lax.zeta(x, q + 1), q ** -x, rtol=1e-11)
    big = x + 30   # the direct sum converges fast: (q + k)**-x
    direct = [math.fsum((v + k) ** -s for k in range(200)) for s, v in zip(big, q + 1)]
    _close(lax.zeta(big, q + 1), direct, rtol=1e-13)


def test_zeta_known_values_and_domain():
  with enable_x64():
    _close(lax.zeta(F64(2), F64(1)), math.pi ** 2 / 6, rtol=1e-15)
    _close(lax.zeta(F64(4), F64(1)), math.pi ** 4 / 90, rtol=1e-15)
    _close(lax.zeta(F64(3), F64(0.5)), 7 * 1.2020569031595942, rtol=1e-14)   # (2**3 - 1) zeta(3)
    _close(lax.zeta(F64(2), F64(-0.5)), math.pi ** 2 / 2 + 4, rtol=1e-14)    # zeta(2, 1/2) + 4
  nan, inf = np.nan, np.inf
  x = np.array([0.5, 1, 2, 3, 2.5, inf, inf, inf, 2, nan], np.float32)
  q = np.array([1, 1, 0, -1, -0.5, 2, 1, 0.5, inf, 1], np.float32)
  np.testing.assert_array_equal(lax.zeta(x, q), [nan, inf, inf, nan, nan, 0, 1, inf, 0, nan])
  x = np.array([1, 2, 3, 2.5, 0.5], np.float32)   # q = -inf is a pole (JAX: inf, else NaN)
  np.testing.assert_array_equal(lax.zeta(x, np.full(5, -inf, np.float32)),
                                [inf, inf, nan, nan, nan])


@given(S.arrays(F64, (6,), elements=st.floats(0.1, 30)), st.integers(1, 6))
def test_polygamma_recurrence(x, m):
  mf = F64(m)
  with enable_x64():
    step = (-1) ** m * math.factorial(m) / x ** (m + 1)   # psi^(m)(x+1) - psi^(m)(x)
    at_x, at_x1 = np.asarray(lax.polygamma(mf, x)), np.asarray(lax.polygamma(mf, x + 1))
    assert np.all(np.abs(at_x1 - at_x - step) <= 1e-13 * (np.abs(at_x) + np.abs(at_x1)))
    _close(lax.polygamma(F64(0), x), lax.digamma(x), rtol=0)
    _close(lax.polygamma(F64(1), x), lax.zeta(F64(2), x), rtol=1e-15)


def test_polygamma_known_values_and_domain():
  with enable_x64():
    _close(lax.polygamma(F64(1), F64(1)), math.pi ** 2 / 6, rtol=1e-15)
    _close(lax.polygamma(F64(2), F64(1)), -2 * 1.2020569031595942, rtol=1e-14)
    _close(lax.polygamma(F64(3), F64(0.5)), math.pi ** 4, rtol=1e-13)
  nan, inf = np.nan, np.inf
  m = np.array([-1, 1.5, inf, 1, 2, nan], np.float32)
  x = np.array([1, 1, 1, 0, -3, 1], np.float32)
  np.testing.assert_array_equal(lax.polygamma(m, x), [nan, nan, nan, inf, nan, nan])
  np.testing.assert_array_equal(lax.polygamma(np.float32([1, 2]), np.float32([-inf, -inf])),
                                [inf, nan])


# --- Bessel functions --------------------------------------------------------------------------

def _scaled_bessel_i(order, x):
  """e**-|x| I_order(x) = (1/pi) integral over [0, pi] of exp(x cos t - |x|) cos(order t),
  by the trapezoid rule (spectrally accurate for this periodic integrand)."""
  t = np.linspace(0, np.pi, 4001)
  f = np.exp(x * np.cos(t) - abs(x)) * np.cos(order * t)
  return (np.sum(f) - (f[0] + f[-1]) / 2) * (t[1] - t[0]) / np.pi


@given(S.arrays(F64, (6,), elements=st.floats(-300, 300)))
def test_bessel_i0e_i1e_match_their_integrals(x):
  with enable_x64():
    _close(lax.bessel_i0e(x), [_scaled_bessel_i(0, v) for v in x], rtol=1e-13)
    _close(lax.bessel_i1e(x), [_scaled_bessel_i(1, v) for v in x], rtol=1e-12, atol=1e-15)


def test_bessel_edge_cases():
  x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
  np.testing.assert_array_equal(lax.bessel_i0e(x), [1, 1, 0, 0, np.nan])
  i1 = np.asarray(lax.bessel_i1e(x))
  np.testing.assert_array_equal(i1, [0, 0, 0, 0, np.nan])
  np.testing.assert_array_equal(np.signbit(i1[:4]), [False, True, False, True])
  np.testing.assert_allclose(lax.bessel_i1e(np.float32(-1.0)), -0.2079104153497085, rtol=1e-7)


# --- regularized incomplete beta -----------------------------------------------------------------

def _betainc_binomial(a, b, x):
  """I_x(a, b) for integers a, b: sum over j >= a of C(a+b-1, j) x**j (1-x)**(a+b-1-j)."""
  n = a + b - 1
  return math.fsum(math.comb(n, j) * x ** j * (1 - x) ** (n - j) for j in range(a, n + 1))


@given(st.integers(1, 40), st.integers(1, 40), st.floats(0, 1))
def test_betainc_integer_parameters_is_a_binomial_sum(a, b, x):
  with enable_x64():
    _close(lax.betainc(F64(a), F64(b), F64(x)), _betainc_binomial(a, b, x), rtol=1e-11,
           atol=1e-15)


@given(S.arrays(F64, (6,), elements=st.floats(0.01, 200)),
       S.arrays(F64, (6,), elements=st.floats(0.01, 200)),
       S.arrays(F64, (6,), elements=st.floats(0, 1)))
def test_betainc_symmetry_and_closed_forms(a, b, x):
  x = 1 - (1 - x)   # so that 1 - x is exact
  with enable_x64():
    _close(np.asarray(lax.betainc(a, b, x)) + lax.betainc(b, a, 1 - x), 1.0, rtol=1e-12)
    with np.errstate(divide="ignore"):   # log1p(-1) at x = 1
      _close(lax.betainc(F64(1), b, x), -np.expm1(b * np.log1p(-x)), rtol=1e-12)
    _close(lax.betainc(a, F64(1), x), x ** a, rtol=1e-12, atol=1e-300)


def test_betainc_edge_cases():
  nan = np.nan
  a = np.array([-1, 1, 1, 0, 0, 1, 1, np.inf, 0, 2, 2], np.float32)
  b = np.array([1, 1, 1, 1, 1, 0, 0, 1, 0, 3, 3], np.float32)
  x = np.array([.5, -.1, 1.1, 0, .3, .3, 1, .3, .5, 0, 1], np.float32)
  np.testing.assert_array_equal(lax.betainc(a, b, x), [nan, nan, nan, 0, 1, 0, 1, 0, nan, 0, 1])


# --- mulhi ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", S.INT_DTYPES)
def test_mulhi_is_the_high_half_of_the_exact_product(dtype):
  info = np.iinfo(dtype)
  rng = np.random.default_rng(0)
  x = rng.integers(info.min, info.max, 50, endpoint=True).astype(dtype)
  y = rng.integers(info.min, info.max, 50, endpoint=True).astype(dtype)
  x[:4] = [info.min, info.max, info.max, info.min]
  y[:4] = [info.min, info.max, info.min, 1 if info.min == 0 else -1]
  bits = np.dtype(dtype).itemsize * 8
  expected = [(int(a) * int(b)) >> bits for a, b in zip(x, y)]
  out = lax.mulhi(x, y)
  assert out.dtype == dtype
  np.testing.assert_array_equal(np.asarray(out).astype(object), expected)


def test_mulhi_scalars_and_empty_arrays():
  # int(): the exact product's high word exceeds int32, which a Python int operand must fit.
  high = int(lax.mulhi(np.uint32(3036988439), np.uint32(3037012561)))
  assert high == (3036988439 * 3037012561) >> 32
  assert lax.mulhi(np.int8(-128), np.int8(-128)) == 64
  assert lax.mulhi(np.zeros((0, 2), np.int16), np.int16(7)).shape == (0, 2)


def test_mulhi_64_bit():
  with enable_x64():
    x = np.array([2 ** 63 - 1, -2 ** 63, -1], np.int64)
    assert list(np.asarray(lax.mulhi(x, x))) == [(int(v) * int(v)) >> 64 for v in x]
    u = np.array([2 ** 64 - 1, 2 ** 32], np.uint64)
    assert list(np.asarray(lax.mulhi(u, u))) == [(int(v) * int(v)) >> 64 for v in u]


def test_mulhi_rejects_floats():
  with pytest.raises(TypeError, match="mulhi does not accept dtype float32"):
    lax.mulhi(np.float32(1), np.float32(2))


# --- dtypes, shapes and printing ---------------------------------------------------------------

_BINARY = [lax.igamma, lax.igammac, lax.igamma_grad_a, lax.random_gamma_grad, lax.zeta,
           lax.polygamma]
_UNARY = [lax.lgamma, lax.digamma, lax.bessel_i0e, lax.bessel_i1e, lax.erf, lax.erfc,
          lax.erf_inv]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_results_keep_the_operand_dtype(dtype):
  x = np.array([0.5, 2.0], dtype)
  for fn in _UNARY:
    assert fn(x).dtype == dtype, fn
  for fn in _BINARY:
    out = fn(np.array([2.0, 3.0], dtype), x)
    assert out.dtype == dtype, fn
    np.testing.assert_allclose(np.asarray(out, np.float32),
                               fn(np.array([2.0, 3.0], np.float32), x.astype(np.float32)),
                               rtol=1e-2, err_msg=str(fn))
  assert lax.betainc(x, x, np.array([0.3, 0.6], dtype)).dtype == dtype


def test_float64_under_x64():
  with enable_x64():
    assert lax.igamma(F64(2), F64(1)).dtype == F64
    assert lax.betainc(F64(2), F64(2), F64(.5)).dtype == F64
  assert lax.igamma(F64(2), F64(1)).dtype == np.float32   # canonicalized without x64


def test_shape_dtype_and_weak_type_rules():
  x = np.ones((2, 3), np.float32)
  assert lax.igamma(x, np.float32(2)).shape == (2, 3)
  assert lax.betainc(x, np.ones((1, 3), np.float32), np.float32(.5)).shape == (2, 3)
  assert lax.zeta(2.0, 1.0).weak_type and not lax.zeta(np.float32(2), 1.0).weak_type
  with pytest.raises(TypeError, match="lax.igamma requires arguments to have the same dtypes"):
    lax.igamma(np.float32(1), np.float16(1))
  with pytest.raises(TypeError, match="zeta does not accept dtype int32"):
    lax.zeta(np.int32(2), np.int32(1))
  with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
    lax.betainc(x, np.ones((3, 3), np.float32), x)


def test_jaxpr_printing():
  f = np.float32(1)
  for fn, name in [(lax.igamma, "igamma"), (lax.igammac, "igammac"), (lax.zeta, "zeta"),
                   (lax.polygamma, "polygamma"), (lax.random_gamma_grad, "random_gamma_grad"),
                   (lax.igamma_grad_a, "igamma_grad_a")]:
    assert f"= {name} a b" in str(jax.make_jaxpr(fn)(f, f))
  assert "regularized_incomplete_beta a b c" in str(jax.make_jaxpr(lax.betainc)(f, f, f))
  assert "bessel_i1e a" in str(jax.make_jaxpr(lax.bessel_i1e)(f))
  assert "mulhi a b" in str(jax.make_jaxpr(lax.mulhi)(np.int32(1), np.int32(2)))


def test_jit_agrees_with_eager():
  a = np.array([0.5, 3.0, 40.0], np.float32)
  x = np.array([0.2, 3.5, 30.0], np.float32)
  f = lambda a, x: lax.add(lax.igamma(a, x), lax.betainc(a, a, lax.div(x, lax.add(x, a))))
  np.testing.assert_array_equal(jax.jit(f)(a, x), f(a, x))


def test_primitive_docstrings_state_semantics():
  for prim in [lax.igamma_p, lax.igammac_p, lax.igamma_grad_a_p, lax.zeta_p, lax.polygamma_p,
               lax.bessel_i0e_p, lax.bessel_i1e_p, lax.regularized_incomplete_beta_p,
               lax.lgamma_p, lax.digamma_p, lax.erf_p, lax.erfc_p, lax.erf_inv_p, lax.mulhi_p]:
    assert prim.__doc__ and len(prim.__doc__) > 100, prim
