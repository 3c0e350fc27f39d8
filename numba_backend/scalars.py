"""Scalar functions the generated programs call, compiled by Numba.

Each computes one element the way the reference rule of its primitive does
(refimpl/lax/*.py states the rules); the lowering rules in
`numba_backend/rules/` write calls to them into the programs' source.

16-bit floats: Numba has no float16 and no bfloat16, so arrays of these
dtypes hold their bits (uint16) and a program computes with their values as
float32 scalars: `f16_value`/`bf16_value` read an element, `f16_bits`/
`bf16_bits` round a float32 to the element written. Rounding a result to a
16-bit dtype goes by way of float32, as the reference rounds (and XLA
computes); converting a float64 to float16 rounds once, as NumPy's cast.
"""

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.core.extending import intrinsic

_JIT = dict(cache=True, error_model="numpy")


def scalar_jit(fn):
  """A scalar function of the generated programs (compiled once, cached on disk)."""
  return numba.njit(**_JIT)(fn)


# --- bits -----------------------------------------------------------------------

@intrinsic
def bitcast(typingctx, value, like):
  """The bits of `value` read as the type of `like` (same width): LLVM's bitcast."""
  target = like
  def codegen(context, builder, signature, args):
    return builder.bitcast(args[0], context.get_value_type(target))
  return target(value, like), codegen


@intrinsic
def fma(typingctx, a, b, c):
  """a * b + c rounded once (LLVM's llvm.fma: IEEE fusedMultiplyAdd)."""
  def codegen(context, builder, signature, args):
    return builder.fma(*args)
  return a(a, b, c), codegen


@intrinsic
def wide_vectors(typingctx):
  """Compiles the function calling it (a loop body that threads run: Numba
  compiles each as a function of its own) for 512-bit vectors where the CPU
  has them: LLVM's function attributes "prefer-vector-width" and
  "min-legal-vector-width", which its X86 tuning otherwise sets to 256 bits
  on CPUs with AVX-512 (a float32 exp loop: 0.50 ns an element, 0.37 with
  them). Elsewhere they change nothing, and no value anywhere: vectors of
  either width compute the same operations on each element. (llvmlite's
  attribute set admits only the attributes it names; an LLVM string
  attribute is added as the text it prints.)"""
  def codegen(context, builder, signature, args):
    for attribute in ('"prefer-vector-width"="512"', '"min-legal-vector-width"="512"'):
      set.add(builder.function.attributes, attribute)
    return context.get_dummy_value()
  return numba.types.none(), codegen


def emit_prefetch(builder, address):
  """Writes, in an intrinsic's code, LLVM's prefetch of the cache line at
  `address` (any pointer): a read, kept in every level of cache. It never
  faults (an address past an array's end fetches nothing of use) and
  changes no value."""
  byte, int32 = ir.IntType(8).as_pointer(), ir.IntType(32)
  fetch = cgutils.get_or_insert_function(
      builder.module, ir.FunctionType(ir.VoidType(), [byte, int32, int32, int32]),
      "llvm.prefetch.p0i8")
  builder.call(fetch, [builder.bitcast(address, byte), ir.Constant(int32, 0), ir.Constant(int32, 3),
                       ir.Constant(int32, 1)])


@scalar_jit
def f32_bits(x):
  return bitcast(np.float32(x), np.uint32(0))


@scalar_jit
def bits_f32(u):
  return bitcast(np.uint32(u), np.float32(0))


@scalar_jit
def f64_bits(x):
  return bitcast(np.float64(x), np.uint64(0))


@scalar_jit
def bits_f64(u):
  return bitcast(np.uint64(u), np.float64(0))


# --- 16-bit floats ---------------------------------------------------------------

@scalar_jit
def f16_value(h):
  """The float32 value of the float16 whose bits are `h`."""
  h = np.uint32(h)
  sign = (h & np.uint32(0x8000)) << np.uint32(16)
  exponent = (h >> np.uint32(10)) & np.uint32(0x1F)
  mantissa = h & np.uint32(0x3FF)
  if exponent == 0x1F:   # inf or NaN
    return bits_f32(sign | np.uint32(0x7F800000) | (mantissa << np.uint32(13)))
  if exponent == 0:   # zero or subnormal: mantissa * 2**-24
    value = np.float32(mantissa) * np.float32(5.9604644775390625e-08)
    return -value if sign else value
  return bits_f32(sign | ((exponent + np.uint32(112)) << np.uint32(23))
                  | (mantissa << np.uint32(13)))


@scalar_jit
def _f16_round(sign, exponent, mantissa, mantissa_bits):
  """The float16 bits nearest (ties to even) to sign * (1.mantissa) * 2**exponent,
  the mantissa given with `mantissa_bits` bits (an unbiased binary exponent)."""
  if exponent > 15:
    return sign | np.uint64(0x7C00)
  if exponent >= -14:   # normal: keep 10 mantissa bits
    shift = np.uint64(mantissa_bits - 10)
    full = (np.uint64(exponent + 15) << np.uint64(10)) | (mantissa >> shift)
    rest = mantissa & ((np.uint64(1) << shift) - np.uint64(1))
  else:   # subnormal: the value in units of 2**-24
    shift = np.uint64(mantissa_bits - 10 + (-14 - exponent))
    if shift > 60:
      return sign
    implicit = mantissa | (np.uint64(1) << np.uint64(mantissa_bits))
    full = implicit >> shift
    rest = implicit & ((np.uint64(1) << shift) - np.uint64(1))
  half = np.uint64(1) << (shift - np.uint64(1))
  if rest > half or (rest == half and (full & np.uint64(1))):
    full += np.uint64(1)   # may carry into the exponent, up to inf: still right
  return sign | full


@scalar_jit
def _f16_special(top, mantissa):
  """The float16 inf (mantissa 0) or NaN keeping the payload's `top` 10 bits
  (made nonzero, so that it stays a NaN)."""
  if mantissa == 0:
    return np.uint64(0x7C00)
  return np.uint64(0x7C00) | (top if top else np.uint64(1))


@scalar_jit
def f16_bits(x):
  """The float16 bits nearest to float32 `x` (ties to even), as NumPy casts."""
  u = np.uint64(f32_bits(x))
  sign = (u >> np.uint64(16)) & np.uint64(0x8000)
  exponent = np.int64((u >> np.uint64(23)) & np.uint64(0xFF))
  mantissa = u & np.uint64(0x7FFFFF)
  if exponent == 0xFF:   # inf, or NaN with the payload's top bits (NumPy's cast)
    return np.uint16(sign | _f16_special(mantissa >> np.uint64(13), mantissa))
  if exponent == 0:   # float32 zero or subnormal: far below float16's range
    return np.uint16(sign)
  return np.uint16(_f16_round(sign, exponent - 127, mantissa, 23))


@scalar_jit
def f16_bits_of_f64(x):
  """The float16 bits nearest to float64 `x`, rounded once (NumPy's cast)."""
  u = f64_bits(x)
  sign = (u >> np.uint64(48)) & np.uint64(0x8000)
  exponent = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF))
  mantissa = u & np.uint64(0xFFFFFFFFFFFFF)
  if exponent == 0x7FF:
    return np.uint16(sign | _f16_special(mantissa >> np.uint64(42), mantissa))
  if exponent == 0:
    return np.uint16(sign)
  return np.uint16(_f16_round(sign, exponent - 1023, mantissa, 52))


@scalar_jit
def bf16_value(b):
  """The float32 value of the bfloat16 whose bits are `b`."""
  return bits_f32(np.uint32(b) << np.uint32(16))


@scalar_jit
def bf16_bits(x):
  """The bfloat16 bits nearest to float32 `x` (ties to even), as ml_dtypes casts."""
  u = f32_bits(x)
  if x != x:   # NaN: the quiet NaN of x's sign
    return np.uint16(0xFFC0) if u >> np.uint32(31) else np.uint16(0x7FC0)
  bias = np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
  return np.uint16((u + bias) >> np.uint32(16))


@scalar_jit
def round_f16(x):
  """float32 `x` rounded to float16, as a float32."""
  return f16_value(f16_bits(x))


@scalar_jit
def round_bf16(x):
  """float32 `x` rounded to bfloat16, as a float32."""
  return bf16_value(bf16_bits(x))


# --- floating-point functions ----------------------------------------------------------

@scalar_jit
def nan_max(x, y):
  """max with NaN propagating (NumPy's maximum, whose vector loops give y of
  two equal operands: max(0.0, -0.0) is -0.0)."""
  if x != x:
    return x
  if y != y:
    return y
  return x if x > y else y


@scalar_jit
def nan_min(x, y):
  """min with NaN propagating (NumPy's minimum, whose vector loops give y of
  two equal operands: min(-0.0, 0.0) is 0.0)."""
  if x != x:
    return x
  if y != y:
    return y
  return x if x < y else y


@scalar_jit
def float_sign(x):
  """-1.0 or 1.0; ±0.0 and NaN unchanged."""
  if x == 0 or x != x:
    return x
  return math.copysign(1.0, x)


@scalar_jit
def round_half_away(x):
  """The nearest integer, ties away from zero; the sign of zero kept."""
  t = np.trunc(x)
  if abs(x - t) >= 0.5:
    return t + math.copysign(1.0, x)
  return t


@scalar_jit
def logistic(x):
  return 1.0 / (1.0 + math.exp(-x))


# --- bits of integers --------------------------------------------------------------------

@scalar_jit
def _mask(bits):
  """The `bits` low bits set, as uint64."""
  return np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)


@scalar_jit
def shift_left(x, y, bits):
  """x << y on the `bits`-bit word of x (returned as uint64: the caller keeps
  its low bits); 0 for a shift amount y outside [0, bits)."""
  if y < 0 or np.uint64(y) >= bits:
    return np.uint64(0)
  return np.uint64(x) << np.uint64(y)


@scalar_jit
def shift_right_logical(x, y, bits):
  """x >> y on the `bits`-bit word of x, filling with zeros; 0 for y outside [0, bits)."""
  if y < 0 or np.uint64(y) >= bits:
    return np.uint64(0)
  return (np.uint64(x) & _mask(bits)) >> np.uint64(y)


@scalar_jit
def shift_right_arithmetic(x, y, bits):
  """x >> y filling with the sign bit; `x` is the word read as signed (an
  int64, sign-extended). All sign bits for y outside [0, bits)."""
  if y < 0 or np.uint64(y) >= bits:
    return np.int64(-1) if x < 0 else np.int64(0)
  return np.int64(x) >> np.int64(y)


@scalar_jit
def population_count(x, bits):
  u = np.uint64(x) & _mask(bits)
  count = 0
  while u:
    u &= u - np.uint64(1)
    count += 1
  return count


@scalar_jit
def clz(x, bits):
  u = np.uint64(x) & _mask(bits)
  count = bits
  while u:
    u >>= np.uint64(1)
    count -= 1
  return count


# --- conversions -------------------------------------------------------------------------

@scalar_jit
def float_to_signed(x, minimum, maximum):
  """Float to a signed integer as XLA on CPU: truncated toward zero,
  saturated at [minimum, maximum], NaN to 0 (an int64 the caller narrows)."""
  t = np.trunc(np.float64(x))
  if t != t:
    return np.int64(0)
  if t <= np.float64(minimum):
    return np.int64(minimum)
  if t >= np.float64(maximum):
    return np.int64(maximum)
  return np.int64(t)


@scalar_jit
def float_to_unsigned(x, maximum):
  """Float to an unsigned integer: truncated, saturated at [0, maximum], NaN to 0."""
  t = np.trunc(np.float64(x))
  if t != t or t <= 0.0:
    return np.uint64(0)
  if t >= np.float64(maximum):
    return np.uint64(maximum)
  return np.uint64(t)


@scalar_jit
def _nextafter_bits(hx, hy, sign_bit, magnitude_mask, x_nan, y_nan, x, y):
  """nextafter on the bits of a 16-bit float (hx, hy): the bits of the value
  next to x towards y (NaN if either is; y where x == y)."""
  if x_nan:
    return hx
  if y_nan:
    return hy
  if x == y:
    return hy
  if hx & magnitude_mask == 0:   # ±0: the smallest subnormal of y's sign
    return (hy & sign_bit) | 1
  if (x < y) == ((hx & sign_bit) == 0):   # away from zero
    return hx + 1
  return hx - 1


@scalar_jit
def nextafter_f16(x, y):
  hx, hy = np.uint32(f16_bits(x)), np.uint32(f16_bits(y))
  return f16_value(_nextafter_bits(hx, hy, np.uint32(0x8000), np.uint32(0x7FFF),
                                   x != x, y != y, x, y))


@scalar_jit
def nextafter_bf16(x, y):
  hx, hy = np.uint32(bf16_bits(x)), np.uint32(bf16_bits(y))
  return bf16_value(_nextafter_bits(hx, hy, np.uint32(0x8000), np.uint32(0x7FFF),
                                    x != x, y != y, x, y))


# --- complex numbers (complex128; the caller rounds) ------------------------------------------

@scalar_jit
def make_complex(x, y):
  """x + i y with infinite parts kept exact."""
  return np.complex128(complex(x, y))


@scalar_jit
def _unit(v):
  """copysign(1 if v is infinite else 0, v)."""
  return math.copysign(1.0 if math.isinf(v) else 0.0, v)


@scalar_jit
def complex_div(x, y):
  """x / y by Smith's algorithm with XLA's special cases (the reference's
  `_complex_quotient`)."""
  a, b, c, d = x.real, x.imag, y.real, y.imag
  if not (abs(c) < abs(d)):
    r = d / c
    denominator = c + d * r
    real = (a + b * r) / denominator
    imag = (b - a * r) / denominator
  else:
    r = c / d
    denominator = d + c * r
    real = (a * r + b) / denominator
    imag = (b * r - a) / denominator
  if real != real and imag != imag:
    inf = np.inf
    if c == 0 and d == 0 and not (a != a and b != b):
      return make_complex(math.copysign(inf, c) * a, math.copysign(inf, c) * b)
    if (math.isinf(a) or math.isinf(b)) and math.isfinite(c) and math.isfinite(d):
      return make_complex(inf * (_unit(a) * c + _unit(b) * d), inf * (_unit(b) * c - _unit(a) * d))
    if (math.isinf(c) or math.isinf(d)) and math.isfinite(a) and math.isfinite(b):
      return make_complex(0.0 * (a * _unit(c) + b * _unit(d)), 0.0 * (b * _unit(c) - a * _unit(d)))
  return make_complex(real, imag)


@scalar_jit
def _complex_greater(x, y):
  """x > y lexicographically (real part, then imaginary part)."""
  return x.real > y.real or (x.real == y.real and x.imag > y.imag)


@scalar_jit
def _complex_has_nan(z):
  return z.real != z.real or z.imag != z.imag


@scalar_jit
def complex_max(x, y):
  """NumPy's maximum of complex numbers: lexicographic, NaN propagating."""
  if _complex_has_nan(x):
    return x
  if _complex_has_nan(y):
    return y
  return y if _complex_greater(y, x) else x


@scalar_jit
def complex_min(x, y):
  if _complex_has_nan(x):
    return x
  if _complex_has_nan(y):
    return y
  return y if _complex_greater(x, y) else x


@scalar_jit
def complex_exp(z):
  """exp(a) cos(b) + exp(a) sin(b) i (XLA's formula)."""
  magnitude = math.exp(z.real)
  return make_complex(magnitude * math.cos(z.imag), magnitude * math.sin(z.imag))
