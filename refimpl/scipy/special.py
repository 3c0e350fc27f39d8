"""`refimpl.scipy.special`: SciPy's special functions built on lax, as `jax.scipy.special`.

Arguments are promoted as jnp does (integers and booleans to the default
float); each function lowers to lax primitives (the special-function
primitives of `refimpl/lax/special.py` where one exists) and computes in the
promoted dtype, so float32 inputs give float32 results. Functions built from
series and continued fractions use a fixed number of terms (no data-dependent
loops), chosen so that float32 results are accurate to about 1e-6 relative
and float64 results to about 1e-12 on the domain each docstring states;
float16 and bfloat16 are computed in float32 where the docstring says so.

Where JAX attaches a custom derivative rule (`custom_jvp`), so does this
module, with JAX's math, and the docstring says so: logit, xlogy, xlog1py,
entr and rel_entr (through JAX's `_xlogx`), log_ndtr, poch, zeta (the JVP of
its Euler-Maclaurin series), expn (in x; exp1 through it), expi, hyp1f1,
wofz, erfcx, dawsn, owens_t and fresnel. logsumexp stops the gradient
through its shift, as JAX's does. The other functions (sici, hyp2f1,
spence, ...) are differentiated through their implementation, as in JAX.
"""

import functools
import math
import operator

import numpy as np

from refimpl import dtypes, lax
from refimpl.api import jit
from refimpl.autodiff import jvp
from refimpl.custom_derivatives import custom_jvp
from refimpl.numpy import (abs, arctan2, asarray, clip, copysign, cos, cumprod,
                           exp, expm1, floor, fmod, full_like, isinf, isnan, log, log1p, max,
                           ones_like, real, round, sign, signbit, sin, sqrt, stack, sum, tanh,
                           where, zeros_like)
from refimpl.numpy import i0 as _jnp_i0
from refimpl.lax.shapes import canonicalize_axis
from refimpl.lax.special import bernoulli_numbers
from refimpl.numpy.creation import ensure_arraylike
from refimpl.numpy.util import promote_args_inexact

_where = where   # logsumexp's `where` argument shadows the function

__all__ = [
    'bernoulli', 'bessel_jn', 'beta', 'betainc', 'betaln', 'boxcox', 'boxcox1p', 'comb',
    'dawsn', 'digamma', 'entr', 'erf', 'erfc', 'erfcx', 'erfinv', 'exp1', 'expi', 'expit',
    'expn', 'factorial', 'fresnel', 'gamma', 'gammainc', 'gammaincc', 'gammaln',
    'gammasgn', 'hyp1f1', 'hyp2f1', 'i0', 'i0e', 'i1', 'i1e', 'kl_div', 'log_ndtr',
    'log_softmax', 'loggamma', 'logit', 'logsumexp', 'multigammaln', 'ndtr', 'ndtri',
    'owens_t', 'poch', 'polygamma', 'rel_entr', 'sici', 'softmax', 'spence', 'sph_harm_y',
    'wofz', 'xlog1py', 'xlogy', 'zeta',
]

_EULER_GAMMA = 0.5772156649015329


# --- helpers ------------------------------------------------------------------------------------

def _promote_real(name, *args):
  """promote_args_inexact, rejecting complex values (ValueError, as JAX)."""
  args = promote_args_inexact(name, *args)
  if dtypes.is_complex(args[0].dtype):
    raise ValueError(f"{name} does not support complex-valued inputs.")
  return args


def _require_float32_or_64(x):
  """ndtr, ndtri and spence accept only float32 and float64 (TypeError), as JAX."""
  if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
    raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported types.")


def _in_float32(fn, x, *rest):
  """`fn(x, *rest)`, computed in float32 when x is float16 or bfloat16."""
  if x.dtype in (np.dtype(dtypes.float16), np.dtype(dtypes.bfloat16)):
    out = fn(x.astype(np.float32), *(r.astype(np.float32) for r in rest))
    return tuple(o.astype(x.dtype) for o in out) if isinstance(out, tuple) else out.astype(x.dtype)
  return fn(x, *rest)


def _polyval(coefficients, x):
  """Horner's rule, highest degree first (as np.polyval), for constant coefficients."""
  result = full_like(x, coefficients[0])
  for c in coefficients[1:]:
    result = result * x + c
  return result


def _count(n, dtype, start=0):
  """start, start+1, ..., start+n-1 as a NumPy constant of `dtype`."""
  return np.arange(start, start + n, dtype=dtype)


def _is_nonpositive_integer(v):
  return (v <= 0) & (v == floor(v))


# --- gamma and beta -----------------------------------------------------------------------------

def gammaln(x):
  """log |Gamma(x)| (the `lgamma` primitive); real inputs only."""
  x, = _promote_real("gammaln", x)
  return lax.lgamma(x)


@jit
def gammasgn(x):
  """The sign of Gamma(x): 1 or -1; NaN at x = 0, -1, -2, ..., at -inf and
  for NaN; gammasgn(±0.0) is ±1 and gammasgn(inf) is 1."""
  x, = _promote_real("gammasgn", x)
  floor_x = lax.floor(x)
  negative = x < 0
  nan = (negative & (x == floor_x)) | isnan(x)
  minus = (negative & (floor_x % 2 != 0)) | ((x == 0) & signbit(x))
  return where(nan, np.nan, where(minus, -1.0, 1.0)).astype(x.dtype)


# Lanczos approximation (g = 7, 9 coefficients, as in GSL) for complex Gamma.
_LANCZOS_G = 7.0
_LANCZOS_COEFFICIENTS = (
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012,
    9.9843695780195716e-6, 1.5056327351493116e-7)


def _lanczos_loggamma(w):
  """The principal branch of log Gamma(w) for Re w >= 1/2: Lanczos'
  approximation (about 1e-15 relative in complex128)."""
  w = w - 1
  series = _LANCZOS_COEFFICIENTS[0] + sum(
      np.array(_LANCZOS_COEFFICIENTS[1:], w.dtype) / (w[..., None] + _count(8, w.dtype, 1)),
      axis=-1)
  t = w + _LANCZOS_G + 0.5
  return 0.5 * math.log(2 * math.pi) + (w + 0.5) * log(t) - t + log(series)


def _is_pole_or_nan(z):
  return ((lax.imag(z) == 0) & _is_nonpositive_integer(real(z))) | isnan(z)


def _complex_gamma(z):
  """Gamma of complex z by Lanczos' approximation, reflecting Re z < 1/2;
  NaN+NaNj at the poles and for NaN parts."""
  reflect = real(z) < 0.5
  gamma_w = exp(_lanczos_loggamma(where(reflect, 1 - z, z)))
  reflected = np.pi / (sin(np.pi * z) * gamma_w)
  return where(_is_pole_or_nan(z), complex(np.nan, np.nan),
               where(reflect, reflected, gamma_w))


def _sin_cos_pi(x):
  """sin(pi x) and cos(pi x), with x reduced exactly to [-1/2, 1/2] first:
  exact at multiples of 1/2 and of the right sign around them."""
  r = x - 2 * round(x / 2)                       # in [-1, 1]
  sin_arg = where(abs(r) > 0.5, sign(r) - r, r)   # sin(pi r) = sin(pi sin_arg)
  cos_arg = 0.5 - abs(r)                          # cos(pi r) = sin(pi cos_arg)
  return sin(np.pi * sin_arg), sin(np.pi * cos_arg)


def _log_sin_pi(z):
  """The principal log of sin(pi z), without overflow for large |Im z|:
  log|sin(pi z)|**2 = 2 pi |y| + log(sin(pi x)**2 e**(-2 pi |y|) +
  ((1 - e**(-2 pi |y|)) / 2)**2), and the argument is that of
  (sin(pi x), cos(pi x) tanh(pi y)) (sin(pi z) divided by cosh(pi y))."""
  y = lax.imag(z)
  sin_x, cos_x = _sin_cos_pi(real(z))
  decay = -2 * np.pi * abs(y)
  log_abs = -0.5 * decay + 0.5 * log(sin_x * sin_x * exp(decay) + (0.5 * expm1(decay)) ** 2)
  return lax.complex(log_abs, arctan2(cos_x * tanh(np.pi * y), sin_x))


def _complex_loggamma(z):
  """The principal branch of log Gamma(z) for complex z: Lanczos'
  approximation for Re z >= 1/2, else the reflection formula with its
  branch correction (Hare 1997, Proposition 3.1):
  log Gamma(z) = log pi - log sin(pi z) - log Gamma(1 - z)
                 + 2 pi i copysign(1, Im z) floor(Re z / 2 + 1/4)."""
  # Adding +0.0 turns an imaginary part -0.0 into +0.0, as JAX's shifts
  # z + k do: on the cut both zeros give the limit from above.
  x, y = real(z), lax.imag(z) + 0.0
  z = lax.complex(x, y)
  reflect = x < 0.5
  log_gamma_w = _lanczos_loggamma(where(reflect, 1 - z, z))
  correction = lax.complex(full_like(x, math.log(math.pi)),
                           copysign(2 * np.pi, y) * floor(0.5 * x + 0.25))
  reflected = correction - _log_sin_pi(z) - log_gamma_w
  return where(_is_pole_or_nan(z), complex(np.nan, np.nan),
               where(reflect, reflected, log_gamma_w))


def gamma(x):
  """The Gamma function: gammasgn(x) * exp(lgamma(x)) for real x (NaN at
  0, -1, -2, ...; ±inf at ±0.0; NaN at -inf). Complex x: Lanczos'
  approximation (about 1e-15 relative in complex128)."""
  x, = promote_args_inexact("gamma", x)
  if dtypes.is_complex(x.dtype):
    return _complex_gamma(x)
  return gammasgn(x) * lax.exp(lax.lgamma(x))


def loggamma(x):
  """The principal branch of log Gamma(x): for real x, lgamma(x) for x > 0
  and NaN for x <= 0. For complex x, the analytic continuation from the
  positive reals, with its branch cut on the negative real axis, where the
  value is the limit from above whatever the sign of a zero imaginary part
  (as JAX gives); its real part is log|Gamma(x)|.
  NaN+NaNj at the poles 0, -1, -2, ... and for NaN or infinite parts.
  Computed by Lanczos' approximation and the reflection formula, where JAX
  shifts x to Re x >= 1/2 in a while loop: the same function, equal up to
  rounding (errors about 1e-14 in complex128 and 2e-6 in complex64,
  relative, or absolute where |log Gamma| < 1)."""
  x, = promote_args_inexact("loggamma", x)
  if dtypes.is_complex(x.dtype):
    return _complex_loggamma(x)
  return where(x > 0, lax.lgamma(x), np.nan)


def _lgamma_correction(x):
  """lgamma(x) - Stirling's formula (x - 1/2) log x - x + log(2 pi)/2, for x >= 8
  (the asymptotic series 1/(12x) - 1/(360x^3) + ... to the x^-13 term; the
  first omitted term, 3617/(122400 x^15), is below 1e-15 at x = 8)."""
  inv2 = 1 / (x * x)
  return _polyval([1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12],
                  inv2) / x


def betaln(a, b):
  """log |B(a, b)|, with B = Gamma(a) Gamma(b) / Gamma(a + b).

  lgamma(a) + lgamma(b) - lgamma(a + b) loses all accuracy when a or b is
  large (the terms cancel), so with a <= b: when b >= 8, Stirling's formula
  is used for the large arguments and their log terms are combined
  analytically; relative error about 1e-6 in float32 for all a, b > 0.
  """
  a, b = _promote_real("betaln", a, b)
  small, large = lax.min(a, b), lax.max(a, b)
  direct = lax.lgamma(small) + lax.lgamma(large) - lax.lgamma(small + large)
  safe_large = where(large >= 8, large, 8.0)
  safe_small = where(small > 0, small, 1.0)
  ratio = safe_small / safe_large
  correction_large = _lgamma_correction(safe_large) - _lgamma_correction(safe_small + safe_large)
  # lgamma(large) - lgamma(small + large) by Stirling's formula, for small > 0.
  log_ratio = -(safe_large - 0.5) * log1p(ratio) - safe_small * log(safe_small + safe_large)
  small_and_large = lax.lgamma(safe_small) + log_ratio + safe_small + correction_large
  safe_both = where(small >= 8, small, 8.0)
  both_large = (0.5 * math.log(2 * math.pi) - 0.5 * log(safe_large)
                + (safe_both - 0.5) * log(safe_both / (safe_both + safe_large))
                - safe_large * log1p(safe_both / safe_large)
                + _lgamma_correction(safe_both) + correction_large)
  return where(large < 8, direct,
               where(small >= 8, both_large, where(small > 0, small_and_large, direct)))


def beta(a, b):
  """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b), as its
  sign times exp(betaln(a, b))."""
  a, b = _promote_real("beta", a, b)
  sign_ = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign_ * lax.exp(betaln(a, b))


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b) (the
  `regularized_incomplete_beta` primitive)."""
  a, b, x = _promote_real("betainc", a, b, x)
  return lax.betainc(a, b, x)


def factorial(n, exact=False):
  """n! as Gamma(n + 1) in floating point; 0 for n < 0. `exact=True` is not
  supported (as in JAX)."""
  if exact:
    raise NotImplementedError("factorial with exact=True")
  n, = promote_args_inexact("factorial", n)
  return where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
  """The binomial coefficient "N choose k" in floating point, from lgamma;
  0 when N < 0, k < 0 or k > N. With `repetition`, comb(N + k - 1, k)
  (and 1 for k = 0, N >= 0)."""
  N, k = promote_args_inexact("comb", N, k)
  if repetition:
    return where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k)).astype(N.dtype)
  valid = (k <= N) & (N >= 0) & (k >= 0)
  safe_N, safe_k = where(valid, N, 0.0), where(valid, k, 0.0)
  value = lax.exp(lax.lgamma(safe_N + 1) - lax.lgamma(safe_k + 1)
                  - lax.lgamma(safe_N + 1 - safe_k))
  return where(valid, value, 0.0)


@custom_jvp
def poch(z, m):
  """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z); 1 for m = 0.
  Custom JVP (JAX's): d/dz = (digamma(z + m) - digamma(z)) poch(z, m),
  d/dm = digamma(z + m) poch(z, m)."""
  z, m = _promote_real("poch", z, m)
  return where(m == 0.0, 1.0, gamma(z + m) / gamma(z)).astype(z.dtype)


poch.defjvps(lambda z_dot, ans, z, m: (digamma(z + m) - digamma(z)) * poch(z, m) * z_dot,
             lambda m_dot, ans, z, m: digamma(z + m) * poch(z, m) * m_dot)


def multigammaln(a, d):
  """log of the multivariate gamma function,
  log Gamma_d(a) = d (d-1)/4 log(pi) + sum over j < d of lgamma(a - j/2).
  `d` must be a concrete integer."""
  d = operator.index(d)
  a, = promote_args_inexact("multigammaln", a)
  constant = 0.25 * d * (d - 1) * math.log(math.pi)
  halves = np.arange(d, dtype=a.dtype) / 2
  return sum(lax.lgamma(a[..., None] - halves), axis=-1) + constant


def digamma(x):
  """The digamma function psi(x) (the `digamma` primitive)."""
  x, = _promote_real("digamma", x)
  return lax.digamma(x)


def polygamma(n, x):
  """psi^(n)(x), the n-th derivative of digamma (the `polygamma` primitive);
  `n` must have an integer dtype (ValueError otherwise)."""
  n_dtype = dtypes.dtype(n)
  if not dtypes.is_integer(n_dtype):
    raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {n_dtype}.")
  n, x = _promote_real("polygamma", n, x)
  return lax.polygamma(n, x)


def gammainc(a, x):
  """The regularized lower incomplete gamma function P(a, x) (the `igamma` primitive)."""
  a, x = promote_args_inexact("gammainc", a, x)
  return lax.igamma(a, x)


def gammaincc(a, x):
  """The regularized upper incomplete gamma function Q(a, x) (the `igammac` primitive)."""
  a, x = promote_args_inexact("gammaincc", a, x)
  return lax.igammac(a, x)


def _check_hurwitz(q):
  if q is None:
    raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                              "compute the Hurwitz Zeta function.")


@custom_jvp
def zeta(x, q=None):
  """The Hurwitz zeta function zeta(x, q) (the `zeta` primitive). The Riemann
  zeta function (q=None) is not implemented, as in JAX.

  Custom JVP (JAX's): the JVP of `_zeta_series_expansion`, so under
  differentiation the primal value is the series' value too."""
  _check_hurwitz(q)
  x, q = promote_args_inexact("zeta", x, q)
  return lax.zeta(x, q)


def _zeta_series_expansion(x, q=None):
  """zeta(x, q) by Euler-Maclaurin summation (Johansson 2015, formula (5)):
  N terms of the sum, the integral of the tail and M correction terms with
  the Bernoulli numbers (N = M = 8 for float32, 16 otherwise), as JAX."""
  _check_hurwitz(q)
  s, a = promote_args_inexact("zeta", x, q)
  dtype = a.dtype
  n = 8 if dtype == np.dtype(np.float32) else 16   # N = M
  s_, a_ = s[..., None], a[..., None]
  head = sum((a_ + _count(n, dtype)) ** -s_, axis=-1)
  tail = lax.div((a + n) ** (1 - s), s - 1)
  ratios = cumprod((s_ + _count(2 * n, dtype)) / (a_ + n), axis=-1)[..., ::2]
  ratios = clip(ratios, max=np.finfo(dtype).max)
  corrections = (a + n) ** -s * (0.5 + sum(ratios / _zeta_coefficients(n, dtype), axis=-1))
  return head + tail + corrections


def _zeta_coefficients(n, dtype):
  """(2k)! / B_2k for k = 1 .. n, as a constant of `dtype`."""
  b = bernoulli_numbers(2 * n)
  return np.array([float(math.factorial(2 * k) / b[2 * k]) for k in range(1, n + 1)], dtype)


zeta.defjvp(functools.partial(jvp, _zeta_series_expansion))


def bernoulli(n):
  """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2), in the default float dtype.

  `n` is a concrete non-negative integer. B_0 .. B_60 are exact fractions
  rounded once; beyond, B_2k = (-1)**(k+1) 2 (2k)! zeta(2k) / (2 pi)**(2k),
  evaluated in float64 (about 1e-14 relative) and rounded (inf where it
  overflows the dtype).
  """
  n = operator.index(n)
  if n < 0:
    raise ValueError("n must be a non-negative integer.")
  values = [float(b) for b in bernoulli_numbers(min(n, 60))]
  for m in range(61, n + 1):
    if m % 2:
      values.append(0.0)
      continue
    zeta_m = math.fsum(j ** -float(m) for j in range(1, 10))   # zeta(m), m >= 62
    log_b = math.log(2) + math.lgamma(m + 1) + math.log(zeta_m) - m * math.log(2 * math.pi)
    values.append((-1) ** (m // 2 + 1) * (math.exp(log_b) if log_b < 709.7 else math.inf))
  return asarray(np.array(values, np.float64), dtype=dtypes.default_float_dtype())


# --- error functions, Faddeeva, normal distribution ---------------------------------------------

def erf(x):
  """The error function (the `erf` primitive)."""
  x, = _promote_real("erf", x)
  return lax.erf(x)


def erfc(x):
  """The complementary error function (the `erfc` primitive)."""
  x, = _promote_real("erfc", x)
  return lax.erfc(x)


def erfinv(x):
  """The inverse error function (the `erf_inv` primitive)."""
  x, = _promote_real("erfinv", x)
  return lax.erf_inv(x)


def _weideman_coefficients(n):
  """The constants L and the degree n-1 polynomial coefficients (highest degree
  first) of Weideman's rational approximation of the Faddeeva function
  (J. A. C. Weideman, SIAM J. Numer. Anal. 31 (1994)), computed by his FFT recipe."""
  m = 2 * n
  k = np.arange(-m + 1, m)
  L = math.sqrt(n / math.sqrt(2))
  t = L * np.tan(k * np.pi / m / 2)
  f = np.concatenate([[0.0], np.exp(-t * t) * (L * L + t * t)])
  a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
  return L, tuple(np.flipud(a[1:n + 1]))


_WEIDEMAN_L, _WEIDEMAN_COEFFICIENTS = _weideman_coefficients(32)


def _faddeeva(z):
  """w(z) = exp(-z**2) erfc(-i z) for complex z: Weideman's approximation with
  32 terms in the upper half-plane (about 3e-13 relative in complex128 and
  5e-7 in complex64); w(z) = 2 exp(-z**2) - w(-z) below it."""
  upper = lax.imag(z) >= 0
  z_up = where(upper, z, -z)
  iz = 1j * z_up
  denominator = _WEIDEMAN_L - iz
  w_up = (2 * _polyval(_WEIDEMAN_COEFFICIENTS, (_WEIDEMAN_L + iz) / denominator)
          / (denominator * denominator) + (1 / math.sqrt(math.pi)) / denominator)
  return where(upper, w_up, 2 * exp(-z * z) - w_up)


@custom_jvp
def _wofz(z):
  return _faddeeva(z)


# w'(z) = -2 z w(z) + 2i / sqrt(pi)
_wofz.defjvps(lambda g, ans, z: g * (-2 * z * ans + 2j / math.sqrt(math.pi)))


def wofz(z):
  """The Faddeeva function w(z) = exp(-z**2) erfc(-i z), complex-valued (real
  inputs are promoted to complex). Custom JVP (JAX's): -2 z w(z) + 2i/sqrt(pi)."""
  z, = promote_args_inexact("wofz", z)
  if not dtypes.is_complex(z.dtype):
    z = z.astype(dtypes.to_complex_dtype(z.dtype))
  return _wofz(z)


def erfcx(x):
  """The scaled complementary error function exp(x**2) erfc(x) = Re w(i x),
  without overflow for large x (erfcx(inf) = 0; it overflows to inf for
  x below about -9.3 in float32). Complex x: w(i x). float16 and bfloat16
  are computed in float32. Custom JVP (JAX's): 2 x erfcx(x) - 2/sqrt(pi);
  complex x through wofz's."""
  x, = promote_args_inexact("erfcx", x)
  if dtypes.is_complex(x.dtype):
    return _wofz(lax.complex(-lax.imag(x), real(x)))
  return _erfcx(x)


def _real_erfcx(x):
  value = real(_faddeeva(lax.complex(-zeros_like(x), x)))
  return where(x == np.inf, 0.0, where(x == -np.inf, np.inf, value)).astype(x.dtype)


@custom_jvp
def _erfcx(x):
  return _in_float32(_real_erfcx, x)


_erfcx.defjvps(lambda g, ans, x: g * (2 * x * ans - 2 / math.sqrt(math.pi)))


def dawsn(x):
  """Dawson's integral exp(-x**2) * integral of exp(t**2) from 0 to x, as
  (sqrt(pi)/2) Im w(x) (its Taylor series for |x| < 0.02); odd, dawsn(±inf)
  = ±0. float16 and bfloat16 are computed in float32. Custom JVP (JAX's):
  1 - 2 x dawsn(x)."""
  x, = _promote_real("dawsn", x)
  return _dawsn(x)


def _real_dawsn(x):
  value = (math.sqrt(math.pi) / 2) * lax.imag(_faddeeva(lax.complex(x, zeros_like(x))))
  x2 = x * x   # near 0, the Taylor series x (1 - 2x^2/3 + 4x^4/15 - 8x^6/105) keeps subnormals
  small = x * _polyval([-8 / 105, 4 / 15, -2 / 3, 1.0], x2)
  value = where(abs(x) < 0.02, small, value)
  return where(isinf(x), 0.0 * sign(x), value).astype(x.dtype)


@custom_jvp
def _dawsn(x):
  return _in_float32(_real_dawsn, x)


_dawsn.defjvps(lambda g, ans, x: g * (1 - 2 * x * ans))


def ndtr(x):
  """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2, computed with erfc
  in the tails. float32 and float64 only (TypeError otherwise), as JAX."""
  x = ensure_arraylike("ndtr", x)
  _require_float32_or_64(x)
  return _ndtr(x)


def _ndtr(x):
  half_sqrt_2 = 0.5 * math.sqrt(2)
  w = x * half_sqrt_2
  z = lax.abs(w)
  y = where(z < half_sqrt_2, 1.0 + lax.erf(w), where(w > 0, 2.0 - lax.erfc(z), lax.erfc(z)))
  return 0.5 * y


# Cephes' ndtri: rational approximations of the inverse normal CDF.
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2,
             -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)


def ndtri(p):
  """The inverse of ndtr: x with ndtr(x) = p; -inf at 0, inf at 1, NaN
  outside [0, 1]. Cephes' piecewise rational approximations (about 1e-7
  relative in float32). float32 and float64 only (TypeError otherwise)."""
  p = ensure_arraylike("ndtri", p)
  _require_float32_or_64(p)
  tail = p > -math.expm1(-2.0)
  near = where(tail, 1.0 - p, p)   # the distance to the nearer end, as a probability
  near = where(near == 0, 0.5, near)
  w = near - 0.5
  ww = w * w
  central = -(w + w * ww * (_polyval(_NDTRI_P0, ww) / _polyval(_NDTRI_Q0, ww)))
  central = central * math.sqrt(2 * math.pi)
  z = sqrt(-2.0 * log(near))
  first = z - log(z) / z
  far = first - _polyval(_NDTRI_P2, 1 / z) / _polyval(_NDTRI_Q2, 1 / z) / z
  mid = first - _polyval(_NDTRI_P1, 1 / z) / _polyval(_NDTRI_Q1, 1 / z) / z
  x = where(near > math.exp(-2.0), central, where(z >= 8.0, far, mid))
  x = where(tail, x, -x)
  return where(p == 0, -np.inf, where(p == 1, np.inf, x))


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def log_ndtr(x, series_order=3):
  """log(ndtr(x)), accurate in both tails: for x above 5 (float32) or 8
  (float64) it is -ndtr(-x); below -10 (float32) or -20 (float64) the
  asymptotic series log(exp(-x**2/2) / (-x sqrt(2 pi))) + log(1 + sum over
  n <= series_order of (-1)**n (2n-1)!! / x**(2n)); log(ndtr(x)) between.
  float32 and float64 only. Custom JVP (JAX's): t exp(log phi(x) - log_ndtr(x)),
  with phi the normal density."""
  if not isinstance(series_order, int):
    raise TypeError("series_order must be a Python integer.")
  if series_order < 0:
    raise ValueError("series_order must be non-negative.")
  if series_order > 30:
    raise ValueError("series_order must be <= 30.")
  x = ensure_arraylike("log_ndtr", x)
  if x.dtype == np.dtype(np.float64):
    lower, upper = -20.0, 8.0
  elif x.dtype == np.dtype(np.float32):
    lower, upper = -10.0, 5.0
  else:
    raise TypeError(f"x.dtype={x.dtype} is not supported.")
  above = x > upper
  ndtr_value = _ndtr(where(above, -x, lax.max(x, full_like(x, lower))))
  low_x = lax.min(x, full_like(x, lower))
  x2 = low_x * low_x
  log_scale = -0.5 * x2 - log(-low_x) - 0.5 * math.log(2 * math.pi)
  series = ones_like(x)
  power = ones_like(x)
  for n in range(1, series_order + 1):
    power = power * x2
    series = series + (-1) ** n * float(np.prod(np.arange(2 * n - 1, 0, -2))) / power
  return where(above, -ndtr_value, where(x > lower, log(ndtr_value), log_scale + log(series)))




@log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
  (x,), (t,) = primals, tangents
  ans = log_ndtr(x, series_order)
  log_pdf = -0.5 * lax.square(x) - np.array(0.5 * math.log(2 * math.pi), x.dtype)
  return ans, t * lax.exp(log_pdf - ans)


# 13-point quadrature (Patefield and Tandy 2000, method T5) for Owen's T:
# T(h, a) ~ a * sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2) / (1 + a^2 t_i) for |a| <= 1.
_OWENS_T_POINTS = (
    0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
    0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
    0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
    0.99178832974629704)
_OWENS_T_WEIGHTS = (
    0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239,
    0.0038862217010742058, 0.0016793031084546090)


def owens_t(h, a):
  """Owen's T function T(h, a) = (1/2pi) * integral over [0, a] of
  exp(-h**2 (1 + t**2) / 2) / (1 + t**2) dt.

  For |a| <= 1, a 13-point quadrature (Patefield and Tandy's method T5);
  for |a| > 1, T(h, a) = (Phi(h) + Phi(ah))/2 - Phi(h) Phi(ah) - T(ah, 1/a)
  (with Phi the normal CDF, written with erfc). Exact at h = 0 and |a| = 1.
  T is even in h and odd in a; NaN if either is NaN. Custom JVP (JAX's):
  dT/dh = -exp(-h**2/2) erf(a h/sqrt 2) / (2 sqrt(2 pi)),
  dT/da = exp(-(1 + a**2) h**2 / 2) / (2 pi (1 + a**2)).
  """
  h, a = _promote_real("owens_t", h, a)
  return _owens_t(h, a)


@custom_jvp
def _owens_t(h, a):
  h = abs(h)
  abs_a = abs(a)
  h_over_root2 = h / math.sqrt(2)
  inner = abs_a <= 1.0
  inner_a = where(inner, abs_a, 1 / abs_a)
  inner_h = where(inner, h, abs_a * h)
  r = (inner_a * inner_a)[..., None] * np.array(_OWENS_T_POINTS, h.dtype)
  integrand = exp(-0.5 * (inner_h * inner_h)[..., None] * (1.0 + r)) / (1.0 + r)
  t = inner_a * sum(integrand * np.array(_OWENS_T_WEIGHTS, h.dtype), axis=-1)
  t = where(inner_h == 0, lax.atan(inner_a) / (2 * math.pi), t)
  root2 = math.sqrt(2)
  t = where(inner_a == 1,
            0.125 * lax.erfc(-inner_h / root2) * lax.erfc(inner_h / root2), t)
  upper_h, upper_ah = lax.erfc(h_over_root2), lax.erfc(abs_a * h_over_root2)
  outer = where(abs_a * h <= 0.67,
                0.25 - 0.25 * lax.erf(h_over_root2) * lax.erf(abs_a * h_over_root2) - t,
                0.25 * (upper_h + upper_ah - upper_h * upper_ah) - t)
  t = lax.sign(a) * where(inner, t, outer)
  return where(isnan(a) | isnan(h), np.nan, t)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
  (h, a), (h_dot, a_dot) = primals, tangents
  result = _owens_t(h, a)
  d_h = (-lax.exp(-0.5 * lax.square(h)) * lax.erf(a * h / math.sqrt(2))
         / (2 * math.sqrt(2 * math.pi)))
  one_plus_a2 = lax.square(a) + 1
  d_a = lax.exp(-0.5 * one_plus_a2 * lax.square(h)) / (2 * math.pi * one_plus_a2)
  return result, (d_h * h_dot + d_a * a_dot).astype(result.dtype)


# --- logistic, entropies, log-sum-exp, softmax --------------------------------------------------

def expit(x):
  """The logistic sigmoid 1 / (1 + exp(-x)) (the `logistic` primitive)."""
  x, = promote_args_inexact("expit", x)
  return lax.logistic(x)


@custom_jvp
def logit(x):
  """log(x / (1 - x)), the inverse of expit. Custom JVP (JAX's): t / (x (1 - x))."""
  x, = promote_args_inexact("logit", x)
  return lax.log(lax.div(x, lax.sub(np.array(1, x.dtype), x)))


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(np.array(1, x.dtype), x))))


@custom_jvp
def xlogy(x, y):
  """x * log(y), 0 where x == 0 (unless y is NaN). Custom JVP (JAX's):
  dx log(y) + dy x / y, so the derivative in x at (0, 0) is -inf."""
  x, y = promote_args_inexact("xlogy", x, y)
  return where((x != 0) | isnan(y), lax.mul(x, lax.log(y)), zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
  (x, y), (x_dot, y_dot) = primals, tangents
  result = xlogy(x, y)
  return result, (x_dot * lax.log(y) + y_dot * x / y).astype(result.dtype)


@custom_jvp
def xlog1py(x, y):
  """x * log1p(y), 0 where x == 0 (unless y is NaN). Custom JVP (JAX's):
  dx log1p(y) + dy x / (1 + y)."""
  x, y = promote_args_inexact("xlog1py", x, y)
  return where((x != 0) | isnan(y), lax.mul(x, lax.log1p(y)), zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
  (x, y), (x_dot, y_dot) = primals, tangents
  result = xlog1py(x, y)
  return result, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(result.dtype)


@custom_jvp
def _xlogx(x):
  """x log x (0 at 0) with JAX's derivative log(x) + 1 (-inf at 0)."""
  return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
  (x,), (x_dot,) = primals, tangents
  return _xlogx(x), x_dot * (lax.log(x) + 1)


def entr(x):
  """The elementwise entropy -x log x: 0 at 0, -inf for x < 0."""
  x, = _promote_real("entr", x)
  return lax.select(x < 0, full_like(x, -np.inf), lax.neg(_xlogx(x)))


def rel_entr(p, q):
  """p log(p / q) for p, q > 0; 0 for p = 0, q >= 0; inf otherwise."""
  p, q = _promote_real("rel_entr", p, q)
  both_positive = (p > 0) & (q > 0)
  safe_p, safe_q = where(both_positive, p, 1), where(both_positive, q, 1)
  value = _xlogx(safe_p) - xlogy(safe_p, safe_q)
  return where(both_positive, value, where((p == 0) & (q >= 0), 0.0, np.inf))


def kl_div(p, q):
  """The Kullback-Leibler term p log(p / q) - p + q (rel_entr(p, q) - p + q)."""
  p, q = _promote_real("kl_div", p, q)
  return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
  """The Box-Cox transformation (x**lmbda - 1) / lmbda, log(x) for lmbda = 0
  (as expm1(lmbda log x) / lmbda); NaN for x < 0."""
  x, lmbda = promote_args_inexact("boxcox", x, lmbda)
  return _boxcox(log(x), lmbda)


def boxcox1p(x, lmbda):
  """Box-Cox of 1 + x: ((1 + x)**lmbda - 1) / lmbda, log1p(x) for lmbda = 0."""
  x, lmbda = promote_args_inexact("boxcox1p", x, lmbda)
  return _boxcox(log1p(x), lmbda)


def _boxcox(log_x, lmbda):
  zero = lmbda == 0
  safe_lmbda = where(zero, ones_like(lmbda), lmbda)
  return where(zero, log_x, expm1(safe_lmbda * log_x) / safe_lmbda)


def _reduction_axes(ndim, axis):
  """`axis` (None, an int or a tuple) as sorted non-negative axes."""
  if axis is None:
    return tuple(range(ndim))
  axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
  return tuple(sorted(canonicalize_axis(operator.index(a), ndim) for a in axes))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """log(sum(b * exp(a))) over `axis`, computed without overflow by shifting
  by the maximum (0 where the maximum is not finite).

  `b` scales the terms (terms with b == 0 are dropped); `where` masks
  elements out. With `return_sign`, returns (log |sum|, sign(sum));
  otherwise a negative sum gives NaN. Complex `a` gives the complex log.
  As in JAX, the gradient is stopped through the shift, and masked-out
  elements are replaced by 0 first (so they give zero, not NaN, gradients).
  """
  mask = where
  if mask is not None:
    a = _where(mask, a, 0)
  if b is not None:
    a, b = promote_args_inexact("logsumexp", a, b)
    a = _where(b != 0, a, -np.inf)
  else:
    a, = promote_args_inexact("logsumexp", a)
  dims = _reduction_axes(a.ndim, axis)
  amax = max(real(a), axis=dims, keepdims=keepdims, where=mask, initial=-np.inf)
  amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, full_like(amax, 0)))
  amax_with_dims = amax if keepdims else lax.expand_dims(amax, dims)
  exp_a = lax.exp(lax.sub(a, amax_with_dims.astype(a.dtype)))
  if b is not None:
    exp_a = lax.mul(exp_a, b)
  sumexp = sum(exp_a, axis=dims, keepdims=keepdims, where=mask)
  sign_ = lax.sign(sumexp)
  if return_sign or not dtypes.is_complex(a.dtype):
    sumexp = abs(sumexp)
  out = lax.add(lax.log(sumexp), amax.astype(sumexp.dtype))
  if return_sign:
    return out, sign_
  if b is not None and not dtypes.is_complex(out.dtype):
    out = _where(sign_ < 0, np.array(np.nan, out.dtype), out)
  return out


def softmax(x, /, *, axis=None):
  """exp(x) / sum(exp(x)) over `axis` (all axes by default): jax.nn.softmax."""
  from refimpl.nn import functions   # refimpl.nn builds on this module (logsumexp)
  return functions.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
  """x - logsumexp(x) over `axis` (all axes by default): jax.nn.log_softmax."""
  from refimpl.nn import functions
  return functions.log_softmax(x, axis=axis)


# --- exponential, sine and cosine integrals, dilogarithm ----------------------------------------

_E1_SERIES_TERMS = 20      # for x <= 1: the last term is below 1/(20 * 20!) ~ 2e-20
_EXPN_FRACTION_DEPTH = 64   # for x > 1: about 1e-12 relative at x = 1 (worst case, n = 1)


def _expn_fraction(n, x):
  """E_n(x) for x > 1 by its continued fraction (Numerical Recipes' expint),
  exp(-x) / (x+n - 1 n/(x+n+2 - 2 (n+1)/(x+n+4 - ...))), evaluated from a
  fixed depth backwards."""
  f = x + n + 2 * _EXPN_FRACTION_DEPTH
  for i in range(_EXPN_FRACTION_DEPTH, 0, -1):
    f = x + n + 2 * (i - 1) - i * (n - 1 + i) / f
  return exp(-x) / f


def _expn_series(n, x):
  """E_n(x) for 0 < x <= 1 and integer n >= 1 (Numerical Recipes' expint):
  (-x)**(n-1) / (n-1)! (psi(n) - log x) - sum over k != n-1 of (-x)**k / ((k-n+1) k!)."""
  k = _count(_E1_SERIES_TERMS, x.dtype, 1)
  powers = cumprod(-x[..., None] / k, axis=-1)   # (-x)**k / k!, k = 1, 2, ...
  n_ = n[..., None]
  skip = k == n_ - 1
  terms = where(skip, 0.0, powers / where(skip, 1.0, k - n_ + 1))
  first = where(n == 1, 0.0, 1 / where(n == 1, 2.0, 1 - n))   # the k = 0 term
  power_n = lax.exp((n - 1) * lax.log(x) - lax.lgamma(n))   # x**(n-1) / (n-1)!
  sign_n = where(fmod(n - 1, 2) == 0, 1.0, -1.0)
  return sign_n * power_n * (lax.digamma(n) - lax.log(x)) - first - sum(terms, axis=-1)


@functools.partial(custom_jvp, nondiff_argnums=(0,))
@jit
def expn(n, x):
  """The generalized exponential integral E_n(x) = integral over t >= 1 of
  exp(-x t) / t**n, for integer-valued n >= 0.

  NaN for n < 0, non-integer n or x < 0; at x = 0, inf for n < 2 and
  1/(n-1) otherwise; E_0(x) = exp(-x)/x. For 0 < x <= 1 the series of
  Numerical Recipes' expint (20 terms), for x > 1 its continued fraction
  (depth 64): about 1e-12 relative in float64 and 1e-6 in float32.
  Custom JVP (JAX's), in x only (`n` is not differentiated): -E_{n-1}(x).
  """
  n, x = _promote_real("expn", n, x)
  invalid = (n < 0) | (x < 0) | (n != floor(n)) | isnan(n) | isnan(x)
  safe_n = where((n >= 1) & ~invalid, n, 1.0)
  fraction = _expn_fraction(safe_n, where(x > 1, x, 2.0))
  series = _expn_series(safe_n, where((x > 0) & (x <= 1), x, 0.5))
  at_zero = where(n < 2, np.inf, 1 / where(n < 2, 2.0, n - 1))
  value = where(x > 1, fraction, series)
  value = where(n == 0, exp(-x) / x, where(x == 0, at_zero, value))
  return where(invalid, np.nan, value).astype(x.dtype)


@expn.defjvp
@jit
def _expn_jvp(n, primals, tangents):
  (x,), (x_dot,) = primals, tangents
  return expn(n, x), lax.mul(lax.neg(x_dot), expn(n - 1, x))


def exp1(x):
  """The exponential integral E_1(x) = integral over t >= x of exp(-t)/t (expn(1, x))."""
  x, = _promote_real("exp1", x)
  return expn(1, x)


_EI_SERIES_TERMS = 100      # for 0 < x <= 40
_EI_ASYMPTOTIC_TERMS = 20   # for x > 40: the error is below 20! / 40**20 ~ 2e-14


@custom_jvp
@jit
def expi(x):
  """The exponential integral Ei(x) = principal value of the integral of
  exp(t)/t over t < x.

  x < 0: -E_1(-x). 0 < x <= 40: gamma + log x + sum x**k / (k k!) (100
  terms); x > 40: exp(x)/x * sum k!/x**k (20 terms). Ei(0) = -inf,
  Ei(inf) = inf, Ei(-inf) = -0. Relative accuracy about 1e-14 (float64) and
  1e-6 (float32; for large x, float32's exp(x) limits it to about x * 6e-8),
  except near Ei's root x = 0.3725 where it is absolute.
  Custom JVP (JAX's): exp(x) / x.
  """
  x, = _promote_real("expi", x)
  negative = -expn(1, where(x < 0, -x, 1.0))
  pos = where(x > 0, x, 1.0)
  small = where(x <= 40, pos, 1.0)
  powers = cumprod(small[..., None] / _count(_EI_SERIES_TERMS, x.dtype, 1), axis=-1)
  series = _EULER_GAMMA + log(small) + sum(powers / _count(_EI_SERIES_TERMS, x.dtype, 1),
                                            axis=-1)
  large = where(x > 40, pos, 41.0)
  ratios = _count(_EI_ASYMPTOTIC_TERMS, x.dtype, 1) / large[..., None]
  asymptotic = exp(large - log(large)) * (1 + sum(cumprod(ratios, axis=-1), axis=-1))
  value = where(x <= 40, series, asymptotic)
  value = where(x < 0, negative, where(x == 0, -np.inf, value))
  return where(x == np.inf, np.inf, value).astype(x.dtype)


@expi.defjvp
@jit
def _expi_jvp(primals, tangents):
  (x,), (x_dot,) = primals, tangents
  return expi(x), exp(x) / x * x_dot


_SICI_SERIES_TERMS = 36       # for |x| <= 4
_SICI_FRACTION_DEPTH = 40     # for |x| > 4, in the complex plane


def _sici_weights(dtype):
  """Weights of x**j / j! (j = 1..36) in the series of Si and Ci - gamma - log x:
  Si has (-1)**k / (2k+1) at j = 2k+1, Ci has (-1)**k / (2k) at j = 2k."""
  j = np.arange(1, _SICI_SERIES_TERMS + 1)
  sign_ = np.where((j // 2) % 2 == 0, 1.0, -1.0)
  return (np.where(j % 2 == 1, sign_ / j, 0.0).astype(dtype),
          np.where(j % 2 == 0, sign_ / j, 0.0).astype(dtype))


@jit
def sici(x):
  """The sine and cosine integrals (Si(x), Ci(x)): Si(x) = integral of
  sin(t)/t over [0, x], Ci(x) = gamma + log x + integral of (cos t - 1)/t.

  |x| <= 4: their power series (36 terms); |x| > 4: the continued fraction
  of E_1(i|x|) = -Ci(|x|) + i (Si(|x|) - pi/2), in complex arithmetic.
  Si is odd; Ci(x) for x < 0 is Ci(|x|) (the real part, as JAX); Ci(0) =
  -inf, Si(±inf) = ±pi/2, Ci(inf) = 0, Ci(-inf) = NaN. Accuracy about 1e-6
  (float32), 1e-13 (float64), absolute near the zeros of Ci.
  (JAX attaches a custom_jvp rule.)
  """
  x, = _promote_real("sici", x)
  ax = abs(x)
  small = where(ax <= 4, ax, 1.0)
  powers = cumprod(small[..., None] / _count(_SICI_SERIES_TERMS, x.dtype, 1), axis=-1)
  si_weights, ci_weights = _sici_weights(x.dtype)
  si_series = sum(powers * si_weights, axis=-1)
  ci_series = _EULER_GAMMA + log(small) + sum(powers * ci_weights, axis=-1)
  large = where((ax > 4) & (ax < np.inf), ax, 5.0)
  z = lax.complex(zeros_like(large), large)   # i |x|
  f = z + 1 + 2 * _SICI_FRACTION_DEPTH
  for i in range(_SICI_FRACTION_DEPTH, 0, -1):
    f = z + 1 + 2 * (i - 1) - float(i * i) / f
  e1 = exp(-z) / f
  si = where(ax <= 4, si_series, lax.imag(e1) + math.pi / 2)
  ci = where(ax <= 4, ci_series, -real(e1))
  si = where(ax == np.inf, math.pi / 2, si)
  ci = where(ax == np.inf, 0.0, where(ax == 0, -np.inf, ci))
  si = where(x < 0, -si, si)
  ci = where(x == -np.inf, np.nan, ci)
  return si.astype(x.dtype), ci.astype(x.dtype)


_DILOG_TERMS = 50   # for |u| <= 1/2: 2**-50 / 2500


def _dilog_series(u):
  """Li2(u) = sum over k >= 1 of u**k / k**2, for |u| <= 1/2."""
  k = _count(_DILOG_TERMS, u.dtype, 1)
  return sum(cumprod(u[..., None] * ones_like(k), axis=-1) / (k * k), axis=-1)


def spence(x):
  """Spence's function, integral over [1, x] of log(t) / (1 - t), which is the
  dilogarithm Li2(1 - x); defined for x >= 0 (NaN for x < 0, as JAX).

  Li2's power series (50 terms) on an argument of size at most 1/2, reached by
  the reflection Li2(y) = pi**2/6 - log(y) log(1-y) - Li2(1-y) and Landen's
  identity Li2(y) = -Li2(y/(y-1)) - log(1-y)**2 / 2: spence(0) = pi**2/6,
  spence(1) = 0, spence(inf) = -inf. float32 and float64 only.
  """
  x = ensure_arraylike("spence", x)
  _require_float32_or_64(x)
  pi2_6 = math.pi ** 2 / 6
  # 0 < x < 1/2: pi^2/6 - log(x) log(1-x) - Li2(x)
  low = where((x > 0) & (x < 0.5), x, 0.25)
  below_half = pi2_6 - log(low) * log1p(-low) - _dilog_series(low)
  # 1/2 <= x <= 3/2: Li2(1 - x) directly
  mid = where((x >= 0.5) & (x <= 1.5), x, 1.0)
  around_one = _dilog_series(1 - mid)
  # 3/2 < x <= 2: -Li2(1 - 1/x) - log(x)^2 / 2
  near = where((x > 1.5) & (x <= 2), x, 1.75)
  up_to_two = -_dilog_series(1 - 1 / near) - 0.5 * log(near) ** 2
  # x > 2: -pi^2/6 - log(x) log1p(-1/x) + Li2(1/x) - log(x)^2 / 2
  far = where((x > 2) & (x < np.inf), x, 4.0)
  log_far = log(far)
  beyond_two = -pi2_6 - log_far * log1p(-1 / far) + _dilog_series(1 / far) - 0.5 * log_far ** 2
  value = where(x < 0.5, below_half,
                where(x <= 1.5, around_one, where(x <= 2, up_to_two, beyond_two)))
  value = where(x == 0, pi2_6, where(x == np.inf, -np.inf, value))
  return where((x < 0) | isnan(x), np.nan, value).astype(x.dtype)


def _sin_cos_half_pi_square(x):
  """(sin(pi x**2 / 2), cos(pi x**2 / 2)) with the argument reduced exactly:
  with s = x mod 2, x**2 / 2 = s (x - s/2) (mod 2)."""
  x = abs(x)
  s = fmod(x, 2.0)
  r = fmod(s * (x - s / 2), 2.0)
  return sin(math.pi * r), cos(math.pi * r)


_FRESNEL_SERIES_TERMS = 24   # powers (pi x**2 / 2)**j / j! for j <= 24, used for |x| <= 1


@custom_jvp
def fresnel(x):
  """The Fresnel integrals (S(x), C(x)): the integrals over [0, x] of
  sin(pi t**2 / 2) and cos(pi t**2 / 2).

  |x| <= 1: their power series; beyond, C + iS = (1+i)/2 (1 - exp(i pi x**2/2)
  w((1+i) sqrt(pi) x / 2)) with the Faddeeva function w (see wofz) and the
  phase reduced exactly. Odd in x; S(±inf) = C(±inf) = ±1/2. float16 and
  bfloat16 are computed in float32. Custom JVP (JAX's): (sin(pi x**2 / 2),
  cos(pi x**2 / 2)), with the phase reduced exactly.
  """
  x, = promote_args_inexact("fresnel", x)
  if dtypes.is_complex(x.dtype):
    raise NotImplementedError("Support for complex-valued inputs is not implemented yet.")
  return _in_float32(_fresnel, x)


@fresnel.defjvp
def _fresnel_jvp(primals, tangents):
  (x,), (x_dot,) = primals, tangents
  sin_, cos_ = _sin_cos_half_pi_square(x)
  return fresnel(x), (sin_ * x_dot, cos_ * x_dot)


def _fresnel(x):
  ax = abs(x)
  small = where(ax <= 1, ax, 1.0)
  t = (math.pi / 2) * small * small
  j = np.arange(1, _FRESNEL_SERIES_TERMS + 1)
  powers = cumprod(t[..., None] / j.astype(x.dtype), axis=-1)   # t**j / j!
  sign_ = np.where((j // 2) % 2 == 0, 1.0, -1.0) / (2 * j + 1)
  c_series = small * (1 + sum(powers * np.where(j % 2 == 0, sign_, 0.0).astype(x.dtype), -1))
  s_series = small * sum(powers * np.where(j % 2 == 1, sign_, 0.0).astype(x.dtype), -1)
  large = where((ax > 1) & (ax < np.inf), ax, 2.0)
  arg = lax.complex(large, large) * (math.sqrt(math.pi) / 2)
  sin_, cos_ = _sin_cos_half_pi_square(large)
  v = (1 - lax.complex(cos_, sin_) * _faddeeva(arg)) * (0.5 + 0.5j)
  s = where(ax <= 1, s_series, lax.imag(v))
  c = where(ax <= 1, c_series, real(v))
  s, c = where(ax == np.inf, 0.5, s), where(ax == np.inf, 0.5, c)
  negative = x < 0
  return where(negative, -s, s).astype(x.dtype), where(negative, -c, c).astype(x.dtype)


# --- Bessel functions and spherical harmonics ---------------------------------------------------

def i0e(x):
  """e**-|x| I0(x) (the `bessel_i0e` primitive)."""
  x, = promote_args_inexact("i0e", x)
  return lax.bessel_i0e(x)


def i0(x):
  """The modified Bessel function I0(x) = exp(|x|) i0e(x) (jnp.i0)."""
  x, = promote_args_inexact("i0", x)
  if not dtypes.is_float(x.dtype):
    raise ValueError(f"Unsupported input type to jax.scipy.special.i0: {x.dtype}")
  return _jnp_i0(x)


def i1e(x):
  """e**-|x| I1(x) (the `bessel_i1e` primitive)."""
  x, = promote_args_inexact("i1e", x)
  return lax.bessel_i1e(x)


def i1(x):
  """The modified Bessel function I1(x) = exp(|x|) i1e(x)."""
  x, = promote_args_inexact("i1", x)
  if not dtypes.is_float(x.dtype):
    raise ValueError(f"Unsupported input type to jax.scipy.special.i1: {x.dtype}")
  return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


@jit(static_argnames=("v", "n_iter"))
def _bessel_jn(z, *, v, n_iter):
  f0, f1 = zeros_like(z), full_like(z, 1e-16)
  total = zeros_like(z)
  values = {}
  for k in range(n_iter, -1, -1):   # J_k from J_{k+1}, J_{k+2}, unnormalized
    f = 2.0 * (k + 1.0) * f1 / z - f0
    if k % 2 == 0:
      total = total + 2.0 * f
    if k <= v:
      values[k] = f
    f0, f1 = f1, f
    # Rescale everything (the ratios are what count) before float32 overflows.
    scale = where(abs(f1) > 1e10, 1e-10, 1.0)
    f0, f1, total = f0 * scale, f1 * scale, total * scale
    values = {j: value * scale for j, value in values.items()}
  norm = total - values[0]   # J_0 + 2 (J_2 + J_4 + ...) = 1
  return stack([values[k] / norm for k in range(v + 1)])


def bessel_jn(z, *, v, n_iter=50):
  """Bessel functions of the first kind J_0(z) .. J_v(z), as an array of
  shape (v + 1, *z.shape): Miller's backward recurrence J_k = 2(k+1)/z J_{k+1}
  - J_{k+2} from k = n_iter down, normalized by J_0 + 2 sum J_2k = 1 (Zhang
  and Jin's BJNDD, as JAX), rescaled as it goes so that it cannot overflow
  (JAX's overflows to NaN in float32 for small |z|). `n_iter` must exceed
  |z| comfortably (see JAX's rule of thumb); z = 0 gives NaN. Real z only."""
  z, = promote_args_inexact("bessel_jn", asarray(z))
  if dtypes.is_complex(z.dtype):
    raise ValueError("complex input not supported.")
  return _bessel_jn(z, v=operator.index(v), n_iter=int(n_iter))


@jit(static_argnames=("n_max",))
def _sph_harm(n, m, theta, phi, *, n_max):
  x, y = cos(theta), sin(theta)
  p = {(0, 0): full_like(x, 0.5 / math.sqrt(math.pi))}   # normalized P_l^m, Condon-Shortley
  for mm in range(1, n_max + 1):
    p[mm, mm] = -math.sqrt(1 + 0.5 / mm) * y * p[mm - 1, mm - 1]
  for mm in range(0, n_max):
    p[mm + 1, mm] = math.sqrt(2 * mm + 3) * x * p[mm, mm]
  for mm in range(0, n_max + 1):
    for l in range(mm + 2, n_max + 1):
      d0 = math.sqrt((4 * l * l - 1) / (l * l - mm * mm))
      d1 = math.sqrt((2 * l + 1) * ((l - 1) ** 2 - mm * mm) / ((2 * l - 3) * (l * l - mm * mm)))
      p[l, mm] = d0 * x * p[l - 1, mm] - d1 * p[l - 2, mm]
  n = lax.clamp(np.int32(0), n.astype(np.int32), np.int32(n_max))
  abs_m = lax.clamp(np.int32(0), abs(m).astype(np.int32), np.int32(n_max))
  legendre = zeros_like(x)
  for (l, mm), value in p.items():
    legendre = where((n == l) & (abs_m == mm), value, legendre)
  angle = abs_m * phi
  harmonic = lax.complex(legendre * cos(angle), legendre * sin(angle))
  odd = (abs_m % 2) == 1
  negative_m = lax.conj(harmonic) * where(odd, -1.0, 1.0)
  return where(m < 0, negative_m, harmonic)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
  """The spherical harmonic Y_n^m(theta, phi) = N P_n^m(cos theta) e**(i m phi)
  (theta the polar angle, phi the azimuth; SciPy's sph_harm_y convention,
  with the Condon-Shortley phase), complex-valued.

  `n` and `m` are integer arrays broadcast with theta and phi; `n_max`, the
  largest n, must be concrete (it is max(n) by default, which needs
  concrete n): the normalized associated Legendre functions up to n_max come
  from the standard three-term recurrences. n is clipped to [0, n_max];
  |m| > n gives 0. `diff_n` is not supported (NotImplementedError), as JAX.
  """
  if diff_n is not None:
    raise NotImplementedError(
        "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
  n, m = ensure_arraylike("sph_harm_y", n, m)
  if n_max is None:
    n_max = np.max(np.asarray(n))
  n_max = operator.index(int(n_max))
  theta, phi = promote_args_inexact("sph_harm_y", theta, phi)
  return _sph_harm(n, m, theta, phi, n_max=n_max)


# --- hypergeometric functions -------------------------------------------------------------------

_HYPERGEOMETRIC_TERMS = 250   # as JAX's loops
_HYP1F1_ASYMPTOTIC_TERMS = 30


def _hypergeometric_series(ratio_fn, dtype):
  """1 + sum over k >= 1 of prod over j < k of ratio_fn(j), with 250 terms;
  ratio_fn takes j as a constant vector (the last axis)."""
  j = _count(_HYPERGEOMETRIC_TERMS - 1, dtype)
  return 1 + sum(cumprod(ratio_fn(j), axis=-1), axis=-1)


@custom_jvp
@jit
def hyp1f1(a, b, x):
  """Kummer's confluent hypergeometric function 1F1(a; b; x) = sum over k of
  (a)_k / (b)_k x**k / k!.

  For x < 0, Kummer's transformation 1F1(a; b; x) = e**x 1F1(b-a; b; -x)
  makes the series' terms positive when b > a > 0; then the series (250
  terms), and for |x| >= 100 (unless the first parameter is a non-positive
  integer, a polynomial, or |(b-a)(1-a)| >= |x|) the asymptotic expansion
  Gamma(b)/Gamma(a) e**x x**(a-b) sum (b-a)_k (1-a)_k / (k! x**k), cut at its
  smallest term. 1 for a = 0, exp(x) for a = b, inf for b = 0. Large results
  overflow (e**x); when the terms cancel (x < 0 with a > b) float32 loses
  accuracy, and the series is cut short for |x| beyond about 150. Real
  inputs only.

  Custom JVP (JAX's): in x, a/b 1F1(a+1; b+1; x); in a and b, the series
  sum over k >= 1 of t_k (psi(a+k) - psi(a)) and of t_k (psi(b) - psi(b+k)),
  with t_k the terms of 1F1's series (249 terms, as JAX's loops at most).
  """
  a, b, x = _promote_real("hyp1f1", a, b, x)
  negative = x < 0
  a_ = where(negative, b - a, a)
  ax = abs(x)
  # The asymptotic expansion needs |x| well above the parameters' sizes.
  use_series = (ax < 100) | _is_nonpositive_integer(a_) | (abs((b - a_) * (1 - a_)) >= ax)
  series_x = where(use_series, ax, 0.0)
  series = _hypergeometric_series(
      lambda j: (a_[..., None] + j) / (b[..., None] + j) * series_x[..., None] / (j + 1),
      x.dtype)
  series = series * where(negative, exp(x), 1.0)
  big_x = where(ax >= 100, ax, 100.0)
  k = _count(_HYP1F1_ASYMPTOTIC_TERMS, x.dtype)
  ratios = (b - a_)[..., None] + k
  ratios = ratios * ((1 - a_)[..., None] + k) / ((k + 1) * big_x[..., None])
  keep = cumprod((abs(ratios) < 1).astype(x.dtype), axis=-1)   # up to the smallest term
  asymptotic_sum = 1 + sum(cumprod(ratios, axis=-1) * keep, axis=-1)
  log_prefactor = where(negative, 0.0, big_x) + (a_ - b) * log(big_x)
  asymptotic = (gammasgn(b) * gammasgn(a_) * exp(log_prefactor + lax.lgamma(b) - lax.lgamma(a_))
                * asymptotic_sum)
  value = where(use_series, series, asymptotic)
  value = where(a == 0, 1.0, where(a == b, exp(x), where(b == 0, np.inf, value)))
  return value.astype(x.dtype)


def _hyp1f1_terms(a, b, x):
  """t_1 .. t_249 of 1F1's series, t_k = (a)_k / (b)_k x**k / k!, on the last axis."""
  j = _count(_HYPERGEOMETRIC_TERMS - 1, x.dtype)
  return cumprod((a[..., None] + j) / (b[..., None] + j) * x[..., None] / (j + 1), axis=-1)


@jit
def _hyp1f1_a_derivative(a, b, x):
  a, b, x = _promote_real("hyp1f1", a, b, x)
  k = _count(_HYPERGEOMETRIC_TERMS - 1, x.dtype, 1)
  shift = lax.digamma(a[..., None] + k) - lax.digamma(a)[..., None]
  return sum(_hyp1f1_terms(a, b, x) * shift, axis=-1)


@jit
def _hyp1f1_b_derivative(a, b, x):
  a, b, x = _promote_real("hyp1f1", a, b, x)
  k = _count(_HYPERGEOMETRIC_TERMS - 1, x.dtype, 1)
  shift = lax.digamma(b)[..., None] - lax.digamma(b[..., None] + k)
  return sum(_hyp1f1_terms(a, b, x) * shift, axis=-1)


@jit
def _hyp1f1_x_derivative(a, b, x):
  return a / b * hyp1f1(a + 1, b + 1, x)


hyp1f1.defjvps(lambda a_dot, ans, a, b, x: _hyp1f1_a_derivative(a, b, x) * a_dot,
               lambda b_dot, ans, a, b, x: _hyp1f1_b_derivative(a, b, x) * b_dot,
               lambda x_dot, ans, a, b, x: _hyp1f1_x_derivative(a, b, x) * x_dot)


def _rgamma(v):
  """1 / Gamma(v): 0 at the poles 0, -1, -2, ..."""
  safe = where(_is_nonpositive_integer(v), 0.5, v)
  return where(_is_nonpositive_integer(v), 0.0, gammasgn(safe) * exp(-lax.lgamma(safe)))


def _hyp2f1_series(a, b, c, z):
  return _hypergeometric_series(
      lambda j: ((a[..., None] + j) * (b[..., None] + j) / ((c[..., None] + j) * (j + 1))
                 * z[..., None]), z.dtype)


@jit
def hyp2f1(a, b, c, x):
  """Gauss' hypergeometric function 2F1(a, b; c; x) = sum over k of
  (a)_k (b)_k / (c)_k x**k / k!, for x <= 1.

  Special values (as JAX): 1 for x = 0 or a or b = 0 (c != 0); inf for
  c = 0 or a negative integer c, and for x > 1; at x = 1, Gauss' sum
  Gamma(c) Gamma(c-a-b) / (Gamma(c-a) Gamma(c-b)) if c - a - b > 0 (else
  inf); (1-x)**-a if b = c and (1-x)**-b if a = c. If a or b is a
  non-positive integer the series terminates (a polynomial, up to degree 249).
  Otherwise x < 0 is mapped into (0, 1) by Pfaff's transformation; for
  arguments above 0.5 with d = c - a - b not an integer, the 1 - x
  transformation (DLMF 15.8.4) makes the series converge fast; elsewhere
  the series (250 terms), after Euler's transformation when d < 0. It
  converges slowly when the argument is near 1 and d is an integer.
  Real inputs only.
  (JAX attaches a custom_jvp rule.)
  """
  a, b, c, x = _promote_real("hyp2f1", a, b, c, x)
  polynomial = _is_nonpositive_integer(a) | _is_nonpositive_integer(b)
  direct = _hyp2f1_series(a, b, c, where(x <= 1, x, 0.0))
  # Pfaff: 2F1(a, b; c; x) = (1-x)**-a 2F1(a, c-b; c; x/(x-1)) for x < 0.
  negative = x < 0
  b_ = where(negative, c - b, b)
  z = where(negative, x / (x - 1), x)
  one_minus_z = where(negative, 1 / (1 - x), 1 - x)
  prefactor = where(negative, (1 - x) ** -a, 1.0)
  d = c - a - b_
  near_one = (z > 0.5) & (d != floor(d))
  safe_z = where(near_one | (z >= 1), 0.0, z)
  # Euler: 2F1(a, b; c; z) = (1-z)**d 2F1(c-a, c-b; c; z), faster for d < 0.
  euler = d < 0
  series = where(euler, one_minus_z ** d * _hyp2f1_series(c - a, c - b_, c, safe_z),
                 _hyp2f1_series(a, b_, c, safe_z))
  w = where(near_one, one_minus_z, 0.0)
  safe_d = where(near_one, d, 0.5)
  gamma_c = gamma(c)
  term1 = (gamma_c * gamma(safe_d) * _rgamma(c - a) * _rgamma(c - b_)
           * _hyp2f1_series(a, b_, 1 - safe_d, w))
  term2 = (w ** safe_d * gamma_c * gamma(-safe_d) * _rgamma(a) * _rgamma(b_)
           * _hyp2f1_series(c - a, c - b_, 1 + safe_d, w))
  general = prefactor * where(near_one, term1 + term2, series)
  value = where(polynomial, direct, general)
  value = where((b == c) & (x < 1), (1 - x) ** -a, value)
  value = where((a == c) & (x < 1), (1 - x) ** -b, value)
  d0 = c - a - b
  at_one = where(d0 > 0, gamma_c * gamma(where(d0 > 0, d0, 1.0)) * _rgamma(c - a)
                 * _rgamma(c - b), np.inf)
  value = where(x == 1, at_one, value)
  value = where(x > 1, np.inf, value)
  value = where((c == 0) | ((c < 0) & (c == floor(c))), np.inf, value)
  value = where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 1.0, value)
  return value.astype(x.dtype)
