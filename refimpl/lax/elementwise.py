"""Elementwise primitives: arithmetic, math functions, comparisons, logic, casts.

Rules shared by every n-ary primitive here (see `refimpl/lax/rules.py`):

* Shape: operands have the same dtype (lax never promotes); rank-0 operands
  broadcast against anything, operands of equal rank broadcast along size-1
  dimensions, other rank mismatches raise `TypeError`.
* Weak type: the result is weakly typed only when every operand is.
* Floating point: a result is the exact value rounded once to the result
  dtype, where the function is exact (negation, comparisons, max, floor,
  ...) or an IEEE operation: +, -, *, / and sqrt of real numbers, and + and -
  of complex numbers. Any other function is computed in float64
  (complex128) and rounded once to the result dtype. A 16-bit float result
  is rounded by way of float32, which is how XLA computes 16-bit floats.
  Subnormal numbers are kept, as IEEE says; XLA on CPU may flush them to
  zero.
* Integers: arithmetic wraps around modulo 2**bits on overflow.

The differentiation rules (JAX's) are gathered at the end of the module.
"""

import enum
import math
import operator
import warnings

import numpy as np

from refimpl import dtypes
from refimpl.core import (ConcreteArray, Primitive, ShapedArray, Tracer, eval_context,
                          get_aval)
from refimpl.interpreters import ad, batching
from refimpl.lax.rules import (ANY, COMPLEX, COMPLEX_PARTS, EXTENDED, FLOAT, INEXACT,
                               INT_OR_BOOL, INTEGER, NUMBER, ORDERED, SIGNED, as_dtype,
                               broadcasting_shape, check_dtype, check_same_dtypes, const,
                               naryop_aval)

__all__ = [
    'RoundingMethod', 'AccuracyMode', 'Tolerance',
    'neg', 'sign', 'abs', 'floor', 'ceil', 'round', 'is_finite',
    'exp', 'exp2', 'expm1', 'log', 'log1p', 'logistic', 'sqrt', 'rsqrt', 'cbrt',
    'square', 'reciprocal', 'integer_pow', 'pow',
    'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'atan2',
    'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh',
    'add', 'sub', 'mul', 'div', 'rem', 'max', 'min', 'nextafter',
    'bitwise_not', 'bitwise_and', 'bitwise_or', 'bitwise_xor',
    'shift_left', 'shift_right_arithmetic', 'shift_right_logical',
    'population_count', 'clz',
    'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'clamp', 'select', 'select_n',
    'convert_element_type', 'bitcast_convert_type', 'reduce_precision',
    'complex', 'real', 'imag', 'conj',
    'neg_p', 'sign_p', 'abs_p', 'floor_p', 'ceil_p', 'round_p', 'is_finite_p',
    'exp_p', 'exp2_p', 'expm1_p', 'log_p', 'log1p_p', 'logistic_p', 'sqrt_p',
    'rsqrt_p', 'cbrt_p', 'square_p', 'integer_pow_p', 'pow_p',
    'sin_p', 'cos_p', 'tan_p', 'asin_p', 'acos_p', 'atan_p', 'atan2_p',
    'sinh_p', 'cosh_p', 'tanh_p', 'asinh_p', 'acosh_p', 'atanh_p',
    'add_p', 'sub_p', 'mul_p', 'div_p', 'rem_p', 'max_p', 'min_p', 'nextafter_p',
    'not_p', 'and_p', 'or_p', 'xor_p',
    'shift_left_p', 'shift_right_arithmetic_p', 'shift_right_logical_p',
    'population_count_p', 'clz_p',
    'eq_p', 'ne_p', 'lt_p', 'le_p', 'gt_p', 'ge_p', 'clamp_p', 'select_n_p',
    'convert_element_type_p', 'bitcast_convert_type_p', 'reduce_precision_p',
    'complex_p', 'real_p', 'imag_p', 'conj_p', 'copy_p',
]


class RoundingMethod(enum.IntEnum):
  """How `round` breaks ties (values exactly halfway between two integers)."""
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


class AccuracyMode(enum.Enum):
  """An accuracy request for transcendental functions (a hint to backends)."""
  HIGHEST = 1
  DEFAULT = 2


class Tolerance:
  """Tolerances a backend's implementation of a unary function must meet
  (at least one of atol, rtol and ulps). The reference computes in float64
  and ignores it.
  """

  def __init__(self, atol=0.0, rtol=0.0, ulps=0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol, self.rtol, self.ulps = atol, rtol, ulps

  def __repr__(self):
    return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


# --- building blocks -------------------------------------------------------------

class ElementwisePrimitive(Primitive):
  # A primitive that, as in JAX, does not print `accuracy=None` or `out_dtype=None`.
  __doc__ = Primitive.__doc__   # the reference rule's docstring (a class docstring would hide it)
  elementwise = True   # each result element depends on the operands' elements there alone

  def pp_params(self, params):
    shown = {k: v for k, v in params.items()
             if not (k in ("accuracy", "out_dtype") and v is None)}
    return super().pp_params(shown)


def _wide(x):
  """Floating `x` as float64 (complex128), where floating results are computed.

  Integers and booleans are returned unchanged (their arithmetic is exact or
  wraps in their own dtype).
  """
  x = np.asarray(x)
  if dtypes.is_float(x.dtype):
    return x.astype(np.float64)
  if dtypes.is_complex(x.dtype):
    return x.astype(np.complex128)
  return x


def _ieee(x):
  """`x` as an operand of * or sqrt: complex numbers widened (`_wide`), as
  these are not IEEE operations on them; anything else as it is.

  On real floats they are, so computing in x's dtype is rounding the exact
  result once (NumPy, as XLA, computes 16-bit floats in float32 and rounds
  that: the same value, as float32's 24 bits hold twice the 11 of float16
  plus 2, which makes the double rounding innocuous). So is computing in
  float64 (53 bits, twice float32's 24 plus 5) and rounding the result.
  """
  return _wide(x) if dtypes.is_complex(x.dtype) else x


_BLOCK = 1 << 16
"""Elements per block of the elementwise reference rules (see `_in_blocks`)."""
_size = operator.attrgetter("size")


def _in_blocks(reference, dtype, operands, params):
  """`reference(*operands, **params)` rounded to `dtype`, a block at a time.

  Memory, not semantics: each block of up to `_BLOCK` elements of the
  broadcast operands is computed (in float64 where a rule widens) and
  rounded into the preallocated result, so a rule's intermediates stay
  small; the values are those of one call on all the elements.
  """
  # The broadcast size is at most the product of the sizes: small operands
  # need no broadcast_shapes.
  if (math.prod(map(_size, operands)) <= _BLOCK
      or math.prod(shape := np.broadcast_shapes(*(x.shape for x in operands))) <= _BLOCK):
    return as_dtype(reference(*operands, **params), dtype)
  out = np.empty(shape, dtype)
  blocks = np.nditer([*operands, out], flags=["external_loop", "buffered"],
                     op_flags=[["readonly"]] * len(operands) + [["writeonly"]],
                     buffersize=_BLOCK)
  with blocks:
    for *block, out_block in blocks:
      out_block[...] = as_dtype(reference(*block, **params), dtype)
  return out


def _result_dtype(out_dtype, dtype):
  if out_dtype is None:
    return np.dtype(dtype)
  return np.dtype(out_dtype(dtype) if callable(out_dtype) else out_dtype)


def naryop(name, category, reference, out_dtype=None, nargs=1):
  """An n-ary elementwise primitive whose semantics are `reference` (and its docstring).

  `reference(*operands, **params)` computes with NumPy; the result is rounded
  to the result dtype: the operands' dtype, or `out_dtype` (a dtype or a
  function of the operand dtype).
  """
  prim = ElementwisePrimitive(name)

  def impl(*operands, **params):
    dtype = operands[0].dtype   # NumPy data: a NumPy dtype
    return _in_blocks(reference, dtype if out_dtype is None else _result_dtype(out_dtype, dtype),
                      operands, params)

  def shape_rule(*avals, **params):
    if len(avals) != nargs:
      raise TypeError(f"{name} takes {nargs} operand(s), got {len(avals)}")
    return naryop_aval(name, list(avals), category, out_dtype)

  impl.__doc__ = reference.__doc__
  impl.__module__ = reference.__module__   # the family the generated docs list it under
  prim.def_impl(impl)
  prim.def_abstract_eval(shape_rule)
  if nargs == 1:
    batching.defvectorized(prim)
  else:
    batching.defbroadcasting(prim)
  return prim


def unop(name, category, reference, out_dtype=None):
  return naryop(name, category, reference, out_dtype, nargs=1)


def binop(name, category, reference, out_dtype=None):
  return naryop(name, category, reference, out_dtype, nargs=2)


def _bits(dtype):
  return np.dtype(dtype).itemsize * 8


def _unsigned(dtype):
  """The unsigned integer dtype of the same width (for bit manipulation)."""
  return np.dtype(f"uint{_bits(dtype)}")


def _dtype_argument(dtype):
  """A dtype argument ('uint8', np.int32, jnp.float32, a dtype, a key dtype)
  as the canonical dtype."""
  return dtypes.canonicalize_dtype(dtype, allow_extended_dtype=True)


# --- arithmetic -----------------------------------------------------------------------

def _neg(x):
  """Negation `-x`. Integers wrap: -INT_MIN is INT_MIN, and unsigned -x is 2**bits - x."""
  return np.negative(x)


def _sign(x):
  """Sign: -1, 0 or 1 for integers (0 or 1 unsigned).

  Floats: -1.0 or 1.0, but ±0.0 and NaN are returned unchanged (sign(-0.0)
  is -0.0). Complex (as XLA): each part divided by `abs(x)`, and 0 at 0; so
  an infinite part gives NaN (sign(inf + 1j) is nan + 0j).
  """
  if dtypes.is_unsigned(x.dtype):
    return x != 0
  if dtypes.is_float(x.dtype):
    return np.where((x == 0) | np.isnan(x), x, np.copysign(1.0, x))
  if not dtypes.is_complex(x.dtype):
    return np.sign(x)
  modulus = _abs(x)
  return np.where(modulus == 0, 0, _complex(x.real / modulus, x.imag / modulus))


def _abs(x):
  """Absolute value |x|. abs(INT_MIN) wraps to INT_MIN. Complex: the modulus,
  a real number (computed without intermediate overflow); NaN if either part
  is NaN, even where the other is infinite (XLA's rule; C's hypot gives inf).
  """
  if not dtypes.is_complex(x.dtype):
    return np.abs(x)
  return np.where(np.isnan(x.real) | np.isnan(x.imag), np.nan, np.abs(_wide(x)))


def _floor(x):
  """Largest integer <= x (as a float). ±0, ±inf and NaN are unchanged."""
  return np.floor(x)


def _ceil(x):
  """Smallest integer >= x (as a float). ±0, ±inf and NaN are unchanged."""
  return np.ceil(x)


def _round(x, *, rounding_method):
  """Nearest integer (as a float); `rounding_method` breaks ties.

  AWAY_FROM_ZERO (0): 0.5 -> 1, -2.5 -> -3. TO_NEAREST_EVEN (1): 0.5 -> 0,
  1.5 -> 2. The sign of zero is kept (-0.4 -> -0.0); ±inf and NaN unchanged.
  """
  if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
    return np.rint(x)
  truncated = np.trunc(x)
  halfway_or_more = np.abs(x - truncated) >= 0.5   # False for ±inf and NaN
  return np.where(halfway_or_more, truncated + np.copysign(1.0, x), truncated)


def _is_finite(x):
  """True where x is neither ±inf nor NaN."""
  return np.isfinite(x)


def _add(x, y):
  """Sum `x + y`. Integers wrap on overflow; floats follow IEEE (inf + -inf is NaN)."""
  return np.add(x, y)


def _sub(x, y):
  """Difference `x - y`. Integers wrap on overflow; floats follow IEEE."""
  return np.subtract(x, y)


def _div(x, y):
  """Quotient `x / y`.

  Floats: IEEE division (x/0 is ±inf, 0/0 is NaN). Complex: as XLA,
  Smith's algorithm (see `_complex_quotient`). Integers: truncated toward
  zero, as in C (-7 / 2 == -3). Integer division by zero gives -1 (all bits
  set: the maximum for unsigned types) and INT_MIN / -1 gives INT_MIN;
  these are XLA's results on CPU.
  """
  if dtypes.is_complex(x.dtype):
    return _complex_quotient(_wide(x), _wide(y))
  if not dtypes.is_integer(x.dtype):
    return np.divide(x, y)
  x, y = np.broadcast_arrays(x, y)
  by_zero, overflow = _int_division_hazards(x, y)
  safe_y = np.where(by_zero | overflow, np.ones_like(y), y)
  quotient = np.floor_divide(x, safe_y)
  # floor_divide rounds down; round toward zero instead when there is a remainder.
  inexact = (np.remainder(x, safe_y) != 0) & ((x < 0) != (safe_y < 0))
  quotient = np.where(inexact, quotient + np.ones_like(quotient), quotient)
  all_ones = np.array(-1).astype(x.dtype)   # -1, or the maximum of an unsigned type
  return np.where(by_zero, all_ones, quotient)


def _complex_quotient(x, y):
  """(a + bi) / (c + di) by Smith's algorithm, as XLA divides: with r the
  ratio of the smaller part of the divisor to the larger (d / c where
  |c| >= |d|), the quotient is ((a + b r) + (b - a r) i) / (c + d r), and
  ((a r + b) + (b r - a) i) / (d + c r) otherwise. Where that gives NaN in
  both parts: a zero divisor gives x times copysign(inf, c); an infinite x
  over a finite divisor, and a finite x over an infinite divisor, give the
  quotient of (a', b') and (c, d) (or of (a, b) and (c', d')) scaled by inf
  (or by 0), with a' = copysign(1, a) for an infinite a, else ±0 (the same
  for b, c', d')."""
  a, b, c, d = x.real, x.imag, y.real, y.imag
  by_real = ~(np.abs(c) < np.abs(d))
  r = np.where(by_real, d / c, c / d)
  denominator = np.where(by_real, c + d * r, d + c * r)
  real = np.where(by_real, a + b * r, a * r + b) / denominator
  imag = np.where(by_real, b - a * r, b * r - a) / denominator
  unit = lambda v: np.copysign(np.where(np.isinf(v), 1.0, 0.0), v)
  inf = np.inf
  cases = [  # (where, real, imag), the first that holds wins
      ((c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b)),
       np.copysign(inf, c) * a, np.copysign(inf, c) * b),
      ((np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d),
       inf * (unit(a) * c + unit(b) * d), inf * (unit(b) * c - unit(a) * d)),
      ((np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b),
       0.0 * (a * unit(c) + b * unit(d)), 0.0 * (b * unit(c) - a * unit(d))),
  ]
  both_nan = np.isnan(real) & np.isnan(imag)
  for where, case_real, case_imag in reversed(cases):
    real = np.where(both_nan & where, case_real, real)
    imag = np.where(both_nan & where, case_imag, imag)
  return _complex(real, imag)


def _int_division_hazards(x, y):
  """Where integer x / y divides by zero, and where it is INT_MIN / -1."""
  by_zero = y == 0
  if dtypes.is_unsigned(x.dtype):
    return by_zero, np.zeros_like(by_zero)
  return by_zero, (x == np.iinfo(x.dtype).min) & (y == -1)


def _rem(x, y):
  """Remainder of truncated division, as C's fmod: the sign of the dividend.

  `rem(-7, 2) == -1`, `rem(7, -2) == 1`, and |rem(x, y)| < |y|. Floats:
  rem(x, 0) and rem(±inf, y) are NaN, rem(x, ±inf) is x. Integers:
  rem(x, 0) is x and rem(INT_MIN, -1) is 0 (XLA's results on CPU).
  """
  if not dtypes.is_integer(x.dtype):
    return np.fmod(x, y)
  x, y = np.broadcast_arrays(x, y)
  by_zero, overflow = _int_division_hazards(x, y)
  safe_y = np.where(by_zero | overflow, np.ones_like(y), y)
  return np.where(by_zero, x, np.fmod(x, safe_y))


def _max(x, y):
  """Elementwise maximum. NaN if either operand is NaN; complex numbers
  compare lexicographically (real part, then imaginary part). Which zero
  `max(-0.0, 0.0)` returns is unspecified."""
  return np.maximum(_wide(x), _wide(y))


def _min(x, y):
  """Elementwise minimum. NaN if either operand is NaN; complex numbers
  compare lexicographically. Which zero `min(-0.0, 0.0)` returns is unspecified."""
  return np.minimum(_wide(x), _wide(y))


def _nextafter(x, y):
  """The next representable value of x's dtype after x in the direction of y.

  Where x == y the result is y; NaN if either is NaN; nextafter(0, 1) is the
  smallest subnormal. Computed in the operands' own dtype.
  """
  return np.nextafter(x, y)


neg_p = unop("neg", NUMBER, _neg)
sign_p = unop("sign", NUMBER, _sign)
abs_p = unop("abs", SIGNED + FLOAT + COMPLEX, _abs, dtypes.to_real_dtype)
floor_p = unop("floor", FLOAT, _floor)
ceil_p = unop("ceil", FLOAT, _ceil)
round_p = unop("round", FLOAT, _round)
is_finite_p = unop("is_finite", FLOAT, _is_finite, dtypes.bool_)
add_p = binop("add", NUMBER, _add)
sub_p = binop("sub", NUMBER, _sub)
div_p = binop("div", NUMBER, _div)
rem_p = binop("rem", INTEGER + FLOAT, _rem)
max_p = binop("max", ANY, _max)
min_p = binop("min", ANY, _min)
nextafter_p = binop("nextafter", FLOAT, _nextafter)

mul_p = ElementwisePrimitive("mul")


@mul_p.def_impl
def _mul_reference(x, y, out_dtype=None):
  """Product `x * y`. Integers wrap on overflow; floats follow IEEE (0 * inf is NaN).

  With `out_dtype`, both operands are first converted to it (as
  convert_element_type does) and the product has that dtype.
  """
  dtype = x.dtype if out_dtype is None else np.dtype(out_dtype)
  return _in_blocks(_converted_product, dtype, (x, y), {"dtype": dtype})


def _converted_product(x, y, dtype):
  x, y = (_cast(v, dtype) for v in (x, y))
  return _multiply(x, y, dtype)


def _multiply(x, y, dtype):
  return as_dtype(np.multiply(_ieee(x), _ieee(y)), dtype)


@mul_p.def_abstract_eval
def _mul_shape_rule(x, y, out_dtype=None):
  if out_dtype is None:
    return naryop_aval("mul", [x, y], NUMBER)
  return naryop_aval("mul", [x, y], NUMBER, out_dtype, same_dtypes=False)


# --- powers and roots ------------------------------------------------------------------
# `accuracy` (None, an AccuracyMode or a Tolerance) is a hint for backends;
# the reference ignores it and always computes in float64.

def _sqrt(x, accuracy=None):
  """Square root. sqrt(-0.0) is -0.0; sqrt(x < 0) is NaN (real dtypes);
  complex: the principal root (real part >= 0)."""
  return np.sqrt(_ieee(x))


def _rsqrt(x, accuracy=None):
  """Reciprocal square root 1 / sqrt(x): rsqrt(0) is inf, rsqrt(-0.0) is -inf,
  rsqrt(inf) is 0, rsqrt(x < 0) is NaN."""
  return 1.0 / np.sqrt(_wide(x))


def _cbrt(x, accuracy=None):
  """Real cube root: cbrt(-8) is -2."""
  return np.cbrt(_wide(x))


def _square(x):
  """x * x. Integers wrap on overflow."""
  return np.multiply(_ieee(x), _ieee(x))


def _integer_pow(x, *, y):
  if y == 0:
    return np.ones_like(x)
  dtype, base, n, acc = x.dtype, x, -y if y < 0 else y, None
  while n:
    if n & 1:
      acc = base if acc is None else _multiply(acc, base, dtype)
    n >>= 1
    if n:
      base = _multiply(base, base, dtype)
  return _div(np.ones_like(acc), acc) if y < 0 else acc


def _pow(x, y):
  """x ** y for a floating or complex base, as C's pow (real) and NumPy's power.

  An integer y is first converted to x's dtype. pow(x, 0) is 1 and pow(1, y)
  is 1, even for NaN; a negative base with a non-integer exponent gives NaN;
  pow(0, y < 0) is inf.
  """
  return np.power(_wide(x), _wide(np.asarray(y).astype(x.dtype)))


sqrt_p = unop("sqrt", INEXACT, _sqrt)
rsqrt_p = unop("rsqrt", INEXACT, _rsqrt)
cbrt_p = unop("cbrt", FLOAT, _cbrt)
square_p = unop("square", NUMBER, _square)

integer_pow_p = unop("integer_pow", NUMBER, _integer_pow)


@integer_pow_p.def_impl
def _integer_pow_reference(x, *, y):
  """x ** y for a Python int y, by binary exponentiation (as XLA lowers it).

  Each multiplication is rounded to x's dtype (integers wrap), so results can
  differ from `pow` in the last place. y == 0 gives 1 (even for 0 and NaN);
  a negative y gives 1 / x**|y| (floats and complex only); y == 1 gives x.
  """
  if y == 1:
    return x   # itself, not a copy
  return _in_blocks(_integer_pow, x.dtype, (x,), {"y": y})


@integer_pow_p.def_abstract_eval
def _integer_pow_shape_rule(x, *, y):
  aval = naryop_aval("integer_pow", [x], NUMBER)
  if y < 0 and dtypes.is_integer(x.dtype):
    raise TypeError(f"Integers cannot be raised to negative powers, got "
                    f"integer_pow({x.str_short()}, {y})")
  return aval


pow_p = binop("pow", INEXACT, _pow)


@pow_p.def_abstract_eval
def _pow_shape_rule(x, y):
  aval = naryop_aval("pow", [x, y], [INEXACT, NUMBER], same_dtypes=False)
  if not dtypes.is_integer(y.dtype) and x.dtype != y.dtype:
    raise TypeError("the first argument to pow must have an inexact dtype (float or "
                    "complex), and the second argument must have an inexact or integer "
                    "dtype, and two inexact dtypes must match, but got "
                    f"{x.dtype.name} and {y.dtype.name} respectively.")
  return aval


# --- exponentials, logarithms, trigonometry --------------------------------------------

def _exp(x, accuracy=None):
  """e ** x. Overflows to inf; exp(-inf) is 0. Complex x = a + bi (as XLA):
  exp(a) cos(b) + exp(a) sin(b) i, so exp(inf + 0j) is inf + nan j and
  exp(nan + 0j) is nan + nan j."""
  x = _wide(x)
  if not dtypes.is_complex(x.dtype):
    return np.exp(x)
  magnitude = np.exp(x.real)
  return _complex(magnitude * np.cos(x.imag), magnitude * np.sin(x.imag))


def _exp2(x, accuracy=None):
  """2 ** x. Overflows to inf; exp2(-inf) is 0."""
  return np.exp2(_wide(x))


def _expm1(x, accuracy=None):
  """e ** x - 1, accurate near 0 (expm1(-0.0) is -0.0); expm1(-inf) is -1."""
  return np.expm1(_wide(x))


def _log(x, accuracy=None):
  """Natural logarithm: log(±0) is -inf, log(x < 0) is NaN, log(inf) is inf.
  Complex: the principal branch, log(abs(x)) + atan2(imag, real) i (imaginary
  part in (-pi, pi]); with abs's rule, a NaN part gives nan + nan j."""
  x = _wide(x)
  if not dtypes.is_complex(x.dtype):
    return np.log(x)
  return np.where(np.isnan(x.real) | np.isnan(x.imag), np.nan + np.nan * 1j, np.log(x))


def _log1p(x, accuracy=None):
  """log(1 + x), accurate near 0: log1p(-1) is -inf, log1p(x < -1) is NaN.

  Complex z = a + ib: the real part log|1 + z| is log1p(a (2 + a) + b**2) / 2
  for |z| < 0.5 (no rounding of 1 + z), log(hypot(1 + a, b)) beyond; the
  imaginary part is atan2(b, 1 + a).
  """
  x = _wide(x)
  if not dtypes.is_complex(x.dtype):
    return np.log1p(x)
  a, b = x.real, x.imag
  small = np.abs(x) < 0.5
  near_zero = 0.5 * np.log1p(np.where(small, a * (2 + a) + b * b, 0.0))
  real = np.where(small, near_zero, np.log(np.hypot(1 + a, b)))
  return _complex(real, np.arctan2(b, 1 + a))


def _logistic(x, accuracy=None):
  """The sigmoid 1 / (1 + exp(-x)): 0 at -inf, 1 at inf, 0.5 at 0."""
  return 1.0 / (1.0 + np.exp(-_wide(x)))


def _tanh(x, accuracy=None):
  """Hyperbolic tangent, in [-1, 1] for reals; tanh(±inf) is ±1."""
  return np.tanh(_wide(x))


def _sin(x, accuracy=None):
  """Sine (radians); sin(±inf) is NaN."""
  return np.sin(_wide(x))


def _cos(x, accuracy=None):
  """Cosine (radians); cos(±inf) is NaN."""
  return np.cos(_wide(x))


def _tan(x, accuracy=None):
  """Tangent (radians); tan(±inf) is NaN."""
  return np.tan(_wide(x))


def _asin(x):
  """Arc sine in [-pi/2, pi/2]; NaN outside [-1, 1] for reals. Complex: principal branch."""
  return np.arcsin(_wide(x))


def _acos(x):
  """Arc cosine in [0, pi]; NaN outside [-1, 1] for reals. Complex: principal branch."""
  return np.arccos(_wide(x))


def _atan(x):
  """Arc tangent in [-pi/2, pi/2]; atan(±inf) is ±pi/2."""
  return np.arctan(_wide(x))


def _atan2(x, y):
  """The angle of the point (y, x) (note the order: atan2(x, y) ~ atan(x / y)),
  in [-pi, pi], with C's atan2 conventions for zeros and infinities
  (atan2(±0, -0) is ±pi). Complex operands: -i log((y + i x) / sqrt(x**2 + y**2))."""
  x, y = _wide(x), _wide(y)
  if dtypes.is_complex(x.dtype):
    return -1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))
  return np.arctan2(x, y)


def _sinh(x):
  """Hyperbolic sine; overflows to ±inf."""
  return np.sinh(_wide(x))


def _cosh(x):
  """Hyperbolic cosine; overflows to inf."""
  return np.cosh(_wide(x))


def _asinh(x):
  """Inverse hyperbolic sine. Complex: principal branch."""
  return np.arcsinh(_wide(x))


def _acosh(x):
  """Inverse hyperbolic cosine: NaN for real x < 1. Complex: principal branch."""
  return np.arccosh(_wide(x))


def _atanh(x):
  """Inverse hyperbolic tangent: ±inf at ±1, NaN for real |x| > 1."""
  return np.arctanh(_wide(x))


exp_p = unop("exp", INEXACT, _exp)
exp2_p = unop("exp2", INEXACT, _exp2)
expm1_p = unop("expm1", INEXACT, _expm1)
log_p = unop("log", INEXACT, _log)
log1p_p = unop("log1p", INEXACT, _log1p)
logistic_p = unop("logistic", INEXACT, _logistic)
tanh_p = unop("tanh", INEXACT, _tanh)
sin_p = unop("sin", INEXACT, _sin)
cos_p = unop("cos", INEXACT, _cos)
tan_p = unop("tan", INEXACT, _tan)
asin_p = unop("asin", INEXACT, _asin)
acos_p = unop("acos", INEXACT, _acos)
atan_p = unop("atan", INEXACT, _atan)
atan2_p = binop("atan2", INEXACT, _atan2)
sinh_p = unop("sinh", INEXACT, _sinh)
cosh_p = unop("cosh", INEXACT, _cosh)
asinh_p = unop("asinh", INEXACT, _asinh)
acosh_p = unop("acosh", INEXACT, _acosh)
atanh_p = unop("atanh", INEXACT, _atanh)


# --- bits and logic --------------------------------------------------------------------------

def _not(x):
  """Logical not for booleans, bitwise not (~x) for integers."""
  return np.invert(x)


def _and(x, y):
  """Logical and for booleans, bitwise and for integers."""
  return np.bitwise_and(x, y)


def _or(x, y):
  """Logical or for booleans, bitwise or for integers."""
  return np.bitwise_or(x, y)


def _xor(x, y):
  """Logical xor for booleans, bitwise xor for integers."""
  return np.bitwise_xor(x, y)


def _shift_amounts(x, y):
  """Broadcast operands, y as unsigned (a negative amount is huge), and where it is < bits."""
  x, y = np.broadcast_arrays(x, y)
  amount = y.astype(_unsigned(y.dtype))
  in_range = amount < _bits(x.dtype)
  return x, np.where(in_range, amount, 0), in_range


def _shift_left(x, y):
  """x << y on the two's complement bits (bits shifted out are lost).

  A shift amount >= the bit width, or negative, gives 0 (XLA's rule).
  """
  x, amount, in_range = _shift_amounts(x, y)
  bits = x.astype(_unsigned(x.dtype))
  return np.where(in_range, np.left_shift(bits, amount.astype(bits.dtype)), 0).astype(x.dtype)


def _shift_right_logical(x, y):
  """x >> y filling with zeros (the bits read as unsigned, even for signed dtypes).

  A shift amount >= the bit width, or negative, gives 0 (XLA's rule).
  """
  x, amount, in_range = _shift_amounts(x, y)
  bits = x.astype(_unsigned(x.dtype))
  return np.where(in_range, np.right_shift(bits, amount.astype(bits.dtype)), 0).astype(x.dtype)


def _shift_right_arithmetic(x, y):
  """x >> y filling with copies of the top (sign) bit, even for unsigned dtypes.

  A shift amount >= the bit width, or negative, gives all sign bits: -1 for
  negative x (all ones), 0 otherwise (XLA's rule).
  """
  x, amount, in_range = _shift_amounts(x, y)
  signed = x.astype(np.dtype(f"int{_bits(x.dtype)}"))
  shifted = np.right_shift(signed, amount.astype(signed.dtype))
  return np.where(in_range, shifted, np.where(signed < 0, -1, 0)).astype(x.dtype)


def _population_count(x):
  """The number of set bits of x's two's complement representation
  (population_count(int8 -1) is 8)."""
  return np.bitwise_count(x.astype(_unsigned(x.dtype)))


def _clz(x):
  """The number of leading zero bits in x's representation (clz(0) is the bit
  width; clz of a negative signed value is 0)."""
  bits = x.astype(_unsigned(x.dtype))
  significant = np.zeros(bits.shape, np.int64)
  for b in range(_bits(x.dtype)):
    significant += (bits >> np.asarray(b, bits.dtype)) != 0
  return _bits(x.dtype) - significant


not_p = unop("not", INT_OR_BOOL, _not)
and_p = binop("and", INT_OR_BOOL, _and)
or_p = binop("or", INT_OR_BOOL, _or)
xor_p = binop("xor", INT_OR_BOOL, _xor)
shift_left_p = binop("shift_left", INTEGER, _shift_left)
shift_right_arithmetic_p = binop("shift_right_arithmetic", INTEGER, _shift_right_arithmetic)
shift_right_logical_p = binop("shift_right_logical", INTEGER, _shift_right_logical)
population_count_p = unop("population_count", INTEGER, _population_count)
clz_p = unop("clz", INTEGER, _clz)


# --- comparisons ------------------------------------------------------------------------------

def _comparison(name, numpy_fn, category, text, keys_doc=""):
  def reference(x, y):
    return numpy_fn(x, y)
  reference.__doc__ = (f"`{text}`, a bool array. Comparisons with NaN are False "
                       "(except `ne`, which is True); -0.0 == 0.0." + keys_doc)
  return binop(name, category, reference, dtypes.bool_)


# NumPy's `==` (unlike the np.equal ufunc) also compares structured key data.
_KEYS_DOC = ("\n\n  The operands may also be key arrays of one key dtype: two keys are equal "
             "when all their data words are equal.")
eq_p = _comparison("eq", operator.eq, ANY + EXTENDED, "x == y", _KEYS_DOC)
ne_p = _comparison("ne", operator.ne, ANY + EXTENDED, "x != y", _KEYS_DOC)
lt_p = _comparison("lt", np.less, ORDERED, "x < y")
le_p = _comparison("le", np.less_equal, ORDERED, "x <= y")
gt_p = _comparison("gt", np.greater, ORDERED, "x > y")
ge_p = _comparison("ge", np.greater_equal, ORDERED, "x >= y")


# --- clamp and selection ----------------------------------------------------------------------

clamp_p = ElementwisePrimitive("clamp")


@clamp_p.def_impl
def _clamp_reference(lo, x, hi):
  """min(max(x, lo), hi), elementwise: so hi wins when lo > hi, and a NaN in
  any operand gives NaN.

  Shape rule: `lo` and `hi` are scalars or have x's shape; all three share a
  dtype, which may not be complex (XLA has no ordering for it).
  """
  return _in_blocks(_clamped, x.dtype, (lo, x, hi), {})


def _clamped(lo, x, hi):
  return np.minimum(np.maximum(_wide(x), _wide(lo)), _wide(hi))


@clamp_p.def_abstract_eval
def _clamp_shape_rule(lo, x, hi):
  for i, aval in enumerate((lo, x, hi)):
    check_dtype("clamp", aval, ORDERED, position=i)
  check_same_dtypes("clamp", lo, x, hi)
  for what, bound in (("min", lo), ("max", hi)):
    if bound.shape and bound.shape != x.shape:
      raise TypeError(f"clamp requires {what}.shape == operand.shape or {what}.shape == (), "
                      f"got {bound.shape}.")
  return ShapedArray(x.shape, x.dtype, lo.weak_type and x.weak_type and hi.weak_type)


select_n_p = Primitive("select_n")
select_n_p.elementwise = True


@select_n_p.def_impl
def _select_n_reference(which, *cases):
  """Picks, elementwise, `cases[which]`.

  `which` is bool (False picks cases[0], True cases[1]) or int32 in
  [0, len(cases)); an out-of-range integer selector is clamped. `which` is
  either a scalar or has the cases' shape. All cases share shape and dtype.
  """
  return _in_blocks(_choose, cases[0].dtype, (which, *cases), {})


def _choose(which, *cases):
  index = np.clip(which.astype(np.int64), 0, len(cases) - 1)
  return np.choose(np.broadcast_to(index, cases[0].shape), cases)


@select_n_p.def_abstract_eval
def _select_n_shape_rule(which, *cases):
  if not cases:
    raise TypeError("select_n requires at least one case")
  if which.dtype != dtypes.bool_ and not dtypes.is_integer(which.dtype):
    raise TypeError(f"select_n selector must be boolean or integer, got {which.dtype.name}")
  if which.dtype == dtypes.bool_ and len(cases) > 2:
    raise TypeError("select_n with a boolean selector takes at most two cases")
  for c in cases[1:]:
    if c.shape != cases[0].shape or c.dtype != cases[0].dtype:
      raise TypeError(f"select_n cases must have the same shapes and dtypes, got "
                      f"{', '.join(str(c) for c in cases)}")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError(f"select_n selector must be scalar or have the shape of the "
                    f"cases {cases[0].shape}, got {which.shape}")
  return ShapedArray(cases[0].shape, cases[0].dtype, all(c.weak_type for c in cases))


# --- casts ------------------------------------------------------------------------------------

convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.elementwise = True


def _float_to_int(x, dtype):
  """Float to integer as XLA on CPU: truncate toward zero, saturate, NaN to 0."""
  info = np.iinfo(dtype)
  t = np.trunc(x.astype(np.float64))
  # float(info.max) may round up (to 2**63 for int64), so compare strictly.
  lo, hi = float(info.min), float(info.max)
  in_range = (t > lo) & (t < hi)
  out = np.where(in_range, t, 0).astype(dtype)
  out = np.where(t >= hi, info.max, out)
  return np.where(t <= lo, info.min, out).astype(dtype)


@convert_element_type_p.def_impl
def _convert_element_type(operand, *, new_dtype, weak_type):
  """Casts `operand` to `new_dtype` (shape unchanged).

  Float to integer truncates toward zero and saturates at the integer's
  limits; NaN becomes 0 (so `[254., 255., 256., 257.]` to uint8 is
  `[254, 255, 255, 255]`, unlike NumPy's wrap-around). Integer to narrower
  integer wraps modulo 2**bits. Complex to a real type or bool keeps the
  real part (as XLA's conversion), then anything to bool is `x != 0` (NaN is
  True; so 1j is False). Float to float rounds to nearest even
  (overflowing to ±inf). `weak_type` marks the result weakly typed.
  """
  new_dtype = np.dtype(new_dtype)
  return _in_blocks(_cast, new_dtype, (np.asarray(operand),), {"new_dtype": new_dtype})


def _cast(operand, new_dtype):
  if dtypes.is_complex(operand.dtype) and not dtypes.is_complex(new_dtype):
    operand = operand.real
  if new_dtype == dtypes.bool_:
    return operand != 0
  if dtypes.is_inexact(operand.dtype) and dtypes.is_integer(new_dtype):
    return _float_to_int(operand, new_dtype)
  return as_dtype(operand, new_dtype)


@convert_element_type_p.def_abstract_eval
def _convert_element_type_shape_rule(operand, *, new_dtype, weak_type):
  if operand.dtype != new_dtype and dtypes.is_extended(operand.dtype):
    raise ValueError(f"Cannot call convert_element_type on dtype {operand.dtype}")
  if operand.dtype != new_dtype and dtypes.is_extended(new_dtype):
    raise ValueError(f"Cannot convert_element_type to dtype={new_dtype}")
  if not dtypes.is_extended(new_dtype) and np.dtype(new_dtype) not in dtypes.SUPPORTED_DTYPES:
    raise TypeError(f"convert_element_type: unsupported dtype {np.dtype(new_dtype)}")
  return ShapedArray(operand.shape, new_dtype, weak_type)


bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_shape(shape, old_dtype, new_dtype):
  old_bits, new_bits = _bits(old_dtype), _bits(new_dtype)
  if old_bits == new_bits:
    return tuple(shape)
  if old_bits > new_bits:
    return (*shape, old_bits // new_bits)
  last = shape[-1] if shape else 1
  if last * old_bits != new_bits:
    raise ValueError(f"Attempting to convert array of shape {tuple(shape)} from "
                     f"{np.dtype(old_dtype).name} of size {old_bits} bits to "
                     f"{np.dtype(new_dtype).name} of size {new_bits}, bits but "
                     f"{last} * {old_bits} != {new_bits}")
  return tuple(shape[:-1])


@bitcast_convert_type_p.def_impl
def _bitcast_convert_type_reference(operand, *, new_dtype):
  """Reinterprets the bits of `operand` as `new_dtype` (no value conversion).

  Same width: same shape. Narrower target: a trailing dimension of size
  old_bits // new_bits is added, holding the pieces of each element from the
  least significant (little-endian order). Wider target: the last dimension
  must have size new_bits // old_bits and is removed. bool and complex only
  bitcast to themselves. The result is never weakly typed.
  """
  new_dtype = np.dtype(new_dtype)
  shape = _bitcast_shape(operand.shape, operand.dtype, new_dtype)
  flat = np.ascontiguousarray(operand).reshape(-1)
  return flat.view(new_dtype).reshape(shape)


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_convert_type_shape_rule(operand, *, new_dtype):
  old, new = operand.dtype, np.dtype(new_dtype)
  special = lambda d: dtypes.is_bool(d) or dtypes.is_complex(d)
  if (special(old) or special(new)) and old != new:
    raise TypeError("lax.bitcast_convert_type does not support bool or complex values "
                    "unless the operand and destination types match. Got operand "
                    f"dtype={old.name}, new_dtype={new.name}. Consider using the "
                    "arr.view() method instead.")
  return ShapedArray(_bitcast_shape(operand.shape, old, new), new, False)


reduce_precision_p = ElementwisePrimitive("reduce_precision")


@reduce_precision_p.def_impl
def _reduce_precision_reference(operand, *, exponent_bits, mantissa_bits):
  """Rounds `operand` to a float format with `exponent_bits` and
  `mantissa_bits`, keeping its dtype (XLA's ReducePrecision).

  The mantissa is rounded to nearest even. Values too large for the reduced
  exponent become ±inf; values too small for its normal range (including
  what would be its subnormals) become ±0. NaN stays NaN (it becomes inf
  when mantissa_bits is 0). E.g. (8, 7) rounds float32 to bfloat16 values.
  """
  dtype = operand.dtype
  info = dtypes.finfo(dtype)
  src_exponent, src_mantissa, nbits = info.nexp, info.nmant, _bits(dtype)
  udt = _unsigned(dtype)
  const = lambda v: np.asarray(v).astype(udt)
  bits = np.array(operand, order="C").view(udt)
  if mantissa_bits < src_mantissa:
    drop = src_mantissa - mantissa_bits
    last_kept = const(1 << drop)
    # Round to nearest, ties to even: add 0111... plus the last kept bit.
    bias = ((bits & last_kept) >> const(drop)) + const((1 << (drop - 1)) - 1)
    bits = (bits + bias) & ~const((1 << drop) - 1)
  if exponent_bits < src_exponent:
    exponent_mask = const(((1 << src_exponent) - 1) << src_mantissa)
    src_bias = (1 << (src_exponent - 1)) - 1
    reduced_bias = (1 << (exponent_bits - 1)) - 1
    exponent = bits & exponent_mask
    signed_zero = bits & const(1 << (nbits - 1))
    bits = np.where(exponent > const((src_bias + reduced_bias) << src_mantissa),
                    signed_zero | exponent_mask, bits)
    bits = np.where(exponent <= const((src_bias - reduced_bias) << src_mantissa),
                    signed_zero, bits)
  result = np.asarray(bits, udt).view(dtype)
  nan_result = operand if mantissa_bits > 0 else np.asarray(np.inf, dtype)
  return np.where(np.isnan(operand), nan_result, result).astype(dtype)


@reduce_precision_p.def_abstract_eval
def _reduce_precision_shape_rule(operand, *, exponent_bits, mantissa_bits):
  if exponent_bits < 1:
    raise ValueError(f"reduce_precision: exponent_bits must be at least 1, got {exponent_bits}")
  if mantissa_bits < 0:
    raise ValueError(f"reduce_precision: mantissa_bits must be non-negative, got {mantissa_bits}")
  return naryop_aval("reduce_precision", [operand], FLOAT)


# --- complex numbers --------------------------------------------------------------------------

def _complex(x, y):
  """The complex number x + i y, from float32 (complex64) or float64 (complex128)
  parts. Infinite parts stay exact (no 0 * inf = NaN)."""
  x, y = np.broadcast_arrays(_wide(x), _wide(y))
  out = np.empty(x.shape, np.complex128)
  out.real, out.imag = x, y
  return out


def _real(x):
  """The real part of a complex number (float32 for complex64)."""
  return np.real(x)


def _imag(x):
  """The imaginary part of a complex number (float32 for complex64)."""
  return np.imag(x)


def _conj(x, *, input_dtype):
  """Complex conjugate. A float32 (float64) operand gives a complex64
  (complex128) result with zero imaginary part. `input_dtype` records the
  operand's dtype (as in JAX)."""
  return np.conj(_wide(x).astype(np.complex128))


def _copy(x):
  """A copy of x: same values, dtype, shape and weak type (key arrays too)."""
  return np.array(x, copy=True)


complex_p = binop("complex", COMPLEX_PARTS, _complex, dtypes.to_complex_dtype)
real_p = unop("real", COMPLEX, _real, dtypes.to_real_dtype)
imag_p = unop("imag", COMPLEX, _imag, dtypes.to_real_dtype)
conj_p = unop("conj", COMPLEX_PARTS + COMPLEX, _conj, dtypes.to_complex_dtype)
copy_p = unop("copy", ANY + EXTENDED, _copy)


# --- user-facing functions (lax.*) ---------------------------------------------------------------

def neg(x):
  return neg_p.bind(x)


def sign(x):
  return sign_p.bind(x)


def abs(x):
  return abs_p.bind(x)


def floor(x):
  return floor_p.bind(x)


def ceil(x):
  return ceil_p.bind(x)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
  """Rounds to the nearest integer; ties away from zero unless
  `rounding_method=RoundingMethod.TO_NEAREST_EVEN`."""
  return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


def is_finite(x):
  return is_finite_p.bind(x)


def exp(x, *, accuracy=None):
  return exp_p.bind(x, accuracy=accuracy)


def exp2(x, *, accuracy=None):
  return exp2_p.bind(x, accuracy=accuracy)


def expm1(x, *, accuracy=None):
  return expm1_p.bind(x, accuracy=accuracy)


def log(x, *, accuracy=None):
  return log_p.bind(x, accuracy=accuracy)


def log1p(x, *, accuracy=None):
  return log1p_p.bind(x, accuracy=accuracy)


def logistic(x, *, accuracy=None):
  return logistic_p.bind(x, accuracy=accuracy)


def sqrt(x, *, accuracy=None):
  return sqrt_p.bind(x, accuracy=accuracy)


def rsqrt(x, *, accuracy=None):
  return rsqrt_p.bind(x, accuracy=accuracy)


def cbrt(x, *, accuracy=None):
  return cbrt_p.bind(x, accuracy=accuracy)


def square(x):
  return square_p.bind(x)


def integer_pow(x, y):
  """x ** y for a static Python int y (binary exponentiation)."""
  return integer_pow_p.bind(x, y=operator.index(y))


def reciprocal(x):
  """1 / x, as integer_pow(x, -1)."""
  return integer_pow(x, -1)


def pow(x, y):
  return pow_p.bind(x, y)


def sin(x, *, accuracy=None):
  return sin_p.bind(x, accuracy=accuracy)


def cos(x, *, accuracy=None):
  return cos_p.bind(x, accuracy=accuracy)


def tan(x, *, accuracy=None):
  return tan_p.bind(x, accuracy=accuracy)


def tanh(x, *, accuracy=None):
  return tanh_p.bind(x, accuracy=accuracy)


def asin(x):
  return asin_p.bind(x)


def acos(x):
  return acos_p.bind(x)


def atan(x):
  return atan_p.bind(x)


def atan2(x, y):
  return atan2_p.bind(x, y)


def sinh(x):
  return sinh_p.bind(x)


def cosh(x):
  return cosh_p.bind(x)


def asinh(x):
  return asinh_p.bind(x)


def acosh(x):
  return acosh_p.bind(x)


def atanh(x):
  return atanh_p.bind(x)


def add(x, y):
  return add_p.bind(x, y)


def sub(x, y):
  return sub_p.bind(x, y)


def mul(x, y, *, out_dtype=None):
  out_dtype = None if out_dtype is None else _dtype_argument(out_dtype)
  return mul_p.bind(x, y, out_dtype=out_dtype)


def div(x, y):
  return div_p.bind(x, y)


def rem(x, y):
  return rem_p.bind(x, y)


def max(x, y):
  return max_p.bind(x, y)


def min(x, y):
  return min_p.bind(x, y)


def nextafter(x1, x2):
  return nextafter_p.bind(x1, x2)


def bitwise_not(x):
  return not_p.bind(x)


def bitwise_and(x, y):
  return and_p.bind(x, y)


def bitwise_or(x, y):
  return or_p.bind(x, y)


def bitwise_xor(x, y):
  return xor_p.bind(x, y)


def shift_left(x, y):
  return shift_left_p.bind(x, y)


def shift_right_arithmetic(x, y):
  return shift_right_arithmetic_p.bind(x, y)


def shift_right_logical(x, y):
  return shift_right_logical_p.bind(x, y)


def population_count(x):
  return population_count_p.bind(x)


def clz(x):
  return clz_p.bind(x)


def eq(x, y):
  return eq_p.bind(x, y)


def ne(x, y):
  return ne_p.bind(x, y)


def lt(x, y):
  return lt_p.bind(x, y)


def le(x, y):
  return le_p.bind(x, y)


def gt(x, y):
  return gt_p.bind(x, y)


def ge(x, y):
  return ge_p.bind(x, y)


def clamp(min, x, max):
  """`x` limited to [min, max]: min(max(x, min), max)."""
  return clamp_p.bind(min, x, max)


def select_n(which, *cases):
  return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
  """`on_true` where `pred` else `on_false` (select_n with the cases swapped)."""
  return select_n_p.bind(pred, on_false, on_true)


def convert_element_type(operand, new_dtype, weak_type=False):
  """Casts `operand` to `new_dtype` (canonicalized for x64).

  A cast of a constant (not a tracer) is folded: computed right away, so a
  traced program sees the converted constant rather than a cast equation.
  Casting complex to real warns (ComplexWarning), as JAX does.
  """
  new_dtype = _dtype_argument(new_dtype)
  if isinstance(operand, (Tracer, ConcreteArray)):
    aval = operand.aval
    if (aval.dtype, aval.weak_type) == (new_dtype, bool(weak_type)):
      return operand
  old_dtype = dtypes.dtype(operand)
  if dtypes.is_complex(old_dtype) and not dtypes.is_complex(new_dtype):
    warnings.warn("Casting complex values to real discards the imaginary part",
                  np.exceptions.ComplexWarning, stacklevel=2)
  if isinstance(operand, Tracer):
    return convert_element_type_p.bind(operand, new_dtype=new_dtype,
                                       weak_type=bool(weak_type))
  if type(operand) is int:
    operand = np.asarray(operand).astype(new_dtype)  # big Python ints fit the target
  with eval_context():
    return convert_element_type_p.bind(operand, new_dtype=new_dtype,
                                       weak_type=bool(weak_type))


def bitcast_convert_type(operand, new_dtype):
  new_dtype = _dtype_argument(new_dtype)
  return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def reduce_precision(operand, exponent_bits, mantissa_bits):
  return reduce_precision_p.bind(operand, exponent_bits=operator.index(exponent_bits),
                                 mantissa_bits=operator.index(mantissa_bits))


def complex(x, y):
  return complex_p.bind(x, y)


def real(x):
  return real_p.bind(x)


def imag(x):
  return imag_p.bind(x)


def conj(x):
  return conj_p.bind(x, input_dtype=dtypes.dtype(x))



# --- differentiation rules ---------------------------------------------------------------------
# The same math, and the same primitives, as JAX's rules. Tangents of
# broadcast operands are broadcast up (`_maybe_broadcast`); cotangents are
# summed back down to the operand's shape (`_unbroadcast`).

def _full_like(x, value):
  from refimpl.lax.shapes import full_like
  return full_like(x, value)


def _replace_zero(x):
  """x, with its zeros replaced by ones (to keep a formula finite where unused)."""
  return select(eq(x, const(x, 0)), _full_like(x, 1), x)


def _maybe_broadcast(shape, x):
  """x broadcast to `shape` (x is rank 0, or of equal rank with size-1 dims)."""
  from refimpl.lax.shapes import broadcast_in_dim, reshape
  x_shape = get_aval(x).shape
  if x_shape == tuple(shape):
    return x
  if not x_shape:
    return broadcast_in_dim(x, shape, ())
  kept = [i for i, (a, b) in enumerate(zip(x_shape, shape)) if a == b]
  return broadcast_in_dim(reshape(x, [x_shape[i] for i in kept]), shape, kept)


def _broadcast_shape(*operands):
  return broadcasting_shape("broadcast", *map(get_aval, operands))


def _unbroadcast(aval, x):
  """The cotangent `x` of a broadcast result, summed to the operand's `aval.shape`."""
  from refimpl.lax.reductions import reduce_sum
  from refimpl.lax.shapes import reshape
  x_shape = get_aval(x).shape
  if x_shape == aval.shape:
    return x
  if not aval.shape:
    return reduce_sum(x, tuple(range(len(x_shape))))
  dims = tuple(i for i, (a, b) in enumerate(zip(x_shape, aval.shape)) if a != b)
  return reshape(reduce_sum(x, dims), aval.shape)


for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p, not_p, and_p, or_p, xor_p,
           shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
           population_count_p, clz_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p,
           bitcast_convert_type_p):
  ad.defjvp_zero(_p)


def _bitcast_convert_type_batch(args, dims, *, new_dtype):
  # A wider dtype consumes each member's last axis: the batch axis must not be last.
  (x,), (d,) = args, dims
  aval = get_aval(x)
  if _bits(new_dtype) > _bits(aval.dtype) and d == aval.ndim - 1:
    x, d = batching.moveaxis(x, d, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_convert_type_batch

ad.deflinear(neg_p, lambda ct: [neg(ct)])
ad.deflinear(copy_p, lambda ct: [copy_p.bind(ct)])
ad.deflinear(reduce_precision_p, lambda ct, **params: [reduce_precision_p.bind(ct, **params)])
batching.defvectorized(reduce_precision_p)


def _abs_jvp(g, ans, x):
  dtype = get_aval(x).dtype
  if dtypes.is_complex(dtype):   # Re(g conj(x) / |x|), and 0 at x == 0
    return real(mul(g, div(conj(x), _replace_zero(convert_element_type(ans, dtype)))))
  return select(ge(x, const(x, 0)), g, neg(g))   # so grad(abs)(0.) is 1


ad.defjvp2(abs_p, _abs_jvp)

# Exponentials and logarithms. `accuracy=HIGHEST` picks JAX's more accurate
# formulas for expm1, tanh and logistic.
ad.defjvp2(exp_p, lambda g, ans, x, accuracy: mul(g, ans))
ad.defjvp2(exp2_p, lambda g, ans, x, accuracy: mul(log(const(x, 2)), mul(g, ans)))
ad.defjvp2(expm1_p, lambda g, ans, x, accuracy: (
    mul(g, exp(x, accuracy=accuracy)) if accuracy is AccuracyMode.HIGHEST
    else mul(g, add(ans, const(ans, 1)))))
ad.defjvp(log_p, lambda g, x, accuracy: div(g, x))
ad.defjvp(log1p_p, lambda g, x, accuracy: div(g, add(x, const(x, 1))))
ad.defjvp2(logistic_p, lambda g, ans, x, accuracy: (
    mul(g, mul(ans, logistic(neg(x)))) if accuracy is AccuracyMode.HIGHEST
    else mul(g, mul(ans, sub(const(ans, 1), ans)))))
ad.defjvp2(tanh_p, lambda g, ans, x, accuracy: (
    # 1 - tanh(x)**2 == 4 logistic(2x) logistic(-2x)
    mul(g, mul(const(x, 4), mul(logistic(mul(const(x, 2), x), accuracy=accuracy),
                                 logistic(mul(const(x, -2), x), accuracy=accuracy))))
    if accuracy is AccuracyMode.HIGHEST
    else mul(add(g, mul(g, ans)), sub(const(x, 1), ans))))

# Powers and roots.
ad.defjvp2(sqrt_p, lambda g, ans, x, accuracy: mul(g, div(const(x, 0.5), ans)))
ad.defjvp2(rsqrt_p, lambda g, ans, x, accuracy: mul(g, mul(const(x, -0.5), div(ans, x))))
ad.defjvp2(cbrt_p, lambda g, ans, x, accuracy: mul(
    g, mul(const(x, 1 / 3), integer_pow(ans, -2))))
ad.defjvp2(square_p, lambda g, ans, x: mul(g, mul(const(x, 2), x)))
ad.defjvp(integer_pow_p, lambda g, x, *, y: (
    _full_like(g, 0) if y == 0 else mul(g, mul(const(x, y), integer_pow(x, y - 1)))))


def _pow_jvp_lhs(g, ans, x, y):
  # y x**(y-1); for an integer exponent, 0 where y == 0 (even at x == 0).
  if dtypes.is_integer(get_aval(y).dtype):
    shape = get_aval(ans).shape
    x = _maybe_broadcast(shape, x)
    y = _maybe_broadcast(shape, convert_element_type(y, get_aval(x).dtype))
    jac = select(eq(y, const(y, 0)), _full_like(y, 0),
                 mul(_replace_zero(y), pow(x, sub(y, _full_like(y, 1)))))
  else:
    jac = mul(y, pow(x, sub(y, _full_like(y, 1))))
  return mul(g, jac)


def _pow_jvp_rhs(g, ans, x, y):
  # log(x) x**y, taking log(0) as 0 (so the derivative at x == 0 is 0).
  return convert_element_type(mul(g, mul(log(_replace_zero(x)), ans)), get_aval(y).dtype)


ad.defjvp2(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)

# Trigonometric and hyperbolic functions.
ad.defjvp(sin_p, lambda g, x, accuracy: mul(g, cos(x, accuracy=accuracy)))
ad.defjvp(cos_p, lambda g, x, accuracy: neg(mul(g, sin(x, accuracy=accuracy))))
ad.defjvp2(tan_p, lambda g, ans, x, accuracy: mul(g, add(const(x, 1), square(ans))))
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(const(x, 1), square(x)))))
ad.defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(sub(const(x, 1), square(x))))))
ad.defjvp(atan_p, lambda g, x: div(g, add(const(x, 1), square(x))))
ad.defjvp(atan2_p,   # atan2(x, y) is the angle of (y, x)
          lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
          lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), const(x, 1)))))
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(square(x), const(x, 1)))))
ad.defjvp(atanh_p, lambda g, x: mul(reciprocal(add(const(x, 1), x)),
                                    div(g, sub(const(x, 1), x))))


# Arithmetic.

def _add_jvp(primals, tangents):
  x, y = primals
  xdot, ydot = tangents
  out = add(x, y)
  shape = get_aval(out).shape
  if isinstance(xdot, ad.Zero):
    return out, _maybe_broadcast(shape, ydot)
  if isinstance(ydot, ad.Zero):
    return out, _maybe_broadcast(shape, xdot)
  return out, add(xdot, ydot)


def _sub_jvp(primals, tangents):
  x, y = primals
  xdot, ydot = tangents
  out = sub(x, y)
  shape = get_aval(out).shape
  if isinstance(xdot, ad.Zero):
    return out, _maybe_broadcast(shape, neg(ydot))
  if isinstance(ydot, ad.Zero):
    return out, _maybe_broadcast(shape, xdot)
  return out, sub(xdot, ydot)


def _add_sub_transpose(sign):
  def transpose(ct, x, y):
    ct_y = ct if sign > 0 else neg(ct)
    return [_unbroadcast(x.aval, ct) if ad.is_undefined_primal(x) else None,
            _unbroadcast(y.aval, ct_y) if ad.is_undefined_primal(y) else None]
  return transpose


ad.primitive_jvps[add_p] = _add_jvp
ad.deftranspose(add_p, _add_sub_transpose(1))
ad.primitive_jvps[sub_p] = _sub_jvp
ad.deftranspose(sub_p, _add_sub_transpose(-1))

ad.defjvp(mul_p,
          lambda xdot, x, y, out_dtype: mul(xdot, y, out_dtype=out_dtype),
          lambda ydot, x, y, out_dtype: mul(x, ydot, out_dtype=out_dtype))


def _mul_transpose(ct, x, y, *, out_dtype):
  # mul is linear in whichever operand is undefined (the other is a residual).
  if ad.is_undefined_primal(x):
    ct_x = mul(ct, y, out_dtype=None if out_dtype is None else x.aval.dtype)
    return [_unbroadcast(x.aval, ct_x), None]
  ct_y = mul(x, ct, out_dtype=None if out_dtype is None else y.aval.dtype)
  return [None, _unbroadcast(y.aval, ct_y)]


ad.deftranspose(mul_p, _mul_transpose)
batching.defbroadcasting(mul_p)   # (mul is not made by `binop`: it has out_dtype)

ad.defjvp(div_p,
          lambda g, x, y: div(g, y),
          lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))
ad.deftranspose(div_p, lambda ct, x, y: [_unbroadcast(x.aval, div(ct, y)), None])

ad.defjvp(rem_p,   # rem(x, y) == x - y trunc(x / y)
          lambda g, x, y: _maybe_broadcast(_broadcast_shape(x, y), g),
          lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))))


def _balanced_eq(x, z, y):
  """1 where x == z, but 1/2 where y == z too: max and min split ties evenly."""
  return div(select(eq(x, z), _full_like(z, 1), _full_like(z, 0)),
             select(eq(y, z), _full_like(z, 2), _full_like(z, 1)))


for _p in (max_p, min_p):
  ad.defjvp2(_p,
             lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
             lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))

# JAX has no rule for nextafter: differentiating it raises.
ad.defjvp_unsupported(nextafter_p, NotImplementedError,
                      "Differentiation rule for 'nextafter' not implemented")


def _clamp_tangent(g, x):
  return _maybe_broadcast(get_aval(x).shape, g)   # a scalar bound's tangent


ad.defjvp(clamp_p,
          lambda g, lo, x, hi: select(bitwise_and(gt(lo, x), lt(lo, hi)),
                                      _clamp_tangent(g, x), _full_like(x, 0)),
          lambda g, lo, x, hi: select(bitwise_and(gt(x, lo), lt(x, hi)), g, _full_like(x, 0)),
          lambda g, lo, x, hi: select(lt(hi, x), _clamp_tangent(g, x), _full_like(x, 0)))


def _member_shape(x, d):
  shape = get_aval(x).shape
  return shape if d is None else shape[:d] + shape[d + 1:]


def _common_batch(args, dims, member_shape, scalar_ok):
  """The operands of clamp or select_n (each a scalar or of `member_shape`
  per member) as batches of that shape, batch axis at one place: that of the
  first batched operand of full rank, so it need not move (else 0).
  Unbatched scalars stay as they are where `scalar_ok`. Returns (operands, dim)."""
  from refimpl.lax.shapes import broadcast_in_dim
  size = next(get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  dim = next((d for x, d in zip(args, dims)
              if d is not None and get_aval(x).ndim == len(member_shape) + 1), 0)
  shape = (*member_shape[:dim], size, *member_shape[dim:])

  def fit(x, d, keep_scalar):
    if d is None:
      return x if keep_scalar and not get_aval(x).shape else batching.broadcast(x, size, dim)
    if get_aval(x).ndim < len(shape):   # one scalar per member
      return broadcast_in_dim(x, shape, (dim,))
    return batching.moveaxis(x, d, dim)
  return [fit(*a) for a in zip(args, dims, scalar_ok)], dim


def _clamp_batch(args, dims):
  (lo, x, hi), dim = _common_batch(args, dims, _member_shape(args[1], dims[1]),
                                   (True, False, True))
  return clamp(lo, x, hi), dim


batching.primitive_batchers[clamp_p] = _clamp_batch


def _select_n_jvp(primals, tangents):
  which, *cases = primals
  case_tangents = tangents[1:]
  out = select_n(which, *cases)
  if all(isinstance(t, ad.Zero) for t in case_tangents):
    return out, ad.Zero(ad.tangent_aval(get_aval(out)))
  return out, select_n(which, *map(ad.instantiate_zeros, case_tangents))


def _select_n_transpose(ct, which, *cases):
  # Case i receives the cotangent where it was picked, zeros elsewhere.
  zeros = _full_like(ct, 0)
  boolean = get_aval(which).dtype == dtypes.bool_
  cts = [None]
  for i, case in enumerate(cases):
    if not ad.is_undefined_primal(case):
      cts.append(None)
    elif boolean:
      cts.append(select_n(which, ct, zeros) if i == 0 else select_n(which, zeros, ct))
    else:
      cts.append(select(eq(which, const(which, i)), ct, zeros))
  return cts


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.deftranspose(select_n_p, _select_n_transpose)


def _select_n_batch(args, dims):
  operands, dim = _common_batch(args, dims, _member_shape(args[1], dims[1]),
                                (True,) + (False,) * (len(args) - 1))
  return select_n(*operands), dim


batching.primitive_batchers[select_n_p] = _select_n_batch


# Casts: differentiable between inexact dtypes only (float0 tangents otherwise).

def _convert_element_type_jvp(t, ans, operand, *, new_dtype, weak_type):
  if not dtypes.is_inexact(new_dtype):
    return ad.Zero(ad.tangent_aval(get_aval(ans)))
  return convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_transpose(ct, operand, *, new_dtype, weak_type):
  aval = operand.aval
  if not dtypes.is_inexact(aval.dtype):
    return [ad.Zero(ad.tangent_aval(aval))]
  return [convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)]


ad.defjvp2(convert_element_type_p, _convert_element_type_jvp)
ad.deftranspose(convert_element_type_p, _convert_element_type_transpose)
batching.defvectorized(convert_element_type_p)


# Complex parts. JAX transposes complex-linear maps without conjugating
# (mul(x, c) transposes to mul(ct, c)), so real's transpose is complex(ct, 0),
# imag's complex(0, -ct) (ct times -1j), complex's (Re ct, -Im ct).

ad.deflinear2(real_p, lambda ct, x: [complex(ct, const(ct, 0))])
ad.deflinear2(imag_p, lambda ct, x: [complex(const(ct, 0), neg(ct))])


def _complex_transpose(ct, x, y):
  return [_unbroadcast(x.aval, real(ct)) if ad.is_undefined_primal(x) else None,
          _unbroadcast(y.aval, imag(neg(ct))) if ad.is_undefined_primal(y) else None]


ad.deflinear2(complex_p, _complex_transpose)
ad.deflinear(conj_p, lambda ct, *, input_dtype: [
    conj(ct) if dtypes.is_complex(input_dtype) else real(ct)])
