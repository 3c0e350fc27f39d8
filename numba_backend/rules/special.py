"""Scalar lowering rules of the special functions (refimpl/lax/special.py).

Each reference algorithm (series, continued fractions and asymptotic
expansions in float64, Python's math functions) is ported here to a Numba
scalar function with the same operations in the same order, so that the
float64 value, rounded once to the result dtype (`cast`), is the
reference's. erf_inv is XLA's float32 (float64) polynomial, with its fused
multiply-adds. mulhi computes on 64-bit words (a 128-bit product from
32-bit halves for 64-bit dtypes).
"""

import math

import numpy as np

from refimpl import dtypes
from refimpl.lax import special as lax
from refimpl.lax.special import (_ERF_INV_F32, _ERF_INV_F64, _LOG1P_DENOMINATOR,
                                 _LOG1P_NUMERATOR, _euler_maclaurin_coefficients,
                                 _zeta_of_integers)
from numba_backend.lower import cast, register_elementwise
from numba_backend.rules.reductions import pairwise
from numba_backend.scalars import fma, scalar_jit

_EPS = lax._EPS
_MAX_ITERATIONS = lax._MAX_ITERATIONS
_TEMME_MIN_A = lax._TEMME_MIN_A
_TINY = lax._TINY
_nan, _inf = math.nan, math.inf

_FACTORIALS = np.array([float(math.factorial(m)) for m in range(171)])
"""m! rounded once to float64, for m <= 170."""
_EULER_MACLAURIN = np.array(_euler_maclaurin_coefficients())
_ZETA_OF_INTEGERS = np.array(_zeta_of_integers())
_ERF_INV_32_A, _ERF_INV_32_B = (np.array(c, np.float32) for c in _ERF_INV_F32)
_ERF_INV_64_A, _ERF_INV_64_B, _ERF_INV_64_C = (np.array(c) for c in _ERF_INV_F64)
_LOG1P_P, _LOG1P_Q = np.array(_LOG1P_NUMERATOR), np.array(_LOG1P_DENOMINATOR)
_LOG1P_P32, _LOG1P_Q32 = _LOG1P_P.astype(np.float32), _LOG1P_Q.astype(np.float32)


@scalar_jit
def _exp(v):
  return math.exp(v) if v < 709.8 else _inf


@scalar_jit
def _is_integer(v):
  return math.isfinite(v) and v == np.floor(v)


_LANCZOS_G = 6.024680040776729583740234375
_LANCZOS_NUMERATOR = np.array([
    23531376880.410759688572007674451636754734846804940,
    42919803642.649098768957899047001988850926355848959,
    35711959237.355668049440185451547166705960488635843,
    17921034426.037209699919755754458931112671403265390,
    6039542586.3520280050642916443072979210699388420708,
    1439720407.3117216736632230727949123939715485786772,
    248874557.86205415651146038641322942321632125127801,
    31426415.585400194380614231628318205362874684987640,
    2876370.6289353724412254090516208496135991145378768,
    186056.26539522349504029498971604569928220784236328,
    8071.6720023658162106380029022722506138218516325024,
    210.82427775157934587250973392071336271166969580291,
    2.5066282746310002701649081771338373386264310793408])
_LANCZOS_DENOMINATOR = np.array([0.0, 39916800.0, 120543840.0, 150917976.0, 105258076.0,
                                 45995730.0, 13339535.0, 2637558.0, 357423.0, 32670.0,
                                 1925.0, 66.0, 1.0])


@scalar_jit
def _lanczos_sum(x):
  numerator = denominator = 0.0
  if x < 5.0:
    for i in range(12, -1, -1):
      numerator = numerator * x + _LANCZOS_NUMERATOR[i]
      denominator = denominator * x + _LANCZOS_DENOMINATOR[i]
  else:
    for i in range(13):
      numerator = numerator / x + _LANCZOS_NUMERATOR[i]
      denominator = denominator / x + _LANCZOS_DENOMINATOR[i]
  return numerator / denominator


@scalar_jit
def _sinpi(x):
  y = abs(x) % 2.0   # exact, as fmod
  n = int(math.floor(2.0 * y + 0.5))   # C's round (2y >= 0)
  if n == 0:
    r = math.sin(math.pi * y)
  elif n == 1:
    r = math.cos(math.pi * (y - 0.5))
  elif n == 2:
    r = math.sin(math.pi * (1.0 - y))
  elif n == 3:
    r = -math.cos(math.pi * (y - 1.5))
  else:
    r = math.sin(math.pi * (y - 2.0))
  return math.copysign(1.0, x) * r


@scalar_jit
def _lgamma(x):
  """log |Gamma(x)| as Python's math.lgamma (CPython's Lanczos formula,
  not the C library's), inf at the poles and at ±inf."""
  if not math.isfinite(x):
    return x if x != x else _inf
  if x == np.floor(x) and x <= 2.0:
    return _inf if x <= 0.0 else 0.0
  absx = abs(x)
  if absx < 1e-20:
    return -math.log(absx)
  r = math.log(_lanczos_sum(absx)) - _LANCZOS_G
  r += (absx - 0.5) * (math.log(absx + _LANCZOS_G - 0.5) - 1)
  if x < 0.0:
    r = 1.144729885849400174143427351353058711647 - math.log(abs(_sinpi(absx))) - math.log(absx) - r
  return r


# --- digamma, polygamma, zeta ----------------------------------------------------------------

@scalar_jit
def digamma(x):
  reflect = x < 0.5
  z = 1.0 - x if reflect else x
  shift = 0.0
  for _ in range(10):
    if z < 10.0:
      shift -= 1.0 / z
      z = z + 1.0
  inv2 = 1.0 / (z * z)
  series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
      1 / 240 - inv2 * (1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
  psi = shift + math.log(z) - 0.5 / z - series
  if reflect:
    psi = psi - math.pi / math.tan(math.pi * (x - np.rint(x)))
  if (x <= 0 and x == np.floor(x)) or x == -_inf:
    return _nan
  return psi


@scalar_jit
def _shifted_powers(q, x, shift):
  """NumPy's pairwise sum of (q + k) ** -x for k < shift, from -0.0: the
  reference's sum of the terms that shift a negative q past zero."""
  terms = np.empty(shift)
  for k in range(shift):
    terms[k] = (q + k) ** -x
  return pairwise(terms, 0, shift, -0.0)


@scalar_jit
def zeta(x, q):
  if x != x or q != q:
    return _nan
  if x == 1:
    return _inf
  if x < 1:
    return _nan
  if q <= 0:
    if q == np.floor(q):
      return _inf if _is_integer(x) and x % 2 == 0 else _nan
    if not _is_integer(x):
      return _nan
  if x == _inf:
    return 1.0 if q == 1 else 0.0 if q > 1 else _inf if q > 0 else _nan
  if q == _inf:
    return 0.0
  total = 0.0
  if q < 0:
    if np.ceil(-q) > 10 ** 6:
      return _nan
    shift = int(np.ceil(-q))
    total = 0.0 + _shifted_powers(q, x, shift)
    q += shift
  n = 0
  while True:
    term = (q + n) ** -x
    total += term
    n += 1
    if abs(term) <= _EPS * abs(total):
      return total
    if n >= 10 and q + n >= x / 2 + 10:
      break
  a = q + n
  power = a ** -x
  total += power * a / (x - 1) + power / 2
  factor = x * power / a
  previous = _inf
  for j in range(1, _EULER_MACLAURIN.size + 1):
    term = _EULER_MACLAURIN[j - 1] * factor
    if abs(term) <= _EPS * abs(total) or abs(term) > previous:
      break
    total += term
    previous = abs(term)
    factor *= (x + 2 * j - 1) * (x + 2 * j) / (a * a)
  return total


@scalar_jit
def polygamma(m, x):
  if m != m or x != x or m < 0 or not _is_integer(m):
    return _nan
  if m == 0:
    return digamma(x)
  z = zeta(m + 1, x)
  sign = 1.0 if m % 2 == 1 else -1.0
  if m <= 170:
    return sign * _FACTORIALS[int(m)] * z
  if z == 0 or not math.isfinite(z):
    return sign * z
  return sign * math.copysign(_exp(_lgamma(m + 1) + math.log(abs(z))), z)


# --- incomplete gamma -----------------------------------------------------------------------------

@scalar_jit
def _igamma_series(a, x):
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


@scalar_jit
def _igammac_fraction(a, x):
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
    if abs(pk) > 2.0 ** 500:
      scale = 2.0 ** -500
      pkm2, pkm1, qkm2, qkm1 = pkm2 * scale, pkm1 * scale, qkm2 * scale, qkm1 * scale
      dpkm2, dpkm1, dqkm2, dqkm1 = dpkm2 * scale, dpkm1 * scale, dqkm2 * scale, dqkm1 * scale
    if converged:
      break
  return ans, dans


@scalar_jit
def _x_minus_log1p(s):
  if abs(s) >= 0.25:
    return s - math.log1p(s)
  total, power = 0.0, s
  for k in range(2, 60):
    power *= -s
    total += power / k
    if abs(power) <= _EPS * total:
      break
  return -total


@scalar_jit
def _igamma_temme(a, x):
  sigma = (x - a) / a
  half_eta2 = _x_minus_log1p(sigma)
  eta = math.copysign(math.sqrt(2 * half_eta2), sigma)
  if abs(eta) < 0.02:
    c0 = -1 / 3 + eta * (1 / 12 + eta * (-2 / 135 + eta * (1 / 864)))
    c1 = -1 / 540 + eta * (-1 / 288 + eta * (1 / 378))
  else:
    c0 = 1 / sigma - 1 / eta
    c1 = 1 / eta ** 3 - 1 / sigma ** 3 - 1 / sigma ** 2 - 1 / (12 * sigma)
  r = math.exp(-a * half_eta2) / math.sqrt(2 * math.pi * a) * (c0 + c1 / a)
  z = eta * math.sqrt(a / 2)
  return 0.5 * math.erfc(-z) - r, 0.5 * math.erfc(z) + r


@scalar_jit
def _lgamma1p(a):
  if abs(a) >= 0.2:
    return _lgamma(1 + a)
  total, power = -0.5772156649015329 * a, -a
  for i in range(_ZETA_OF_INTEGERS.size):
    power *= -a
    total += power * _ZETA_OF_INTEGERS[i] / (i + 2)
    if abs(power) <= _EPS * abs(total):
      break
  return total


@scalar_jit
def _igammac_small_x(a, x):
  term, total = 1.0, 0.0
  for n in range(1, 100):
    term *= -x / n
    total += term / (a + n)
    if abs(term / (a + n)) <= _EPS * abs(total):
      break
  log_x = math.log(x)
  return -math.expm1(a * log_x - _lgamma1p(a)) - _exp(a * log_x - _lgamma(a)) * total


@scalar_jit
def _igamma_pq(a, x):
  if a > _TEMME_MIN_A:
    return _igamma_temme(a, x)
  log_x = math.log(x)
  if x < 1 or x <= a:
    s, _ = _igamma_series(a, x)
    p = _exp(a * log_x - x - _lgamma(a + 1)) * s
    return p, (_igammac_small_x(a, x) if x < 1 else 1.0 - p)
  f, _ = _igammac_fraction(a, x)
  q = _exp(a * log_x - x - _lgamma(a)) * f
  return 1.0 - q, q


@scalar_jit
def igamma(a, x):
  if a != a or x != x or a < 0 or x < 0 or (a == 0 and x == 0):
    return _nan
  if x == 0:
    return 0.0
  if a == 0 or x == _inf:
    return 1.0
  if a == _inf:
    return 0.0
  return _igamma_pq(a, x)[0]


@scalar_jit
def igammac(a, x):
  if a != a or x != x or a < 0 or x < 0 or (a == 0 and x == 0) or (a == _inf and x == _inf):
    return _nan
  if x == 0:
    return 1.0
  if a == 0 or x == _inf:
    return 0.0
  if a == _inf:
    return 1.0
  return _igamma_pq(a, x)[1]


@scalar_jit
def _igamma_grad_a_temme(a, x):
  h = 1e-3 * math.sqrt(a)
  return (_igamma_temme(a - 2 * h, x)[0] - 8 * _igamma_temme(a - h, x)[0]
          + 8 * _igamma_temme(a + h, x)[0] - _igamma_temme(a + 2 * h, x)[0]) / (12 * h)


@scalar_jit
def igamma_grad_a(a, x):
  if a != a or x != x or x < 0 or a <= 0 or a == _inf:
    return _nan
  if x == 0 or x == _inf:
    return 0.0
  if a > _TEMME_MIN_A:
    return _igamma_grad_a_temme(a, x)
  log_x = math.log(x)
  if x < 1 or x <= a:
    s, ds = _igamma_series(a, x)
    return _exp(a * log_x - x - _lgamma(a + 1)) * (s * (log_x - digamma(a + 1)) + ds)
  f, df = _igammac_fraction(a, x)
  return -_exp(a * log_x - x - _lgamma(a)) * (f * (log_x - digamma(a)) + df)


@scalar_jit
def random_gamma_grad(a, x):
  if a != a or x != x or x < 0 or a <= 0 or a == _inf or x == _inf:
    return _nan
  if x == 0:
    return 0.0
  log_x = math.log(x)
  if a > _TEMME_MIN_A:
    density = _exp((a - 1) * log_x - x - _lgamma(a))
    return -_igamma_grad_a_temme(a, x) / density if density > 0 else _nan
  if x < 1 or x <= a:
    s, ds = _igamma_series(a, x)
    return -(s * (log_x - digamma(a + 1)) + ds) * x / a
  f, df = _igammac_fraction(a, x)
  return (f * (log_x - digamma(a)) + df) * x


# --- Bessel functions -----------------------------------------------------------------------------

@scalar_jit
def _bessel_ie(nu, x):
  """e**-|x| I_nu(x) for nu = 0 or 1."""
  if x != x:
    return _nan
  ax = abs(x)
  if ax == _inf:
    return math.copysign(0.0, x) if nu else 0.0
  if ax <= 20:
    term = ax / 2 if nu else 1.0
    total = term
    for k in range(1, 200):
      term *= ax * ax / 4 / (k * (k + nu))
      total += term
      if term <= _EPS * total:
        break
    value = total * math.exp(-ax)
  else:
    mu, term, total = 4.0 * nu * nu, 1.0, 1.0
    for k in range(1, 100):
      previous = abs(term)
      term *= -(mu - (2 * k - 1) ** 2) / (8 * k * ax)
      if abs(term) <= _EPS * abs(total) or abs(term) > previous:
        break
      total += term
    value = total / math.sqrt(2 * math.pi * ax)
  return math.copysign(value, x) if nu else value


@scalar_jit
def bessel_i0e(x):
  return _bessel_ie(0, x)


@scalar_jit
def bessel_i1e(x):
  return _bessel_ie(1, x)


# --- error functions ------------------------------------------------------------------------------

@scalar_jit
def erf(x):
  return math.erf(x)


@scalar_jit
def erfc(x):
  return math.erfc(x)


@scalar_jit
def _horner(x, coefficients):
  """Horner's rule, each step one fused multiply-add in x's type."""
  p = coefficients[0]
  for i in range(1, coefficients.size):
    p = fma(p, x, coefficients[i])
  return p


@scalar_jit
def _xla_log1p_f32(x):
  """XLA's CPU log1p of float32 x: Cephes' rational form for |x| < sqrt(2) - 1."""
  if abs(x) < np.float32(0.41421356237309504880):
    t_squared = x * x
    ratio = _horner(x, _LOG1P_P32) / _horner(x, _LOG1P_Q32)
    return x + fma(np.float32(-0.5), t_squared, x * t_squared * ratio)
  return np.float32(math.log(np.float64(x + np.float32(1))))


@scalar_jit
def _xla_log1p_f64(x):
  if abs(x) < 0.41421356237309504880:
    t_squared = x * x
    ratio = _horner(x, _LOG1P_P) / _horner(x, _LOG1P_Q)
    return x + fma(-0.5, t_squared, x * t_squared * ratio)
  return math.log(x + 1.0)


@scalar_jit
def erf_inv_f32(x):
  """XLA's float32 erf_inv (Giles), bit for bit."""
  x = np.float32(x)
  w = -_xla_log1p_f32(-x * x)
  if w < np.float32(5):
    p = _horner(w - np.float32(2.5), _ERF_INV_32_A)
  elif w >= np.float32(5):
    p = _horner(np.sqrt(w) - np.float32(3), _ERF_INV_32_B)
  else:
    p = np.float32(_nan)
  if abs(x) == 1:
    return x * np.float32(_inf)
  return p * x


@scalar_jit
def erf_inv_f64(x):
  """XLA's float64 erf_inv (Giles)."""
  w = -_xla_log1p_f64(-x * x)
  if w < 6.25:
    p = _horner(w - 3.125, _ERF_INV_64_A)
  elif w >= 6.25 and w < 16:
    p = _horner(math.sqrt(w) - 3.25, _ERF_INV_64_B)
  elif w >= 16:
    p = _horner(math.sqrt(w) - 5.0, _ERF_INV_64_C)
  else:
    p = _nan
  if abs(x) == 1:
    return x * _inf
  return p * x


# --- regularized incomplete beta ------------------------------------------------------------------

@scalar_jit
def _betainc_fraction(a, b, x):
  c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
  d = 1.0 / (d if abs(d) > _TINY else _TINY)
  h = d
  for m in range(1, _MAX_ITERATIONS):
    even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
    odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
    step = 1.0
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


@scalar_jit
def _betainc_lower(a, b, x):
  log_factor = (a * math.log(x) + b * math.log1p(-x)
                - (_lgamma(a + 1) + _lgamma(b) - _lgamma(a + b)))
  return _exp(log_factor) * _betainc_fraction(a, b, x)


@scalar_jit
def regularized_incomplete_beta(a, b, x):
  if a != a or b != b or x != x or a < 0 or b < 0 or x < 0 or x > 1:
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
  if x > (a + 1) / (a + b + 2):
    return 1.0 - _betainc_lower(b, a, 1.0 - x)
  return _betainc_lower(a, b, x)


# --- mulhi ----------------------------------------------------------------------------------------

@scalar_jit
def mulhi_u64(x, y):
  """The high 64 bits of the 128-bit product of uint64 x and y (from 32-bit halves)."""
  mask, half = np.uint64(0xFFFFFFFF), np.uint64(32)
  x0, x1, y0, y1 = x & mask, x >> half, y & mask, y >> half
  low = x0 * y0
  middle = x1 * y0 + (low >> half)
  middle2 = x0 * y1 + (middle & mask)
  return x1 * y1 + (middle >> half) + (middle2 >> half)


@scalar_jit
def mulhi_i64(x, y):
  """The high 64 bits of the 128-bit product of int64 x and y (two's complement)."""
  ux, uy = np.uint64(x), np.uint64(y)
  high = mulhi_u64(ux, uy)
  if x < 0:
    high -= uy
  if y < 0:
    high -= ux
  return np.int64(high)


# --- rules ----------------------------------------------------------------------------------------

def _float64_rule(fn):
  """A rule computing `fn` of the operands in float64, rounded to their dtype."""
  def rule(ctx, *operands):
    args = ", ".join(f"np.float64({x})" for x in operands)
    return cast(f"{ctx.function(fn)}({args})", ctx.avals_out[0].dtype)
  return rule


for _primitive, _fn in [
    (lax.lgamma_p, _lgamma), (lax.digamma_p, digamma), (lax.polygamma_p, polygamma),
    (lax.zeta_p, zeta), (lax.igamma_p, igamma), (lax.igammac_p, igammac),
    (lax.igamma_grad_a_p, igamma_grad_a), (lax.random_gamma_grad_p, random_gamma_grad),
    (lax.bessel_i0e_p, bessel_i0e), (lax.bessel_i1e_p, bessel_i1e), (lax.erf_p, erf),
    (lax.erfc_p, erfc), (lax.regularized_incomplete_beta_p, regularized_incomplete_beta)]:
  register_elementwise(_primitive, costly=True)(_float64_rule(_fn))


@register_elementwise(lax.erf_inv_p, costly=True)
def _erf_inv(ctx, x):
  dtype = np.dtype(ctx.avals_out[0].dtype)
  if dtype == np.float64:
    return f"{ctx.function(erf_inv_f64)}({x})"
  return cast(f"{ctx.function(erf_inv_f32)}({x})", dtype)


@register_elementwise(lax.mulhi_p)
def _mulhi(ctx, x, y):
  dtype = np.dtype(ctx.avals_out[0].dtype)
  bits = dtype.itemsize * 8
  unsigned = dtypes.is_unsigned(dtype)
  if bits == 64:
    fn = ctx.function(mulhi_u64 if unsigned else mulhi_i64)
    word = "np.uint64" if unsigned else "np.int64"
    return cast(f"{fn}({word}({x}), {word}({y}))", dtype)
  word = "np.uint64" if unsigned else "np.int64"
  return cast(f"({word}({x}) * {word}({y})) >> {word}({bits})", dtype)
