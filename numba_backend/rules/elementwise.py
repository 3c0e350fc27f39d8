"""Scalar lowering rules of the elementwise primitives (refimpl/lax/elementwise.py).

Each rule gives the source of an expression computing one element of the
result from the operands' element expressions, as the reference rule does:
exact functions and IEEE +, -, *, / and sqrt of reals in the operands'
dtype, any other function in float64 (complex128) rounded once to the
result dtype (`cast`, by way of float32 for 16-bit floats); integers wrap.
"""

import ctypes
import ctypes.util
import math

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic
from numpy._core._multiarray_umath import __cpu_features__

from refimpl import dtypes
from refimpl.lax import elementwise as lax
from numba_backend.lower import (cast, fma_p, register, register_elementwise, storage_dtype,
                                 type_source)
from numba_backend import checked, float32, scalars as S
from numba_backend.scalars import scalar_jit


_NUMPY_SIMD_FMA = bool(__cpu_features__.get("AVX512F")
                       or (__cpu_features__.get("AVX2") and __cpu_features__.get("FMA3")))
"""Whether NumPy's SIMD loops of complex * and abs fuse their multiply-adds on this CPU."""


def _dtype(ctx, i=0):
  return np.dtype(ctx.avals_in[i].dtype)


def _out(ctx):
  return np.dtype(ctx.avals_out[0].dtype)


def _wide(x, dtype):
  """The float64 (complex128) value of a floating operand; others unchanged."""
  if dtypes.is_float(dtype):
    return f"np.float64({x})"
  if dtypes.is_complex(dtype):
    return f"np.complex128({x})"
  return x


def _bits(dtype):
  return np.dtype(dtype).itemsize * 8


# --- arithmetic ---------------------------------------------------------------------------

@register_elementwise(lax.neg_p)
def _neg(ctx, x):
  return cast(f"-{x}", _out(ctx))


@register_elementwise(lax.sign_p)
def _sign(ctx, x):
  dtype = _dtype(ctx)
  if dtypes.is_unsigned(dtype):
    return cast(f"{x} != 0", dtype)
  if dtypes.is_float(dtype):
    return cast(f"S.float_sign({x})", dtype)
  if dtypes.is_complex(dtype):
    return cast(f"{ctx.function(complex_sign)}({_wide(x, dtype)})", dtype)
  return cast(f"(1 if {x} > 0 else (-1 if {x} < 0 else 0))", dtype)


@register_elementwise(lax.abs_p)
def _abs(ctx, x):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"{ctx.function(complex_abs)}({_wide(x, dtype)})", _out(ctx))
  return cast(f"abs({x})", _out(ctx))


@register_elementwise(lax.floor_p)
def _floor(ctx, x):
  return cast(f"np.floor({x})", _out(ctx))


@register_elementwise(lax.ceil_p)
def _ceil(ctx, x):
  return cast(f"np.ceil({x})", _out(ctx))


@register_elementwise(lax.round_p)
def _round(ctx, x, *, rounding_method):
  if rounding_method == lax.RoundingMethod.TO_NEAREST_EVEN:
    return cast(f"np.rint({x})", _out(ctx))
  return cast(f"S.round_half_away({x})", _out(ctx))


@register_elementwise(lax.is_finite_p)
def _is_finite(ctx, x):
  return f"np.isfinite({x})"


def _ieee(operator):
  """+ or - of two operands in their dtype (exact per part for complex numbers)."""
  def rule(ctx, x, y):
    return cast(f"{x} {operator} {y}", _out(ctx))
  return rule


def _product(ctx, x, y, dtype):
  """Source of x * y rounded to `dtype`: the IEEE product of reals; of
  complex numbers NumPy's (in complex128)."""
  if dtypes.is_complex(dtype):
    return cast(f"{ctx.function(numpy_complex_mul)}({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)
  return cast(f"{x} * {y}", dtype)


register_elementwise(lax.add_p)(_ieee("+"))
register_elementwise(lax.sub_p)(_ieee("-"))


@register_elementwise(lax.mul_p)
def _mul(ctx, x, y, out_dtype=None):
  if out_dtype is not None:
    x, y = (_convert(x, _dtype(ctx, i), _out(ctx)) for i, x in enumerate((x, y)))
  return _product(ctx, x, y, _out(ctx))


@register_elementwise(fma_p)
def _fma(ctx, a, b, z, *, negate_product, negate_addend):
  return (f"S.fma({'-' if negate_product else ''}{a}, {b}, "
          f"{'-' if negate_addend else ''}{z})")


@scalar_jit
def signed_div(x, y):
  """int64 x / y truncated toward zero; x / 0 is -1 and MIN / -1 is MIN (XLA
  on CPU; narrower dtypes get it by wrapping -MIN to their width)."""
  if y == 0:
    return np.int64(-1)
  if y == -1:
    return np.int64(0) - x if x != np.int64(-9223372036854775808) else x
  q = x // y
  if x % y != 0 and (x < 0) != (y < 0):
    q += 1
  return q


@scalar_jit
def signed_rem(x, y):
  """The remainder of truncated division (int64; sign of x); rem(x, 0) is x."""
  if y == 0:
    return x
  if y == -1:
    return np.int64(0)
  return x - signed_div(x, y) * y


@scalar_jit
def unsigned_div(x, y):
  """uint64 x / y; x / 0 is all ones (the maximum, once narrowed)."""
  return x // y if y != 0 else np.uint64(0xFFFFFFFFFFFFFFFF)


@scalar_jit
def unsigned_rem(x, y):
  return x % y if y != 0 else x


_INTEGER_DIVISION = {("div", False): signed_div, ("rem", False): signed_rem,
                     ("div", True): unsigned_div, ("rem", True): unsigned_rem}


def _integer_division(ctx, name, x, y):
  """div or rem of integers, computed on their 64-bit words and narrowed
  (the word typed first: numba's CUDA simulator, running a kernel's Python,
  has a Python int, which it would not narrow)."""
  dtype = _dtype(ctx)
  unsigned = dtypes.is_unsigned(dtype)
  word = "np.uint64" if unsigned else "np.int64"
  fn = ctx.function(_INTEGER_DIVISION[name, unsigned])
  return cast(f"{word}({fn}({word}({x}), {word}({y})))", dtype)


@register_elementwise(lax.div_p)
def _div(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_integer(dtype):
    return _integer_division(ctx, "div", x, y)
  if dtypes.is_complex(dtype):
    return cast(f"S.complex_div({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)
  return cast(f"{x} / {y}", dtype)


@register_elementwise(lax.rem_p)
def _rem(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_integer(dtype):
    return _integer_division(ctx, "rem", x, y)
  return cast(f"np.fmod({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)


def _extremum(which):
  def rule(ctx, x, y):
    dtype = _dtype(ctx)
    if dtypes.is_inexact(dtype):
      prefix = "complex" if dtypes.is_complex(dtype) else "nan"
      return cast(f"S.{prefix}_{which}({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)
    if dtype == np.bool_:
      return f"({x} {'|' if which == 'max' else '&'} {y})"
    return cast(f"{which}({x}, {y})", dtype)
  return rule


register_elementwise(lax.max_p)(_extremum("max"))
register_elementwise(lax.min_p)(_extremum("min"))


@register_elementwise(lax.nextafter_p)
def _nextafter(ctx, x, y):
  dtype = _dtype(ctx)
  if dtype.itemsize == 2:
    kind = "f16" if dtype == np.float16 else "bf16"
    return f"S.nextafter_{kind}({x}, {y})"
  return f"np.nextafter({x}, {y})"


# --- powers and roots ------------------------------------------------------------------------

@register_elementwise(lax.sqrt_p)
def _sqrt(ctx, x, accuracy=None):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"{ctx.function(csqrt)}({_wide(x, dtype)})", dtype)
  return cast(f"np.sqrt({x})", dtype)


@register_elementwise(lax.rsqrt_p)
def _rsqrt(ctx, x, accuracy=None):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"{ctx.function(complex_rsqrt)}({_wide(x, dtype)})", dtype)
  return cast(f"1.0 / np.sqrt({_wide(x, dtype)})", dtype)


@register_elementwise(lax.square_p)
def _square(ctx, x):
  return _product(ctx, x, x, _dtype(ctx))


@register_elementwise(lax.integer_pow_p)
def _integer_pow(ctx, x, *, y):
  """Binary exponentiation, each product rounded to x's dtype (the reference's order)."""
  dtype = _dtype(ctx)
  if y == 0:
    return cast("1", dtype)
  mul = lambda a, b: _product(ctx, a, b, dtype)
  base, n, acc = x, abs(y), None
  while n:
    if n & 1:
      acc = base if acc is None else _named(ctx, mul(acc, base))
    n >>= 1
    if n:
      base = _named(ctx, mul(base, base))
  if y < 0:   # 1 / x**|y| (inexact dtypes only)
    if dtypes.is_complex(dtype):
      return cast(f"S.complex_div(np.complex128(1), {_wide(acc, dtype)})", dtype)
    return cast(f"{cast('1', dtype)} / {acc}", dtype)
  return acc


def _named(ctx, expr):
  name = ctx.fresh("e")
  ctx.emit(f"{name} = {expr}")
  return name


@register_elementwise(lax.pow_p, costly=True)
def _pow(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"{ctx.function(complex_pow)}({_wide(x, dtype)}, "
                f"{_wide(_convert(y, _dtype(ctx, 1), dtype), dtype)})", dtype)
  return cast(f"np.power({_wide(x, dtype)}, {_wide(_convert(y, _dtype(ctx, 1), dtype), dtype)})",
              dtype)


# --- functions computed in float64 ----------------------------------------------------------

def _libm_complex(name, arity):
  """An intrinsic calling the C library's complex128 function `name`, as
  NumPy's complex functions do (bit for bit the reference's): a `double
  complex` passed and returned as two doubles (clang's lowering of the C
  ABI on x86-64 and AArch64)."""
  library = ctypes.CDLL(ctypes.util.find_library("m"))
  llvm.add_symbol(name, ctypes.cast(getattr(library, name), ctypes.c_void_p).value)

  def codegen(context, builder, signature, args):
    double = ir.DoubleType()
    fnty = ir.FunctionType(ir.LiteralStructType([double, double]), [double] * (2 * arity))
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    parts = []
    for value in args:
      z = context.make_complex(builder, types.complex128, value)
      parts += [z.real, z.imag]
    result = builder.call(fn, parts)
    out = context.make_complex(builder, types.complex128)
    out.real, out.imag = builder.extract_value(result, 0), builder.extract_value(result, 1)
    return out._getvalue()

  if arity == 1:
    def call(typingctx, z):
      return types.complex128(types.complex128), codegen
  else:
    def call(typingctx, z, w):
      return types.complex128(types.complex128, types.complex128), codegen
  call.__name__ = call.__qualname__ = name
  return intrinsic(call)


csqrt = _libm_complex("csqrt", 1)
cexp = _libm_complex("cexp", 1)
clog = _libm_complex("clog", 1)
csin = _libm_complex("csin", 1)
ccos = _libm_complex("ccos", 1)
ctan = _libm_complex("ctan", 1)
casin = _libm_complex("casin", 1)
cacos = _libm_complex("cacos", 1)
catan = _libm_complex("catan", 1)
csinh = _libm_complex("csinh", 1)
ccosh = _libm_complex("ccosh", 1)
ctanh = _libm_complex("ctanh", 1)
casinh = _libm_complex("casinh", 1)
cacosh = _libm_complex("cacosh", 1)
catanh = _libm_complex("catanh", 1)
cpow = _libm_complex("cpow", 2)


@scalar_jit
def numpy_complex_div(x, y):
  """x / y as NumPy divides complex numbers (Smith's algorithm with the
  reciprocal of the denominator; a zero divisor divides each part by 0)."""
  a, b, c, d = x.real, x.imag, y.real, y.imag
  if abs(c) >= abs(d):
    if c == 0 and d == 0:
      return S.make_complex(a / abs(c), b / abs(d))
    ratio = d / c
    scale = 1.0 / (c + d * ratio)
    return S.make_complex((a + b * ratio) * scale, (b - a * ratio) * scale)
  ratio = c / d
  scale = 1.0 / (d + c * ratio)
  return S.make_complex((a * ratio + b) * scale, (b * ratio - a) * scale)


@scalar_jit
def numpy_complex_mul(x, y):
  """x * y as NumPy multiplies complex arrays: (ac - bd) + (ad + bc) i, with
  ac and ad fused into the additions where NumPy's SIMD loop fuses them."""
  a, b, c, d = x.real, x.imag, y.real, y.imag
  if _NUMPY_SIMD_FMA:
    return S.make_complex(S.fma(a, c, -(b * d)), S.fma(a, d, b * c))
  return S.make_complex(a * c - b * d, a * d + b * c)


@scalar_jit
def _plain_complex_mul(x, y):
  """(ac - bd) + (ad + bc) i, unfused (NumPy's scalar C code, as in npy_cpow)."""
  return S.make_complex(x.real * y.real - x.imag * y.imag, x.real * y.imag + x.imag * y.real)


@scalar_jit
def complex_pow(x, y):
  """x ** y as NumPy's npy_cpow (since NumPy 1.24): 1 for y == 0; for a
  zero base 0 where y's real part is positive, else NaN; products for
  integer y in (-100, 100), else cpow."""
  if y.real == 0 and y.imag == 0:
    return np.complex128(1)
  if x.real == 0 and x.imag == 0:
    if y.real > 0:
      return np.complex128(0)
    return S.make_complex(np.nan, np.nan)
  if y.imag == 0 and y.real == np.floor(y.real) and abs(y.real) < 100:
    n = int(y.real)
    if n == 1:
      return x
    if n == 2:
      return _plain_complex_mul(x, x)
    if n == 3:
      return _plain_complex_mul(x, _plain_complex_mul(x, x))
    n = abs(n)
    power, p, mask = np.complex128(1), x, 1
    while True:
      if n & mask:
        power = _plain_complex_mul(power, p)
      mask <<= 1
      if n < mask:
        break
      p = _plain_complex_mul(p, p)
    return numpy_complex_div(np.complex128(1), power) if y.real < 0 else power
  return cpow(x, y)


@scalar_jit
def complex_abs(z):
  """The modulus as NumPy's SIMD loop computes it, larger * sqrt(1 + ratio**2)
  (ratio = smaller / larger, the multiply-add fused where NumPy's is); NaN
  if either part is NaN (the reference's rule), else inf if either is inf."""
  re, im = abs(z.real), abs(z.imag)
  if re != re or im != im:
    return np.nan
  if re == np.inf or im == np.inf:
    return np.inf
  larger, smaller = max(re, im), min(re, im)
  ratio = smaller / larger if larger != 0 else 0.0
  if _NUMPY_SIMD_FMA:
    return math.sqrt(S.fma(ratio, ratio, 1.0)) * larger
  return math.sqrt(ratio * ratio + 1.0) * larger


@scalar_jit
def complex_sign(z):
  """z / abs(z), per part; 0 at 0."""
  m = complex_abs(z)
  if m == 0:
    return np.complex128(0)
  return S.make_complex(z.real / m, z.imag / m)


@scalar_jit
def complex_expm1(z):
  """exp(z) - 1 as NumPy: expm1(a) cos(b) - 2 sin(b/2)**2 + exp(a) sin(b) i."""
  a = math.sin(z.imag / 2)
  return S.make_complex(math.expm1(z.real) * math.cos(z.imag) - 2 * a * a,
                        math.exp(z.real) * math.sin(z.imag))


@scalar_jit
def complex_exp2(z):
  """2**z as NumPy: exp(z log 2)."""
  return cexp(S.make_complex(z.real * 0.693147180559945309417232121458176568,
                             z.imag * 0.693147180559945309417232121458176568))


@scalar_jit
def complex_log(z):
  """The principal logarithm; nan + nan j where a part is NaN (the reference's rule)."""
  if z.real != z.real or z.imag != z.imag:
    return S.make_complex(np.nan, np.nan)
  return clog(z)


@scalar_jit
def complex_log1p(z):
  """log(1 + z) by the reference's formula (log1p of a (2 + a) + b**2 for |z| < 0.5)."""
  a, b = z.real, z.imag
  if complex_abs(z) < 0.5:
    real = 0.5 * math.log1p(a * (2 + a) + b * b)
  else:
    real = math.log(math.hypot(1 + a, b))
  return S.make_complex(real, math.atan2(b, 1 + a))


@scalar_jit
def complex_logistic(z):
  """1 / (1 + exp(-z)), with NumPy's complex exp and division."""
  return numpy_complex_div(np.complex128(1), 1.0 + cexp(-z))


@scalar_jit
def complex_rsqrt(z):
  return numpy_complex_div(np.complex128(1), csqrt(z))


@scalar_jit
def complex_atan2(x, y):
  """-i log((y + i x) / sqrt(x**2 + y**2)), with NumPy's complex operations."""
  quotient = numpy_complex_div(y + numpy_complex_mul(1j, x),
                               csqrt(numpy_complex_mul(x, x) + numpy_complex_mul(y, y)))
  return numpy_complex_mul(-1j, clog(quotient))


_COMPLEX_FUNCTIONS = {
    "np.exp": "S.complex_exp", "np.log": complex_log, "np.exp2": complex_exp2,
    "np.log1p": complex_log1p, "np.expm1": complex_expm1, "S.logistic": complex_logistic,
    "np.tanh": ctanh,
    "np.sin": csin, "np.cos": ccos, "np.tan": ctan, "np.arcsin": casin, "np.arccos": cacos,
    "np.arctan": catan, "np.sinh": csinh, "np.cosh": ccosh, "np.arcsinh": casinh,
    "np.arccosh": cacosh, "np.arctanh": catanh}
"""The complex function of each real one: the reference's formula or NumPy's (libm's)."""


_CHECKED_FUNCTIONS = {
    "np.exp": checked.exp, "np.expm1": checked.expm1, "np.log": checked.log,
    "np.log1p": checked.log1p, "np.sin": checked.sin, "np.cos": checked.cos,
    "np.tanh": checked.tanh, "S.logistic": checked.logistic}
"""The fast function of each real one, for float32 and 16-bit results in loops."""


_FLOAT32_FUNCTIONS = {"np.exp": float32.exp, "np.tanh": float32.tanh}
"""The float32 function of each real one, for float32 results in loops: within the
ulps it states of the reference's value, where the checked function gives its bits."""


def _float64_function(function):
  """A function of one operand computed in float64 (complex128 for complex
  operands: the reference's formula where it has its own, else Numba's
  complex function) and rounded to the result dtype; for a float32 or
  16-bit result in a loop, by a fast function where there is one: a float32
  one (numba_backend/float32.py, within its ulps), else a checked one
  (numba_backend/checked.py, with the same result)."""
  def rule(ctx, x, accuracy=None):
    dtype = _dtype(ctx)
    fn = function
    if dtypes.is_complex(dtype):
      fn = _COMPLEX_FUNCTIONS[function]
      fn = fn if isinstance(fn, str) else ctx.function(fn)
    elif function in _FLOAT32_FUNCTIONS and dtype == np.float32 and (
        value := ctx.fast(_FLOAT32_FUNCTIONS[function], x)) is not None:
      return value
    elif function in _CHECKED_FUNCTIONS and dtype.itemsize <= 4:
      value = ctx.checked(_CHECKED_FUNCTIONS[function], _wide(x, dtype))
      if value is not None:
        return cast(value, _out(ctx))
    return cast(f"{fn}({_wide(x, dtype)})", _out(ctx))
  return rule


for _primitive, _function in [
    (lax.exp_p, "np.exp"), (lax.exp2_p, "np.exp2"), (lax.expm1_p, "np.expm1"),
    (lax.log_p, "np.log"), (lax.log1p_p, "np.log1p"), (lax.logistic_p, "S.logistic"),
    (lax.tanh_p, "np.tanh"), (lax.sin_p, "np.sin"), (lax.cos_p, "np.cos"),
    (lax.tan_p, "np.tan"), (lax.asin_p, "np.arcsin"), (lax.acos_p, "np.arccos"),
    (lax.atan_p, "np.arctan"), (lax.sinh_p, "np.sinh"), (lax.cosh_p, "np.cosh"),
    (lax.asinh_p, "np.arcsinh"), (lax.acosh_p, "np.arccosh"), (lax.atanh_p, "np.arctanh"),
    (lax.cbrt_p, "np.cbrt")]:
  register_elementwise(_primitive, costly=True)(_float64_function(_function))


@register_elementwise(lax.atan2_p, costly=True)
def _atan2(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"{ctx.function(complex_atan2)}({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)
  return cast(f"np.arctan2({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)


# --- bits and logic ---------------------------------------------------------------------------

@register_elementwise(lax.not_p)
def _not(ctx, x):
  return cast(f"~{x}", _dtype(ctx))


def _bitwise(operator):
  def rule(ctx, x, y):
    return cast(f"{x} {operator} {y}", _dtype(ctx))
  return rule


register_elementwise(lax.and_p)(_bitwise("&"))
register_elementwise(lax.or_p)(_bitwise("|"))
register_elementwise(lax.xor_p)(_bitwise("^"))


@register_elementwise(lax.shift_left_p)
def _shift_left(ctx, x, y):
  dtype = _dtype(ctx)
  return cast(f"S.shift_left({x}, {y}, {_bits(dtype)})", dtype)


@register_elementwise(lax.shift_right_logical_p)
def _shift_right_logical(ctx, x, y):
  dtype = _dtype(ctx)
  return cast(f"S.shift_right_logical({x}, {y}, {_bits(dtype)})", dtype)


@register_elementwise(lax.shift_right_arithmetic_p)
def _shift_right_arithmetic(ctx, x, y):
  dtype = _dtype(ctx)
  signed = type_source(np.dtype(f"int{_bits(dtype)}"))
  return cast(f"S.shift_right_arithmetic({signed}({x}), {y}, {_bits(dtype)})", dtype)


@register_elementwise(lax.population_count_p)
def _population_count(ctx, x):
  dtype = _dtype(ctx)
  return cast(f"S.population_count({x}, {_bits(dtype)})", dtype)


@register_elementwise(lax.clz_p)
def _clz(ctx, x):
  dtype = _dtype(ctx)
  return cast(f"S.clz({x}, {_bits(dtype)})", dtype)


# --- comparisons, clamp, select ------------------------------------------------------------------

def _comparison(operator):
  def rule(ctx, x, y):
    return f"({x} {operator} {y})"
  return rule


for _primitive, _operator in [(lax.eq_p, "=="), (lax.ne_p, "!="), (lax.lt_p, "<"),
                              (lax.le_p, "<="), (lax.gt_p, ">"), (lax.ge_p, ">=")]:
  register_elementwise(_primitive)(_comparison(_operator))


@register_elementwise(lax.clamp_p)
def _clamp(ctx, lo, x, hi):
  dtype = _dtype(ctx, 1)
  if dtypes.is_float(dtype):
    return cast(f"S.nan_min(S.nan_max({_wide(x, dtype)}, {_wide(lo, dtype)}), "
                f"{_wide(hi, dtype)})", dtype)
  return cast(f"min(max({x}, {lo}), {hi})", dtype)


@register_elementwise(lax.select_n_p)
def _select_n(ctx, which, *cases):
  """cases[which]; an integer `which` out of range is clamped."""
  expr = cases[-1]
  for i in range(len(cases) - 2, -1, -1):
    test = f"not {which}" if _dtype(ctx) == np.bool_ else f"{which} <= {i}"
    expr = f"({cases[i]} if {test} else {expr})"
  return expr


# --- casts and complex parts ----------------------------------------------------------------------

def _convert(x, old, new):
  """Source converting scalar `x` of dtype `old` to `new`, as `convert_element_type`."""
  old, new = np.dtype(old), np.dtype(new)
  if dtypes.is_complex(old) and not dtypes.is_complex(new):
    x, old = f"{x}.real", dtypes.to_real_dtype(old)
  if new == np.bool_:
    return f"({x} != 0)"
  if dtypes.is_inexact(old) and dtypes.is_integer(new):
    info = np.iinfo(new)
    if not dtypes.is_unsigned(new):
      return cast(f"S.float_to_signed({x}, {int(info.min)}, {int(info.max)})", new)
    return cast(f"S.float_to_unsigned({x}, {int(info.max)})", new)
  if new == np.float16 and old == np.float64:
    return f"S.f16_value(S.f16_bits_of_f64({x}))"   # rounded once, as NumPy casts
  return cast(x, new)


@register_elementwise(lax.convert_element_type_p)
def _convert_element_type(ctx, x, *, new_dtype, weak_type):
  return _convert(x, _dtype(ctx), new_dtype)


@register_elementwise(lax.real_p)
def _real(ctx, x):
  return f"{x}.real"


@register_elementwise(lax.imag_p)
def _imag(ctx, x):
  return f"{x}.imag"


@register_elementwise(lax.conj_p)
def _conj(ctx, x, *, input_dtype):
  return cast(f"np.conj(np.complex128({x}))", _out(ctx))


@register_elementwise(lax.complex_p)
def _complex(ctx, x, y):
  return cast(f"S.make_complex({_wide(x, _dtype(ctx))}, {_wide(y, _dtype(ctx))})", _out(ctx))


@register_elementwise(lax.copy_p)
def _copy(ctx, x):
  return x


# --- bits of floats -------------------------------------------------------------------------------

@scalar_jit
def reduce_precision_bits(bits, drop, exponent_mask, overflow, underflow, sign_bit, word):
  """XLA's ReducePrecision on the bits of a float (uint64; the word's
  `word` mask): the mantissa rounded to nearest even, dropping `drop` bits
  (none for 0); an exponent field above `overflow` gives ±inf, at most
  `underflow` ±0 (no exponent reduction where exponent_mask is 0)."""
  one = np.uint64(1)
  if drop:
    bias = ((bits >> drop) & one) + ((one << (drop - one)) - one)
    bits = ((bits + bias) & word) & ~((one << drop) - one)
  if exponent_mask:
    exponent = bits & exponent_mask
    if exponent > overflow:
      bits = (bits & sign_bit) | exponent_mask
    elif exponent <= underflow:
      bits = bits & sign_bit
  return bits


_BITS = {np.dtype(np.float16): ("S.f16_bits", "S.f16_value", np.uint16),
         dtypes.bfloat16: ("S.bf16_bits", "S.bf16_value", np.uint16),
         np.dtype(np.float32): ("S.f32_bits", "S.bits_f32", np.uint32),
         np.dtype(np.float64): ("S.f64_bits", "S.bits_f64", np.uint64)}
"""Per float dtype: the source of its bits from a scalar value, of the value
from bits, and the unsigned type of its bits."""


@register_elementwise(lax.reduce_precision_p)
def _reduce_precision(ctx, x, *, exponent_bits, mantissa_bits):
  """The reference's bit manipulation (the constants are the params')."""
  dtype = _dtype(ctx)
  info = dtypes.finfo(dtype)
  src_exponent, src_mantissa, nbits = info.nexp, info.nmant, _bits(dtype)
  to_bits, from_bits, unsigned = _BITS[dtype]
  drop = max(src_mantissa - mantissa_bits, 0)
  exponent_mask = overflow = underflow = 0
  if exponent_bits < src_exponent:
    exponent_mask = ((1 << src_exponent) - 1) << src_mantissa
    src_bias, reduced_bias = (1 << (src_exponent - 1)) - 1, (1 << (exponent_bits - 1)) - 1
    overflow = (src_bias + reduced_bias) << src_mantissa
    underflow = (src_bias - reduced_bias) << src_mantissa
  constants = ", ".join(f"np.uint64({v})" for v in (
      drop, exponent_mask, overflow, underflow, 1 << (nbits - 1), (1 << nbits) - 1))
  reduced = (f"{from_bits}({type_source(unsigned)}({ctx.function(reduce_precision_bits)}"
             f"(np.uint64({to_bits}({x})), {constants})))")
  nan = x if mantissa_bits > 0 else cast("np.inf", dtype)
  return f"({nan} if {x} != {x} else {reduced})"


@register(lax.bitcast_convert_type_p)
def _bitcast_convert_type(ctx, x, *, new_dtype):
  """The operand's flat storage viewed as `new_dtype` (16-bit floats are
  their bits already), copied and shaped as the result."""
  (aval,), (out,) = ctx.avals_in, ctx.avals_out
  if np.dtype(aval.dtype) == np.dtype(new_dtype):
    return x
  viewed = ctx.fresh()
  view = f"{ctx.flat(x, aval)}.view({type_source(storage_dtype(new_dtype))})"
  ctx.emit(f"{viewed} = {ctx.lowering.copy(view)}")
  return ctx.result(viewed, out)
