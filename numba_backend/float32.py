"""Float32 functions computed in float32 arithmetic, for float32 results in loops.

The reference rounds a float32 exp or tanh from float64 (NumPy's loop, then
one rounding), and numba_backend/checked.py reproduces those bits with float64
polynomials whose rounding each loop checks. The functions here work in
float32, with shorter polynomials and no check, and are not the reference's bits:
each is within a stated number of ulps of the reference's value for every
float32 operand (tests/numba_backend/test_float32.py checks every operand,
opt-in, and samples by default; docs/backends.md, "Tolerances of the numba
backend"). They are branch-free, so that LLVM vectorizes the loops calling them.
"""

import numba
import numpy as np

from numba_backend.scalars import bitcast, fma

ULPS = {"exp": 1, "tanh": 1}
"""Each function's bound: the most ulps its value lies from the reference's,
over every float32 operand (NaN for NaN, the same infinities and zeros)."""

_F = np.float32
_LOG2E = _F(1.4426950408889634)
_SHIFTER = _F(1.5 * 2.0 ** 23)
"""x + _SHIFTER rounds x (|x| < 2**22) to an integer k, held by its low bits."""
_LN2_HI = _F(0.693359375)   # ln 2 in two parts (Cephes'): k * _LN2_HI is exact for |k| < 2**9
_LN2_LO = _F(-2.12194440e-4)
_EXP = (_F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3), _F(4.1665795894e-2),
        _F(1.6666665459e-1), _F(5.0000001201e-1))
"""exp(r) ~ 1 + r + r**2 (c7 r**5 + ... + c3 r + c2) on |r| <= ln(2)/2 (Cephes' expf)."""
_OVERFLOW = _F(88.72283935546875)   # the least float32 whose exp rounds to inf
_UNDERFLOW = _F(-103.97208)   # below, exp rounds to 0


_SHIFTER_BITS = np.array(_SHIFTER).view(np.int32)[()]


@numba.njit(inline="always", error_model="numpy")
def exp(x):
  """e**x within 1 ulp (of the float32 nearest, and of the reference's value):
  x = k ln 2 + r, e**r by the polynomial, then times 2**k as 2**h 2**(k - h)
  for h = floor(k / 2), each a normal float32 built from its exponent bits
  (the first product exact, the second rounding once, into the subnormals
  too); inf from _OVERFLOW, 0 below _UNDERFLOW, NaN for NaN. Beyond those
  bounds k is not an exponent, and the value computed is not used."""
  t = fma(x, _LOG2E, _SHIFTER)
  k = t - _SHIFTER
  r = fma(k, -_LN2_LO, fma(k, -_LN2_HI, x))
  c7, c6, c5, c4, c3, c2 = _EXP
  p = fma(fma(fma(fma(fma(c7, r, c6), r, c5), r, c4), r, c3), r, c2)
  y = fma(p, r * r, r) + _F(1.0)
  # (the bits of t are those of _SHIFTER plus k)
  n = bitcast(t, np.int32(0)) - _SHIFTER_BITS
  h = n >> np.int32(1)
  y = y * bitcast(np.int32((h + np.int32(127)) << 23), _F(0.0))
  y = y * bitcast(np.int32((n - h + np.int32(127)) << 23), _F(0.0))
  y = _F(np.inf) if x >= _OVERFLOW else y   # (comparisons false for NaN, which y carries)
  return _F(0.0) if x <= _UNDERFLOW else y


_TANH = (_F(-5.70498872745e-3), _F(2.06390887954e-2), _F(-5.37397155531e-2),
         _F(1.33314422036e-1), _F(-3.33332819422e-1))
"""tanh(x) ~ x + x**3 (t9 x**8 + t7 x**6 + ... + t3) on |x| < 0.625 (Cephes' tanhf)."""


@numba.njit(inline="always", error_model="numpy")
def tanh(x):
  """tanh within 1 ulp: below 0.625 in magnitude the odd polynomial (±0 kept),
  above 1 - 2 / (e**2|x| + 1) signed as x (the exponent clamped at 20, where
  the quotient is below half an ulp of 1), NaN for NaN."""
  a = abs(x)
  z = x * x
  t9, t7, t5, t3, t1 = _TANH
  small = fma(x * z, fma(fma(fma(fma(t9, z, t7), z, t5), z, t3), z, t1), x)
  large = _F(1.0) - _F(2.0) / (exp(min(a + a, _F(20.0))) + _F(1.0))
  large = large if x >= _F(0.0) else -large
  small = small if a != _F(0.0) else x   # (-0 + -0 * p would be +0)
  return small if a < _F(0.625) else large
