"""Elementwise primitives: arithmetic, math functions, comparisons, logic, casts.

Shape rule (all n-ary ops): operands have the same dtype; rank-0 operands
broadcast against anything, operands of equal rank broadcast along size-1
dimensions. The result is weakly typed only when every operand is.
"""

import numpy as np

from refimpl import dtypes
from refimpl.core import ConcreteArray, Primitive, ShapedArray, Tracer, eval_context
from refimpl.lax.rules import (ANY, FLOAT, INEXACT, INT_OR_BOOL, NUMBER,
                               as_dtype, naryop_aval)

__all__ = ['neg', 'add', 'sub', 'mul', 'max', 'min', 'exp', 'log', 'sin', 'cos', 'lt', 'gt', 'eq', 'bitwise_not', 'select_n', 'select', 'convert_element_type']


def unop(name, category, numpy_fn, doc):
  """A unary primitive computing `numpy_fn` in the operand's dtype."""
  prim = Primitive(name)

  def reference(x):
    return as_dtype(numpy_fn(x), x.dtype)

  reference.__doc__ = doc
  prim.def_impl(reference)
  prim.def_abstract_eval(lambda x: naryop_aval(name, [x], category))
  return prim


def binop(name, category, numpy_fn, doc, out_dtype=None):
  """A binary primitive computing `numpy_fn` with NumPy broadcasting."""
  prim = Primitive(name)

  def reference(x, y):
    return as_dtype(numpy_fn(x, y), out_dtype or x.dtype)

  reference.__doc__ = doc
  prim.def_impl(reference)
  prim.def_abstract_eval(lambda x, y: naryop_aval(name, [x, y], category, out_dtype))
  return prim


# --- arithmetic --------------------------------------------------------------

neg_p = unop("neg", NUMBER, np.negative, """Negation `-x`.

Integers wrap around: `neg(int32 min)` is int32 min. Unsigned integers wrap
modulo 2**bits.""")

add_p = binop("add", NUMBER, np.add, """Sum `x + y`. Integers wrap on overflow.""")

sub_p = binop("sub", NUMBER, np.subtract, """Difference `x - y`. Integers wrap on overflow.""")

mul_p = binop("mul", NUMBER, np.multiply, """Product `x * y`. Integers wrap on overflow.""")

max_p = binop("max", ANY, lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan, np.maximum(x, y))
              if dtypes.is_inexact(x.dtype) else np.maximum(x, y),
              """Elementwise maximum; NaN if either operand is NaN.""")

min_p = binop("min", ANY, lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan, np.minimum(x, y))
              if dtypes.is_inexact(x.dtype) else np.minimum(x, y),
              """Elementwise minimum; NaN if either operand is NaN.""")

# --- math functions ------------------------------------------------------------

exp_p = unop("exp", INEXACT, np.exp, """Exponential `e**x`; overflows to inf.""")
log_p = unop("log", INEXACT, np.log,
             """Natural logarithm; log(0) = -inf, log(x<0) = nan.""")
sin_p = unop("sin", INEXACT, np.sin, """Sine (radians).""")
cos_p = unop("cos", INEXACT, np.cos, """Cosine (radians).""")

# --- comparisons and logic ----------------------------------------------------

lt_p = binop("lt", ANY, np.less, """`x < y`, giving bool. NaN compares false.""", dtypes.bool_)
gt_p = binop("gt", ANY, np.greater, """`x > y`, giving bool. NaN compares false.""", dtypes.bool_)
eq_p = binop("eq", ANY, np.equal, """`x == y`, giving bool. NaN != NaN.""", dtypes.bool_)

not_p = unop("not", INT_OR_BOOL, np.invert,
             """Logical not for booleans, bitwise not for integers.""")

# --- selection -----------------------------------------------------------------

select_n_p = Primitive("select_n")


@select_n_p.def_impl
def _select_n_reference(which, *cases):
  """Picks, elementwise, `cases[which]`.

  `which` is bool (False picks cases[0], True cases[1]) or int32 in
  [0, len(cases)); an out-of-range integer selector is clamped. `which` is
  either a scalar or has the cases' shape. All cases share shape and dtype.
  """
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


# --- casts -------------------------------------------------------------------------

convert_element_type_p = Primitive("convert_element_type")


def _float_to_int(x, dtype):
  """Float to integer as XLA on CPU: truncate toward zero, saturate, NaN to 0."""
  info = np.iinfo(dtype)
  with np.errstate(invalid="ignore"):
    truncated = np.trunc(x.astype(np.float64))
    clipped = np.clip(np.nan_to_num(truncated, nan=0.0), info.min, info.max)
  return clipped.astype(dtype)


@convert_element_type_p.def_impl
def _convert_element_type_reference(operand, *, new_dtype, weak_type):
  """Casts `operand` to `new_dtype` (shape unchanged).

  Float to integer truncates toward zero and saturates at the integer's
  limits; NaN becomes 0 (so `[254., 255., 256., 257.]` to uint8 is
  `[254, 255, 255, 255]`, unlike NumPy's wrap-around). Integer to narrower
  integer wraps modulo 2**bits. Anything to bool is `x != 0`. Complex to real
  keeps the real part. `weak_type` marks the result weakly typed.
  """
  new_dtype = np.dtype(new_dtype)
  if new_dtype == dtypes.bool_:
    return operand != 0
  if dtypes.is_complex(operand.dtype) and not dtypes.is_complex(new_dtype):
    operand = operand.real
  if dtypes.is_inexact(operand.dtype) and dtypes.is_integer(new_dtype):
    return _float_to_int(operand, new_dtype)
  return operand.astype(new_dtype)


@convert_element_type_p.def_abstract_eval
def _convert_element_type_shape_rule(operand, *, new_dtype, weak_type):
  return ShapedArray(operand.shape, new_dtype, weak_type)


# --- user-facing functions (lax.*) ------------------------------------------------

def neg(x):
  return neg_p.bind(x)


def add(x, y):
  return add_p.bind(x, y)


def sub(x, y):
  return sub_p.bind(x, y)


def mul(x, y):
  return mul_p.bind(x, y)


def max(x, y):
  return max_p.bind(x, y)


def min(x, y):
  return min_p.bind(x, y)


def exp(x):
  return exp_p.bind(x)


def log(x):
  return log_p.bind(x)


def sin(x):
  return sin_p.bind(x)


def cos(x):
  return cos_p.bind(x)


def lt(x, y):
  return lt_p.bind(x, y)


def gt(x, y):
  return gt_p.bind(x, y)


def eq(x, y):
  return eq_p.bind(x, y)


def bitwise_not(x):
  return not_p.bind(x)


def select_n(which, *cases):
  return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
  """`on_true` where `pred` else `on_false` (select_n with the cases swapped)."""
  return select_n_p.bind(pred, on_false, on_true)


def convert_element_type(operand, new_dtype, weak_type=False):
  """Casts `operand` to `new_dtype` (canonicalized for x64).

  A cast of a constant (not a tracer) is folded: computed right away, so a
  traced program sees the converted constant rather than a cast equation.
  """
  new_dtype = dtypes.canonicalize_dtype(dtypes.dtype(new_dtype))
  if isinstance(operand, (Tracer, ConcreteArray)):
    aval = operand.aval
    if (aval.dtype, aval.weak_type) == (new_dtype, bool(weak_type)):
      return operand
  if isinstance(operand, Tracer):
    return convert_element_type_p.bind(operand, new_dtype=new_dtype,
                                       weak_type=bool(weak_type))
  if type(operand) is int:
    operand = np.asarray(operand).astype(new_dtype)  # big Python ints fit the target
  with eval_context():
    return convert_element_type_p.bind(operand, new_dtype=new_dtype,
                                       weak_type=bool(weak_type))
