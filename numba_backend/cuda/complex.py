"""Complex functions on the numba-cuda device that the CPU takes from the C
library (NumPy's, for the reference's bits), which device code has not:
csqrt, clog, cexp, csinh, ccosh, ctanh, csin, ccos, ctan and cpow, each
written here with the C library's special values (C99's Annex G, glibc's
choices where it leaves them open), the last seven by glibc's algorithms,
within the tolerance docs/backends.md states, and
substituted where kernels call the CPU's (`DEVICE_FUNCTIONS`), with the
CPU's functions that call them; the inverse functions are
numba_backend/cuda/complex_inverse.py's."""

import math

import numpy as np
from numba import cuda

from numba_backend import scalars as S
from numba_backend.cuda.kernels import device_version
from numba_backend.cuda.lower import DEVICE_FUNCTIONS
from numba_backend.rules import elementwise as cpu


@cuda.jit(device=True)
def csqrt(z):
  """The principal square root of z = x + i y (real part >= 0, imaginary
  part of y's sign), as C99's csqrt: for finite z, t = sqrt((|x| + |z|) /
  2) and |y| / 2t are the parts (t the real one for x >= 0, else the
  imaginary one), computed on z scaled by an even power of two (exactly)
  so that |z| neither overflows nor loses bits to subnormals; x ± i inf
  gives inf ± i inf, -inf + i y gives 0 + i inf (NaN + i inf for a NaN y),
  inf + i y gives inf + i 0 (inf + i NaN), and any other NaN part NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isinf(y):
    return S.make_complex(np.inf, y)
  if np.isnan(x) or np.isinf(x) and np.isnan(y):
    return S.make_complex(x if np.isinf(x) and x > 0 else np.nan,
                          math.copysign(np.inf, y) if np.isinf(x) and x < 0 else np.nan)
  if np.isinf(x):
    return (S.make_complex(x, math.copysign(0.0, y)) if x > 0 else
            S.make_complex(0.0, math.copysign(np.inf, y)))
  if np.isnan(y):
    return S.make_complex(np.nan, np.nan)
  if x == 0 and y == 0:
    return S.make_complex(0.0, y)
  ax, ay = abs(x), abs(y)
  k = math.frexp(max(ax, ay))[1]
  k -= k % 2   # even: sqrt(2**k) = 2**(k / 2)
  t = math.sqrt(0.5 * (math.ldexp(ax, -k) + math.hypot(math.ldexp(ax, -k), math.ldexp(ay, -k))))
  other = math.ldexp(ay, -(k // 2)) / (2 * t)
  t = math.ldexp(t, k // 2)
  return S.make_complex(t, math.copysign(other, y)) if x >= 0 else \
      S.make_complex(other, math.copysign(t, y))


@cuda.jit(device=True)
def clog(z):
  """The principal logarithm log|z| + i atan2(y, x) as C99's clog: log|z|
  as log(m) + log1p((s / m)²) / 2 for the larger and smaller moduli m, s
  of the parts (neither overflowing nor underflowing): -inf for zero, inf
  for an infinite part, also where the other is NaN (inf + i NaN); other
  NaN parts give NaN + i NaN. Near |z| = 1, with both parts sizable, the
  two terms cancel: the real part is within 2 eps there, not relatively
  (as XLA's log(|z|))."""
  x, y = z.real, z.imag
  if np.isnan(x) or np.isnan(y):
    return S.make_complex(np.inf if np.isinf(x) or np.isinf(y) else np.nan, np.nan)
  large, small = max(abs(x), abs(y)), min(abs(x), abs(y))
  if np.isinf(large) or large == 0:
    real = np.inf if large else -np.inf
  else:
    ratio = small / large
    real = np.log(large) + 0.5 * np.log1p(ratio * ratio)
  return S.make_complex(real, math.atan2(y, x))


_LEAST_NORMAL = float(np.finfo(np.float64).tiny)
_EPS = float(np.finfo(np.float64).eps)

_EXP_STEP = 709.0
"""The largest integer whose exp is a float: where exp(x) overflows, the
C library multiplies it into the parts of a result in steps of exp(709)."""


@cuda.jit(device=True)
def _sincos(y):
  """sin y and cos y, taken as y and 1 where |y| is below the least normal
  float (the C library's complex functions do so)."""
  if abs(y) > _LEAST_NORMAL:
    return math.sin(y), math.cos(y)
  return y, 1.0


@cuda.jit(device=True)
def _times_exp(x, factor, a, b):
  """exp(x) factor a and exp(x) factor b for x > `_EXP_STEP` (exp(x)
  overflows): `factor` and exp(x) multiplied into a and b in steps (a part
  overflows only where its value does; a zero stays that zero)."""
  step = np.exp(_EXP_STEP)
  x, a, b = x - _EXP_STEP, a * (step * factor), b * (step * factor)
  if x > _EXP_STEP:
    x, a, b = x - _EXP_STEP, a * step, b * step
  scale = np.exp(x) if x <= _EXP_STEP else np.inf
  return scale * a if a else a, scale * b if b else b


@cuda.jit(device=True)
def cexp(z):
  """e**z as C99's cexp (the C library's): exp(x) cos y + i exp(x) sin y
  (`_sincos`), exp(x) multiplied into them in steps for x above `_EXP_STEP`.
  Special values: a NaN or infinite y with a finite x gives NaN + i NaN;
  an infinite x with a finite y gives 0 or inf (x's sign) with the signs
  of cos y and sin y (y itself as the imaginary part where y is zero); inf
  + i (inf or NaN) gives inf + i NaN, -inf + i (inf or NaN) gives 0 + i 0
  (y's sign); a NaN x gives NaN + i y for a zero y, else NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isnan(x):
    return S.make_complex(np.nan, y if y == 0 else np.nan)
  if np.isinf(x) and not np.isfinite(y):
    return (S.make_complex(np.inf, np.nan) if x > 0 else
            S.make_complex(0.0, math.copysign(0.0, y)))
  if not np.isfinite(y):
    return S.make_complex(np.nan, np.nan)
  sin, cos = _sincos(y)
  if np.isinf(x):
    value = 0.0 if x < 0 else np.inf
    if y == 0:
      return S.make_complex(value, y)
    return S.make_complex(math.copysign(value, cos), math.copysign(value, sin))
  if x > _EXP_STEP:
    real, imag = _times_exp(x, 1.0, cos, sin)
    return S.make_complex(real, imag)
  scale = math.exp(x)
  return S.make_complex(scale * cos, scale * sin)


@cuda.jit(device=True)
def _sinh_cosh_times(x, a, b):
  """sinh(x) a and cosh(x) b for a finite x: for |x| above `_EXP_STEP`,
  exp(|x|) / 2 multiplied into a (with x's sign) and b in steps."""
  if abs(x) > _EXP_STEP:
    return _times_exp(abs(x), 0.5, math.copysign(1.0, x) * a, b)
  return math.sinh(x) * a, math.cosh(x) * b


@cuda.jit(device=True)
def csinh(z):
  """sinh z as C99's csinh (the C library's): sinh(x) cos y + i cosh(x)
  sin y (`_sincos`, `_sinh_cosh_times`). Special values: ±0 + i (inf or
  NaN) gives ±0 + i NaN, another finite x with them NaN + i NaN; ±inf + i
  y gives inf with the signs of ±cos y and sin y (±inf + i y where y is
  zero), inf + i NaN for an infinite or NaN y; a NaN x gives NaN + i y for
  a zero y, else NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isnan(x):
    return S.make_complex(np.nan, y if y == 0 else np.nan)
  if np.isinf(x):
    if y == 0:
      return S.make_complex(x, y)
    if not np.isfinite(y):
      return S.make_complex(np.inf, np.nan)
    sin, cos = _sincos(y)
    return S.make_complex(math.copysign(np.inf, cos) * math.copysign(1.0, x),
                          math.copysign(np.inf, sin))
  if not np.isfinite(y):
    return S.make_complex(math.copysign(0.0, x) if x == 0 else np.nan, np.nan)
  sin, cos = _sincos(y)
  real, imag = _sinh_cosh_times(x, cos, sin)
  return S.make_complex(real, imag)


@cuda.jit(device=True)
def ccosh(z):
  """cosh z as C99's ccosh (the C library's): cosh(x) cos y + i sinh(x)
  sin y (`_sincos`, `_sinh_cosh_times`). Special values: a finite x with
  an infinite or NaN y gives NaN + i 0 for a zero x, else NaN + i NaN; ±inf
  + i y gives inf with the signs of cos y and ±sin y (inf ± i y where y is
  zero), inf + i NaN for an infinite or NaN y; a NaN x gives NaN + i y for
  a zero y, else NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isnan(x):
    return S.make_complex(np.nan, y if y == 0 else np.nan)
  if np.isinf(x):
    if y == 0:
      return S.make_complex(np.inf, y * math.copysign(1.0, x))
    if not np.isfinite(y):
      return S.make_complex(np.inf, np.nan)
    sin, cos = _sincos(y)
    return S.make_complex(math.copysign(np.inf, cos),
                          math.copysign(np.inf, sin) * math.copysign(1.0, x))
  if not np.isfinite(y):
    return S.make_complex(np.nan, 0.0 if x == 0 else np.nan)
  sin, cos = _sincos(y)
  imag, real = _sinh_cosh_times(x, sin, cos)
  return S.make_complex(real, imag)


@cuda.jit(device=True)
def csin(z):
  """sin z as C99's csin (the C library's): sin(x) cosh y + i cos(x) sinh
  y (`_sincos`, `_sinh_cosh_times`). Special values: an infinite or NaN x
  gives NaN + i y for a zero y, NaN + i inf for an infinite y, else NaN + i
  NaN; x + i inf gives x + i inf for a zero x, else infinities with the
  signs of sin x and ±cos x (y's sign); ±0 + i NaN gives ±0 + i NaN,
  another x with a NaN y NaN + i NaN."""
  x, y = z.real, z.imag
  if not np.isfinite(x):
    return S.make_complex(np.nan, y if y == 0 else np.inf if np.isinf(y) else np.nan)
  if np.isnan(y):
    return S.make_complex(x if x == 0 else np.nan, np.nan)
  if np.isinf(y):
    if x == 0:
      return S.make_complex(x, y)
    sin, cos = _sincos(x)
    return S.make_complex(math.copysign(np.inf, sin),
                          math.copysign(np.inf, cos) * math.copysign(1.0, y))
  sin, cos = _sincos(x)
  imag, real = _sinh_cosh_times(y, cos, sin)
  return S.make_complex(real, imag)


@cuda.jit(device=True)
def ccos(z):
  """cos z as the C library's ccos: ccosh(-y + i x)."""
  return ccosh(S.make_complex(-z.imag, z.real))


_TANH_STEP = 354.0
"""The largest integer whose 2 exp(2 x) is a float: beyond it ctanh takes
tanh's real part as ±1 and its imaginary part as 4 sin y cos y / exp(2 x)
(ctan the parts swapped), divided in steps of exp(708)."""


@cuda.jit(device=True)
def ctanh(z):
  """tanh z as C99's ctanh (the C library's): (sinh x cosh x + i sin y cos
  y) / (sinh² x + cos² y), the denominator cos² y alone where |sinh x| is
  below eps |cos y| (`_sincos`; sinh x and cosh x taken as x and 1 below
  the least normal float), ±1 + i 4 sin y cos y / exp(2|x|) for |x| above
  `_TANH_STEP`. Special values: ±inf + i y gives ±1 + i 0 (the sign of sin
  y cos y for a finite |y| > 1, else y's); x + i 0 gives z for any other x;
  ±0 + i (inf or NaN) gives ±0 + i NaN, anything else NaN + i NaN."""
  x, y = z.real, z.imag
  if not (np.isfinite(x) and np.isfinite(y)):
    if np.isinf(x):
      sign = y
      if np.isfinite(y) and abs(y) > 1:
        sin, cos = _sincos(y)
        sign = sin * cos
      return S.make_complex(math.copysign(1.0, x), math.copysign(0.0, sign))
    if y == 0:
      return z
    return S.make_complex(x if x == 0 else np.nan, np.nan)
  sin, cos = _sincos(y)
  if abs(x) > _TANH_STEP:
    step = np.exp(2 * _TANH_STEP)
    imag = 4 * sin * cos / step
    rest = abs(x) - _TANH_STEP
    imag = imag / step if rest > _TANH_STEP else imag / np.exp(2 * rest)
    return S.make_complex(math.copysign(1.0, x), imag)
  sinh, cosh = (math.sinh(x), math.cosh(x)) if abs(x) > _LEAST_NORMAL else (x, 1.0)
  den = sinh * sinh + cos * cos if abs(sinh) > abs(cos) * _EPS else cos * cos
  return S.make_complex(sinh * cosh / den, sin * cos / den)


@cuda.jit(device=True)
def ctan(z):
  """tan z as C99's ctan (the C library's): -i ctanh(i z), which gives
  its special values too."""
  w = ctanh(S.make_complex(-z.imag, z.real))
  return S.make_complex(w.imag, -w.real)


@cuda.jit(device=True)
def _c99_mul(x, y):
  """x y as C99's complex multiplication (GCC's __muldc3): (ac - bd) + (ad
  + bc) i, and where both parts are NaN, infinities recovered: an infinite
  factor boxed to parts ±1 and ±0 (the other's NaN parts taken as 0), or
  where a product overflowed every NaN part taken as 0, and the parts
  recomputed times inf."""
  a, b, c, d = x.real, x.imag, y.real, y.imag
  ac, bd, ad, bc = a * c, b * d, a * d, b * c
  real, imag = ac - bd, ad + bc
  if not (np.isnan(real) and np.isnan(imag)):
    return S.make_complex(real, imag)
  recalc = False
  if np.isinf(a) or np.isinf(b):
    a = math.copysign(1.0 if np.isinf(a) else 0.0, a)
    b = math.copysign(1.0 if np.isinf(b) else 0.0, b)
    c = math.copysign(0.0, c) if np.isnan(c) else c
    d = math.copysign(0.0, d) if np.isnan(d) else d
    recalc = True
  if np.isinf(c) or np.isinf(d):
    c = math.copysign(1.0 if np.isinf(c) else 0.0, c)
    d = math.copysign(1.0 if np.isinf(d) else 0.0, d)
    a = math.copysign(0.0, a) if np.isnan(a) else a
    b = math.copysign(0.0, b) if np.isnan(b) else b
    recalc = True
  if not recalc and (np.isinf(ac) or np.isinf(bd) or np.isinf(ad) or np.isinf(bc)):
    a = math.copysign(0.0, a) if np.isnan(a) else a
    b = math.copysign(0.0, b) if np.isnan(b) else b
    c = math.copysign(0.0, c) if np.isnan(c) else c
    d = math.copysign(0.0, d) if np.isnan(d) else d
    recalc = True
  if recalc:
    return S.make_complex(np.inf * (a * c - b * d), np.inf * (a * d + b * c))
  return S.make_complex(real, imag)


@cuda.jit(device=True)
def cpow(x, y):
  """x ** y as the C library's cpow: cexp(y clog(x)), the product C99's
  (`_c99_mul`)."""
  return cexp(_c99_mul(y, clog(x)))


complex_log = device_version(cpu.complex_log, __name__, clog=clog)
complex_rsqrt = device_version(cpu.complex_rsqrt, __name__, csqrt=csqrt)
complex_exp2 = device_version(cpu.complex_exp2, __name__, cexp=cexp)
complex_logistic = device_version(cpu.complex_logistic, __name__, cexp=cexp)
complex_pow = device_version(cpu.complex_pow, __name__, cpow=cpow)
complex_atan2 = device_version(cpu.complex_atan2, __name__, csqrt=csqrt, clog=clog)
DEVICE_FUNCTIONS.update({
    cpu.csqrt: csqrt, cpu.complex_rsqrt: complex_rsqrt, cpu.clog: clog,
    cpu.complex_log: complex_log, cpu.cexp: cexp, cpu.complex_exp2: complex_exp2,
    cpu.complex_logistic: complex_logistic, cpu.csinh: csinh, cpu.ccosh: ccosh,
    cpu.csin: csin, cpu.ccos: ccos, cpu.ctanh: ctanh, cpu.ctan: ctan, cpu.cpow: cpow,
    cpu.complex_pow: complex_pow, cpu.complex_atan2: complex_atan2})
