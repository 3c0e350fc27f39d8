"""Elementwise jnp functions (NumPy's ufuncs and friends), as `jax.numpy` has them.

Each function checks its arguments (lists are rejected: use `jnp.array`),
promotes dtypes on JAX's lattice (refimpl/numpy/util.py) and lowers to the
same lax primitives, in the same order, as jax.numpy, so a traced function
prints the same jaxpr. Where JAX differs from NumPy, JAX is followed: e.g.
`jnp.add(int8, uint8)` is int16, float-to-int casts saturate, and an int32
array plus a Python float is float32.

The functions that JAX wraps in a (non-inlined) `jit` are wrapped here too,
so they appear in a traced program as `jit[name=remainder ...]` equations,
as in JAX; the others are inlined.

As in JAX, some of them are `jnp.ufunc` objects (refimpl/numpy/ufunc_api.py),
with NumPy's methods: `negative`, and the binary `add`, `subtract`,
`multiply`, `maximum`, `minimum`, `logaddexp`, `logaddexp2`, `logical_and`,
`logical_or`, `logical_xor`, `bitwise_and`, `bitwise_or` and `bitwise_xor`.
Calling one calls the function below; its `identity` and the fast methods
are JAX's (`jnp.add.reduce` is `jnp.sum`, `jnp.add.accumulate` is
`jnp.cumsum`, `jnp.add.at` is `x.at[i].add`, `jnp.logical_and.reduce` is one
`reduce_and`, ...). The others, `jnp.sin` or `jnp.divmod` for example, are
plain functions, as in JAX.
"""

import functools
import operator

import numpy as np

from refimpl import core, dtypes, lax
from refimpl.api import jit
from refimpl.autodiff import jvp
from refimpl.custom_derivatives import custom_jvp
from refimpl.lax.shapes import canonicalize_axis
from refimpl.numpy.creation import broadcast_shapes
from refimpl.numpy.ufunc_api import ufunc
from refimpl.numpy.util import (check_arraylike, promote_args, promote_args_inexact,
                                promote_args_numeric, promote_dtypes,
                                promote_dtypes_inexact, promote_dtypes_numeric,
                                promote_shapes, shape_of)
import refimpl.numpy as jnp  # the package, still being built: names resolve at call time

__all__ = [
    'add', 'subtract', 'multiply', 'true_divide', 'divide', 'floor_divide',
    'remainder', 'mod', 'fmod', 'divmod', 'power', 'pow', 'float_power',
    'negative', 'positive', 'abs', 'absolute', 'fabs', 'sign', 'floor', 'ceil',
    'trunc', 'rint', 'round', 'around', 'fix', 'modf',
    'sqrt', 'cbrt', 'square', 'reciprocal',
    'exp', 'exp2', 'expm1', 'log', 'log2', 'log10', 'log1p', 'logaddexp', 'logaddexp2',
    'sin', 'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'arctan2',
    'sinh', 'cosh', 'tanh', 'arcsinh', 'arccosh', 'arctanh',
    'asin', 'acos', 'atan', 'atan2', 'asinh', 'acosh', 'atanh',
    'hypot', 'sinc', 'deg2rad', 'radians', 'rad2deg', 'degrees',
    'maximum', 'minimum', 'fmax', 'fmin', 'clip',
    'equal', 'not_equal', 'less', 'less_equal', 'greater', 'greater_equal',
    'logical_and', 'logical_or', 'logical_xor', 'logical_not',
    'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bitwise_not', 'bitwise_invert',
    'invert', 'bitwise_count', 'left_shift', 'right_shift', 'bitwise_left_shift',
    'bitwise_right_shift',
    'isnan', 'isinf', 'isfinite', 'isposinf', 'isneginf', 'signbit', 'copysign',
    'nextafter', 'spacing', 'frexp', 'ldexp',
    'real', 'imag', 'conjugate', 'conj', 'angle',
    'heaviside', 'nan_to_num', 'isclose', 'where', 'astype', 'gcd', 'lcm',
    'promote_types', 'result_type', 'i0',
]

_INT_OF_WIDTH = {16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64}


# --- helpers --------------------------------------------------------------------------

def _constant_like(x, value):
  """`value` as a (strongly typed) NumPy scalar of x's dtype: a literal in a jaxpr."""
  return np.array(value, dtype=dtypes.dtype(x))


def _asarray(x):
  """x as an Array or tracer; a Python scalar stays weakly typed (lax.asarray)."""
  if isinstance(x, (core.Tracer, core.ConcreteArray)):
    return x
  return lax.convert_element_type(x, dtypes.dtype(x), dtypes.is_weakly_typed(x))


def _to_bool(x):
  return x if dtypes.dtype(x) == dtypes.bool_ else lax.ne(x, _constant_like(x, 0))


def _is_complex(x):
  return dtypes.is_complex(dtypes.dtype(x))


def _broadcast_arrays(*args):
  """The arguments broadcast to their common shape with broadcast_in_dim."""
  shapes = [shape_of(a) for a in args]
  shape = broadcast_shapes(*shapes)
  return [a if s == shape else
          lax.broadcast_in_dim(a, shape, tuple(range(len(shape) - len(s), len(shape))))
          for a, s in zip(args, shapes)]


def _where(condition, x, y):
  """jnp.where(condition, x, y) without argument checks: promote x and y,
  broadcast, then `select_n`."""
  if dtypes.dtype(condition) != dtypes.bool_:
    condition = lax.ne(condition, _constant_like(condition, 0))
  x, y = promote_dtypes(x, y)
  if np.ndim(condition) == 0:
    x, y = _broadcast_arrays(x, y)   # select_n takes a scalar selector as it is
  else:
    condition, x, y = _broadcast_arrays(condition, x, y)
  if 0 in np.shape(x):
    return x
  return lax.select(condition, x, y)


# --- ufunc objects and their fast methods ---------------------------------------------------

def unary_ufunc(func):
  """`func`, a function of one array, as a `jnp.ufunc`."""
  return ufunc(func, 1, 1, call=func)


def binary_ufunc(identity, reduce=None, accumulate=None, at=None):
  """Decorator: a function of two arrays as a `jnp.ufunc` with this
  `identity` and, for the methods given, these fast implementations (JAX's);
  the other methods fold the function over the array."""
  return lambda func: ufunc(func, 2, 1, identity=identity, call=func, reduce=reduce,
                            accumulate=accumulate, at=at)


def _late(name):
  """`jnp.<name>`, looked up when called (refimpl/numpy/reductions.py imports
  this module, so its functions do not exist yet when this one is built)."""
  return lambda *args, **kwargs: getattr(jnp, name)(*args, **kwargs)


def _reduced_axes(ndim, axis):
  """`axis` (None, an int or a tuple of ints) as a tuple of non-negative axes."""
  if axis is None:
    return tuple(range(ndim))
  return tuple(canonicalize_axis(d, ndim) for d in (axis if isinstance(axis, tuple) else (axis,)))


def _extremum_reduce(name):
  """`jnp.maximum.reduce` (`jnp.minimum.reduce`): `jnp.max` (`jnp.min`) of
  the array converted to `dtype`. There is no identity: an empty axis, or a
  `where` mask, needs `initial`."""
  def reduce(a, *, axis, dtype, keepdims, initial, where):
    a = _asarray(a) if dtype is None else astype(a, dtype)
    return getattr(jnp, name)(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
  return reduce


def _bitwise_reduce(lax_op, identity, logical=False):
  """The `reduce` of a bitwise ufunc, or with `logical` of a logical one: one
  `lax.reduce` with `lax_op` (`reduce_and`, `reduce_or` or `reduce_xor`) over
  the axes, as JAX's reductions._reduce_bitwise_* and _reduce_logical_*.

  A bitwise reduction needs integers or booleans (ValueError otherwise); a
  logical one first converts its operand to bool (the real part of a complex
  one, as in JAX). The operand is converted to `dtype` if given; `where`
  masks with `identity` (-1, all bits set, for `and`) and `initial` is
  combined with the result.
  """
  def reduce(a, *, axis, dtype, keepdims, initial, where):
    a = _asarray(a)
    if logical:
      a = lax.convert_element_type(real(a), dtypes.bool_)
    elif not (dtypes.is_integer(a.dtype) or dtypes.is_bool(a.dtype)):
      raise ValueError(f"integer argument required; got dtype={a.dtype}")
    dtype = a.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    a = lax.convert_element_type(a, dtype)
    axes = _reduced_axes(a.ndim, axis)
    init = np.array(identity).astype(dtype)
    if where is not None:
      a = _where(where, a, init)
    result = lax.reduce(a, init, lax_op, axes)
    if initial is not None:
      result = lax_op(lax.convert_element_type(initial, dtype), result)
    return lax.expand_dims(result, axes) if keepdims else result
  return reduce


def _logsumexp(a, *, axis, dtype, keepdims, initial, where):
  """`jnp.logaddexp.reduce`: log(sum(exp(a))) over the axes, as JAX's
  reductions._logsumexp computes it. The maximum (of the real parts) is
  subtracted before `exp` and added back after `log`, so nothing overflows;
  where it is not finite, 0 is subtracted instead. An empty reduction gives
  -inf (the identity). `dtype` is ignored, as in JAX."""
  a, = promote_dtypes_inexact(a)
  axes = _reduced_axes(a.ndim, axis)
  amax = jnp.max(real(a), axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
  amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
  amax_with_dims = amax if keepdims else lax.expand_dims(amax, axes)
  exp_a = lax.exp(lax.sub(a, lax.convert_element_type(amax_with_dims, a.dtype)))
  sumexp = jnp.sum(exp_a, axis=axes, keepdims=keepdims, where=where)
  result = lax.add(lax.log(sumexp), lax.convert_element_type(amax, sumexp.dtype))
  return result if initial is None else logaddexp(initial, result)


def _logsumexp2(a, *, axis, dtype, keepdims, initial, where):
  """`jnp.logaddexp2.reduce`: `_logsumexp(a * ln 2) / ln 2`, as in JAX."""
  ln2 = float(np.log(2))
  if initial is not None:
    initial = multiply(initial, ln2)
  return true_divide(_logsumexp(multiply(a, ln2), axis=axis, dtype=dtype, keepdims=keepdims,
                                initial=initial, where=where), ln2)


def _as_int32(x):
  return lax.convert_element_type(x, dtypes.int32)


def _add_at(a, indices, b):
  """`jnp.add.at`: `a.at[indices].add(b)`; booleans are added as int32 (so a
  repeated index ors)."""
  if a.dtype == dtypes.bool_:
    a, b = _as_int32(a), _as_int32(lax.convert_element_type(b, dtypes.bool_))
    return lax.convert_element_type(a.at[indices].add(b), dtypes.bool_)
  return a.at[indices].add(b)


def _multiply_at(a, indices, b):
  """`jnp.multiply.at`: `a.at[indices].multiply(b)` (booleans as int32)."""
  if a.dtype == dtypes.bool_:
    a, b = _as_int32(a), _as_int32(lax.convert_element_type(b, dtypes.bool_))
    return lax.convert_element_type(a.at[indices].multiply(b), dtypes.bool_)
  return a.at[indices].multiply(b)


def _subtract_at(a, indices, b):
  """`jnp.subtract.at`: `a.at[indices].subtract(b)`."""
  return a.at[indices].subtract(b)


# --- arithmetic ---------------------------------------------------------------------------

@binary_ufunc(identity=0, reduce=_late("sum"), accumulate=_late("cumsum"), at=_add_at)
def add(x, y, /):
  """x + y; for booleans, logical or."""
  x, y = promote_args("add", x, y)
  return lax.add(x, y) if x.dtype != dtypes.bool_ else lax.bitwise_or(x, y)


@binary_ufunc(identity=None, at=_subtract_at)
def subtract(x, y, /):
  return lax.sub(*promote_args("subtract", x, y))


@binary_ufunc(identity=1, reduce=_late("prod"), accumulate=_late("cumprod"),
               at=_multiply_at)
def multiply(x, y, /):
  """x * y; for booleans, logical and."""
  x, y = promote_args("multiply", x, y)
  return lax.mul(x, y) if x.dtype != dtypes.bool_ else lax.bitwise_and(x, y)


def true_divide(x1, x2, /):
  """x1 / x2 in floating point: integers promote to the default float
  (`jnp.divide(1, 2)` is 0.5, float32)."""
  return lax.div(*promote_args_inexact("true_divide", x1, x2))


def divide(x1, x2, /):
  return true_divide(x1, x2)


@jit
def floor_divide(x1, x2, /):
  """x1 // x2, rounding toward -inf. Integers: truncated lax.div corrected by
  one where the signs differ and there is a remainder. Floats: Python's float
  divmod algorithm (see _float_divmod)."""
  x1, x2 = promote_args_numeric("floor_divide", x1, x2)
  dtype = dtypes.dtype(x1)
  if dtypes.is_unsigned(dtype):
    return lax.div(x1, x2)
  if dtypes.is_integer(dtype):
    quotient = lax.div(x1, x2)
    select = logical_and(not_equal(lax.sign(x1), lax.sign(x2)),
                         not_equal(lax.rem(x1, x2), 0))
    return _where(select, subtract(quotient, 1), quotient)
  if dtypes.is_complex(dtype):
    raise TypeError("floor_divide does not support complex-valued inputs")
  return _float_divmod(x1, x2)[0]


def _float_divmod(x1, x2):
  """(floor(x1 / x2), x1 mod x2) as CPython's float_divmod computes them:
  the remainder has the sign of x2. By zero, the quotient is x1 / 0 (±inf,
  NaN for 0 / 0, as NumPy's and JAX 0.10's) and the remainder NaN."""
  mod = lax.rem(x1, x2)
  div = lax.div(_where(equal(x2, 0), x1, lax.sub(x1, mod)), x2)
  ind = lax.bitwise_and(not_equal(mod, 0), not_equal(lax.sign(x2), lax.sign(mod)))
  mod = lax.select(ind, add(mod, x2), mod)
  div = lax.select(ind, lax.sub(div, _constant_like(div, 1)), div)
  return lax.round(div), mod


@jit
def remainder(x1, x2, /):
  """x1 mod x2 with Python's sign rule: the result has the sign of x2
  (`remainder(-7, 2) == 1`). An integer x2 of 0 gives 0."""
  x1, x2 = promote_args_numeric("remainder", x1, x2)
  zero = _constant_like(x1, 0)
  if dtypes.is_integer(dtypes.dtype(x2)):
    x2 = _where(equal(x2, 0), lax.full_like(x2, 1), x2)
  trunc_mod = lax.rem(x1, x2)
  trunc_mod_not_zero = lax.ne(trunc_mod, zero)
  do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                            trunc_mod_not_zero)
  return lax.select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


@jit
def fmod(x1, x2, /):
  """C's fmod: the remainder has the sign of x1. An integer x2 of 0 gives 0."""
  check_arraylike("fmod", x1, x2)
  if dtypes.is_integer(dtypes.result_type(x1, x2)):
    x2 = _where(equal(x2, 0), lax.full_like(x2, 1), x2)
  return lax.rem(*promote_args_numeric("fmod", x1, x2))


@jit
def divmod(x1, x2, /):
  """(floor_divide(x1, x2), remainder(x1, x2))."""
  x1, x2 = promote_args_numeric("divmod", x1, x2)
  if dtypes.is_integer(dtypes.dtype(x1)):
    return floor_divide(x1, x2), remainder(x1, x2)
  return _float_divmod(x1, x2)


def power(x1, x2, /):
  """x1 ** x2.

  A concrete integer exponent (`x ** 2`) lowers to `integer_pow` (binary
  exponentiation, exact for integers and precise for floats). Integer bases
  with integer exponent arrays use unrolled binary exponentiation over the
  exponent's low 6 bits (enough for any result that does not overflow);
  a negative integer exponent gives garbage, as in JAX. A float or complex
  base with an integer exponent array calls `lax.pow` without promoting the
  exponent; other cases promote both and call `lax.pow`.
  """
  check_arraylike("power", x1, x2)
  if not isinstance(x2, core.Tracer) or x2.to_concrete_value() is not None:
    try:
      exponent = operator.index(x2)
    except TypeError:
      pass
    else:
      x1, = promote_dtypes_numeric(x1)
      return lax.integer_pow(x1, exponent)
  x1, x2 = promote_shapes("power", x1, x2)
  result = dtypes.result_type(x1, x2)
  if dtypes.is_integer(result) or dtypes.is_bool(result):
    return _pow_int_int(*promote_dtypes_numeric(x1, x2))
  if dtypes.is_inexact(dtypes.dtype(x1)) and dtypes.is_integer(dtypes.dtype(x2)):
    return lax.pow(x1, x2)
  return lax.pow(*promote_dtypes_numeric(x1, x2))


pow = power


def _pow_int_int(x1, x2):
  """Integer x1 ** x2 by binary exponentiation over the low 6 bits of x2
  (a larger exponent overflows for any |x1| > 1)."""
  zero, one = _constant_like(x2, 0), _constant_like(x2, 1)
  # pow(0, x2) is 0 for x2 != 0, and 1 for x2 == 0.
  acc = _where(lax.bitwise_and(lax.eq(x1, zero), lax.ne(x2, zero)), zero, one)
  for _ in range(6):
    acc = _where(lax.bitwise_and(x2, one), lax.mul(acc, x1), acc)
    x1 = lax.mul(x1, x1)
    x2 = lax.shift_right_logical(x2, one)
  return acc


def float_power(x, y, /):
  """x ** y computed in an inexact dtype (integers promote to the default float)."""
  return lax.pow(*promote_args_inexact("float_power", x, y))


@unary_ufunc
def negative(x, /):
  """-x. Unsigned integers wrap (2**bits - x); booleans are rejected."""
  return lax.neg(*promote_args("negative", x))


def positive(x, /):
  return _asarray(*promote_args("positive", x))


def absolute(x, /):
  """|x|; unsigned and boolean x are returned as they are. Complex: the modulus."""
  check_arraylike("absolute", x)
  dtype = dtypes.dtype(x)
  if dtype == dtypes.bool_ or dtypes.is_unsigned(dtype):
    return _asarray(x)
  return lax.abs(x)


abs = absolute


def fabs(x, /):
  """|x| as a float (integers promote to the default float); no complex."""
  check_arraylike("fabs", x)
  if _is_complex(x):
    raise TypeError("ufunc 'fabs' does not support complex dtypes")
  return lax.abs(*promote_args_inexact("fabs", x))


def sign(x, /):
  """-1, 0 or 1 (floats keep -0.0 and NaN); complex: x / |x|."""
  return lax.sign(*promote_args("sign", x))


def floor(x, /):
  check_arraylike("floor", x)
  if dtypes.is_integer(dtypes.dtype(x)) or dtypes.is_bool(dtypes.dtype(x)):
    return _asarray(x)
  return lax.floor(*promote_args_inexact("floor", x))


def ceil(x, /):
  check_arraylike("ceil", x)
  if dtypes.is_integer(dtypes.dtype(x)) or dtypes.is_bool(dtypes.dtype(x)):
    return _asarray(x)
  return lax.ceil(*promote_args_inexact("ceil", x))


@jit
def trunc(x):
  """Rounds toward zero: ceil for negative x, floor otherwise."""
  check_arraylike("trunc", x)
  if dtypes.is_integer(dtypes.dtype(x)) or dtypes.is_bool(dtypes.dtype(x)):
    return _asarray(x)
  return where(lax.lt(x, _constant_like(x, 0)), ceil(x), floor(x))


@jit
def fix(x, out=None):
  """Rounds toward zero (floor for x >= 0, ceil otherwise)."""
  check_arraylike("fix", x)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.fix is not supported.")
  zero = _constant_like(x, 0)
  return where(lax.ge(x, zero), floor(x), ceil(x))


@jit
def rint(x, /):
  """Nearest integer, ties to even; integers become the default float."""
  check_arraylike("rint", x)
  dtype = dtypes.dtype(x)
  if dtype == dtypes.bool_ or dtypes.is_integer(dtype):
    return lax.convert_element_type(x, dtypes.default_float_dtype())
  if dtypes.is_complex(dtype):
    return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


@functools.partial(jit, static_argnames=("decimals",))
def round(a, decimals=0, out=None):
  """Rounds to `decimals` decimal places, ties to even, by scaling by
  10**decimals (so results can be off in the last place, as in JAX).
  Integer and boolean arrays are returned unchanged (decimals >= 0)."""
  check_arraylike("round", a)
  decimals = operator.index(decimals)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
  dtype = dtypes.dtype(a)
  if dtypes.is_integer(dtype) or dtypes.is_bool(dtype):
    if decimals < 0:
      raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return _asarray(a)

  def round_float(x):
    if decimals == 0:
      return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    # float16 loses too much in the scaling: compute it in float32.
    x = lax.convert_element_type(x, dtypes.float32) if dtype == dtypes.float16 else x
    factor = _constant_like(x, 10 ** decimals)
    out = lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
    return lax.convert_element_type(out, dtype) if dtype == dtypes.float16 else out

  if dtypes.is_complex(dtype):
    return lax.complex(round_float(lax.real(a)), round_float(lax.imag(a)))
  return round_float(a)


around = round


@jit
def modf(x, /, out=None):
  """(fractional part, integral part), both with x's sign."""
  check_arraylike("modf", x)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
  x, = promote_dtypes_inexact(x)
  whole = _where(lax.ge(x, _constant_like(x, 0)), floor(x), ceil(x))
  return subtract(x, whole), whole


def sqrt(x, /):
  return lax.sqrt(*promote_args_inexact("sqrt", x))


def cbrt(x, /):
  return lax.cbrt(*promote_args_inexact("cbrt", x))


def square(x, /):
  check_arraylike("square", x)
  x, = promote_dtypes_numeric(x)
  return lax.square(x)


def reciprocal(x, /):
  """1 / x; integers promote to the default float."""
  check_arraylike("reciprocal", x)
  x, = promote_dtypes_inexact(x)
  return lax.integer_pow(x, -1)


# --- exponentials and logarithms ----------------------------------------------------------

def exp(x, /):
  return lax.exp(*promote_args_inexact("exp", x))


def exp2(x, /):
  return lax.exp2(*promote_args_inexact("exp2", x))


def expm1(x, /):
  return lax.expm1(*promote_args_inexact("expm1", x))


def log(x, /):
  return lax.log(*promote_args_inexact("log", x))


def log1p(x, /):
  return lax.log1p(*promote_args_inexact("log1p", x))


def log2(x, /):
  """log(x) / log(2)."""
  x, = promote_args_inexact("log2", x)
  if dtypes.is_complex(x.dtype):
    r = lax.log(x)
    ln2 = lax.log(_constant_like(lax.real(r), 2))
    return lax.complex(lax.div(lax.real(r), ln2), lax.div(lax.imag(r), ln2))
  return lax.div(lax.log(x), lax.log(_constant_like(x, 2)))


def log10(x, /):
  """log(x) / log(10)."""
  x, = promote_args_inexact("log10", x)
  if dtypes.is_complex(x.dtype):
    r = lax.log(x)
    ln10 = lax.log(_constant_like(lax.real(r), 10))
    return lax.complex(lax.div(lax.real(r), ln10), lax.div(lax.imag(r), ln10))
  return lax.div(lax.log(x), lax.log(_constant_like(x, 10)))


def _wrap_between(x, bound):
  """x wrapped into [-bound, bound)."""
  a, two_a, zero = (_constant_like(x, v) for v in (bound, 2 * bound, 0))
  rem = lax.rem(lax.add(x, a), two_a)
  rem = lax.select(lax.lt(rem, zero), lax.add(rem, two_a), rem)
  return lax.sub(rem, a)


def _logaddexp(x1, x2, exp_fn, scale):
  """log(exp(x1) + exp(x2)) without overflow (scale 1), or its base-2 form
  (exp_fn exp2, scale 1/log(2)). Where both are infinite of one sign or
  either is NaN, x1 + x2 gives the answer."""
  amax = lax.max(x1, x2)
  if dtypes.is_float(x1.dtype):
    delta = lax.sub(x1, x2)
    softplus = lax.log1p(exp_fn(lax.neg(lax.abs(delta))))
    if scale != 1:
      softplus = lax.mul(_constant_like(amax, scale), softplus)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2), lax.add(amax, softplus))
  delta = lax.sub(lax.add(x1, x2), lax.mul(amax, _constant_like(amax, 2)))
  softplus = lax.log1p(exp_fn(delta))
  if scale != 1:
    softplus = lax.mul(_constant_like(amax, scale), softplus)
  out = lax.add(amax, softplus)
  return lax.complex(lax.real(out), _wrap_between(lax.imag(out), np.pi * scale))


def _replace_inf(x):
  """x with +inf (in the real part) replaced by 0."""
  re_x = lax.real(x) if _is_complex(x) else x
  return lax.select(lax.eq(re_x, _constant_like(re_x, np.inf)), lax.full_like(x, 0), x)


def _logaddexp_jvp_rule(fn, exp_fn):
  """JAX's rule for logaddexp (exp) and logaddexp2 (exp2): each tangent
  times exp(x_i - out), with +inf replaced by 0 on both sides so that an
  infinite operand or result gives finite weights (d/dx1 at (-inf, 0) is 0)."""
  def _logaddexp_jvp(primals, tangents):
    (x1, x2), (t1, t2) = primals, tangents
    out = fn(x1, x2)
    weight = lambda x: exp_fn(lax.sub(_replace_inf(x), _replace_inf(out)))
    return out, lax.add(lax.mul(t1, weight(x1)), lax.mul(t2, weight(x2)))
  return _logaddexp_jvp


@custom_jvp
def _lax_logaddexp(x1, x2):
  """JAX's lax-level logaddexp of two operands of one dtype (custom JVP)."""
  return _logaddexp(x1, x2, lax.exp, 1)


@custom_jvp
def _lax_logaddexp2(x1, x2):
  """JAX's lax-level logaddexp2 of two operands of one dtype (custom JVP)."""
  return _logaddexp(x1, x2, lax.exp2, 1 / np.log(2))


_lax_logaddexp.defjvp(_logaddexp_jvp_rule(_lax_logaddexp, lax.exp))
_lax_logaddexp2.defjvp(_logaddexp_jvp_rule(_lax_logaddexp2, lax.exp2))


@binary_ufunc(identity=-np.inf, reduce=_logsumexp)
@jit
def logaddexp(x1, x2, /):
  """log(exp(x1) + exp(x2)), computed without overflow. (A custom JVP, as
  JAX's: finite derivatives where an operand is -inf or the result +inf.)"""
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  return _lax_logaddexp(x1, x2)


@binary_ufunc(identity=-np.inf, reduce=_logsumexp2)
@jit
def logaddexp2(x1, x2, /):
  """log2(2**x1 + 2**x2), computed without overflow (custom JVP, as logaddexp)."""
  x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
  return _lax_logaddexp2(x1, x2)


# --- trigonometry ---------------------------------------------------------------------------

def sin(x, /):
  return lax.sin(*promote_args_inexact("sin", x))


def cos(x, /):
  return lax.cos(*promote_args_inexact("cos", x))


def tan(x, /):
  return lax.tan(*promote_args_inexact("tan", x))


def arcsin(x, /):
  return lax.asin(*promote_args_inexact("arcsin", x))


def arccos(x, /):
  return lax.acos(*promote_args_inexact("arccos", x))


def arctan(x, /):
  return lax.atan(*promote_args_inexact("arctan", x))


def arctan2(x1, x2, /):
  return lax.atan2(*promote_args_inexact("arctan2", x1, x2))


def sinh(x, /):
  return lax.sinh(*promote_args_inexact("sinh", x))


def cosh(x, /):
  return lax.cosh(*promote_args_inexact("cosh", x))


def tanh(x, /):
  return lax.tanh(*promote_args_inexact("tanh", x))


def arcsinh(x, /):
  return lax.asinh(*promote_args_inexact("arcsinh", x))


@jit
def arccosh(x, /):
  """Inverse hyperbolic cosine; for complex x, the root with real part >= 0."""
  result = lax.acosh(*promote_args_inexact("arccosh", x))
  if dtypes.is_complex(result.dtype):
    result = _where(less(real(result), 0), lax.neg(result), result)
  return result


def arctanh(x, /):
  return lax.atanh(*promote_args_inexact("arctanh", x))


def asin(x, /):
  return arcsin(*promote_args("asin", x))


def acos(x, /):
  return arccos(*promote_args("acos", x))


def atan(x, /):
  return arctan(*promote_args("atan", x))


def atan2(x1, x2, /):
  return arctan2(*promote_args("atan2", x1, x2))


def asinh(x, /):
  return arcsinh(*promote_args("asinh", x))


def acosh(x, /):
  return arccosh(*promote_args("acosh", x))


def atanh(x, /):
  return arctanh(*promote_args("atanh", x))


@jit
def hypot(x1, x2, /):
  """sqrt(x1**2 + x2**2) without overflow; inf if either is ±inf (even with NaN)."""
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  if dtypes.is_complex(x1.dtype):
    raise ValueError("jnp.hypot is not well defined for complex-valued inputs. "
                     "Please convert to real values first, such as by using abs(x)")
  x1, x2 = lax.abs(x1), lax.abs(x2)
  idx_inf = lax.bitwise_or(isposinf(x1), isposinf(x2))
  x1, x2 = maximum(x1, x2), minimum(x1, x2)
  safe_x1 = _where(equal(x1, 0), lax.full_like(x1, 1), x1)
  x = _where(equal(x1, 0), x1,
             multiply(x1, lax.sqrt(add(1, lax.square(lax.div(x2, safe_x1))))))
  return _where(idx_inf, _constant_like(x, np.inf), x)


@jit
def sinc(x, /):
  """sin(pi x) / (pi x), and 1 at 0, where JAX's custom JVP gives the
  derivatives of every order their Maclaurin values (0, -pi**2/3, ...)."""
  check_arraylike("sinc", x)
  x, = promote_dtypes_inexact(x)
  eq_zero = lax.eq(x, _constant_like(x, 0))
  pi_x = lax.mul(_constant_like(x, np.pi), x)
  safe_pi_x = _where(eq_zero, _constant_like(x, 1), pi_x)
  return _where(eq_zero, _sinc_maclaurin(0, pi_x), lax.div(lax.sin(safe_pi_x), safe_pi_x))


def _sinc_maclaurin_fn(k, x):
  """The k-th derivative of sin(x)/x at 0, shaped like x: 0 for odd k,
  (-1)**(k/2) / (k + 1) for even k (computed from x, as JAX does, so that
  it stays differentiable)."""
  if k % 2:
    return lax.mul(x, _constant_like(x, 0))
  return lax.add(lax.mul(x, _constant_like(x, 0)), _constant_like(x, (-1) ** (k // 2) / (k + 1)))


_sinc_maclaurin = custom_jvp(_sinc_maclaurin_fn, nondiff_argnums=(0,))


@_sinc_maclaurin.defjvp
def _sinc_maclaurin_jvp(k, primals, tangents):
  (x,), (t,) = primals, tangents
  return _sinc_maclaurin(k, x), lax.mul(_sinc_maclaurin(k + 1, x), t)


def deg2rad(x, /):
  x, = promote_args_inexact("deg2rad", x)
  return lax.mul(x, _constant_like(x, np.pi / 180))


def rad2deg(x, /):
  x, = promote_args_inexact("rad2deg", x)
  return lax.mul(x, _constant_like(x, 180 / np.pi))


radians = deg2rad
degrees = rad2deg


# --- comparisons, extrema -------------------------------------------------------------------

@binary_ufunc(identity=None, reduce=_extremum_reduce("max"))
def maximum(x, y, /):
  """Elementwise maximum, NaN-propagating."""
  return lax.max(*promote_args("maximum", x, y))


@binary_ufunc(identity=None, reduce=_extremum_reduce("min"))
def minimum(x, y, /):
  """Elementwise minimum, NaN-propagating."""
  return lax.min(*promote_args("minimum", x, y))


@jit
def fmax(x1, x2):
  """Elementwise maximum ignoring NaN (NaN only if both are NaN)."""
  return where(logical_or(less(x1, x2), isnan(x1)), x2, x1)


@jit
def fmin(x1, x2):
  """Elementwise minimum ignoring NaN (NaN only if both are NaN)."""
  return where(logical_or(greater(x1, x2), isnan(x1)), x2, x1)


@jit
def clip(arr=None, /, min=None, max=None):
  """`arr` limited to [min, max] (either may be None): maximum(min, arr),
  then minimum(max, ...). NaN propagates; no complex values. `arr` is required
  (its None default raises TypeError, as in JAX)."""
  check_arraylike("clip", arr)
  if any(v is not None and _is_complex(v) for v in (arr, min, max)):
    raise ValueError(
        "Clip received a complex value either through the input or the min/max "
        "keywords. Complex values have no ordering and cannot be clipped. Please "
        "convert to a real value or array by taking the real or imaginary "
        "components via jax.numpy.real/imag respectively.")
  if min is not None:
    arr = maximum(min, arr)
  if max is not None:
    arr = minimum(max, arr)
  return _asarray(arr)


def _complex_comparison(lax_op, x, y):
  """Orders complex numbers lexicographically (real part, then imaginary part)."""
  if dtypes.is_complex(x.dtype):
    return lax.select(lax.eq(lax.real(x), lax.real(y)),
                      lax_op(lax.imag(x), lax.imag(y)),
                      lax_op(lax.real(x), lax.real(y)))
  return lax_op(x, y)


def equal(x, y, /):
  return lax.eq(*promote_args("equal", x, y))


def not_equal(x, y, /):
  return lax.ne(*promote_args("not_equal", x, y))


def less(x, y, /):
  return _complex_comparison(lax.lt, *promote_args("less", x, y))


def less_equal(x, y, /):
  return _complex_comparison(lax.le, *promote_args("less_equal", x, y))


def greater(x, y, /):
  return _complex_comparison(lax.gt, *promote_args("greater", x, y))


def greater_equal(x, y, /):
  return _complex_comparison(lax.ge, *promote_args("greater_equal", x, y))


# --- logic and bits -------------------------------------------------------------------------

@binary_ufunc(identity=True, reduce=_bitwise_reduce(lax.bitwise_and, True, logical=True))
def logical_and(x, y, /):
  return lax.bitwise_and(*map(_to_bool, promote_args("logical_and", x, y)))


@binary_ufunc(identity=False, reduce=_bitwise_reduce(lax.bitwise_or, False, logical=True))
def logical_or(x, y, /):
  return lax.bitwise_or(*map(_to_bool, promote_args("logical_or", x, y)))


@binary_ufunc(identity=False, reduce=_bitwise_reduce(lax.bitwise_xor, False, logical=True))
def logical_xor(x, y, /):
  return lax.bitwise_xor(*map(_to_bool, promote_args("logical_xor", x, y)))


def logical_not(x, /):
  return lax.bitwise_not(*map(_to_bool, promote_args("logical_not", x)))


@binary_ufunc(identity=-1, reduce=_bitwise_reduce(lax.bitwise_and, -1))
def bitwise_and(x, y, /):
  return lax.bitwise_and(*promote_args("bitwise_and", x, y))


@binary_ufunc(identity=0, reduce=_bitwise_reduce(lax.bitwise_or, 0))
def bitwise_or(x, y, /):
  return lax.bitwise_or(*promote_args("bitwise_or", x, y))


@binary_ufunc(identity=0, reduce=_bitwise_reduce(lax.bitwise_xor, 0))
def bitwise_xor(x, y, /):
  return lax.bitwise_xor(*promote_args("bitwise_xor", x, y))


def bitwise_not(x, /):
  return lax.bitwise_not(*promote_args("bitwise_not", x))


def invert(x, /):
  return lax.bitwise_not(*promote_args("invert", x))


def bitwise_invert(x, /):
  return lax.bitwise_not(*promote_args("bitwise_invert", x))


@jit
def bitwise_count(x, /):
  """The number of 1 bits in |x|, as uint8 (as NumPy)."""
  x, = promote_args_numeric("bitwise_count", x)
  return lax.convert_element_type(lax.population_count(absolute(x)), dtypes.uint8)


def left_shift(x, y, /):
  """x << y; a shift by the bit width or more (or negative) gives 0."""
  return lax.shift_left(*promote_args_numeric("left_shift", x, y))


def bitwise_left_shift(x, y, /):
  return lax.shift_left(*promote_args_numeric("bitwise_left_shift", x, y))


def right_shift(x1, x2, /):
  """x1 >> x2: arithmetic (sign-filling) for signed integers, logical for unsigned."""
  x1, x2 = promote_args_numeric("right_shift", x1, x2)
  if dtypes.is_unsigned(x1.dtype):
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


def bitwise_right_shift(x1, x2, /):
  return right_shift(x1, x2)


# --- floating-point classification and manipulation -----------------------------------------

def isnan(x, /):
  check_arraylike("isnan", x)
  return lax.ne(x, x)


@jit
def isinf(x, /):
  check_arraylike("isinf", x)
  dtype = dtypes.dtype(x)
  if dtypes.is_float(dtype):
    return lax.eq(lax.abs(x), _constant_like(x, np.inf))
  if dtypes.is_complex(dtype):
    re, im = lax.real(x), lax.imag(x)
    return lax.bitwise_or(lax.eq(lax.abs(re), _constant_like(re, np.inf)),
                          lax.eq(lax.abs(im), _constant_like(im, np.inf)))
  return lax.full_like(x, False, dtype=dtypes.bool_)


def isfinite(x, /):
  check_arraylike("isfinite", x)
  dtype = dtypes.dtype(x)
  if dtypes.is_float(dtype):
    return lax.is_finite(x)
  if dtypes.is_complex(dtype):
    return lax.bitwise_and(lax.is_finite(real(x)), lax.is_finite(imag(x)))
  return lax.full_like(x, True, dtype=dtypes.bool_)


def _isposneginf(infinity, x, out):
  check_arraylike("isposinf" if infinity > 0 else "isneginf", x)
  if out is not None:
    raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
  dtype = dtypes.dtype(x)
  if dtypes.is_float(dtype):
    return lax.eq(x, _constant_like(x, infinity))
  if dtypes.is_complex(dtype):
    raise ValueError("isposinf/isneginf are not well defined for complex types")
  return lax.full_like(x, False, dtype=dtypes.bool_)


def isposinf(x, /, out=None):
  return _isposneginf(np.inf, x, out)


def isneginf(x, /, out=None):
  return _isposneginf(-np.inf, x, out)


@jit
def signbit(x, /):
  """True where the sign bit is set (-0.0 and -NaN included); False for bool."""
  x, = promote_args("signbit", x)
  dtype = dtypes.dtype(x)
  if dtypes.is_integer(dtype):
    return lax.lt(x, _constant_like(x, 0))
  if dtypes.is_bool(dtype):
    return lax.full_like(x, False, dtype=dtypes.bool_)
  if not dtypes.is_float(dtype):
    raise ValueError(f"jax.numpy.signbit is not well defined for {dtype}")
  if dtype == dtypes.bfloat16:
    dtype = dtypes.float32
    x = lax.convert_element_type(x, dtypes.float32)
  info = dtypes.finfo(dtype)
  bits = lax.bitcast_convert_type(x, _INT_OF_WIDTH[info.bits])
  return lax.convert_element_type(right_shift(bits, info.nexp + info.nmant), dtypes.bool_)


@jit
def copysign(x1, x2, /):
  """|x1| with the sign (bit) of x2."""
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  if dtypes.is_complex(dtypes.dtype(x1)):
    raise TypeError("copysign does not support complex-valued inputs")
  return _where(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


def nextafter(x, y, /):
  return lax.nextafter(*promote_args_inexact("nextafter", x, y))


def spacing(x, /):
  """The distance from x to the next float away from zero (NaN at ±inf)."""
  x, = promote_args_inexact("spacing", x)
  if dtypes.is_complex(x.dtype):
    raise ValueError("spacing is not defined for complex inputs.")
  inf = _constant_like(x, np.inf)
  if x.dtype == dtypes.float16:
    return lax.sub(lax.nextafter(x, inf), x)
  result = lax.sub(lax.nextafter(x, copysign(inf, x)), x)
  smallest = dtypes.finfo(x.dtype).smallest_subnormal
  return _where(equal(result, 0), copysign(_constant_like(x, smallest), x), result)


def _normalize_float(x):
  """(bits of x as an int, exponent correction): subnormals are scaled up by
  2**nmant first so their exponent field is meaningful."""
  info = dtypes.finfo(dtypes.dtype(x))
  int_type = _INT_OF_WIDTH[info.bits]
  cond = less(lax.abs(x), info.tiny)
  x1 = _where(cond, multiply(x, _constant_like(x, 1 << info.nmant)), x)
  x2 = _where(cond, np.array(-info.nmant, int_type), np.array(0, int_type))
  return lax.bitcast_convert_type(x1, int_type), x2


@jit
def frexp(x, /):
  """(mantissa in [0.5, 1), int32 exponent) with x == mantissa * 2**exponent;
  (x, 0) for 0, ±inf and NaN."""
  check_arraylike("frexp", x)
  x, = promote_dtypes_inexact(x)
  if dtypes.is_complex(x.dtype):
    raise TypeError("frexp does not support complex-valued inputs")
  info = dtypes.finfo(x.dtype)
  mask = (1 << info.nexp) - 1
  bias = 1 - info.minexp
  x1, x2 = _normalize_float(x)
  x2 = add(x2, add(subtract(bitwise_and(right_shift(x1, info.nmant), mask), bias), 1))
  x1 = bitwise_and(x1, ~(mask << info.nmant))
  x1 = bitwise_or(x1, (bias - 1) << info.nmant)
  x1 = lax.bitcast_convert_type(x1, x.dtype)
  cond = logical_or(logical_or(isinf(x), isnan(x)), equal(x, 0))
  x2 = _where(cond, lax.full_like(x2, 0), x2)
  return _where(cond, x, x1), lax.convert_element_type(x2, dtypes.int32)


@jit
def ldexp(x1, x2, /):
  """x1 * 2**x2 for an integer x2, exact (no intermediate overflow or
  underflow): the exponent field is set directly. ±0, ±inf and NaN x1 are
  returned as they are."""
  check_arraylike("ldexp", x1, x2)
  x1_dtype, x2_dtype = dtypes.dtype(x1), dtypes.dtype(x2)
  if dtypes.is_complex(x1_dtype) or dtypes.is_inexact(x2_dtype):
    raise ValueError(f"ldexp not supported for input types {(x1_dtype, x2_dtype)}")
  x1, x2 = promote_shapes("ldexp", x1, x2)
  dtype = x1_dtype if dtypes.is_inexact(x1_dtype) else dtypes.default_float_dtype()
  info = dtypes.finfo(dtype)
  int_type = _INT_OF_WIDTH[info.bits]
  x1 = lax.convert_element_type(x1, dtype)
  x2 = lax.convert_element_type(x2, int_type)

  mask = (1 << info.nexp) - 1
  bias = 1 - info.minexp
  x, e = _normalize_float(x1)
  x2 = add(x2, subtract(add(e, bitwise_and(right_shift(x, info.nmant), mask)), bias))
  # Out of range before denormalization: underflow to 0 or overflow to inf.
  underflow_cond = less(x2, -(bias + info.nmant))
  overflow_cond = greater(x2, bias)
  m = lax.full_like(x, 1, dtype=dtype)
  # Results in the subnormal range: scale the mantissa down instead.
  cond = less(x2, -bias + 1)
  x2 = _where(cond, add(x2, info.nmant), x2)
  m = _where(cond, true_divide(m, 1 << info.nmant), m)
  x2 = lax.convert_element_type(x2, dtypes.int32)
  x = bitwise_and(x, ~(mask << info.nmant))
  x = bitwise_or(x, left_shift(add(lax.convert_element_type(x2, int_type), bias), info.nmant))
  x = multiply(lax.convert_element_type(m, dtype), lax.bitcast_convert_type(x, dtype))
  x = _where(underflow_cond, lax.full_like(x, 0, dtype=dtype), x)
  x = _where(overflow_cond, multiply(lax.sign(x1), lax.full_like(x, np.inf)), x)
  return _where(logical_or(logical_or(isinf(x1), isnan(x1)), equal(x1, 0)), x1, x)


# --- complex numbers --------------------------------------------------------------------------

def real(val, /):
  check_arraylike("real", val)
  return lax.real(val) if _is_complex(val) else _asarray(val)


def imag(val, /):
  check_arraylike("imag", val)
  return lax.imag(val) if _is_complex(val) else lax.full_like(val, 0)


def conjugate(x, /):
  check_arraylike("conjugate", x)
  return lax.conj(x) if _is_complex(x) else _asarray(x)


conj = conjugate


@functools.partial(jit, static_argnames=("deg",))
def angle(z, deg=False):
  """The argument atan2(imag, real) of z (radians, or degrees with deg=True)."""
  re, im = real(z), imag(z)
  dtype = dtypes.dtype(re)
  if not dtypes.is_inexact(dtype) or (dtypes.is_float(dtypes.dtype(z)) and np.ndim(z) == 0):
    dtype = dtypes.default_float_dtype()
    re = lax.convert_element_type(re, dtype)
    im = lax.convert_element_type(im, dtype)
  result = lax.atan2(im, re)
  return degrees(result) if deg else result


# --- selection and misc -----------------------------------------------------------------------

@jit
def heaviside(x1, x2, /):
  """0 where x1 < 0, 1 where x1 > 0, and x2 elsewhere: where x1 == 0 and also,
  as in JAX (NumPy gives NaN), where x1 is NaN, since NaN compares false."""
  check_arraylike("heaviside", x1, x2)
  x1, x2 = promote_dtypes_inexact(x1, x2)
  zero = _constant_like(x1, 0)
  return _where(lax.lt(x1, zero), zero,
                _where(lax.gt(x1, zero), _constant_like(x1, 1), x2))


@jit
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  """NaN -> nan, +inf -> posinf (default: the largest float), -inf -> neginf
  (default: the most negative float). Integers are returned unchanged."""
  del copy
  check_arraylike("nan_to_num", x)
  dtype = dtypes.dtype(x)
  if not dtypes.is_inexact(dtype):
    return _asarray(x)
  if dtypes.is_complex(dtype):
    return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                       nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
  info = dtypes.finfo(dtype)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  out = where(isnan(x), lax.convert_element_type(nan, dtype), x)
  out = where(isposinf(out), lax.convert_element_type(posinf, dtype), out)
  return where(isneginf(out), lax.convert_element_type(neginf, dtype), out)


@functools.partial(jit, static_argnames=("equal_nan",))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """|a - b| <= atol + rtol * |b|, elementwise; infinities are close only to
  themselves and NaN to nothing (unless `equal_nan`). Integers and booleans
  are compared as the default float, as in JAX (NumPy compares them in float64)."""
  a, b = promote_args("isclose", a, b)
  a, b = promote_args_inexact("isclose", a, b)
  dtype = dtypes.dtype(a)
  part_dtype = np.finfo(dtype).dtype if dtypes.is_complex(dtype) else dtype
  rtol = lax.convert_element_type(rtol, part_dtype)
  atol = lax.convert_element_type(atol, part_dtype)
  out = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
  a_inf, b_inf = isinf(a), isinf(b)
  out = logical_and(out, logical_not(logical_or(a_inf, b_inf)))
  out = logical_or(out, logical_and(logical_and(a_inf, b_inf), lax.eq(a, b)))
  a_nan, b_nan = isnan(a), isnan(b)
  out = logical_and(out, logical_not(logical_or(a_nan, b_nan)))
  if equal_nan:
    out = logical_or(out, logical_and(a_nan, b_nan))
  return out


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  """`x` where `condition` else `y`: x and y are promoted together, all three
  broadcast, then `select_n`. The one-argument form is `jnp.nonzero`."""
  if x is None and y is None:
    from refimpl.numpy.selection import nonzero  # selection imports this module
    check_arraylike("where", condition)
    return nonzero(condition, size=size, fill_value=fill_value)
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value arguments cannot be used in three-term "
                     "where function.")
  if x is None or y is None:
    raise ValueError("Either both or neither of the x and y arguments should be "
                     f"provided to jax.numpy.where, got {x} and {y}.")
  check_arraylike("where", condition, x, y)
  return _where(condition, x, y)


def astype(x, dtype, /, *, copy=False, device=None):
  """x converted to `dtype` (the default float if None) with convert_element_type:
  float to int truncates and saturates (`[254., 255., 256., 257.]` to uint8
  is `[254, 255, 255, 255]`), NaN to int is 0; complex to bool is x != 0."""
  check_arraylike("astype", x)
  x = _asarray(x)
  if dtype is None:
    dtype = dtypes.default_float_dtype()
  dtypes.check_user_dtype_supported(dtype, "astype")
  if dtypes.is_complex(x.dtype) and np.dtype(dtype) == dtypes.bool_:
    x = not_equal(x, _constant_like(x, 0))
  return lax.convert_element_type(x, dtype)


def _gcd_unfinished(carry):
  """Whether any pair still has b != 0 (`jnp.any`, as one reduce_or)."""
  _, b = carry
  return lax.reduce_or(not_equal(b, 0), tuple(range(b.ndim)))


def _gcd_step(carry):
  """One Euclid step (a, b) -> (b, a mod b), leaving finished pairs (b == 0) alone."""
  a, b = carry
  done = equal(b, 0)
  safe_b = _where(done, lax.full_like(b, 1), b)
  return _where(done, a, b), _where(done, b, lax.rem(a, safe_b))


@jit
def gcd(x1, x2):
  """Greatest common divisor of |x1| and |x2| (gcd(0, 0) is 0), integers only.

  Euclid's algorithm in a `lax.while_loop`, as JAX: steps run while any pair
  is unfinished. JAX's step also swaps each pair into order (a >= b), which
  does nothing for non-negative operands; but abs(INT_MIN) wraps to INT_MIN,
  and there JAX's loop can cycle forever. This step leaves finished pairs
  alone instead, so |b| shrinks every step and the loop always ends, with
  the values of conformance divergence `gcd_of_int_min`.
  """
  check_arraylike("gcd", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  if not dtypes.is_integer(dtypes.dtype(x1)):
    raise ValueError("Arguments to jax.numpy.gcd must be integers.")
  x1, x2 = _broadcast_arrays(x1, x2)
  a, _ = lax.while_loop(_gcd_unfinished, _gcd_step, (absolute(x1), absolute(x2)))
  return a


@jit
def lcm(x1, x2):
  """Least common multiple of |x1| and |x2| (0 if either is 0), integers only."""
  check_arraylike("lcm", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  x1, x2 = absolute(x1), absolute(x2)
  if not dtypes.is_integer(dtypes.dtype(x1)):
    raise ValueError("Arguments to jax.numpy.lcm must be integers.")
  d = gcd(x1, x2)
  return where(equal(d, 0), _constant_like(d, 0), multiply(x1, floor_divide(x2, d)))


# --- dtypes ----------------------------------------------------------------------------------

def promote_types(a, b):
  """The dtype JAX promotes `a` and `b` to (its lattice; not canonicalized)."""
  return dtypes.promote_types(a, b)


def result_type(*args):
  """The canonical dtype of combining `args` (values or dtypes), weak types honoured.

  Python's int, float and complex count as weak; NumPy scalar types and dtype
  names as their dtypes.
  """
  return dtypes.result_type(*(np.dtype(a) if isinstance(a, str) or (
      isinstance(a, type) and a not in (bool, int, float, complex)) else a for a in args))


@jit
def i0(x):
  """The modified Bessel function of the first kind, order 0:
  exp(|x|) * bessel_i0e(|x|). Real floating inputs only (ValueError for
  complex). A custom JVP (as JAX's) makes the derivative at 0 exactly 0."""
  x, = promote_args_inexact("i0", x)
  if not dtypes.is_float(x.dtype):
    raise ValueError(f"Unsupported input type to jax.numpy.i0: {x.dtype}")
  return _i0(x)


def _i0_fn(x):
  abs_x = lax.abs(x)
  return lax.mul(lax.exp(abs_x), lax.bessel_i0e(abs_x))


_i0 = custom_jvp(_i0_fn)


@_i0.defjvp
def _i0_jvp(primals, tangents):
  primal_out, tangent_out = jvp(_i0_fn, primals, tangents)
  return primal_out, jnp.where(primals[0] == 0, 0.0, tangent_out)
