"""Fast float64 functions for results rounded to float32, each with a check
that the rounding is the reference's.

The reference computes a float32 (or 16-bit float) result of exp, expm1,
log, log1p, sin, cos, tanh and logistic in float64, with NumPy's loops (the
C library's functions, or SIMD ones within 2 ulps of them), and rounds it
once (by way of float32). The backend's libm calls are scalar; the
functions here are polynomials that LLVM vectorizes. Each returns `(y,
unsure)`: `y` approximates the function within a relative error far below
`_MARGIN`, and `unsure` is True where `y` may round to a float32 other than
the one the reference's value rounds to: where a float32 rounding boundary
lies within `_MARGIN * |y|` of `y` (about one operand in a million), or the
operand is outside the range the polynomial serves (NaN, infinities,
overflow). A loop using them computes its elements again with libm where
any is unsure (`lower._lower_region`), so that its results are the
reference's bit for bit; tests/numba_backend/test_checked.py checks the
claim against NumPy's loops for every float32 operand (opt-in) and for
samples.
"""

import math

import numba
import numpy as np
from numba import types
from numba.core.extending import intrinsic

from numba_backend.scalars import fma

_MARGIN = 2.0 ** -46
"""The half-width, relative to |y|, of the interval that must hold no
float32 rounding boundary: 64 times the polynomials' error (below 2**-52,
measured), which covers the reference's (below 2 ulps, 2**-51)."""

_LN2_HI = 6.93147180369123816490e-01   # ln 2 in two parts (fdlibm's): k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_SHIFTER = 1.5 * 2.0 ** 52
"""x + _SHIFTER rounds x (|x| < 2**51) to an integer k, held by its low bits."""
_SHIFTER_BITS = 0x4338000000000000   # its IEEE bits: those of _SHIFTER + k are these + k
_C = (0.5000000000000006, 0.166666666666666, 0.04166666666657402, 0.00833333333338273,
      0.0013888888932223878, 0.0001984126973330024, 2.48015046412018e-05, 2.75573951797295e-06,
      2.7626248267556904e-07, 2.5057570714368603e-08)
"""expm1(r) ~ r + r**2 (c2 + c3 r + ... + c11 r**9) on |r| <= ln(2)/2, relative
error below 2**-55: a least-squares fit at 4000 Chebyshev nodes, weighted
for relative error, to long double expm1 (Taylor's c_n = 1/n! would need
terms to r**14)."""


_SQRT2 = 1.4142135623730951
_ATANH = tuple(1.0 / (2 * n + 1) for n in range(1, 10))
"""atanh(f) = f (1 + f**2/3 + f**4/5 + ... + f**18/19) on |f| <= 3 - 2 sqrt(2),
relative error below 2**-55 (the next term, f**20/21)."""


@intrinsic
def _float64_from_bits(typingctx, bits):
  """The float64 whose IEEE bits are the int64 `bits`."""
  def codegen(context, builder, signature, args):
    return builder.bitcast(args[0], context.get_value_type(types.float64))
  return types.float64(types.int64), codegen


@intrinsic
def _bits_of_float64(typingctx, x):
  """The IEEE bits of the float64 `x`, as an int64."""
  def codegen(context, builder, signature, args):
    return builder.bitcast(args[0], context.get_value_type(types.int64))
  return types.int64(types.float64), codegen


@numba.njit(inline="always")
def _reduced(x):
  """(2**k, expm1(r)) with x = k ln 2 + r, |r| <= ln(2)/2 (and a rounding),
  for |x| < 700 (where 2**k is a normal float64). k is x / ln 2 rounded to
  an integer by adding _SHIFTER, whose bits then hold k; the products are
  fused multiply-adds (one rounding each)."""
  t = fma(x, _INV_LN2, _SHIFTER)
  k = t - _SHIFTER
  r = fma(k, -_LN2_LO, fma(k, -_LN2_HI, x))
  c2, c3, c4, c5, c6, c7, c8, c9, c10, c11 = _C
  r2 = r * r
  r4 = r2 * r2
  high = fma(r4, fma(r, c11, c10), fma(r2, fma(r, c9, c8), fma(r, c7, c6)))
  p = fma(r2, fma(r4, high, fma(r2, fma(r, c5, c4), fma(r, c3, c2))), r)
  return _float64_from_bits((_bits_of_float64(t) - _SHIFTER_BITS + 1023) << 52), p


@numba.njit(inline="always")
def _checked(y, in_range):
  """(y, unsure): unsure where x was outside the polynomial's range or a
  float32 rounding boundary lies within _MARGIN |y| of y."""
  d = abs(y) * _MARGIN
  return y, (not in_range) | (np.float32(y - d) != np.float32(y + d))


@numba.njit(inline="always")
def exp(x):
  """e**x, for x in (-110, 90): beyond, float32's exp is 0 or inf (libm's
  value is taken)."""
  in_range = (x > -110.0) & (x < 90.0)
  s, p = _reduced(x if in_range else 0.0)
  return _checked(fma(s, p, s), in_range)


@numba.njit(inline="always")
def expm1(x):
  """e**x - 1, for x in (-110, 90): 2**k expm1(r) + (2**k - 1), exact
  but for the polynomial's error and the sum's rounding (|2**k expm1(r)|
  is at most 1.5 times the result's magnitude)."""
  in_range = (x > -110.0) & (x < 90.0)
  s, p = _reduced(x if in_range else 0.0)
  y = fma(s, p, s - 1.0)
  return _checked(y if x != 0.0 else x, in_range)   # (expm1(-0.0) is -0.0)


@numba.njit(inline="always")
def logistic(x):
  """1 / (1 + e**-x), the reference's formula, for x in (-90, 110)."""
  in_range = (x > -90.0) & (x < 110.0)
  s, p = _reduced(-x if in_range else 0.0)
  return _checked(1.0 / (1.0 + fma(s, p, s)), in_range)


@numba.njit(inline="always")
def tanh(x):
  """expm1(2|x|) / (expm1(2|x|) + 2), signed as x, for |x| < 20; beyond,
  where tanh rounds to ±1 in float64, ±1 (x itself at ±0)."""
  a = abs(x)
  small = a < 20.0
  s, p = _reduced(2.0 * a if small else 0.0)
  t = fma(s, p, s - 1.0)
  y = t / (t + 2.0) if small else 1.0
  y = y if x > 0.0 else (-y if x < 0.0 else x)
  return _checked(y, small | (a >= 20.0))   # (not NaN)


@numba.njit(inline="always")
def _ln(x):
  """Natural logarithm of a positive normal x: e ln 2 + 2 atanh((m - 1) / (m + 1))
  with x = 2**e m, m in [sqrt(1/2), sqrt(2))."""
  bits = _bits_of_float64(x)
  e = (bits >> 52) - 1023
  m = _float64_from_bits((bits & 0xFFFFFFFFFFFFF) | (1023 << 52))   # in [1, 2)
  big = m > _SQRT2
  m = m * 0.5 if big else m
  e = e + 1 if big else e
  f = (m - 1.0) / (m + 1.0)   # (m - 1 is exact)
  f2 = f * f
  f4 = f2 * f2
  a3, a5, a7, a9, a11, a13, a15, a17, a19 = _ATANH
  q = f2 * ((a3 + f2 * a5) + f4 * ((a7 + f2 * a9) + f4 * ((a11 + f2 * a13)
                                                          + f4 * ((a15 + f2 * a17) + f4 * a19))))
  k = np.float64(e)
  return k * _LN2_HI + (2.0 * f + (k * _LN2_LO + 2.0 * f * q))


_NORMAL = 2.2250738585072014e-308   # float64's smallest normal number


@numba.njit(inline="always")
def log(x):
  """Natural logarithm, for positive finite x."""
  in_range = (x >= _NORMAL) & (x < np.inf)
  return _checked(_ln(x if in_range else 1.0), in_range)


@numba.njit(inline="always")
def log1p(x):
  """log(1 + x), for x > -1 finite: x where 1 + x rounds to 1, else
  log(u) x / (u - 1) with u = 1 + x rounded (Goldberg's formula: a few
  ulps of float64)."""
  u = 1.0 + x
  in_range = (u >= _NORMAL) & (u < np.inf)
  exact = u == 1.0
  y = _ln(u if in_range & (not exact) else 2.0) * (x / (1.0 if exact else u - 1.0))
  return _checked(x if exact else y, in_range)


_PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11,
         2.02226624871116645580e-21, 8.47842766036889956997e-32)
"""pi/2 in four parts (fdlibm's pio2_1, pio2_2, pio2_3, pio2_3t): k times each
of the first three is exact for |k| < 2**20."""
_TWO_OVER_PI = 6.36619772367581382433e-01
_SIN = tuple((-1.0) ** n / math.factorial(2 * n + 1) for n in range(1, 9))
"""sin(r) = r + r**3 (s3 + s5 r**2 + ... + s17 r**14) on |r| <= pi/4, relative
error below 2**-55 (Taylor's; the next term, r**19/19!)."""
_COS = tuple((-1.0) ** n / math.factorial(2 * n) for n in range(1, 9))
"""cos(r) = 1 + r**2 (c2 + c4 r**2 + ... + c16 r**14) on |r| <= pi/4, error
below 2**-55 (the next term, r**18/18!)."""


@numba.njit(inline="always")
def _quadrant(x):
  """(q, sin(r), cos(r)) with x = k pi/2 + r, |r| <= pi/4, q = k mod 4, for |x| < 8192."""
  k = np.floor(x * _TWO_OVER_PI + 0.5)
  p1, p2, p3, p4 = _PIO2
  r = (((x - k * p1) - k * p2) - k * p3) - k * p4
  r2 = r * r
  r4 = r2 * r2
  s3, s5, s7, s9, s11, s13, s15, s17 = _SIN
  c2, c4, c6, c8, c10, c12, c14, c16 = _COS
  s = r + r * r2 * ((s3 + r2 * s5) + r4 * ((s7 + r2 * s9) + r4 * ((s11 + r2 * s13)
                                                                  + r4 * (s15 + r2 * s17))))
  c = 1.0 + r2 * ((c2 + r2 * c4) + r4 * ((c6 + r2 * c8) + r4 * ((c10 + r2 * c12)
                                                                + r4 * (c14 + r2 * c16))))
  return np.int64(k) & 3, s, c


@numba.njit(inline="always")
def sin(x):
  """Sine, for |x| < 8192 (sin(±0) is ±0)."""
  in_range = abs(x) < 8192.0
  q, s, c = _quadrant(x if in_range else 0.0)
  y = (s if q == 0 else c) if q < 2 else (-s if q == 2 else -c)
  return _checked(y if x != 0.0 else x, in_range)


@numba.njit(inline="always")
def cos(x):
  """Cosine, for |x| < 8192."""
  in_range = abs(x) < 8192.0
  q, s, c = _quadrant(x if in_range else 0.0)
  y = (c if q == 0 else -s) if q < 2 else (-c if q == 2 else s)
  return _checked(y, in_range)
