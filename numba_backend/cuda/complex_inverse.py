"""The complex inverse trigonometric and hyperbolic functions on the numba-cuda
device, which the CPU takes from the C library (casinh, casin, cacos, cacosh,
catanh, catan: NumPy's arcsinh, arcsin, ... on complex numbers): each written
here with Hull, Fairgrieve and Tang's algorithm (as FreeBSD's catrig.c has it:
every part accurate to a few ulps relative to itself, over the whole range of
float64, without overflow or spurious underflow) and C99's special values
(Annex G) as the C library's (glibc's) are, signs of zeros included, and
substituted where kernels call the CPU's (`DEVICE_FUNCTIONS`)."""

import math

import numpy as np
from numba import cuda

from numba_backend import scalars as S
from numba_backend.cuda.lower import DEVICE_FUNCTIONS
from numba_backend.rules import elementwise as cpu

_EPS = 2.0 ** -52
_RECIP_EPSILON = 2.0 ** 52
"""Beyond it (either part) |z ± 1| and |z ± i| are |z| to the last bit:
casinh and catanh take their asymptotic forms."""
_A_CROSSOVER = 10.0
_B_CROSSOVER = 0.6417
_FOUR_SQRT_MIN = 2.0 ** -509
_SQRT_MIN = 2.0 ** -511
_SQRT_6_EPSILON = 3.6500241499888571e-8
_SQRT_3_EPSILON = 2.5809568279517849e-8
_LN2 = 6.9314718055994531e-1
_PI_2 = math.pi / 2
_PI_4 = math.pi / 4
_3PI_4 = math.pi - math.pi / 4


@cuda.jit(device=True)
def _half_excess(a, b, hypot_a_b):
  """(hypot(a, b) - b) / 2 for a >= 0, given hypot(a, b): as a² / (hypot(a,
  b) + b) / 2 for b > 0 (no cancellation), a / 2 for b = 0."""
  if b < 0:
    return (hypot_a_b - b) / 2
  if b == 0:
    return a / 2
  return a * a / (hypot_a_b + b) / 2


@cuda.jit(device=True)
def _asinh_parts(x, y):
  """casinh(x + i y) for finite x, y >= 0 as (re, num, den), its imaginary
  part being atan2(num, den) (and Re cacos(y + i x) atan2(den, num)). Hull,
  Fairgrieve and Tang: with A = (|z + i| + |z - i|) / 2 and B = y / A, re =
  log(A + sqrt(A² - 1)), taken as log1p(A - 1 + sqrt((A - 1)(A + 1))) for A
  below `_A_CROSSOVER`, A - 1 summed from `_half_excess` terms (or its
  limits where x is tiny next to |y - 1|); num / den = B / sqrt(1 - B²),
  for B above `_B_CROSSOVER` y / sqrt(A² - y²) with A - y as A - 1 (both
  scaled where they would underflow). Beyond `_RECIP_EPSILON` re = log|z|
  + log 2 and num / den = y / x; both parts below sqrt(6 eps) / 4 give z."""
  if x > _RECIP_EPSILON or y > _RECIP_EPSILON:
    large, small = max(x, y), min(x, y)
    ratio = small / large
    return np.log(large) + 0.5 * np.log1p(ratio * ratio) + _LN2, y, x
  if x < _SQRT_6_EPSILON / 4 and y < _SQRT_6_EPSILON / 4:
    return x, y, 1.0
  r = math.hypot(x, y + 1)
  s = math.hypot(x, y - 1)
  a = max((r + s) / 2, 1.0)
  if a >= _A_CROSSOVER:
    re = np.log(a + math.sqrt(a * a - 1))
  elif y == 1 and x < _EPS * _EPS / 128:
    re = math.sqrt(x)
  elif x >= _EPS * abs(y - 1):
    am1 = _half_excess(x, 1 + y, r) + _half_excess(x, 1 - y, s)
    re = np.log1p(am1 + math.sqrt(am1 * (a + 1)))
  elif y < 1:
    re = x / math.sqrt((1 - y) * (1 + y))
  else:
    re = np.log1p((y - 1) + math.sqrt((y - 1) * (y + 1)))
  if y < _FOUR_SQRT_MIN:
    return re, y * (2 / _EPS), a * (2 / _EPS)
  b = y / a
  if b <= _B_CROSSOVER:
    return re, b, math.sqrt((1 - b) * (1 + b))
  if y == 1 and x < _EPS / 128:
    return re, y, math.sqrt(x) * math.sqrt((a + y) / 2)
  if x >= _EPS * abs(y - 1):
    amy = _half_excess(x, y + 1, r) + _half_excess(x, y - 1, s)
    return re, y, math.sqrt(amy * (a + y))
  if y > 1:
    scale = 4 / _EPS / _EPS
    return re, y * scale, x * scale * y / math.sqrt((y + 1) * (y - 1))
  return re, y, math.sqrt((1 - y) * (1 + y))


@cuda.jit(device=True)
def casinh(z):
  """The inverse hyperbolic sine of z = x + i y, as the C library's casinh:
  for finite z `_asinh_parts` of |x| + i |y|, its parts given the signs of
  x and y (z for z = ±0 ± i 0). Special values: x ± i inf gives ±inf (x's
  sign) ± i pi/2 (y's sign; pi/4 for an infinite x, NaN for a NaN x); ±inf + i y
  gives ±inf ± i 0 (y's sign; NaN for a NaN y), NaN ± i 0 gives NaN ± i 0,
  and any other NaN part NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isinf(y):
    return S.make_complex(math.copysign(np.inf, x), np.nan if np.isnan(x) else
                          math.copysign(_PI_2 if np.isfinite(x) else _PI_4, y))
  if not np.isfinite(x):
    return S.make_complex(x, math.copysign(0.0, y) if np.isinf(x) and np.isfinite(y) or y == 0
                          else np.nan)
  if np.isnan(y):
    return S.make_complex(np.nan, np.nan)
  re, num, den = _asinh_parts(abs(x), abs(y))
  return S.make_complex(math.copysign(re, x), math.copysign(math.atan2(num, den), y))


@cuda.jit(device=True)
def casin(z):
  """The inverse sine of z = x + i y, as the C library's casin: -i casinh(i
  z), i.e. from w = casinh(-y + i x) the value Im w - i Re w. Where a part
  is NaN: z for x = ±0, NaN ± i inf (y's sign) for the other part infinite,
  else NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isnan(x) or np.isnan(y):
    if x == 0:
      return z
    if np.isinf(x) or np.isinf(y):
      return S.make_complex(np.nan, math.copysign(np.inf, y))
    return S.make_complex(np.nan, np.nan)
  w = casinh(S.make_complex(-y, x))
  return S.make_complex(w.imag, -w.real)


@cuda.jit(device=True)
def cacos(z):
  """The inverse cosine of z = x + i y, as the C library's cacos: for finite
  z other than ±0 ± i 0, with re, num, den `_asinh_parts` of |y| + i |x|,
  atan2(den, num with x's sign) + i re with the sign opposite to y's (no
  subtraction from pi/2, accurate near z = ±1); otherwise pi/2 - casin(z)
  (its real part subtracted, imaginary part negated)."""
  x, y = z.real, z.imag
  if not (np.isfinite(x) and np.isfinite(y)) or x == 0 and y == 0:
    w = casin(z)
    return S.make_complex(_PI_2 - w.real, -w.imag)
  re, num, den = _asinh_parts(abs(y), abs(x))
  return S.make_complex(math.atan2(den, math.copysign(num, x)), math.copysign(re, -y))


@cuda.jit(device=True)
def cacosh(z):
  """The inverse hyperbolic cosine of z = x + i y, as the C library's cacosh:
  i cacos(z) with the sign making the real part >= 0 (imaginary part of y's
  sign); +0 ± i pi/2 for z = ±0 ± i 0. Special values: x ± i inf gives
  inf ± i pi/2 (pi/4 for x = inf, 3 pi/4 for x = -inf, NaN for a NaN x);
  inf ± i y gives inf ± i 0, -inf ± i y inf ± i pi (NaN for a NaN y); ±0 +
  i NaN gives NaN + i pi/2, any other NaN part NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isinf(y):
    return S.make_complex(np.inf, np.nan if np.isnan(x) else math.copysign(
        (_3PI_4 if x < 0 else _PI_4) if np.isinf(x) else _PI_2, y))
  if np.isinf(x):
    return S.make_complex(np.inf, np.nan if np.isnan(y) else
                          math.copysign(math.pi if x < 0 else 0.0, y))
  if np.isnan(x) or np.isnan(y):
    return S.make_complex(np.nan, _PI_2 if x == 0 else np.nan)
  if x == 0 and y == 0:
    return S.make_complex(0.0, math.copysign(_PI_2, y))
  re, num, den = _asinh_parts(abs(y), abs(x))
  return S.make_complex(re, math.copysign(math.atan2(den, math.copysign(num, x)), y))


@cuda.jit(device=True)
def _real_part_reciprocal(x, y):
  """Re(1 / (x + i y)) = x / (x² + y²) for finite x, y, one of them beyond
  `_RECIP_EPSILON`: 1 / x where |y| <= 1, x / y / y where |x| <= 1, else
  with h = |z| / 2 (neither overflowing) x / h / h / 4."""
  if abs(y) <= 1:
    return 1 / x
  if abs(x) <= 1:
    return x / y / y
  h = math.hypot(x / 2, y / 2)
  return x / h / h / 4


@cuda.jit(device=True)
def _sum_squares(x, y):
  """x² + y² for y >= 0 (x² alone where y² would underflow)."""
  if y < _SQRT_MIN:
    return x * x
  return x * x + y * y


@cuda.jit(device=True)
def catanh(z):
  """The inverse hyperbolic tangent of z = x + i y, as the C library's catanh:
  for finite z, log1p(4 |x| / ((|x| - 1)² + y²)) / 4 + i atan2(2 |y|, (1 -
  |x|)(1 + |x|) - y²) / 2 with the signs of x and y (y² dropped below eps;
  (log 2 - log|y|) / 2 as the real part for |x| = 1, |y| < eps, infinite
  for y = ±0); z near 0 (both parts below sqrt(3 eps) / 2), ±0 + i atan(y)
  for x = ±0, Re(1 / z) ± i pi/2 beyond `_RECIP_EPSILON`. Special values:
  an infinite part, or x = ±0, gives ±0 (x's sign) ± i pi/2 (y's sign, NaN
  for a NaN y); any other NaN part NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isinf(x) or np.isinf(y) or x == 0 and np.isnan(y):
    return S.make_complex(math.copysign(0.0, x), np.nan if np.isnan(y) else
                          math.copysign(_PI_2, y))
  if np.isnan(x) or np.isnan(y):
    return S.make_complex(np.nan, np.nan)
  if x == 0:
    return S.make_complex(x, math.atan(y))
  ax, ay = abs(x), abs(y)
  if ax > _RECIP_EPSILON or ay > _RECIP_EPSILON:
    return S.make_complex(_real_part_reciprocal(x, y), math.copysign(_PI_2, y))
  if ax < _SQRT_3_EPSILON / 2 and ay < _SQRT_3_EPSILON / 2:
    return z
  if ax == 1 and ay < _EPS:
    re = np.inf if ay == 0 else (_LN2 - np.log(ay)) / 2
  else:
    re = np.log1p(4 * ax / _sum_squares(ax - 1, ay)) / 4
  den = (1 - ax) * (1 + ax)
  if ay >= _EPS:
    den -= ay * ay
  return S.make_complex(math.copysign(re, x), math.copysign(math.atan2(2 * ay, den) / 2, y))


@cuda.jit(device=True)
def catan(z):
  """The inverse tangent of z = x + i y, as the C library's catan: -i
  catanh(i z), i.e. Im w + i Re w for w = catanh(y + i x) (special values
  so too: ±pi/2 ± i 0 for an infinite part, NaN ± i 0 for NaN ± i 0)."""
  w = catanh(S.make_complex(z.imag, z.real))
  return S.make_complex(w.imag, w.real)


DEVICE_FUNCTIONS.update({cpu.casinh: casinh, cpu.casin: casin, cpu.cacos: cacos,
                         cpu.cacosh: cacosh, cpu.catanh: catanh, cpu.catan: catan})
