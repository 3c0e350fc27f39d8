"""Special functions: gamma and error functions, zeta, Bessel functions, the
incomplete gamma and beta functions; and `mulhi`.

Rules shared by the primitives here (those of `refimpl/lax/elementwise.py`):

* Operands are floating (float16, bfloat16, float32, float64) and all have the
  same dtype, which is the result's dtype; `mulhi` alone takes integers.
* Shape: rank-0 operands broadcast against anything, operands of equal rank
  broadcast along size-1 dimensions; other rank mismatches raise `TypeError`.
  The result is weakly typed only when every operand is.
* Values: each reference rule computes in float64 with the method its
  docstring names (series, continued fractions and asymptotic expansions from
  Numerical Recipes, Cephes and the DLMF) and rounds once to the result dtype
  (16-bit floats by way of float32, which is how XLA computes them). Unless a
  docstring says otherwise, the float64 value is accurate to about 1e-13
  relative, well beyond float32's 6e-8; docstrings state where it is less.
  NaN in any operand gives NaN.
"""

import functools
import math

import numpy as np

from refimpl import dtypes
from refimpl.core import get_aval
from refimpl.interpreters import ad
from refimpl.lax import elementwise
from refimpl.lax.elementwise import (add, binop, exp, gt, log, log1p, mul, naryop, neg,
                                     reciprocal, select, sign, square, sub, unop)
from refimpl.lax.rules import FLOAT, INTEGER, const
from refimpl.lax.shapes import full_like

__all__ = [
    'lgamma', 'digamma', 'polygamma', 'igamma', 'igammac', 'igamma_grad_a',
    'random_gamma_grad', 'zeta', 'bessel_i0e', 'bessel_i1e', 'erf', 'erfc',
    'erf_inv', 'betainc', 'mulhi',
    'lgamma_p', 'digamma_p', 'polygamma_p', 'igamma_p', 'igammac_p',
    'igamma_grad_a_p', 'zeta_p', 'bessel_i0e_p', 'bessel_i1e_p', 'erf_p',
    'erfc_p', 'erf_inv_p', 'regularized_incomplete_beta_p', 'mulhi_p',
]

_EPS = 2.0 ** -54
"""Series and continued fractions stop when a step changes the result by less
than this, relative (a quarter ulp of float64)."""

_MAX_ITERATIONS = 20_000
"""A cap on series and continued-fraction steps, reached only outside the
domains where the docstrings promise accuracy."""

_nan, _inf = math.nan, math.inf


def _float64_map(scalar_fn):
  """`scalar_fn` (Python floats in, a Python float out) applied elementwise,
  with NumPy broadcasting, to operands converted to float64."""
  vectorized = np.vectorize(scalar_fn, otypes=[np.float64])

  def apply(*operands):
    return vectorized(*(np.asarray(x, np.float64) for x in operands))
  return apply


def _exp(v):
  """math.exp, but inf on overflow instead of an exception."""
  return math.exp(v) if v < 709.8 else _inf


def _pow(base, exponent):
  """base ** exponent as the C library's pow computes it, by IEEE rules (inf
  on overflow, 0 on underflow, NaN for a negative base and a fractional
  exponent): math.pow, or where it raises instead of giving an infinity or
  NaN, np.power (such results are exact). np.power itself is not used for
  the rest: its float64 loop is SVML's on CPUs with AVX-512, a few ulps
  from the C library's, and these rules must not depend on the CPU."""
  try:
    return math.pow(base, exponent)
  except (OverflowError, ValueError):
    return float(np.power(np.float64(base), np.float64(exponent)))


def _is_integer(v):
  return math.isfinite(v) and v == math.floor(v)


# --- log gamma, digamma, polygamma ---------------------------------------------------------

def _lgamma_scalar(v):
  try:
    return math.lgamma(v)
  except (ValueError, OverflowError):   # the poles 0, -1, -2, ..., and huge v
    return _inf


def _lgamma(x):
  """log |Gamma(x)|: inf at the poles 0, -1, -2, ... and at ±inf; NaN for NaN.
  Python's math.lgamma, accurate to a few ulp of float64 (less near its zeros
  x = 1 and x = 2, where the error is absolute, about 1e-16)."""
  return _float64_map(_lgamma_scalar)(x)


def _digamma(x):
  """psi(x) = d/dx log Gamma(x). NaN at the poles 0, -1, -2, ... and at -inf
  and NaN; psi(inf) is inf.

  Computed in float64: the recurrence psi(x) = psi(x + 1) - 1/x moves x to at
  least 10, where the asymptotic series (7 terms) is accurate to 1e-16;
  negative x use the reflection psi(x) = psi(1 - x) - pi / tan(pi x). The
  relative error is about 1e-15, larger only near psi's root x = 1.4616...
  where the error is absolute, about 1e-16.
  """
  x = np.asarray(x, np.float64)
  reflect = x < 0.5
  z = np.where(reflect, 1.0 - x, x)
  shift = np.zeros_like(z)
  for _ in range(10):
    small = z < 10.0
    shift -= np.where(small, 1.0 / np.where(small, z, 1.0), 0.0)
    z = np.where(small, z + 1.0, z)
  inv2 = 1.0 / (z * z)
  series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
      1 / 240 - inv2 * (1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
  psi = shift + np.log(z) - 0.5 / z - series
  # tan has period pi, so reduce the argument first: pi * x loses accuracy near integers.
  reflected = psi - np.pi / np.tan(np.pi * (x - np.round(x)))
  psi = np.where(reflect, reflected, psi)
  pole = (x <= 0) & (x == np.floor(x))
  return np.where(pole | np.isneginf(x), np.nan, psi)


def _digamma_scalar(v):
  return float(_digamma(v))


def _polygamma_scalar(m, x):
  if math.isnan(m) or math.isnan(x) or m < 0 or not _is_integer(m):
    return _nan
  if m == 0:
    return _digamma_scalar(x)
  z = _zeta_scalar(m + 1, x)
  sign = 1.0 if m % 2 == 1 else -1.0
  if m <= 170:
    return sign * float(math.factorial(int(m))) * z
  if z == 0 or not math.isfinite(z):   # zeta underflowed (gives 0), or inf / NaN
    return sign * z
  return sign * math.copysign(_exp(math.lgamma(m + 1) + math.log(abs(z))), z)


def _polygamma(m, x):
  """The m-th derivative of digamma, psi^(m)(x), for a natural number m
  (given as a float of x's dtype); NaN for any other m (negative,
  fractional, infinite).

  m = 0 is digamma; otherwise psi^(m)(x) = (-1)**(m+1) m! zeta(m + 1, x), so
  the poles and domain of `zeta` carry over: at x = 0, -1, -2, ... the result
  is +inf for odd m and NaN for even m (the one-sided limits differ in sign).
  For m > 170, m! is combined with zeta in log space, and a zeta that
  underflows float64 gives 0.
  """
  return _float64_map(_polygamma_scalar)(m, x)


lgamma_p = unop("lgamma", FLOAT, _lgamma)
digamma_p = unop("digamma", FLOAT, _digamma)
polygamma_p = binop("polygamma", FLOAT, _polygamma)


# --- Hurwitz zeta ------------------------------------------------------------------------------

def bernoulli_numbers(n):
  """The Bernoulli numbers B_0 .. B_n as exact fractions, with B_1 = -1/2
  (the Akiyama-Tanigawa algorithm, which gives +1/2, sign-corrected)."""
  from fractions import Fraction  # here, not at import: fractions loads decimal
  row, numbers = [], []
  for m in range(n + 1):
    row.append(Fraction(1, m + 1))
    for j in range(m, 0, -1):
      row[j - 1] = j * (row[j - 1] - row[j])
    numbers.append(row[0])
  if n >= 1:
    numbers[1] = -numbers[1]
  return numbers


@functools.cache
def _euler_maclaurin_coefficients():
  """B_{2j} / (2j)! for j = 1..20: the Euler-Maclaurin correction coefficients
  (computed on first use rather than at import)."""
  return [float(b / math.factorial(2 * j))
          for j, b in enumerate(bernoulli_numbers(40)[2::2], start=1)]


def _zeta_scalar(x, q):
  if math.isnan(x) or math.isnan(q):
    return _nan
  if x == 1:
    return _inf
  if x < 1:
    return _nan
  if q <= 0:
    if q == -_inf or q == math.floor(q):   # a pole: a term 1 / (q + k)**x with q + k = 0
      return _inf if _is_integer(x) and x % 2 == 0 else _nan
    if not _is_integer(x):
      return _nan
  if x == _inf:
    return 1.0 if q == 1 else 0.0 if q > 1 else _inf if q > 0 else _nan
  if q == _inf:
    return 0.0
  total = 0.0
  if q < 0:   # (x is an integer) sum the terms with q + k < 0, then go on from q > 0
    shift = math.ceil(-q)
    if shift > 10 ** 6:
      return _nan
    total = float(np.sum(np.array([_pow(q + k, -x) for k in range(shift)])))
    q += shift
  n = 0
  while True:   # direct summation, until the terms vanish or Euler-Maclaurin is accurate
    term = _pow(q + n, -x)
    total += term
    n += 1
    if abs(term) <= _EPS * abs(total):
      return total
    if n >= 10 and q + n >= x / 2 + 10:
      break
  a = q + n
  power = _pow(a, -x)
  total += power * a / (x - 1) + power / 2
  factor = x * power / a   # x (x+1) ... (x+2j-2) a**(-x-2j+1), for j = 1
  previous = _inf
  for j, coefficient in enumerate(_euler_maclaurin_coefficients(), start=1):
    term = coefficient * factor
    if abs(term) <= _EPS * abs(total) or abs(term) > previous:
      break
    total += term
    previous = abs(term)
    factor *= (x + 2 * j - 1) * (x + 2 * j) / (a * a)
  return total


def _zeta(x, q):
  """The Hurwitz zeta function zeta(x, q) = sum over k >= 0 of 1 / (k + q)**x.

  Domain (XLA's): x < 1 is NaN (no analytic continuation) and x = 1 is inf.
  For q <= 0 the sum is defined only for integer x (else NaN); at the poles
  q = 0, -1, -2, ... the result is inf for even integer x and NaN otherwise.
  zeta(x, inf) is 0; zeta(inf, q) is 0 for q > 1, 1 for q = 1, inf for
  0 < q < 1. A q below -1e6 gives NaN (not computed).

  Computed by direct summation of the first terms (at least 10, and until
  k + q >= x / 2 + 10), then the Euler-Maclaurin formula with up to 20
  Bernoulli terms, stopping when the terms stop shrinking; the direct sum
  stops early once its terms fall below a quarter ulp of the total.
  """
  return _float64_map(_zeta_scalar)(x, q)


zeta_p = binop("zeta", FLOAT, _zeta)


# --- incomplete gamma -----------------------------------------------------------------------

_TEMME_MIN_A = 1e5
"""Above this `a`, P and Q come from Temme's uniform asymptotic expansion."""


def _igamma_series(a, x):
  """(S, dS/da) where P(a, x) = x**a e**-x / Gamma(a + 1) * S and
  S = sum over n >= 0 of x**n / ((a+1) (a+2) ... (a+n)); for x < 1 or x <= a."""
  term, dterm, s, ds = 1.0, 0.0, 1.0, 0.0
  for n in range(1, _MAX_ITERATIONS):
    ratio = x / (a + n)
    term *= ratio
    dterm = dterm * ratio - term / (a + n)
    s += term
    ds += dterm
    if term <= _EPS * s and abs(dterm) <= _EPS * (abs(ds) + s):
      break
  return s, ds


def _igammac_fraction(a, x):
  """(F, dF/da) where Q(a, x) = x**a e**-x / Gamma(a) * F and F is Legendre's
  continued fraction 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))),
  evaluated by its convergents p_k / q_k (Cephes' igamc); for x >= 1, x > a."""
  y, z, c = 1.0 - a, x + 2.0 - a, 0.0
  pkm2, qkm2, pkm1, qkm1 = 1.0, x, x + 1.0, z * x
  dpkm2, dqkm2, dpkm1, dqkm1 = 0.0, 0.0, 0.0, -x
  ans = pkm1 / qkm1
  dans = (dpkm1 - ans * dqkm1) / qkm1
  for _ in range(_MAX_ITERATIONS):
    c += 1.0
    y += 1.0
    z += 2.0
    yc = y * c
    pk = pkm1 * z - pkm2 * yc
    qk = qkm1 * z - qkm2 * yc
    dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
    dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
    converged = False
    if qk != 0:
      r = pk / qk
      dr = (dpk - r * dqk) / qk
      converged = (abs(ans - r) <= _EPS * abs(r)
                   and abs(dans - dr) <= _EPS * (abs(dr) + abs(r)))
      ans, dans = r, dr
    pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
    dpkm2, dpkm1, dqkm2, dqkm1 = dpkm1, dpk, dqkm1, dqk
    if abs(pk) > 2.0 ** 500:   # rescale the convergents (their ratio is unchanged)
      scale = 2.0 ** -500
      pkm2, pkm1, qkm2, qkm1 = pkm2 * scale, pkm1 * scale, qkm2 * scale, qkm1 * scale
      dpkm2, dpkm1, dqkm2, dqkm1 = dpkm2 * scale, dpkm1 * scale, dqkm2 * scale, dqkm1 * scale
    if converged:
      break
  return ans, dans


def _x_minus_log1p(s):
  """s - log(1 + s), accurate near s = 0 (a series for |s| < 0.25); inf at s = -1."""
  if s == -1:
    return _inf
  if abs(s) >= 0.25:
    return s - math.log1p(s)
  total, power = 0.0, s
  for k in range(2, 60):
    power *= -s
    total += power / k
    if abs(power) <= _EPS * total:
      break
  return -total


def _igamma_temme(a, x):
  """(P, Q) by Temme's uniform asymptotic expansion (DLMF 8.12.3-8.12.4) with
  the coefficients c0 and c1; the error is O(a**-3), below 1e-15 for a > 1e5."""
  sigma = (x - a) / a
  half_eta2 = _x_minus_log1p(sigma)   # lambda - 1 - log(lambda), lambda = x / a
  eta = math.copysign(math.sqrt(2 * half_eta2), sigma)
  if abs(eta) < 0.02:   # Taylor expansions: the closed forms cancel near eta = 0
    c0 = -1 / 3 + eta * (1 / 12 + eta * (-2 / 135 + eta * (1 / 864)))
    c1 = -1 / 540 + eta * (-1 / 288 + eta * (1 / 378))
  else:
    c0 = 1 / sigma - 1 / eta
    c1 = 1 / eta ** 3 - 1 / sigma ** 3 - 1 / sigma ** 2 - 1 / (12 * sigma)
  r = math.exp(-a * half_eta2) / math.sqrt(2 * math.pi * a) * (c0 + c1 / a)
  z = eta * math.sqrt(a / 2)
  return 0.5 * math.erfc(-z) - r, 0.5 * math.erfc(z) + r


def _igamma_pq(a, x):
  """(P, Q) for finite a > 0 and finite x > 0."""
  if a > _TEMME_MIN_A:
    return _igamma_temme(a, x)
  log_x = math.log(x)
  if x < 1 or x <= a:
    s, _ = _igamma_series(a, x)
    p = _exp(a * log_x - x - math.lgamma(a + 1)) * s
    return p, (_igammac_small_x(a, x) if x < 1 else 1.0 - p)
  f, _ = _igammac_fraction(a, x)
  q = _exp(a * log_x - x - math.lgamma(a)) * f
  return 1.0 - q, q


@functools.cache
def _zeta_of_integers():
  """zeta(2), zeta(3), ..., zeta(49): the Taylor coefficients of log Gamma(1 + a)
  (computed on first use rather than at import)."""
  return [_zeta_scalar(float(k), 1.0) for k in range(2, 50)]


def _lgamma1p(a):
  """log Gamma(1 + a), accurate also for tiny a (where 1 + a would round):
  -gamma a + sum over k >= 2 of zeta(k) (-a)**k / k for |a| < 0.2."""
  if abs(a) >= 0.2:
    return math.lgamma(1 + a)
  total, power = -0.5772156649015329 * a, -a
  for k, zeta_k in enumerate(_zeta_of_integers(), start=2):
    power *= -a
    total += power * zeta_k / k
    if abs(power) <= _EPS * abs(total):
      break
  return total


def _igammac_small_x(a, x):
  """Q(a, x) for x < 1 without cancellation (Cephes' igamc series):
  Q = 1 - x**a / Gamma(a+1) - x**a / Gamma(a) * sum over n >= 1 of (-x)**n / (n! (a+n))."""
  term, total = 1.0, 0.0
  for n in range(1, 100):
    term *= -x / n
    total += term / (a + n)
    if abs(term / (a + n)) <= _EPS * abs(total):
      break
  log_x = math.log(x)
  return -math.expm1(a * log_x - _lgamma1p(a)) - _exp(a * log_x - math.lgamma(a)) * total


def _igamma_scalar(a, x):
  if math.isnan(a) or math.isnan(x) or a < 0 or x < 0 or (a == 0 and x == 0):
    return _nan
  if x == 0:
    return 0.0
  if a == 0 or x == _inf:
    return 1.0
  if a == _inf:
    return 0.0
  return _igamma_pq(a, x)[0]


def _igammac_scalar(a, x):
  if (math.isnan(a) or math.isnan(x) or a < 0 or x < 0 or (a == 0 and x == 0)
      or (a == _inf and x == _inf)):
    return _nan
  if x == 0:
    return 1.0
  if a == 0 or x == _inf:
    return 0.0
  if a == _inf:
    return 1.0
  return _igamma_pq(a, x)[1]


def _igamma_grad_a_temme(a, x):
  """dP/da for large a: a 5-point central difference of Temme's expansion,
  with step 1e-3 sqrt(a) (P varies on the scale sqrt(a))."""
  h = 1e-3 * math.sqrt(a)
  p = lambda v: _igamma_temme(v, x)[0]
  return (p(a - 2 * h) - 8 * p(a - h) + 8 * p(a + h) - p(a + 2 * h)) / (12 * h)


def _igamma_grad_a_scalar(a, x):
  if math.isnan(a) or math.isnan(x) or x < 0 or a <= 0 or a == _inf:
    return _nan
  if x == 0 or x == _inf:
    return 0.0
  if a > _TEMME_MIN_A:
    return _igamma_grad_a_temme(a, x)
  log_x = math.log(x)
  if x < 1 or x <= a:
    s, ds = _igamma_series(a, x)
    return _exp(a * log_x - x - math.lgamma(a + 1)) * (s * (log_x - _digamma_scalar(a + 1)) + ds)
  f, df = _igammac_fraction(a, x)
  return -_exp(a * log_x - x - math.lgamma(a)) * (f * (log_x - _digamma_scalar(a)) + df)


def _random_gamma_grad_scalar(a, x):
  if math.isnan(a) or math.isnan(x) or x < 0 or a <= 0 or a == _inf or x == _inf:
    return _nan
  if x == 0:
    return 0.0
  log_x = math.log(x)
  if a > _TEMME_MIN_A:
    density = _exp((a - 1) * log_x - x - math.lgamma(a))
    return -_igamma_grad_a_temme(a, x) / density if density > 0 else _nan
  if x < 1 or x <= a:
    s, ds = _igamma_series(a, x)
    return -(s * (log_x - _digamma_scalar(a + 1)) + ds) * x / a
  f, df = _igammac_fraction(a, x)
  return (f * (log_x - _digamma_scalar(a)) + df) * x


def _igamma(a, x):
  """The regularized lower incomplete gamma function
  P(a, x) = (1 / Gamma(a)) * integral of t**(a-1) e**-t from 0 to x.

  Domain: NaN for a < 0, x < 0, a = x = 0. P(a, 0) = 0, P(0, x > 0) = 1
  (the limit), P(a, inf) = 1, P(inf, x) = 0 for finite x.

  Method: for x < 1 or x <= a the series P = x**a e**-x / Gamma(a+1) *
  sum x**n / ((a+1)...(a+n)); otherwise P = 1 - Q with Q from Legendre's
  continued fraction (see igammac); for a > 1e5, Temme's uniform asymptotic
  expansion (error O(a**-3)). Relative accuracy about 1e-13 except where P
  underflows float64 (x far below a) or is 1 - Q with Q below 1e-16.
  """
  return _float64_map(_igamma_scalar)(a, x)


def _igammac(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

  Domain: NaN for a < 0, x < 0, a = x = 0, and a = x = inf. Q(a, 0) = 1,
  Q(0, x > 0) = 0, Q(a, inf) = 0, Q(inf, x) = 1 for finite x.

  Method: for x >= 1 and x > a, Legendre's continued fraction
  Q = x**a e**-x / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- ...)) (Cephes' igamc);
  for x < 1 the series Q = 1 - x**a/Gamma(a+1) - x**a/Gamma(a) *
  sum (-x)**n / (n! (a+n)), which keeps Q accurate when it is small; for
  1 <= x <= a, Q = 1 - P; for a > 1e5, Temme's expansion. Relative accuracy
  about 1e-13 except where Q underflows float64.
  """
  return _float64_map(_igammac_scalar)(a, x)


def _igamma_grad_a(a, x):
  """The partial derivative dP(a, x)/da of the regularized lower incomplete
  gamma function with respect to a.

  Domain: NaN for a <= 0, a = inf, x < 0; 0 at x = 0 and x = inf (where P
  is constant in a).

  Method: the derivative (in a) of the series or continued fraction that
  computes P (see igamma), evaluated alongside it; for a > 1e5, a 5-point
  central difference of Temme's expansion. Accuracy about 1e-12 relative,
  absolute where the derivative changes sign.
  """
  return _float64_map(_igamma_grad_a_scalar)(a, x)


def _random_gamma_grad(a, x):
  """The derivative of a Gamma(a, 1) sample x with respect to a, holding its
  CDF P(a, x) fixed (implicit reparameterization, as in JAX):
  dx/da = -(dP/da) / (dP/dx), with dP/dx = x**(a-1) e**-x / Gamma(a).

  Domain: NaN for a <= 0, a = inf, x < 0, x = inf; 0 at x = 0.

  Method: the common factor x**a e**-x / Gamma(a) of dP/da and dP/dx cancels
  analytically in the series and continued fraction of igamma_grad_a, so no
  underflow occurs. For a > 1e5 the quotient is formed explicitly and is NaN
  where the density underflows float64 (|x - a| beyond about 38 sqrt(a)).
  """
  return _float64_map(_random_gamma_grad_scalar)(a, x)


igamma_p = binop("igamma", FLOAT, _igamma)
igammac_p = binop("igammac", FLOAT, _igammac)
igamma_grad_a_p = binop("igamma_grad_a", FLOAT, _igamma_grad_a)
random_gamma_grad_p = binop("random_gamma_grad", FLOAT, _random_gamma_grad)


# --- Bessel functions -------------------------------------------------------------------------

def _bessel_ie_scalar(nu, x):
  """e**-|x| I_nu(x) for nu = 0 or 1."""
  if math.isnan(x):
    return _nan
  ax = abs(x)
  if ax == _inf:
    return math.copysign(0.0, x) if nu else 0.0
  if ax <= 20:   # I_nu(x) = (x/2)**nu sum (x**2/4)**k / (k! (k+nu)!): positive terms
    term = (ax / 2) ** nu
    total = term
    for k in range(1, 200):
      term *= ax * ax / 4 / (k * (k + nu))
      total += term
      if term <= _EPS * total:
        break
    value = total * math.exp(-ax)
  else:   # Hankel's asymptotic expansion; its smallest term is about e**(-2|x|)
    mu, term, total = 4.0 * nu * nu, 1.0, 1.0
    for k in range(1, 100):
      previous = abs(term)
      term *= -(mu - (2 * k - 1) ** 2) / (8 * k * ax)
      if abs(term) <= _EPS * abs(total) or abs(term) > previous:
        break
      total += term
    value = total / math.sqrt(2 * math.pi * ax)
  return math.copysign(value, x) if nu else value


def _bessel_i0e(x):
  """The exponentially scaled modified Bessel function of order 0,
  i0e(x) = e**-|x| I0(x): even, i0e(0) = 1, i0e(±inf) = 0.

  Method: the power series of I0 (positive terms) for |x| <= 20, Hankel's
  asymptotic expansion e**-x I0(x) ~ (2 pi x)**-1/2 sum ((2k-1)!!)**2 /
  (k! (8x)**k) beyond (truncation error below e**-40).
  """
  return _float64_map(lambda v: _bessel_ie_scalar(0, v))(x)


def _bessel_i1e(x):
  """The exponentially scaled modified Bessel function of order 1,
  i1e(x) = e**-|x| I1(x): odd (i1e(-0.0) = -0.0), i1e(±inf) = ±0.

  Method: the power series of I1 for |x| <= 20, Hankel's asymptotic
  expansion beyond (as bessel_i0e).
  """
  return _float64_map(lambda v: _bessel_ie_scalar(1, v))(x)


bessel_i0e_p = unop("bessel_i0e", FLOAT, _bessel_i0e)
bessel_i1e_p = unop("bessel_i1e", FLOAT, _bessel_i1e)


# --- error functions ---------------------------------------------------------------------------

def _erf(x):
  """Error function 2/sqrt(pi) * integral of exp(-t**2) from 0 to x; erf(±inf)
  is ±1. Python's math.erf, accurate to about 1 ulp of float64."""
  return _float64_map(math.erf)(x)


def _erfc(x):
  """Complementary error function 1 - erf(x), accurate for large x (no
  cancellation); erfc(-inf) is 2, erfc(inf) is 0. Python's math.erfc."""
  return _float64_map(math.erfc)(x)


def fused_multiply_add(a, b, c):
  """a * b + c with one rounding (IEEE fusedMultiplyAdd, round to nearest even)
  for float32 or float64 NumPy arrays of one dtype; `a * b + c` where an
  operand is infinite or NaN (rounding does not matter there).

  XLA on CPU contracts a multiplication feeding an addition into one FMA
  instruction (LLVM's AllowFPOpFusion=Fast), so this is how XLA evaluates
  `a * b + c` inside compiled programs: `_erf_inv` uses it, and
  docs/random.md says why `random.uniform` does not.

  float32, proof of exactness: a*b has at most 48 significant bits and is
  exact in float64; TwoSum gives s + e = a*b + c exactly (s the float64
  sum, e its error). Rounding to odd (s if e == 0, else whichever float64
  neighbour of the exact value has an odd last bit) then rounding to float32
  rounds once, since float64 has 53 >= 24 + 2 bits (Boldo and Melquiond,
  "Emulation of FMA and correctly rounded sums", IEEE TC 57(4), 2008, Thm. 1);
  float32 subnormals and overflow are far inside float64's normal range.
  Shortcut: s rounded to float32 is already right unless s is exactly a
  float32 midpoint (a midpoint strictly between a*b + c and s would be a
  float64 nearer than s), so only such elements (and float32-subnormal
  ones) take the round-to-odd step.

  float64: Dekker's exact product (uh + ul = a*b, Veltkamp splitting), TwoSum
  of (c, uh) to (th + tl), v = tl + ul rounded to odd, and th + v rounded:
  Boldo and Melquiond's emulated FMA (ibid., Algorithm 5.4), exact without
  underflow or overflow, which magnitudes of a, b and c in [2**-450, 2**450]
  (or 0) rule out; other elements are computed with Fractions.
  """
  a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
  with np.errstate(all="ignore"):
    if a.dtype == np.float32:
      return _fma_f32(a, b, c)
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
    a, b, c = (np.broadcast_to(v, shape).ravel() for v in (a, b, c))
    result = _fma_f64(a, b, c)
    magnitudes = np.abs([a, b, c])
    finite = np.isfinite(magnitudes).all(axis=0)
    extreme = finite & ((magnitudes > 2.0 ** 450) | ((magnitudes < 2.0 ** -450)
                                                      & (magnitudes != 0))).any(axis=0)
    # Zeros and non-finite values as a * b + c gives them (signed zeros, inf, NaN).
    result = np.where(finite & (result != 0), result, a * b + c)
    for i in np.flatnonzero(extreme):
      result[i] = _fma_fraction(a[i], b[i], c[i])
    return result.reshape(shape)


def _round_to_odd_sum(x, y):
  """x + y rounded to odd (float64): the sum if exact, else its float64
  neighbour with an odd last bit. TwoSum gives the error e exactly."""
  s = x + y
  y_virtual = s - x
  e = (x - (s - y_virtual)) + (y - y_virtual)
  inexact = (e != 0) & np.isfinite(s)
  # Truncate towards zero (one step back when |x + y| < |s|), then set the last bit.
  bits = s.view(np.int64) - (inexact & ((e < 0) != (s < 0)))
  return np.where(inexact, (bits | 1).view(np.float64), s)


def _fma_f32(a, b, c):
  total = np.asarray(np.multiply(a, b, dtype=np.float64))
  total += c
  result = total.astype(np.float32)
  bits = total.view(np.uint64)
  suspect = (bits & 0x1FFFFFFF) == 0x10000000
  suspect |= np.abs(result) <= np.float32(2.0 ** -126)
  if suspect.any():
    a, b, c = (np.broadcast_to(v, total.shape)[suspect] for v in (a, b, c))
    result[suspect] = _round_to_odd_sum(np.multiply(a, b, dtype=np.float64),
                                        c.astype(np.float64)).astype(np.float32)
  return result


def _two_product(a, b):
  """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker; needs
  |a|, |b| < 2**995 and no underflow)."""
  def split(x):
    t = 134217729.0 * x   # 2**27 + 1
    hi = t - (t - x)
    return hi, x - hi
  p = a * b
  (ah, al), (bh, bl) = split(a), split(b)
  return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma_f64(a, b, c):
  uh, ul = _two_product(a, b)
  th = c + uh
  virtual = th - c
  tl = (c - (th - virtual)) + (uh - virtual)
  return th + _round_to_odd_sum(tl, ul)


def _fma_fraction(a, b, c):
  """a * b + c for finite float64 scalars, exactly, rounded once."""
  from fractions import Fraction  # here, not at import: fractions loads decimal
  exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
  try:
    return float(exact) if exact else float(a) * float(b) + float(c)
  except OverflowError:
    return _inf if exact > 0 else -_inf


_LOG1P_NUMERATOR = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1,
                    6.5787325942061044846969e0, 2.9911919328553073277375e1,
                    6.0949667980987787057556e1, 5.7112963590585538103336e1,
                    2.0039553499201281259648e1)
_LOG1P_DENOMINATOR = (1., 1.5062909083469192043167e1, 8.3047565967967209469434e1,
                      2.2176239823732856465394e2, 3.0909872225312059774938e2,
                      2.1642788614495947685003e2, 6.0118660497603843919306e1)


def _horner(x, coefficients):
  """c[0] x**(n-1) + ... + c[n-1] by Horner's rule, p = c[0] and then each
  step p = p * x + c[i] one fused multiply-add, in x's dtype."""
  p = np.full_like(x, coefficients[0])
  for c in coefficients[1:]:
    p = fused_multiply_add(p, x, x.dtype.type(c))
  return p


def _xla_log1p(x):
  """log(1 + x) as XLA's CPU code computes it, in x's dtype (float32 or
  float64): for |x| < sqrt(2) - 1 Cephes' rational form x - x**2/2 + x**3 *
  P(x)/Q(x), else log(1 + x) (the logarithm correctly rounded)."""
  dtype = x.dtype
  result = np.empty_like(x)
  small = np.abs(x) < dtype.type(0.41421356237309504880)
  t = x[small]
  t_squared = t * t
  ratio = _horner(t, _LOG1P_NUMERATOR) / _horner(t, _LOG1P_DENOMINATOR)
  result[small] = t + fused_multiply_add(dtype.type(-0.5), t_squared, t * t_squared * ratio)
  large = ~small
  result[large] = np.log((x[large] + dtype.type(1)).astype(np.float64)).astype(dtype)
  return result


_ERF_INV_F32 = (
    # w < 5: a polynomial in w - 2.5
    (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
    # w >= 5: a polynomial in sqrt(w) - 3
    (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
"""Giles' single-precision coefficients of erf_inv(x) / x, highest degree first."""

_ERF_INV_F64 = (
    # w < 6.25: a polynomial in w - 3.125
    (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
     1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
     6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
     2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
     1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
     4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
     0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
     0.24015818242558961693, 1.6536545626831027356),
    # 6.25 <= w < 16: a polynomial in sqrt(w) - 3.25
    (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
     1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
     2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
     6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
     0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
     -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
     3.0838856104922207635),
    # w >= 16: a polynomial in sqrt(w) - 5
    (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
     -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
     2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
     -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
     1.0103004648645343977, 4.8499064014085844221))
"""Giles' double-precision coefficients of erf_inv(x) / x, highest degree first."""


def _erf_inv(x):
  """Inverse error function on (-1, 1): erf_inv(±1) is ±inf, NaN for |x| > 1
  and for NaN.

  XLA's algorithm (Giles, "Approximating the erfinv function", GPU Computing
  Gems, 2011), evaluated as XLA's CPU code does, so the values are JAX's
  bit for bit: float32 (16-bit floats are computed in float32 and rounded):

      w = -log1p(-x * x)
      if w < 5:  p = P(w - 2.5)        else: p = Q(sqrt(w) - 3)
      erf_inv(x) = p * x

  with the degree-8 polynomials P and Q of Giles' single-precision
  coefficients (`_ERF_INV_F32`), each Horner step p = p * t + c one fused
  multiply-add, every operation rounded to float32, and XLA's log1p
  (`_xla_log1p`). float64: Giles' double-precision version (`_ERF_INV_F64`):
  a degree-22 polynomial in w - 3.125 for w < 6.25, degree 18 in sqrt(w) -
  3.25 for w < 16, degree 16 in sqrt(w) - 5 beyond. Accuracy (float32): 4
  ulp for |x| <= 0.9, 5 for |x| <= 0.99; nearer ±1 the rounding of x * x
  dominates (64.5 ulp measured at |x| = 0.9998). float64: 4e-15 relative, plus
  2**-52 / (1 - |x|) near ±1.
  """
  dtype = np.float64 if x.dtype == np.float64 else np.float32
  x = np.asarray(x, dtype)
  with np.errstate(all="ignore"):
    w = -_xla_log1p(-x * x)
    if dtype == np.float32:
      pieces = [(w < 5, w - np.float32(2.5), _ERF_INV_F32[0]),
                (w >= 5, np.sqrt(w) - np.float32(3), _ERF_INV_F32[1])]
    else:
      pieces = [(w < 6.25, w - 3.125, _ERF_INV_F64[0]),
                ((w >= 6.25) & (w < 16), np.sqrt(w) - 3.25, _ERF_INV_F64[1]),
                (w >= 16, np.sqrt(w) - 5.0, _ERF_INV_F64[2])]
    p = np.full_like(x, np.nan)
    for where, t, coefficients in pieces:
      p[where] = _horner(t[where], coefficients)
    return np.where(np.abs(x) == 1, x * dtype(_inf), p * x)


erf_p = unop("erf", FLOAT, _erf)
erfc_p = unop("erfc", FLOAT, _erfc)
erf_inv_p = unop("erf_inv", FLOAT, _erf_inv)


# --- regularized incomplete beta ---------------------------------------------------------------

_TINY = 1e-300


def _betainc_fraction(a, b, x):
  """The continued fraction of I_x(a, b) (DLMF 8.17.22; Numerical Recipes'
  betacf) by the modified Lentz method; converges fast for x < (a+1)/(a+b+2)."""
  c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
  d = 1.0 / (d if abs(d) > _TINY else _TINY)
  h = d
  for m in range(1, _MAX_ITERATIONS):
    even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
    odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
    for numerator in (even, odd):
      d = 1.0 + numerator * d
      d = 1.0 / (d if abs(d) > _TINY else _TINY)
      c = 1.0 + numerator / c
      c = c if abs(c) > _TINY else _TINY
      step = c * d
      h *= step
    if abs(step - 1.0) <= _EPS:
      break
  return h


def _betainc_scalar(a, b, x):
  if math.isnan(a) or math.isnan(b) or math.isnan(x) or a < 0 or b < 0 or x < 0 or x > 1:
    return _nan
  a_is_zero, b_is_zero = a == 0 or b == _inf, b == 0 or a == _inf
  if a_is_zero and b_is_zero:
    return _nan
  if a_is_zero:
    return 0.0 if x == 0 else 1.0
  if b_is_zero:
    return 1.0 if x == 1 else 0.0
  if x == 0 or x == 1:
    return x
  if x > (a + 1) / (a + b + 2):   # the symmetry I_x(a, b) = 1 - I_{1-x}(b, a)
    return 1.0 - _betainc_lower(b, a, 1.0 - x)
  return _betainc_lower(a, b, x)


def _betainc_lower(a, b, x):
  # x**a (1-x)**b / (a B(a, b)), with a B(a, b) = Gamma(a+1) Gamma(b) / Gamma(a+b).
  log_factor = (a * math.log(x) + b * math.log1p(-x)
                - (_lgamma_scalar(a + 1) + _lgamma_scalar(b) - _lgamma_scalar(a + b)))
  return _exp(log_factor) * _betainc_fraction(a, b, x)


def _regularized_incomplete_beta(a, b, x):
  """The regularized incomplete beta function
  I_x(a, b) = (1 / B(a, b)) * integral of t**(a-1) (1-t)**(b-1) from 0 to x.

  Domain (as JAX): NaN for a < 0, b < 0, x outside [0, 1]. a = 0 or b = inf
  gives 0 at x = 0 and 1 elsewhere; b = 0 or a = inf gives 1 at x = 1 and 0
  elsewhere; both at once is NaN. I_0 = 0 and I_1 = 1 otherwise.

  Method: the continued fraction DLMF 8.17.22 (modified Lentz) times
  x**a (1-x)**b / (a B(a, b)), for x < (a+1)/(a+b+2), and
  1 - I_{1-x}(b, a) beyond. It needs O(sqrt(max(a, b))) steps: accurate to
  about 1e-13 relative for a, b up to about 1e7 (less for larger a + b,
  where log B(a, b) from lgamma loses digits: about 1e-16 * a relative);
  beyond, the fraction is cut off after 20000 steps and is not accurate.
  """
  return _float64_map(_betainc_scalar)(a, b, x)


regularized_incomplete_beta_p = naryop("regularized_incomplete_beta", FLOAT,
                                       _regularized_incomplete_beta, nargs=3)


# --- mulhi ---------------------------------------------------------------------------------------

def _mulhi(x, y):
  """The high half of the integer product: for N-bit integers, the upper N
  bits of the exact 2N-bit product x * y (two's complement for signed types:
  floor(x * y / 2**N)). Operands are integers of one dtype (the result's).
  mulhi(-1, 1) is -1 for signed types; for uint32, mulhi(2**31, 4) is 2."""
  bits = np.dtype(x.dtype).itemsize * 8
  high = np.frompyfunc(lambda a, b: (int(a) * int(b)) >> bits, 2, 1)(x, y)   # exact ints
  return np.asarray(high, dtype=object).astype(x.dtype)


mulhi_p = binop("mulhi", INTEGER, _mulhi)


# --- user-facing functions (lax.*) ----------------------------------------------------------------

def lgamma(x):
  """log |Gamma(x)|, elementwise."""
  return lgamma_p.bind(x)


def digamma(x):
  """The digamma function psi(x) = d/dx log Gamma(x), elementwise."""
  return digamma_p.bind(x)


def polygamma(m, x):
  """The polygamma function psi^(m)(x): the m-th derivative of digamma."""
  return polygamma_p.bind(m, x)


def igamma(a, x):
  """The regularized lower incomplete gamma function P(a, x)."""
  return igamma_p.bind(a, x)


def igammac(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
  return igammac_p.bind(a, x)


def igamma_grad_a(a, x):
  """dP(a, x)/da, the derivative of igamma with respect to a."""
  return igamma_grad_a_p.bind(a, x)


def random_gamma_grad(a, x):
  """The derivative with respect to a of a sample x from Gamma(a, 1)."""
  return random_gamma_grad_p.bind(a, x)


def zeta(x, q):
  """The Hurwitz zeta function zeta(x, q) = sum over k >= 0 of (k + q)**-x."""
  return zeta_p.bind(x, q)


def bessel_i0e(x):
  """The exponentially scaled modified Bessel function of order 0, e**-|x| I0(x)."""
  return bessel_i0e_p.bind(x)


def bessel_i1e(x):
  """The exponentially scaled modified Bessel function of order 1, e**-|x| I1(x)."""
  return bessel_i1e_p.bind(x)


def erf(x):
  """The error function."""
  return erf_p.bind(x)


def erfc(x):
  """The complementary error function 1 - erf(x)."""
  return erfc_p.bind(x)


def erf_inv(x):
  """The inverse error function."""
  return erf_inv_p.bind(x)


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b) (the
  `regularized_incomplete_beta` primitive)."""
  return regularized_incomplete_beta_p.bind(a, b, x)


def mulhi(x, y, /):
  """The high half of the integer product x * y (the upper N bits of 2N)."""
  return mulhi_p.bind(x, y)


# --- differentiation rules ----------------------------------------------------------------------
# JAX's rules, with the same math and primitives. JAX has none for zeta,
# igamma_grad_a and random_gamma_grad: differentiating them raises, as in JAX.

def _gamma_density(a, x):
  """x**(a-1) e**-x / Gamma(a): the derivative of igamma(a, x) in x."""
  return exp(sub(add(neg(x), mul(sub(a, full_like(a, 1)), log(x))), lgamma(a)))


ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))
ad.defjvp(digamma_p, lambda g, x: mul(g, polygamma(const(x, 1), x)))


def _polygamma_grad_m(g, m, x):
  raise ValueError("polygamma gradient with respect to m is not supported")


ad.defjvp(polygamma_p, _polygamma_grad_m,
          lambda g, m, x: mul(g, polygamma(add(m, const(m, 1)), x)))

ad.defjvp(igamma_p, lambda g, a, x: mul(g, igamma_grad_a(a, x)),
          lambda g, a, x: mul(g, _gamma_density(a, x)))
ad.defjvp(igammac_p, lambda g, a, x: neg(mul(g, igamma_grad_a(a, x))),
          lambda g, a, x: neg(mul(g, _gamma_density(a, x))))

for _p in (zeta_p, igamma_grad_a_p, random_gamma_grad_p):
  ad.defjvp_unsupported(_p, NotImplementedError,
                        f"Differentiation rule for '{_p.name}' not implemented")

ad.defjvp2(bessel_i0e_p, lambda g, y, x: mul(g, sub(bessel_i1e(x), mul(sign(x), y))))


def _bessel_i1e_jvp(g, y, x):
  # i1e'(x) = i0e(x) - y (sign(x) + 1/x), which tends to 1/2 at x = 0.
  eps = const(x, dtypes.finfo(get_aval(x).dtype).eps)
  x_is_not_tiny = gt(elementwise.abs(x), eps)
  safe_x = select(x_is_not_tiny, x, full_like(x, eps))
  dy_dx = sub(bessel_i0e(safe_x), mul(y, add(sign(safe_x), reciprocal(safe_x))))
  return mul(g, select(x_is_not_tiny, dy_dx, full_like(x, 0.5)))


ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)

ad.defjvp(erf_p, lambda g, x: mul(const(x, 2 / np.sqrt(np.pi)), mul(g, exp(neg(square(x))))))
ad.defjvp(erfc_p, lambda g, x: mul(const(x, -2 / np.sqrt(np.pi)), mul(g, exp(neg(square(x))))))
ad.defjvp2(erf_inv_p,
           lambda g, ans, x: mul(const(x, np.sqrt(np.pi) / 2), mul(g, exp(square(ans)))))


def _betainc_grad_not_implemented(g, a, b, x):
  raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_grad_x(g, a, b, x):
  # The integrand x**(a-1) (1-x)**(b-1) / B(a, b).
  log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
  one = const(a, 1)
  partial_x = exp(sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))),
                      log_beta))
  return mul(partial_x, g)


ad.defjvp(regularized_incomplete_beta_p, _betainc_grad_not_implemented,
          _betainc_grad_not_implemented, _betainc_grad_x)

ad.defjvp_zero(mulhi_p)
