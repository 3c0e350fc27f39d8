"""Complex functions on the numba-cuda device that the CPU takes from the C
library (csqrt, clog, cexp: NumPy's, for the reference's bits), which
device code has not: each written here with C99's special values (Annex G)
and within the tolerance docs/backends.md states, and substituted where
kernels call the CPU's (`DEVICE_FUNCTIONS`). The others are still computed
on the host (numba_backend/cuda/host.py)."""

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
def complex_log(z):
  """The reference's complex log (the C library's clog; NaN + i NaN where a
  part is NaN): log|z| + i atan2(y, x), log|z| as log(m) + log1p((s / m)²)
  / 2 for the larger and smaller moduli m, s of the parts (neither
  overflowing nor underflowing): -inf for zero, inf for an infinite part.
  Near |z| = 1, with both parts sizable, the two terms cancel: the real
  part is within 2 eps there, not relatively (as XLA's log(|z|))."""
  x, y = z.real, z.imag
  if np.isnan(x) or np.isnan(y):
    return S.make_complex(np.nan, np.nan)
  large, small = max(abs(x), abs(y)), min(abs(x), abs(y))
  if np.isinf(large) or large == 0:
    real = np.inf if large else -np.inf
  else:
    ratio = small / large
    real = np.log(large) + 0.5 * np.log1p(ratio * ratio)
  return S.make_complex(real, math.atan2(y, x))


_LEAST_NORMAL = float(np.finfo(np.float64).tiny)

_EXP_STEP = 709.0
"""The largest integer whose exp is a float: cexp takes exp(x) in such
steps where it overflows, multiplying them into cos y and sin y first."""


@cuda.jit(device=True)
def cexp(z):
  """e**z as C99's cexp (the C library's): exp(x) cos y + i exp(x) sin y,
  cos y and sin y taken as 1 and y where |y| is below the least normal
  float, and for x above `_EXP_STEP` exp(x) multiplied into them in steps
  of it (a part overflows only where its value does). Special values: a
  NaN or infinite y with a finite x gives NaN + i NaN; an infinite x with a
  finite y gives 0 or inf (x's sign) with the signs of cos y and sin y (y
  itself as the imaginary part where y is zero); inf + i (inf or NaN)
  gives inf + i NaN, -inf + i (inf or NaN) gives 0 + i 0 (y's sign); a NaN
  x gives NaN + i y for a zero y, else NaN + i NaN."""
  x, y = z.real, z.imag
  if np.isnan(x):
    return S.make_complex(np.nan, y if y == 0 else np.nan)
  if np.isinf(x) and not np.isfinite(y):
    return (S.make_complex(np.inf, np.nan) if x > 0 else
            S.make_complex(0.0, math.copysign(0.0, y)))
  if not np.isfinite(y):
    return S.make_complex(np.nan, np.nan)
  cos, sin = (math.cos(y), math.sin(y)) if abs(y) > _LEAST_NORMAL else (1.0, y)
  if np.isinf(x):
    value = 0.0 if x < 0 else np.inf
    if y == 0:
      return S.make_complex(value, y)
    return S.make_complex(math.copysign(value, cos), math.copysign(value, sin))
  for _ in range(2):
    if x > _EXP_STEP:
      step = np.exp(_EXP_STEP)
      x, cos, sin = x - _EXP_STEP, cos * step, sin * step
  scale = np.exp(x) if x <= _EXP_STEP else np.inf
  return S.make_complex(scale * cos if cos else cos, scale * sin if sin else sin)


complex_rsqrt = device_version(cpu.complex_rsqrt, __name__, csqrt=csqrt)
complex_exp2 = device_version(cpu.complex_exp2, __name__, cexp=cexp)
complex_logistic = device_version(cpu.complex_logistic, __name__, cexp=cexp)
DEVICE_FUNCTIONS.update({cpu.csqrt: csqrt, cpu.complex_rsqrt: complex_rsqrt,
                         cpu.complex_log: complex_log, cpu.cexp: cexp,
                         cpu.complex_exp2: complex_exp2, cpu.complex_logistic: complex_logistic})
