"""Where JAX deliberately differs from NumPy: the one table of divergences.

Each entry says what JAX does and gives a function computing JAX's expected
result (with NumPy, on the same inputs as the case that names it). The
conformance cases use these instead of NumPy's result; docs/divergences.md
is generated from this table.
"""

import dataclasses
from typing import Callable

import numpy as np

from refimpl import dtypes

__all__ = ["Divergence", "DIVERGENCES"]


@dataclasses.dataclass(frozen=True)
class Divergence:
  summary: str       # what JAX does, and how NumPy differs
  expected: Callable  # JAX's result, computed with NumPy


def _saturating_cast(x, dtype):
  """Float to integer as XLA on CPU: truncate, saturate, NaN to 0; complex to
  anything real (bool too) by its real part."""
  dtype = np.dtype(dtype)
  x = np.asarray(x)
  if dtypes.is_complex(x.dtype) and not dtypes.is_complex(dtype):
    x = x.real
  if not dtypes.is_inexact(x.dtype) or not dtypes.is_integer(dtype):
    return x.astype(dtype)
  info = np.iinfo(dtype)
  truncated = np.trunc(np.nan_to_num(x.real.astype(np.float64), nan=0.0))
  return np.clip(truncated, info.min, info.max).astype(dtype)


def _astype(x, dtype):
  """jnp.astype: `_saturating_cast`, but complex to bool by x != 0."""
  x = np.asarray(x)
  if dtypes.is_complex(x.dtype) and np.dtype(dtype) == np.bool_:
    return x != 0
  return _saturating_cast(x, dtype)


def _nanarg(np_fn):
  def expected(a, axis=None, keepdims=False):
    a = np.asarray(a)
    all_nan = np.all(np.isnan(a), axis=axis, keepdims=keepdims)
    filled = np.where(np.isnan(a), -np.inf if np_fn is np.argmax else np.inf, a)
    index = np_fn(filled, axis=axis, keepdims=keepdims) if a.size else np.zeros(all_nan.shape)
    return np.where(all_nan, -1, index).astype(np.int32)
  return expected


DIVERGENCES = {
    "float_to_int_cast_saturates": Divergence(
        "Casting floats to integers truncates toward zero and saturates at the "
        "integer type's limits, with NaN becoming 0 (XLA on CPU); NumPy's result "
        "is undefined and in practice wraps. Complex to bool tests the real part "
        "(NumPy: x != 0).",
        _saturating_cast),
    "astype_saturates": Divergence(
        "jnp.astype (and Array.astype) casts as lax.convert_element_type does, floats to "
        "integers truncated and saturated with NaN becoming 0, complex to real dtypes by "
        "the real part; but complex to bool as x != 0, as NumPy does (JAX's astype "
        "compares rather than take the real part).",
        _astype),
    "nanargmin_all_nan_is_minus_one": Divergence(
        "jnp.nanargmin on an all-NaN slice returns -1; NumPy raises ValueError.",
        _nanarg(np.argmin)),
    "nanargmax_all_nan_is_minus_one": Divergence(
        "jnp.nanargmax on an all-NaN slice returns -1; NumPy raises ValueError.",
        _nanarg(np.argmax)),
}


# --- elementwise: integer division, powers, special values, promotion -----------------------------

def _int_division(x, y):
  """(quotient rounded toward zero, remainder with the dividend's sign, y == 0),
  computed in int64 (which holds every 32-bit operand) and wrapped back."""
  x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
  wide_x, wide_y = x.astype(np.int64), y.astype(np.int64)
  by_zero = wide_y == 0
  safe_y = np.where(by_zero, 1, wide_y)
  quotient = np.abs(wide_x) // np.abs(safe_y) * np.sign(wide_x) * np.sign(safe_y)
  return quotient, wide_x - quotient * safe_y, by_zero


def _lax_integer_div(x, y):
  quotient, _, by_zero = _int_division(x, y)
  return np.where(by_zero, -1, quotient).astype(np.asarray(x).dtype)


def _lax_integer_rem(x, y):
  _, remainder, by_zero = _int_division(x, y)
  return np.where(by_zero, np.asarray(x).astype(np.int64), remainder).astype(np.asarray(x).dtype)


def _floor_divide(x, y):
  x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
  with np.errstate(all="ignore"):
    quotient = np.floor_divide(x, y)
  if not dtypes.is_integer(x.dtype):
    return quotient   # (floats: NumPy's ±inf and NaN)
  if dtypes.is_unsigned(x.dtype):
    by_zero = np.array(-1).astype(x.dtype)
  else:
    by_zero = np.where(x == 0, -1, -2).astype(x.dtype)
  return np.where(y == 0, by_zero, quotient).astype(x.dtype)


def _divmod(x, y):
  with np.errstate(all="ignore"):
    return _floor_divide(x, y), np.remainder(x, y)


def _integer_power(x, y):
  x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
  low_bits = (y & 63).astype(x.dtype)
  return np.where((x == 0) & (y != 0), np.zeros_like(x), np.power(x, low_bits))


def _wide(x):
  x = np.asarray(x)
  return x.astype(np.complex128 if dtypes.is_complex(x.dtype) else np.float64)


def _binary_exponentiation(x, y):
  """x ** y for a static int y, rounding to x's dtype after each product."""
  x = np.asarray(x)
  if y == 0:
    return np.ones_like(x)
  with np.errstate(all="ignore"):
    acc, base, n = None, x, abs(y)
    while n:
      if n & 1:
        acc = base if acc is None else (_wide(acc) * _wide(base)).astype(x.dtype)
      n >>= 1
      if n:
        base = (_wide(base) * _wide(base)).astype(x.dtype)
  if y > 0:
    return acc
  return _xla_complex(xla_divide, np.divide)(np.ones_like(acc), acc)   # XLA's 1 / acc


def _modf(x):
  fraction, whole = np.modf(x)
  return np.where(np.isinf(x), np.nan, fraction).astype(x.dtype), whole


def _spacing(x):
  with np.errstate(all="ignore"):
    spacing = np.spacing(x)
  if x.dtype == dtypes.float16:
    spacing = np.where(np.isneginf(x), np.inf, spacing).astype(x.dtype)
  return spacing


def _angle(z, deg=False):
  z = np.asarray(z)
  if z.ndim == 0 and dtypes.is_float(z.dtype):
    z = z.astype(dtypes.default_float_dtype())
  return np.angle(z, deg=deg)


def _heaviside(x1, x2):
  with np.errstate(all="ignore"):
    return np.where(np.isnan(x1), x2, np.heaviside(x1, x2))


def _complex_fmax_fmin(np_fn, np_order):
  """np_fn for real operands; JAX's `where(order(x1, x2) or isnan(x1), x2, x1)`
  for complex ones, with JAX's lexicographic order (see `_complex_order`)."""
  def expected(x1, x2):
    x1, x2 = np.asarray(x1), np.asarray(x2)
    if not dtypes.is_complex(x1.dtype):
      return np_fn(x1, x2)
    with np.errstate(invalid="ignore"):
      return np.where(_complex_order(x1, x2, np_order.__name__) | np.isnan(x1), x2, x1)
  return expected


def _complex_order(x, y, ufunc):
  """JAX's lexicographic order: imaginary parts decide only where real parts are equal."""
  order = getattr(np, ufunc)
  x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
  with np.errstate(invalid="ignore"):
    return np.where(x.real == y.real, order(x.imag, y.imag), order(x.real, y.real))


_INEXACT_RESULT = {"true_divide", "arctan2", "hypot", "logaddexp", "copysign"}


_ACCUMULATING = {"mean", "average", "var", "std", "nanmean", "nanvar", "nanstd"}


def _in_default_float(*args, ufunc, **kwargs):
  """np.<ufunc> with the integer and boolean operands rounded to the default
  float. Means and variances then accumulate in float64 (as the reference's
  sums do; NumPy's float32 sums would lose more), other functions compute in
  the default float."""
  float_ = dtypes.default_float_dtype()
  compute = np.float64 if ufunc in _ACCUMULATING else float_
  args = [np.asarray(a).astype(float_).astype(compute)
          if not dtypes.is_inexact(np.asarray(a).dtype) else a for a in args]
  with np.errstate(all="ignore"):
    return getattr(np, ufunc)(*args, **kwargs)


def _in_promoted_dtype(x, y, ufunc):
  dtype = dtypes.result_type(x, y)
  if ufunc in _INEXACT_RESULT and not dtypes.is_inexact(dtype):
    dtype = dtypes.default_float_dtype()
  with np.errstate(all="ignore"):
    return getattr(np, ufunc)(x.astype(dtype), y.astype(dtype))


DIVERGENCES.update({
    "integer_division_by_zero_is_minus_one": Divergence(
        "lax.div of integers rounds toward zero (as C does); x / 0 is -1 (all bits "
        "set: the maximum of an unsigned type) and INT_MIN / -1 wraps to INT_MIN, "
        "XLA's results on CPU. NumPy has no truncating division, and its integer "
        "division by zero gives 0 with a warning.",
        _lax_integer_div),
    "integer_remainder_by_zero_is_dividend": Divergence(
        "lax.rem of integers has the dividend's sign (as C's %); x rem 0 is x and "
        "INT_MIN rem -1 is 0 (XLA on CPU). NumPy's fmod gives 0 for x % 0.",
        _lax_integer_rem),
    "floor_divide_by_zero": Divergence(
        "jnp.floor_divide (and jnp.divmod's quotient) of integers by zero: signed "
        "integers give -1 where x is 0 and -2 elsewhere (lax.div's -1, then the floor "
        "correction), unsigned ones their maximum; NumPy gives 0 (with a warning). "
        "Floats give NumPy's ±inf (NaN for 0 / 0), as JAX 0.10 does.",
        _floor_divide),
    "divmod_by_zero": Divergence(
        "jnp.divmod(x, 0): the quotient as jnp.floor_divide by zero (see "
        "floor_divide_by_zero); the remainder is 0 for integers and NaN for floats, "
        "as NumPy's.",
        _divmod),
    "integer_power_uses_low_six_bits_of_exponent": Divergence(
        "jnp.power of integer arrays is binary exponentiation over the low 6 bits of "
        "the exponent (x ** (y & 63), wrapping), and 0 ** y is 0 for every y != 0. "
        "Results differ from NumPy's where y >= 64 or y < 0, for which NumPy wraps "
        "the true power or raises ValueError.",
        _integer_power),
    "integer_pow_rounds_each_multiplication": Divergence(
        "lax.integer_pow(x, n) (and x ** n for a Python int n) is binary "
        "exponentiation in x's dtype: every product is rounded, so results may "
        "differ from NumPy's pow in the last places, and an overflowing "
        "intermediate gives inf (0 for negative n) where pow is finite.",
        _binary_exponentiation),
    "modf_of_infinity": Divergence(
        "jnp.modf(±inf) has a NaN fractional part (x - trunc(x)); NumPy gives ±0.",
        _modf),
    "float16_spacing_of_infinity": Divergence(
        "jnp.spacing of a float16 is nextafter(x, inf) - x (as NumPy's float16 "
        "loop), so spacing(-inf) is inf; NumPy gives NaN.",
        _spacing),
    "angle_of_real_scalar_is_default_float": Divergence(
        "jnp.angle of a rank-0 real array computes in the default float type "
        "(float32), whatever its own dtype; NumPy keeps the operand's dtype.",
        _angle),
    "heaviside_of_nan_is_x2": Divergence(
        "jnp.heaviside(NaN, x2) is x2 (NaN is neither < 0 nor > 0); NumPy gives NaN.",
        _heaviside),
    "complex_fmax_with_nan": Divergence(
        "jnp.fmax of complex numbers is where(less(x1, x2) or isnan(x1), x2, x1) "
        "with the lexicographic order, so a NaN x2 whose real part is larger wins (fmax(0, "
        "1+nanj) is 1+nanj); NumPy returns the non-NaN operand (0).",
        _complex_fmax_fmin(np.fmax, np.less)),
    "complex_fmin_with_nan": Divergence(
        "jnp.fmin of complex numbers is where(greater(x1, x2) or isnan(x1), x2, x1) "
        "with the lexicographic order, so a NaN x2 whose real part is smaller wins; NumPy "
        "returns the non-NaN operand.",
        _complex_fmax_fmin(np.fmin, np.greater)),
    "complex_order_ignores_nan_imaginary_part": Divergence(
        "jnp.less, less_equal, greater and greater_equal order complex numbers by "
        "real part, and by imaginary part only where the real parts are equal, so "
        "a NaN imaginary part matters only then (-1 <= nanj is True); NumPy's "
        "comparisons are False whenever an imaginary part is NaN. The case's "
        "`ufunc` names the comparison.",
        _complex_order),
    "integers_promote_to_default_float": Divergence(
        "jnp functions with inexact results convert integer and boolean operands to "
        "the default float type (float32 with x64 disabled) whatever their width; "
        "NumPy uses the smallest float that holds the integer type (float16 for "
        "int8, float64 for int32). The expected value is NumPy's function on float32 "
        "operands (the case's `ufunc` names it, and its other keywords are passed on).",
        _in_default_float),
    "jax_type_promotion": Divergence(
        "Operands of different dtypes are promoted on JAX's type lattice and "
        "canonicalized for x64 (e.g. int8 with float16 is float16, int32 with "
        "uint32 is int32 with x64 disabled, bfloat16 with float16 is float32); "
        "NumPy's rules differ (int32 with float16 is float64). The expected value is "
        "NumPy's function on operands converted to JAX's result dtype (the case's "
        "`ufunc` names it).",
        _in_promoted_dtype),
})


# --- complex special values: XLA's formulas, not C99's ------------------------------------------

def _xla_complex(complex_fn, real_fn):
  """`complex_fn` on complex128 operands (`real_fn`, computed wide, on real ones)."""
  def expected(*args):
    args = [np.asarray(a) for a in args]
    wide = [a.astype(np.complex128 if dtypes.is_complex(a.dtype) else np.float64)
            if dtypes.is_inexact(a.dtype) else a for a in args]
    with np.errstate(all="ignore"):
      return (complex_fn if dtypes.is_complex(args[0].dtype) else real_fn)(*wide)
  return expected


def _parts(real, imag):
  out = np.empty(np.broadcast_shapes(np.shape(real), np.shape(imag)), np.complex128)
  out.real, out.imag = real, imag
  return out


def _nan_part(z):
  return np.isnan(z.real) | np.isnan(z.imag)


def _xla_abs(z):
  return np.where(_nan_part(z), np.nan, np.abs(z))


def _xla_sign(z):
  modulus = _xla_abs(z)
  return np.where(modulus == 0, 0, _parts(z.real / modulus, z.imag / modulus))


def _xla_exp(z):
  return _parts(np.exp(z.real) * np.cos(z.imag), np.exp(z.real) * np.sin(z.imag))


def _xla_log(z):
  return np.where(_nan_part(z), complex(np.nan, np.nan), np.log(z))


def xla_divide(x, y):
  """NumPy's quotient, with XLA's results where NumPy's has NaN in both parts
  or divides by zero (see refimpl's `_complex_quotient`)."""
  x, y = np.broadcast_arrays(x, y)
  q = x / y
  a, b, c, d = x.real, x.imag, y.real, y.imag
  unit = lambda v: np.copysign(np.where(np.isinf(v), 1.0, 0.0), v)
  both_nan = np.isnan(q.real) & np.isnan(q.imag)
  inf_over_finite = (np.isinf(a) | np.isinf(b)) & np.isfinite(c) & np.isfinite(d)
  finite_over_inf = (np.isinf(c) | np.isinf(d)) & np.isfinite(a) & np.isfinite(b)
  q = np.where(both_nan & finite_over_inf,
               _parts(0.0 * (a * unit(c) + b * unit(d)), 0.0 * (b * unit(c) - a * unit(d))), q)
  q = np.where(both_nan & inf_over_finite,
               _parts(np.inf * (unit(a) * c + unit(b) * d), np.inf * (unit(b) * c - unit(a) * d)),
               q)
  by_zero = (c == 0) & (d == 0) & ~(np.isnan(a) & np.isnan(b))
  return np.where(by_zero, _parts(np.copysign(np.inf, c) * a, np.copysign(np.inf, c) * b), q)


DIVERGENCES.update({
    "complex_abs_of_nan_part_is_nan": Divergence(
        "abs of a complex number with a NaN part is NaN, even where the other part "
        "is infinite (XLA's modulus); NumPy follows C99's hypot (inf).",
        _xla_complex(_xla_abs, np.abs)),
    "complex_sign_divides_parts_by_abs": Divergence(
        "sign of a complex number divides each part by abs (XLA), so an infinite "
        "part gives NaN (sign(inf+1j) is nan+0j); NumPy's limit is 1+0j.",
        _xla_complex(_xla_sign, np.sign)),
    "complex_exp_is_exp_times_cis": Divergence(
        "exp(a+bi) of a complex number is exp(a) cos(b) + exp(a) sin(b) i (XLA), so "
        "exp(inf+0j) is inf+nanj and exp(-inf+infj) nan+nanj; NumPy follows C99 "
        "(inf+0j and 0+0j).",
        _xla_complex(_xla_exp, np.exp)),
    "complex_log_of_nan_part_is_nan": Divergence(
        "log of a complex number with a NaN part is nan+nanj (log of XLA's abs); "
        "NumPy follows C99 (log(inf+nanj) is inf+nanj).",
        _xla_complex(_xla_log, np.log)),
    "complex_division_follows_xla": Divergence(
        "Complex division is Smith's algorithm with XLA's recovery where both parts "
        "are NaN: x / 0 is x times copysign(inf, Re y), an infinite x over a finite "
        "y is infinite, a finite x over an infinite y is zero; NumPy gives NaN "
        "parts there (and (0+1j) / (-0+0j) is nan+infj, XLA's nan-infj).",
        _xla_complex(xla_divide, np.divide)),
})


# --- sorting (refimpl/lax/sorting.py, refimpl/numpy/sorting.py) ---------------------------

def _total_order_key(x):
  """IEEE totalOrder of floats `x` as int64 keys (widening keeps the order)."""
  bits = np.asarray(x, np.float64).view(np.int64)
  return np.where(bits < 0, bits ^ np.iinfo(np.int64).max, bits)


def _complex_sort(x, axis=-1):
  x = np.asarray(x)
  if x.ndim == 0 or axis is None:
    x, axis = x.ravel(), 0
  order = np.lexsort((_total_order_key(x.imag), _total_order_key(x.real)), axis=axis)
  return np.take_along_axis(x, order, axis)


def _top_k_total_order(largest):
  def expected(x, k):
    x = np.asarray(x)
    key = _total_order_key(x) if dtypes.is_float(x.dtype) else x.astype(np.int64)
    order = np.argsort(-key if largest else key, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, -1), order.astype(np.int32)
  return expected


def _quantile_nearest(x, q, axis=None, keepdims=False, nan=False):
  """'nearest': the lower neighbour when the virtual index's fraction is <= 0.5."""
  x = np.asarray(x)
  quantile = np.nanquantile if nan else np.quantile
  low = quantile(x, q, axis=axis, method="lower", keepdims=keepdims)
  high = quantile(x, q, axis=axis, method="higher", keepdims=keepdims)
  ones = np.where(np.isnan(x), 0, 1) if nan else np.ones(x.shape)
  n = np.sum(ones, axis=axis, keepdims=keepdims)
  position = np.multiply.outer(np.asarray(q, np.float32), n - 1)
  if np.ndim(q) == 0:
    position = position.reshape(np.shape(n))
  return np.where(position - np.floor(position) <= 0.5, low, high).astype(x.dtype)


DIVERGENCES.update({
    "complex_sort_total_order_parts": Divergence(
        "Complex numbers sort by (real, imag), each part compared by IEEE totalOrder "
        "(XLA's comparator, which JAX does not canonicalize for complex): -0.0 comes "
        "before 0.0 (so -0+5j sorts before 0+1j) and a NaN part with the sign bit set "
        "first, other NaNs last. NumPy treats -0.0 as 0.0 and puts every complex "
        "number with a NaN part at the end.",
        _complex_sort),
    "top_k_total_order": Divergence(
        "lax.top_k and lax.approx_max_k order floats by IEEE totalOrder (XLA's CPU "
        "TopK): +NaN above +inf, -NaN below -inf, 0.0 above -0.0, equal elements "
        "lowest index first. NumPy has no top_k; its sorts put every NaN last and "
        "treat -0.0 as 0.0.",
        _top_k_total_order(largest=True)),
    "approx_min_k_total_order": Divergence(
        "lax.approx_min_k (exact on CPU) orders floats by IEEE totalOrder, smallest "
        "first: -NaN below -inf, -0.0 below 0.0, +NaN above +inf; equal elements "
        "lowest index first.",
        _top_k_total_order(largest=False)),
    "quantile_nearest_rounds_half_down": Divergence(
        "jnp.quantile's method='nearest' takes the lower neighbour when the virtual "
        "index q*(n-1) is exactly halfway between two elements; NumPy rounds the "
        "index half to even (quantile(arange(4.), 0.5, method='nearest') is 1.0 in "
        "JAX, 2.0 in NumPy).",
        _quantile_nearest),
    "nanquantile_nearest_rounds_half_down": Divergence(
        "jnp.nanquantile's method='nearest' takes the lower neighbour at an exact "
        "half, as jnp.quantile does (n counts the non-NaN elements); NumPy rounds "
        "half to even.",
        lambda x, q, axis=None, keepdims=False: _quantile_nearest(x, q, axis, keepdims,
                                                                 nan=True)),
})


# --- indexing: out-of-bounds starts and indices -

def _wrapped_clamped_start(start, dim, size):
  """A dynamic_slice start: a negative signed start counts from the end (once),
  then the start is clamped so that the slice fits."""
  start = int(start)
  if start < 0:
    start += dim
  return min(max(start, 0), dim - size)


def _dynamic_slice(operand, *starts, slice_sizes=None, slice_size=None, axis=None,
                   keepdims=True):
  """lax.dynamic_slice(operand, starts, slice_sizes), or with one start along
  `axis`: dynamic_slice_in_dim (slice_size) and dynamic_index_in_dim (size 1)."""
  operand = np.asarray(operand)
  if slice_sizes is None:
    index_size = 1 if slice_size is None else slice_size
    full_starts = [0] * operand.ndim
    full_starts[axis] = starts[0]
    sizes = list(operand.shape)
    sizes[axis] = index_size
    result = _dynamic_slice(operand, *full_starts, slice_sizes=sizes)
    return result if keepdims else np.squeeze(result, axis)
  starts = [_wrapped_clamped_start(s, d, n)
            for s, d, n in zip(starts, operand.shape, slice_sizes)]
  return operand[tuple(slice(s, s + n) for s, n in zip(starts, slice_sizes))]


def _dynamic_update_slice(operand, update, *starts, axis=None):
  """lax.dynamic_update_slice(operand, update, starts), or with one start along
  `axis` (dynamic_update_slice_in_dim, dynamic_update_index_in_dim, whose
  update may lack that axis)."""
  operand, update = np.asarray(operand), np.asarray(update)
  if axis is not None:
    if update.ndim < operand.ndim:
      update = np.expand_dims(update, axis)
    full_starts = [0] * operand.ndim
    full_starts[axis] = starts[0]
    return _dynamic_update_slice(operand, update, *full_starts)
  starts = [_wrapped_clamped_start(s, d, n)
            for s, d, n in zip(starts, operand.shape, update.shape)]
  out = operand.copy()
  out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
  return out


def _window_indices(operand_shape, indices, index_map, window_shape, clamp):
  """Per batch position of `indices` (its last axis is the index vector): the
  operand index arrays of every window element (shape batch + window_shape,
  one per operand dimension) and whether the window fits in bounds. With
  `clamp`, starts are clamped so every window fits."""
  batch_shape = indices.shape[:-1]
  starts = np.zeros(batch_shape + (len(operand_shape),), np.int64)
  for k, d in enumerate(index_map):
    starts[..., d] = indices[..., k]
  dims, sizes = np.array(operand_shape, np.int64), np.array(window_shape, np.int64)
  fits = np.all((starts >= 0) & (starts + sizes <= dims), axis=-1)
  if clamp:
    starts = np.clip(starts, 0, dims - sizes)
  grids = []
  for d, n in enumerate(window_shape):
    offset_shape = [1] * len(window_shape)
    offset_shape[d] = n
    grid = starts[..., d].reshape(batch_shape + (1,) * len(window_shape)) + np.arange(
        n).reshape(offset_shape)
    grids.append(np.broadcast_to(grid, batch_shape + tuple(window_shape)))
  return grids, np.broadcast_to(fits.reshape(batch_shape + (1,) * len(window_shape)),
                                batch_shape + tuple(window_shape))


def _default_gather_fill(dtype):
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.is_unsigned(dtype):
    return dtypes.iinfo(dtype).max
  return dtypes.iinfo(dtype).min if dtypes.is_integer(dtype) else True


def _gather(operand, indices, *, dimension_numbers, slice_sizes, mode=None, fill_value=None):
  """lax.gather by fancy indexing: every window element at start + offset;
  CLIP and PROMISE_IN_BOUNDS (the default) clamp starts, FILL_OR_DROP fills
  whole windows that do not fit with `fill_value` (default: NaN, the lowest
  signed or highest unsigned integer, True)."""
  from refimpl.lax import GatherScatterMode
  operand, indices = np.asarray(operand), np.asarray(indices)
  dn = dimension_numbers
  fill = mode is not None and GatherScatterMode.from_any(mode) == GatherScatterMode.FILL_OR_DROP
  grids, fits = _window_indices(operand.shape, indices, dn.start_index_map, slice_sizes,
                                clamp=True)
  values = operand[tuple(grids)] if operand.size else np.zeros(fits.shape, operand.dtype)
  if fill:
    fill_value = _default_gather_fill(operand.dtype) if fill_value is None else fill_value
    values = np.where(fits, values, _saturating_cast(np.asarray(fill_value), operand.dtype))
  batch_rank = indices.ndim - 1
  dropped = tuple(batch_rank + d for d in dn.collapsed_slice_dims)
  values = values.reshape([n for i, n in enumerate(values.shape) if i not in dropped])
  window_axes = list(range(batch_rank, values.ndim))
  return np.moveaxis(values, window_axes, list(dn.offset_dims))


_SCATTER_COMBINERS = {"scatter": None, "scatter_add": np.add, "scatter_sub": np.subtract,
                      "scatter_mul": np.multiply, "scatter_min": np.minimum,
                      "scatter_max": np.maximum}


def _scatter(operand, indices, updates, dimension_numbers, *, mode=None, op, **_):
  """lax.<op> (scatter, scatter_add, ...) on the fancy indices of every window
  element: FILL_OR_DROP and PROMISE_IN_BOUNDS drop windows that do not fit,
  CLIP clamps their starts. All updates of one element accumulate, in order;
  for plain scatter the last one wins."""
  from refimpl.lax import GatherScatterMode
  operand, indices, updates = map(np.asarray, (operand, indices, updates))
  dn = dimension_numbers
  batch_rank = indices.ndim - 1
  window = iter(updates.shape[d] for d in dn.update_window_dims)
  window_shape = [1 if d in dn.inserted_window_dims else next(window)
                  for d in range(operand.ndim)]
  updates = np.moveaxis(updates, list(dn.update_window_dims),
                        list(range(batch_rank, updates.ndim)))
  updates = updates.reshape(indices.shape[:-1] + tuple(window_shape))
  clamp = GatherScatterMode.from_any(mode) == GatherScatterMode.CLIP
  grids, fits = _window_indices(operand.shape, indices, dn.scatter_dims_to_operand_dims,
                                window_shape, clamp)
  fits = fits | clamp
  index = tuple(g[fits] for g in grids)
  out = operand.copy()
  combine = _SCATTER_COMBINERS[op]
  if combine is None:
    out[index] = updates[fits]
    return out
  # One update at a time, in order, each rounded to the dtype: a product that
  # overflows to inf stays inf (then NaN when multiplied by 0). Inexact values
  # combine in float64/complex128 first (complex64's own product overflows in
  # intermediate terms).
  inexact = dtypes.is_inexact(operand.dtype)
  with np.errstate(all="ignore"):
    for position, update in zip(zip(*index), updates[fits]):
      old = _wide(out[position]) if inexact else out[position]
      new = _wide(update) if inexact else update
      out[position] = np.asarray(combine(old, new)).astype(operand.dtype)
  return out


def _wrap_index(index, size):
  index = np.asarray(index).astype(np.int64)
  return np.where(index < 0, index + size, index)


def _getitem_clamped(x, index, axis):
  """x[(slice(None),) * axis + (index,)] with negative indices wrapped once,
  then clamped into [0, size)."""
  size = x.shape[axis]
  index = np.clip(_wrap_index(index, size), 0, size - 1)
  return x[(slice(None),) * axis + (index,)]


def _add_at_dropping(x, index, y, axis):
  """x.at[(slice(None),) * axis + (index,)].add(y), dropping indices that are
  out of bounds after negative ones are wrapped once."""
  size = x.shape[axis]
  index = _wrap_index(index, size)
  y = np.broadcast_to(y, x[(slice(None),) * axis + (np.zeros(index.shape, int),)].shape)
  keep = (index >= 0) & (index < size)
  out = x.copy()
  selector = (slice(None),) * axis + (keep,)
  with np.errstate(all="ignore"):
    np.add.at(out, (slice(None),) * axis + (index[keep],), y[selector])
  return out


DIVERGENCES.update({
    "dynamic_slice_clamps_start": Divergence(
        "lax.dynamic_slice (and dynamic_slice_in_dim, dynamic_index_in_dim) never "
        "reads out of bounds: a negative start counts from the end once (unsigned "
        "starts are never negative), then each start is clamped to [0, dim - size] "
        "so the whole slice fits. NumPy slicing returns a shorter slice instead.",
        _dynamic_slice),
    "dynamic_update_slice_clamps_start": Divergence(
        "lax.dynamic_update_slice (and its _in_dim/_index_in_dim forms) clamp the "
        "start as dynamic_slice does (after wrapping a negative start once), so the "
        "whole update is always written; NumPy slice assignment with a start near "
        "the end fails on the shape mismatch instead.",
        _dynamic_update_slice),
    "gather_clamps_out_of_bounds": Divergence(
        "lax.gather with mode CLIP or PROMISE_IN_BOUNDS (lax.gather's default, and "
        "what jnp indexing uses) clamps each window's start so the window fits: "
        "x[11] of a length-10 array is x[9]. NumPy raises IndexError.",
        _gather),
    "gather_fills_out_of_bounds": Divergence(
        "lax.gather with mode FILL_OR_DROP (mode='fill') returns "
        "fill_value for every element of a window that is not entirely in bounds "
        "(default: NaN for inexact types, the lowest signed and highest unsigned "
        "integer, True). NumPy raises IndexError.",
        _gather),
    "scatter_drops_out_of_bounds": Divergence(
        "lax.scatter, scatter_add/sub/mul/min/max with mode FILL_OR_DROP (the default) "
        "or PROMISE_IN_BOUNDS skip every update window that is not entirely in "
        "bounds; all updates of one element take effect (accumulate). NumPy raises "
        "IndexError out of bounds. (The case's `op` names the lax function.)",
        _scatter),
    "scatter_clamps_out_of_bounds": Divergence(
        "lax.scatter* with mode CLIP clamp each update window's start so the window "
        "fits, and apply it there. NumPy raises IndexError out of bounds. (The "
        "case's `op` names the lax function.)",
        _scatter),
    "getitem_clamps_out_of_bounds": Divergence(
        "jnp indexing x[i] with an out-of-bounds integer index clamps it (after "
        "wrapping a negative index once): arange(10)[11] is 9, arange(10)[-11] is 0. "
        "NumPy raises IndexError.",
        _getitem_clamped),
    "index_update_drops_out_of_bounds": Divergence(
        "x.at[i].set/add/... skip updates whose index is out of bounds after a "
        "negative index is wrapped once (arange(10).at[-11].add(1) changes nothing). "
        "NumPy raises IndexError.",
        _add_at_dropping),
})


# --- selection: jnp.take ------------------------------------------------------------------------

def _take_filled(x, indices, axis=None, mode=None):
  """jnp.take's default mode: indices in [-n, n) as NumPy's; the others give
  the gather fill value (NaN, the lowest signed / highest unsigned integer, True)."""
  x, indices = np.asarray(x), np.asarray(indices)
  if axis is None:
    x, axis = x.ravel(), 0
  n = x.shape[axis]
  taken = np.take(x, np.clip(indices, -n, n - 1), axis=axis)
  outside = (indices < -n) | (indices >= n)
  outside = outside.reshape((1,) * (axis % x.ndim) + indices.shape
                            + (1,) * (x.ndim - axis % x.ndim - 1))
  return np.where(outside, _default_gather_fill(x.dtype), taken).astype(x.dtype)


DIVERGENCES.update({
    "take_out_of_bounds_fills": Divergence(
        "jnp.take and jnp.take_along_axis default to mode='fill': an index outside "
        "[-n, n) gives the fill value (default NaN for inexact types, the lowest "
        "signed and highest unsigned integer, True); negative indices in range "
        "count from the end. NumPy raises IndexError.",
        _take_filled),
})


# --- reductions: integer accumulation ------------------------------------------------------------

# jnp reductions whose integer results keep the operand's dtype; the others
# promote small integers to the default integer (int32, or uint32 if unsigned).
_KEEPS_INTEGER_DTYPE = {"cumsum", "cumprod", "nancumsum", "nancumprod"}


def _integer_accumulation(a, reduction, **kwargs):
  a = np.asarray(a)
  if reduction in _KEEPS_INTEGER_DTYPE and a.dtype != np.bool_:
    dtype = a.dtype
  else:
    dtype = np.uint32 if dtypes.is_unsigned(a.dtype) else dtypes.default_int_dtype()
  with np.errstate(all="ignore"):
    return getattr(np, reduction)(a, **kwargs).astype(dtype)


DIVERGENCES.update({
    "integer_accumulation_wraps": Divergence(
        "jnp's integer sums and products accumulate, and wrap around, in 32 bits with "
        "x64 disabled: sum, prod, their nan* forms, cumulative_sum/prod and trace in "
        "int32 (uint32 for unsigned operands), and cumsum/cumprod (and nan* forms) in "
        "the operand's own dtype (int8 stays int8). NumPy accumulates in int64 "
        "(uint64). The expected value is NumPy's result wrapped to JAX's dtype (the "
        "case's `reduction` names the function; its other keywords are passed on).",
        _integer_accumulation),
})


def _product_then_initial(a, reduction, initial=None, **kwargs):
  """The product (computed wide, rounded to the computation dtype: float32 for
  16-bit floats), then multiplied by `initial` in that dtype."""
  a = np.asarray(a)
  if dtypes.is_inexact(a.dtype):
    small = dtypes.is_float(a.dtype) and a.dtype.itemsize == 2
    compute = np.dtype(np.float32) if small else a.dtype
  else:
    compute = np.dtype(np.float64)
  wide = np.complex128 if dtypes.is_complex(a.dtype) else np.float64
  with np.errstate(all="ignore"):
    result = getattr(np, reduction)(a.astype(wide), **kwargs).astype(compute)
    return result if initial is None else np.multiply(np.asarray(initial).astype(compute),
                                                      result)


DIVERGENCES.update({
    "product_initial_multiplies_the_result": Divergence(
        "jnp.prod and jnp.nanprod with `initial` reduce first and then multiply the "
        "result by `initial`, so a complex `initial` with an infinite part meets one "
        "more complex multiplication in the result's dtype (infj * (1+0j) is "
        "nan+infj, and 0.5 * a product that overflowed to inf+0j is inf+nanj); NumPy "
        "starts the product at `initial` (an empty product is `initial` itself). "
        "The case's `reduction` names the function.",
        _product_then_initial),
    "all_any_of_complex_test_the_real_part": Divergence(
        "jnp.all and jnp.any of a complex array test the real parts only, so 1j "
        "counts as False; NumPy tests both parts. The case's `reduction` names the "
        "function.",
        lambda a, reduction, **kwargs: getattr(np, reduction)(np.real(a), **kwargs)),
})


# --- gcd and lcm of INT_MIN; std's rounded variance -

def _euclid(x1, x2):
  """Euclid's algorithm with C remainders on |x1| and |x2| as their dtype
  holds them: abs(INT_MIN) wraps to INT_MIN, so the result can be negative."""
  x1, x2 = np.broadcast_arrays(np.asarray(x1), np.asarray(x2))
  a, b = np.abs(x1).astype(np.int64), np.abs(x2).astype(np.int64)
  while np.any(b != 0):
    done = b == 0
    a, b = np.where(done, a, b), np.where(done, b, np.fmod(a, np.where(done, 1, b)))
  return a.astype(x1.dtype)


def _lcm(x1, x2):
  x1, x2 = np.broadcast_arrays(np.abs(np.asarray(x1)), np.abs(np.asarray(x2)))
  d = _euclid(x1, x2)
  with np.errstate(all="ignore"):
    return np.where(d == 0, 0, x1 * np.floor_divide(x2, np.where(d == 0, 1, d))).astype(
        x1.dtype)


def _std_of_rounded_variance(a, reduction, **kwargs):
  """sqrt of the variance (np.var for std, np.nanvar for nanstd) computed in
  float64, then rounded to the result dtype."""
  a = np.asarray(a)
  result = {np.dtype(np.complex64): np.dtype(np.float32)}.get(a.dtype, a.dtype)
  if not dtypes.is_inexact(result):
    result = dtypes.default_float_dtype()
  variance = {"std": np.var, "nanstd": np.nanvar}[reduction]
  wide = np.complex128 if dtypes.is_complex(a.dtype) else np.float64
  with np.errstate(all="ignore"):
    return np.sqrt(variance(a.astype(wide), **kwargs).astype(result))


DIVERGENCES.update({
    "gcd_of_int_min": Divergence(
        "jnp.gcd runs Euclid's algorithm (C remainders) on jnp.abs of its operands, "
        "and abs(INT_MIN) wraps to INT_MIN, so gcd(5, INT_MIN) is -1 for int32; "
        "NumPy gives 1.",
        _euclid),
    "lcm_of_int_min": Divergence(
        "jnp.lcm is abs(x1) * (abs(x2) // gcd(x1, x2)) in the operands' dtype with "
        "jnp.gcd (see gcd_of_int_min), so INT_MIN operands give wrapped results unlike NumPy's.",
        _lcm),
    "std_rounds_variance_first": Divergence(
        "jnp.std (and nanstd) is the square root of jnp.var's result, which is "
        "rounded to the result dtype first: a float16 variance above 65504 becomes "
        "inf (std of [512, 0] is inf, where NumPy gives 256). The case's `reduction` "
        "names the function.",
        _std_of_rounded_variance),
})


def _round_float16_in_float32(x, decimals=0):
  x = np.asarray(x)
  if x.dtype == dtypes.float16 and decimals:
    return np.round(x.astype(np.float32), decimals).astype(x.dtype)
  with np.errstate(all="ignore"):
    return np.round(x, decimals)


DIVERGENCES.update({
    "float16_round_scales_in_float32": Divergence(
        "jnp.round(x, decimals) of a float16 scales by 10**decimals in float32 and "
        "rounds back, so 66 with decimals=3 stays 66; NumPy scales in float16, where "
        "66000 overflows to inf.",
        _round_float16_in_float32),
})


def _logaddexp_in_dtype(exp_fn, scale):
  """JAX's logaddexp (exp_fn exp, scale 1) or logaddexp2 (exp2, 1/log(2)):
  max(x1, x2) + scale * log1p(exp_fn(-|x1 - x2|)), each operation rounded to
  the operands' dtype (the functions computed in float64 first); x1 + x2
  where x1 - x2 is NaN."""
  def expected(x1, x2):
    x1, x2 = np.asarray(x1), np.asarray(x2)
    dtype = x1.dtype
    with np.errstate(all="ignore"):
      delta = (x1 - x2).astype(dtype)
      exps = exp_fn(-np.abs(delta).astype(np.float64)).astype(dtype)
      softplus = np.log1p(exps.astype(np.float64)).astype(dtype)
      if scale != 1:
        softplus = (np.asarray(scale, dtype) * softplus).astype(dtype)
      return np.where(np.isnan(delta), x1 + x2, np.maximum(x1, x2) + softplus).astype(dtype)
  return expected


_LOGADDEXP_ROUNDING = (
    "rounding each operation to the operands' dtype, where NumPy rounds once (its 16-bit "
    "loops compute in float32): where the two terms nearly cancel (logaddexp(-1, -0.5) "
    "in bfloat16: -0.02734 against NumPy's -0.02592) the result differs by up to an ulp "
    "of the larger operand.")

DIVERGENCES.update({
    "logaddexp_rounds_each_step": Divergence(
        "jnp.logaddexp is max(x1, x2) + log1p(exp(-|x1 - x2|)), " + _LOGADDEXP_ROUNDING,
        _logaddexp_in_dtype(np.exp, 1)),
    "logaddexp2_rounds_each_step": Divergence(
        "jnp.logaddexp2 is max(x1, x2) + log1p(exp2(-|x1 - x2|)) / log(2), "
        + _LOGADDEXP_ROUNDING, _logaddexp_in_dtype(np.exp2, 1 / np.log(2))),
})


def _nan_extremum(a, reduction, initial=None, where=None, **kwargs):
  """nanmax/nanmin: NumPy's without `initial`; with it, NaNs become the
  identity, the masked max/min is taken, then combined with `initial` by the
  NaN-propagating maximum/minimum."""
  a = np.asarray(a)
  with np.errstate(all="ignore"):
    if initial is None:
      return getattr(np, reduction)(a, **kwargs)
    is_max = reduction == "nanmax"
    if dtypes.is_inexact(a.dtype):
      identity = -np.inf if is_max else np.inf
      a = np.where(np.isnan(a), np.asarray(identity, a.dtype), a)
    elif dtypes.is_integer(a.dtype):
      info = dtypes.iinfo(a.dtype)
      identity = info.min if is_max else info.max
    else:
      identity = not is_max
    extremum = (np.max if is_max else np.min)(
        a, initial=identity, where=True if where is None else where, **kwargs)
    return (np.maximum if is_max else np.minimum)(np.asarray(initial), extremum)


DIVERGENCES.update({
    "nan_extremum_initial_propagates_nan": Divergence(
        "jnp.nanmax and jnp.nanmin with `initial` combine it with the NaN-ignoring "
        "result by max/min, which propagate NaN: a NaN `initial` gives NaN (NumPy's "
        "fmax ignores it), and an all-NaN slice gives `initial` (NumPy gives NaN). "
        "The case's `reduction` names the function.",
        _nan_extremum),
})


def _pad_odd_reflection(x, pad_width, mode="constant", **kwargs):
  """np.pad, except that an odd reflection is built as JAX builds it: per
  axis, first the start then the end, one chunk at a time (at most the axis
  length, less one for 'reflect' of a longer axis) mirrored from the array
  padded so far, each chunk 2 * edge - chunk in x's dtype, where edge is the
  outermost element so far (the original edge, for a length-1 axis)."""
  x = np.asarray(x)
  if kwargs.get("reflect_type") != "odd":
    return np.pad(x, pad_width, mode, **kwargs)
  widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
  for axis, (before, after) in enumerate(widths):
    x = np.moveaxis(x, axis, 0)
    n = len(x)
    offset = 1 if mode == "reflect" and n > 1 else 0
    for padding, at_start in ((int(before), True), (int(after), False)):
      edge = x[:1] if at_start else x[-1:]
      while padding > 0:
        width = min(padding, n - offset)
        padding -= width
        chunk = (x[offset:offset + width] if at_start else
                 x[len(x) - width - offset:len(x) - offset])[::-1]
        with np.errstate(all="ignore"):
          chunk = np.asarray(2, x.dtype) * edge - chunk
        if n > 1:
          edge = chunk[:1] if at_start else chunk[-1:]
        x = np.concatenate([chunk, x] if at_start else [x, chunk])
    x = np.moveaxis(x, 0, axis)
  return x


DIVERGENCES.update({
    "pad_odd_reflection_chunks": Divergence(
        "jnp.pad with mode 'reflect' or 'symmetric' and reflect_type='odd' builds each "
        "axis's padding first at the start, then at the end, one mirrored chunk at a "
        "time, each chunk 2 * edge - chunk in the operand's dtype with edge the outermost "
        "element so far. A length-1 axis keeps its original edge, so it pads with "
        "e, 2e - e, 2e - (2e - e), ... (float16 [inf] padded by 1 is [nan, inf, nan]) "
        "where NumPy copies the edge; and where an intermediate overflows, NumPy's "
        "different chunking can give inf where JAX gives NaN.",
        _pad_odd_reflection),
})
