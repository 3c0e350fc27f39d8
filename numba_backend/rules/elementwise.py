"""Scalar lowering rules of the elementwise primitives (refimpl/lax/elementwise.py).

Each rule gives the source of an expression computing one element of the
result from the operands' element expressions, as the reference rule does:
exact functions and IEEE +, -, *, / and sqrt of reals in the operands'
dtype, any other function in float64 (complex128) rounded once to the
result dtype (`cast`, by way of float32 for 16-bit floats); integers wrap.
"""

import numpy as np

from refimpl import dtypes
from refimpl.lax import elementwise as lax
from numba_backend.lower import cast, fma_p, register_elementwise, type_source


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


def _signed_min(dtype):
  """The most negative value of a signed integer dtype, 0 for unsigned ones."""
  return int(np.iinfo(dtype).min) if (dtypes.is_integer(dtype) and not dtypes.is_unsigned(dtype)) else 0


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
    return cast(f"S.complex_sign({_wide(x, dtype)})", dtype)
  return cast(f"(1 if {x} > 0 else (-1 if {x} < 0 else 0))", dtype)


@register_elementwise(lax.abs_p)
def _abs(ctx, x):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"S.complex_abs({_wide(x, dtype)})", _out(ctx))
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
  """+, - or * of two operands: in their dtype for reals (the IEEE operation),
  in complex128 for complex * (+ and - of complex numbers are exact per part)."""
  def rule(ctx, x, y, **params):
    dtype = _dtype(ctx)
    if operator == "*" and dtypes.is_complex(dtype):
      x, y = _wide(x, dtype), _wide(y, dtype)
    return cast(f"{x} {operator} {y}", _out(ctx))
  return rule


register_elementwise(lax.add_p)(_ieee("+"))
register_elementwise(lax.sub_p)(_ieee("-"))


@register_elementwise(lax.mul_p)
def _mul(ctx, x, y, out_dtype=None):
  if out_dtype is not None:
    x, y = (_convert(x, _dtype(ctx, i), _out(ctx)) for i, x in enumerate((x, y)))
  dtype = _out(ctx)
  if dtypes.is_complex(dtype):
    x, y = _wide(x, dtype), _wide(y, dtype)
  return cast(f"{x} * {y}", dtype)


@register_elementwise(fma_p)
def _fma(ctx, a, b, z, *, negate_product, negate_addend):
  return (f"S.fma({'-' if negate_product else ''}{a}, {b}, "
          f"{'-' if negate_addend else ''}{z})")


@register_elementwise(lax.div_p)
def _div(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_integer(dtype):
    return cast(f"S.int_div({x}, {y}, {_signed_min(dtype)})", dtype)
  if dtypes.is_complex(dtype):
    return cast(f"S.complex_div({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)
  return cast(f"{x} / {y}", dtype)


@register_elementwise(lax.rem_p)
def _rem(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_integer(dtype):
    return cast(f"S.int_rem({x}, {y}, {_signed_min(dtype)})", dtype)
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
  return cast(f"np.sqrt({_wide(x, dtype) if dtypes.is_complex(dtype) else x})", dtype)


@register_elementwise(lax.rsqrt_p)
def _rsqrt(ctx, x, accuracy=None):
  dtype = _dtype(ctx)
  return cast(f"1.0 / np.sqrt({_wide(x, dtype)})", dtype)


@register_elementwise(lax.square_p)
def _square(ctx, x):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    x = _wide(x, dtype)
  return cast(f"{x} * {x}", dtype)


@register_elementwise(lax.integer_pow_p)
def _integer_pow(ctx, x, *, y):
  """Binary exponentiation, each product rounded to x's dtype (the reference's order)."""
  dtype = _dtype(ctx)
  if y == 0:
    return cast("1", dtype)
  mul = lambda a, b: cast(f"{_wide(a, dtype)} * {_wide(b, dtype)}"
                          if dtypes.is_complex(dtype) else f"{a} * {b}", dtype)
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


@register_elementwise(lax.pow_p)
def _pow(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"S.complex_pow({_wide(x, dtype)}, "
                f"{_wide(_convert(y, _dtype(ctx, 1), dtype), dtype)})", dtype)
  return cast(f"np.power({_wide(x, dtype)}, {_wide(_convert(y, _dtype(ctx, 1), dtype), dtype)})",
              dtype)


# --- functions computed in float64 ----------------------------------------------------------

def _float64_function(function):
  """A function of one operand computed in float64 (complex128 for complex
  operands, by `S.complex_<name>`) and rounded to the result dtype."""
  def rule(ctx, x, accuracy=None):
    dtype = _dtype(ctx)
    if dtypes.is_complex(dtype):
      name = function.rsplit(".", 1)[-1]
      return cast(f"S.complex_{name}({_wide(x, dtype)})", _out(ctx))
    return cast(f"{function}({_wide(x, dtype)})", _out(ctx))
  return rule


for _primitive, _function in [
    (lax.exp_p, "np.exp"), (lax.exp2_p, "np.exp2"), (lax.expm1_p, "np.expm1"),
    (lax.log_p, "np.log"), (lax.log1p_p, "np.log1p"), (lax.logistic_p, "S.logistic"),
    (lax.tanh_p, "np.tanh"), (lax.sin_p, "np.sin"), (lax.cos_p, "np.cos"),
    (lax.tan_p, "np.tan"), (lax.asin_p, "np.arcsin"), (lax.acos_p, "np.arccos"),
    (lax.atan_p, "np.arctan"), (lax.sinh_p, "np.sinh"), (lax.cosh_p, "np.cosh"),
    (lax.asinh_p, "np.arcsinh"), (lax.acosh_p, "np.arccosh"), (lax.atanh_p, "np.arctanh"),
    (lax.cbrt_p, "np.cbrt")]:
  register_elementwise(_primitive)(_float64_function(_function))


@register_elementwise(lax.atan2_p)
def _atan2(ctx, x, y):
  dtype = _dtype(ctx)
  if dtypes.is_complex(dtype):
    return cast(f"S.complex_atan2({_wide(x, dtype)}, {_wide(y, dtype)})", dtype)
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


# --- casts and complex parts ------------------------------------------------------------------------

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
