"""Cases for the elementwise primitives (refimpl/lax/elementwise.py) and the
jnp ufuncs built on them (refimpl/numpy/ufuncs.py).

Operands of one case share a dtype, and each case draws from the dtypes for
which NumPy is a valid reference (NumPy's `arctan2` has no complex loop, for
example). The reference computes floating results in float64/complex128 and
rounds once, so transcendental functions and products are compared with
NumPy's computed wide (`_w`): NumPy's own 16-bit and complex64 loops are less
accurate. Integer operands of functions with inexact results, and mixed
dtypes, are covered by the promotion cases at the end, whose expected values
come from the divergence table (JAX promotes on its own lattice, and to
float32 with x64 disabled).

`jnp` aliases that are the same function object as another name (`mod`,
`abs`, `around`, `conj`, `radians`, `degrees`, `pow`, `divide`) share the
case of that name.

`AD_CASES` check the differentiation rules of the elementwise primitives
(and of `add_any`) on float64 and complex128 operands inside each
function's smooth domain; smooth functions to second order.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes, lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case
from conformance.divergences import DIVERGENCES

BOOL = S.BOOL_DTYPES
INT = S.INT_DTYPES
SIGNED = S.SIGNED_DTYPES
FLOAT = S.FLOAT_DTYPES
COMPLEX = S.COMPLEX_DTYPES
INEXACT = FLOAT + COMPLEX
NUMERIC = INT + FLOAT + COMPLEX
REAL = INT + FLOAT
ALL = S.ALL_DTYPES


def _inputs(dtype_list, n=1, kwargs=None, **array_kwargs):
  """Same-dtype operands broadcastable as lax requires (rank 0 or equal rank)."""
  return lambda: S.case_inputs(dtype_list, n, kwargs=kwargs, **array_kwargs)


def _numpy_inputs(dtype_list, n=1, kwargs=None, **array_kwargs):
  """Same-dtype operands broadcastable as NumPy allows (ranks may differ)."""
  return lambda: S.numpy_case_inputs(dtype_list, n, kwargs=kwargs, **array_kwargs)


def _kwargs(**strategies):
  return st.fixed_dictionaries(strategies)


def _wide(x):
  """x as float64/complex128 (integers unchanged): NumPy formulas computed wide."""
  x = np.asarray(x)
  if dtypes.is_complex(x.dtype):
    return x.astype(np.complex128)
  if dtypes.is_float(x.dtype):
    return x.astype(np.float64)
  return x


def _w(numpy_fn):
  """`numpy_fn` computed in float64/complex128: NumPy's own 16-bit and complex64
  loops lose accuracy (e.g. complex64 exp2(4046j), log1p(1e-8+0j)) or overflow
  in intermediate products (complex64 (inf+2e19j)**2 is nan+infj), while the
  reference computes wide and rounds once."""
  return lambda *args, **kwargs: numpy_fn(*map(_wide, args), **kwargs)


def _log1p(x):
  """np.log1p, but NumPy's complex log1p is log(1 + z), which loses everything
  for tiny z: there the series z - z**2/2 + z**3/3 (error below 1e-16 for |z| < 1e-4)."""
  z = _wide(x)
  if not dtypes.is_complex(z.dtype):
    return np.log1p(z)
  return np.where(np.abs(z) < 1e-4, z - z * z / 2 + z ** 3 / 3, np.log1p(z))


def _unsigned(x):
  """The bits of integer array x as the unsigned type of its width."""
  return x.view(np.dtype(f"uint{x.dtype.itemsize * 8}"))


def _signed(x):
  return x.view(np.dtype(f"int{x.dtype.itemsize * 8}"))


# --- NumPy formulas for lax functions without a NumPy ufunc ------------------------------------

def _round_half_away(x, rounding_method=0):
  if rounding_method == lax.RoundingMethod.TO_NEAREST_EVEN:
    return np.rint(x)
  x = _wide(x)
  return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _broadcast_shift(x, y):
  """(x, shift amounts) broadcast, contiguous; amounts as unsigned, so a
  negative amount is huge and shifts out every bit (as XLA and NumPy do)."""
  x, y = (np.array(a, order="C") for a in np.broadcast_arrays(x, y))
  return x, _unsigned(y)


def _shift_left(x, y):
  x, amount = _broadcast_shift(x, y)
  return np.left_shift(_unsigned(x), amount).view(x.dtype)


def _shift_right_logical(x, y):
  x, amount = _broadcast_shift(x, y)
  return np.right_shift(_unsigned(x), amount).view(x.dtype)


def _shift_right_arithmetic(x, y):
  x, amount = _broadcast_shift(x, y)
  signed = _signed(x)
  return np.right_shift(signed, amount).astype(signed.dtype).view(x.dtype)


def _population_count(x):
  return np.bitwise_count(_unsigned(x))


def _clz(x):
  bits = x.dtype.itemsize * 8
  return np.vectorize(lambda v: bits - int(v).bit_length(), otypes=[np.int64])(
      _unsigned(x)).astype(x.dtype)


def _make_complex(x, y):
  """x + iy with infinite parts kept (x + 1j * y would make 0 * inf = NaN)."""
  x, y = np.broadcast_arrays(x, y)
  out = np.empty(x.shape, np.complex128)
  out.real, out.imag = x, y
  return out


def _bitcast(x, new_dtype):
  """The bits of x as new_dtype: narrower adds a trailing axis, wider consumes one."""
  new_dtype = np.dtype(new_dtype)
  x = np.array(x, order="C")
  if new_dtype.itemsize < x.dtype.itemsize:
    return x.reshape(x.shape + (1,)).view(new_dtype)
  out = x.view(new_dtype)
  return out.reshape(out.shape[:-1]) if new_dtype.itemsize > x.dtype.itemsize else out


def _reduce_precision(x, exponent_bits, mantissa_bits):
  """Rounding float32 to bfloat16's format (8, 7) is a round trip through
  bfloat16; a dtype's own format is the identity."""
  if (x.dtype, exponent_bits, mantissa_bits) == (np.float32, 8, 7):
    return x.astype(dtypes.bfloat16).astype(np.float32)
  return x


# --- input strategies for functions with special operands ---------------------------------------

@st.composite
def _clamp_inputs(draw, dtype_list):
  """(lo, x, hi): bounds are scalars or have x's shape."""
  dtype = draw(st.sampled_from(dtype_list))
  shape = draw(S.shapes())
  bound = lambda: draw(S.arrays(dtype, draw(st.sampled_from([(), shape]))))
  return (bound(), draw(S.arrays(dtype, shape)), bound()), {}


@st.composite
def _select_n_inputs(draw):
  """(which, *cases): a bool selector with 2 cases or an int32 one with 1 to 4,
  in range (lax.select_n's contract), scalar or of the cases' shape."""
  dtype = draw(st.sampled_from(ALL))
  shape = draw(S.shapes())
  boolean = draw(st.booleans())
  n = 2 if boolean else draw(st.integers(1, 4))
  which_shape = draw(st.sampled_from([(), shape]))
  which = draw(S.arrays(np.bool_, which_shape) if boolean else S.arrays(
      np.int32, which_shape, elements=st.integers(0, n - 1)))
  return (which, *[draw(S.arrays(dtype, shape)) for _ in range(n)]), {}


@st.composite
def _select_inputs(draw):
  """(pred, on_true, on_false) for lax.select: pred scalar or of the cases' shape."""
  dtype = draw(st.sampled_from(ALL))
  shape = draw(S.shapes())
  pred = draw(S.arrays(np.bool_, draw(st.sampled_from([(), shape]))))
  return (pred, draw(S.arrays(dtype, shape)), draw(S.arrays(dtype, shape))), {}


@st.composite
def _pow_int_exponent_inputs(draw):
  """(x, y): an inexact base and an int32 exponent of a lax-broadcastable shape."""
  dtype = draw(st.sampled_from(INEXACT))
  shape = draw(S.shapes())
  x = draw(S.arrays(dtype, draw(st.sampled_from([(), shape]))))
  y = draw(S.arrays(np.int32, draw(st.sampled_from([(), shape])),
                    elements=st.integers(-70, 70)))
  return (x, y), {}


_BITCAST_DTYPES = INT + FLOAT


@st.composite
def _bitcast_inputs(draw):
  """(x,) and new_dtype: a wider target needs a last axis of the width ratio."""
  old = np.dtype(draw(st.sampled_from(_BITCAST_DTYPES)))
  new = np.dtype(draw(st.sampled_from(_BITCAST_DTYPES)))
  shape = draw(S.shapes())
  if new.itemsize > old.itemsize:
    shape = shape + (new.itemsize // old.itemsize,)
  return (draw(S.arrays(old, shape)),), {"new_dtype": new}


@st.composite
def _reduce_precision_inputs(draw):
  dtype, formats = draw(st.sampled_from([
      (np.float32, [(8, 7), (8, 23)]), (np.dtype(dtypes.float16), [(5, 10)]),
      (np.dtype(dtypes.bfloat16), [(8, 7)])]))
  exponent_bits, mantissa_bits = draw(st.sampled_from(formats))
  return ((draw(S.arrays(dtype, S.shapes())),),
          {"exponent_bits": exponent_bits, "mantissa_bits": mantissa_bits})


@st.composite
def _int_power_inputs(draw):
  """(x, y) of one integer dtype; y has rank >= 1, since a concrete scalar
  exponent takes jnp.power's `integer_pow` path (as in JAX) instead of the
  traced one."""
  dtype = draw(st.sampled_from(INT))
  x_shape, y_shape = draw(S.broadcastable_shapes(2))
  return (draw(S.arrays(dtype, x_shape)), draw(S.arrays(dtype, y_shape or (1,)))), {}


@st.composite
def _ldexp_inputs(draw):
  dtype = draw(st.sampled_from(FLOAT))
  x = draw(S.arrays(dtype, S.shapes()))
  n = draw(S.arrays(np.int32, draw(st.sampled_from([(), x.shape])),
                    elements=st.integers(-300, 300)))
  return (x, n), {}


@st.composite
def _where_inputs(draw):
  """(condition, x, y): one dtype, NumPy-broadcastable shapes."""
  dtype = draw(st.sampled_from(ALL))
  shapes = draw(S.broadcastable_shapes(3))
  condition = draw(S.arrays(np.bool_, shapes[0]))
  return (condition, draw(S.arrays(dtype, shapes[1])), draw(S.arrays(dtype, shapes[2]))), {}


# --- lax -----------------------------------------------------------------------------------------

def _reciprocal(x):
  """1 / x, complex numbers divided as XLA divides them (complex_division_follows_xla:
  1 / (inf+infj) is zero, NumPy's nan+nanj)."""
  x = np.asarray(x)
  return DIVERGENCES["complex_division_follows_xla"].expected(np.ones_like(x), x)


def _lax_unary(name, dtype_list, numpy_fn, **options):
  fn = getattr(lax, name)
  return Case(f"lax.{name}", fn, _inputs(dtype_list), numpy_fn, **options)


def _lax_binary(name, dtype_list, numpy_fn, **options):
  fn = getattr(lax, name)
  return Case(f"lax.{name}", fn, _inputs(dtype_list, 2), numpy_fn, **options)


LAX_CASES = [
    _lax_unary("neg", NUMERIC, np.negative),
    _lax_unary("sign", NUMERIC, np.sign, divergence="complex_sign_divides_parts_by_abs"),
    _lax_unary("abs", SIGNED + INEXACT, np.abs, divergence="complex_abs_of_nan_part_is_nan"),
    _lax_unary("floor", FLOAT, np.floor),
    _lax_unary("ceil", FLOAT, np.ceil),
    Case("lax.round", lax.round,
         _inputs(FLOAT, kwargs=_kwargs(rounding_method=st.sampled_from(list(lax.RoundingMethod)))),
         _round_half_away),
    _lax_unary("is_finite", FLOAT, np.isfinite),
    _lax_unary("exp", INEXACT, _w(np.exp), divergence="complex_exp_is_exp_times_cis"),
    _lax_unary("exp2", INEXACT, _w(np.exp2)),
    _lax_unary("expm1", INEXACT, _w(np.expm1)),
    _lax_unary("log", INEXACT, _w(np.log), divergence="complex_log_of_nan_part_is_nan"),
    _lax_unary("log1p", INEXACT, _log1p),
    _lax_unary("logistic", INEXACT, lambda x: 1 / (1 + np.exp(-_wide(x)))),
    _lax_unary("sqrt", INEXACT, _w(np.sqrt)),
    _lax_unary("rsqrt", INEXACT, lambda x: 1 / np.sqrt(_wide(x))),
    _lax_unary("cbrt", FLOAT, _w(np.cbrt)),
    _lax_unary("square", NUMERIC, _w(np.square)),
    _lax_unary("reciprocal", INEXACT, _reciprocal),
    Case("lax.integer_pow", lax.integer_pow,
         _inputs(INT, kwargs=_kwargs(y=st.integers(0, 9))), lambda x, y: np.power(x, y)),
    # Binary exponentiation rounds after each multiplication (see the divergence).
    Case("lax.integer_pow[inexact]", lax.integer_pow,
         _inputs(INEXACT, kwargs=_kwargs(y=st.integers(-9, 9))),
         divergence="integer_pow_rounds_each_multiplication"),
    _lax_binary("pow", INEXACT, _w(np.power)),
    Case("lax.pow[int exponent]", lax.pow, _pow_int_exponent_inputs,
         lambda x, y: np.power(_wide(x), _wide(y.astype(x.dtype)))),
    _lax_unary("sin", INEXACT, _w(np.sin)),
    _lax_unary("cos", INEXACT, _w(np.cos)),
    _lax_unary("tan", INEXACT, _w(np.tan)),
    _lax_unary("asin", INEXACT, _w(np.arcsin)),
    _lax_unary("acos", INEXACT, _w(np.arccos)),
    _lax_unary("atan", INEXACT, _w(np.arctan)),
    _lax_binary("atan2", FLOAT, _w(np.arctan2)),  # NumPy's arctan2 has no complex loop
    _lax_unary("sinh", INEXACT, _w(np.sinh)),
    _lax_unary("cosh", INEXACT, _w(np.cosh)),
    _lax_unary("tanh", INEXACT, _w(np.tanh)),
    _lax_unary("asinh", INEXACT, _w(np.arcsinh)),
    _lax_unary("acosh", INEXACT, _w(np.arccosh)),
    _lax_unary("atanh", INEXACT, _w(np.arctanh)),
    _lax_binary("add", NUMERIC, np.add),
    _lax_binary("sub", NUMERIC, np.subtract),
    _lax_binary("mul", NUMERIC, _w(np.multiply)),
    _lax_binary("div", INEXACT, _w(np.divide), divergence="complex_division_follows_xla"),
    Case("lax.div[int]", lax.div, _inputs(INT, 2),
         divergence="integer_division_by_zero_is_minus_one"),
    _lax_binary("rem", FLOAT, np.fmod),
    Case("lax.rem[int]", lax.rem, _inputs(INT, 2),
         divergence="integer_remainder_by_zero_is_dividend"),
    _lax_binary("max", ALL, np.maximum),
    _lax_binary("min", ALL, np.minimum),
    _lax_binary("nextafter", FLOAT, np.nextafter),
    _lax_unary("bitwise_not", INT + BOOL, np.invert),
    _lax_binary("bitwise_and", INT + BOOL, np.bitwise_and),
    _lax_binary("bitwise_or", INT + BOOL, np.bitwise_or),
    _lax_binary("bitwise_xor", INT + BOOL, np.bitwise_xor),
    _lax_binary("shift_left", INT, _shift_left),
    _lax_binary("shift_right_arithmetic", INT, _shift_right_arithmetic),
    _lax_binary("shift_right_logical", INT, _shift_right_logical),
    _lax_unary("population_count", INT, _population_count),
    _lax_unary("clz", INT, _clz),
    _lax_binary("eq", ALL, np.equal),
    _lax_binary("ne", ALL, np.not_equal),
    _lax_binary("lt", REAL + BOOL, np.less),
    _lax_binary("le", REAL + BOOL, np.less_equal),
    _lax_binary("gt", REAL + BOOL, np.greater),
    _lax_binary("ge", REAL + BOOL, np.greater_equal),
    Case("lax.clamp", lax.clamp, lambda: _clamp_inputs(REAL + BOOL),
         lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi)),
    Case("lax.select_n", lax.select_n, _select_n_inputs,
         lambda which, *cases: np.choose(np.broadcast_to(which, cases[0].shape).astype(int),
                                         cases)),
    Case("lax.select", lax.select, _select_inputs,
         lambda pred, t, f: np.where(pred, t, f)),
    Case("lax.convert_element_type", lambda x, dtype: lax.convert_element_type(x, dtype),
         _inputs(ALL, kwargs=_kwargs(dtype=st.sampled_from(ALL))),
         divergence="float_to_int_cast_saturates"),
    Case("lax.bitcast_convert_type", lax.bitcast_convert_type, _bitcast_inputs, _bitcast),
    Case("lax.reduce_precision", lax.reduce_precision, _reduce_precision_inputs,
         _reduce_precision),
    Case("lax.reduce_precision[any format]", lax.reduce_precision,
         _inputs(FLOAT, kwargs=_kwargs(exponent_bits=st.integers(1, 8),
                                       mantissa_bits=st.integers(0, 10)))),
    Case("lax.complex", lax.complex, _inputs([np.float32], 2), _make_complex),
    _lax_unary("real", COMPLEX, np.real),
    _lax_unary("imag", COMPLEX, np.imag),
    _lax_unary("conj", [np.float32] + COMPLEX, np.conj),
]


# --- jnp -----------------------------------------------------------------------------------------

def _jnp(name, dtype_list, numpy_fn, n=1, kwargs=None, **options):
  """A case for `jnp.<name>` on `n` same-dtype, NumPy-broadcastable operands."""
  return Case(f"jnp.{name}", getattr(jnp, name), _numpy_inputs(dtype_list, n, kwargs),
              numpy_fn, **options)


def _nan_to_num(x):
  """np.nan_to_num with the dtype's own limits (NumPy does not know bfloat16's)."""
  if not dtypes.is_float(x.dtype):
    return np.nan_to_num(x)
  info = dtypes.finfo(x.dtype)
  return np.nan_to_num(_wide(x), posinf=float(info.max), neginf=float(info.min))


JNP_CASES = [
    _jnp("add", ALL, np.add, n=2),
    _jnp("subtract", NUMERIC, np.subtract, n=2),
    _jnp("multiply", ALL, _w(np.multiply), n=2),
    _jnp("true_divide", INEXACT, _w(np.true_divide), n=2,
         divergence="complex_division_follows_xla"),
    _jnp("floor_divide", REAL, None, n=2,
         divergence="floor_divide_by_zero"),
    _jnp("remainder", REAL, np.remainder, n=2),
    _jnp("fmod", REAL, np.fmod, n=2),
    _jnp("divmod", REAL, None, n=2, divergence="divmod_by_zero"),
    _jnp("power", INEXACT, _w(np.power), n=2),
    Case("jnp.power[int]", jnp.power, _int_power_inputs,
         divergence="integer_power_uses_low_six_bits_of_exponent"),
    _jnp("float_power", INEXACT, _w(np.float_power), n=2),
    _jnp("negative", NUMERIC, np.negative),
    _jnp("positive", NUMERIC, np.positive),
    _jnp("absolute", ALL, np.absolute, divergence="complex_abs_of_nan_part_is_nan"),
    _jnp("fabs", FLOAT, np.fabs),
    _jnp("sign", NUMERIC, np.sign, divergence="complex_sign_divides_parts_by_abs"),
    _jnp("floor", REAL, np.floor),
    _jnp("ceil", REAL, np.ceil),
    _jnp("trunc", REAL, np.trunc),
    _jnp("fix", REAL, np.fix),
    _jnp("rint", INEXACT, np.rint),
    _jnp("round", INEXACT, None, kwargs=_kwargs(decimals=st.integers(-2, 3)),
         divergence="float16_round_scales_in_float32"),
    Case("jnp.round[int]", jnp.round, _numpy_inputs(INT + BOOL, kwargs=_kwargs(
        decimals=st.integers(0, 3))), lambda x, decimals: x),
    _jnp("modf", FLOAT, None, divergence="modf_of_infinity"),
    _jnp("sqrt", INEXACT, _w(np.sqrt)),
    _jnp("cbrt", FLOAT, _w(np.cbrt)),
    _jnp("square", NUMERIC, _w(np.square)),
    _jnp("reciprocal", INEXACT, _reciprocal),
    _jnp("exp", INEXACT, _w(np.exp), divergence="complex_exp_is_exp_times_cis"),
    _jnp("exp2", INEXACT, _w(np.exp2)),
    _jnp("expm1", INEXACT, _w(np.expm1)),
    _jnp("log", INEXACT, _w(np.log), divergence="complex_log_of_nan_part_is_nan"),
    _jnp("log2", INEXACT, _w(np.log2)),
    _jnp("log10", INEXACT, _w(np.log10)),
    _jnp("log1p", INEXACT, _log1p),
    _jnp("logaddexp", FLOAT, None, n=2, divergence="logaddexp_rounds_each_step"),
    _jnp("logaddexp2", FLOAT, None, n=2, divergence="logaddexp2_rounds_each_step"),
    _jnp("sin", INEXACT, _w(np.sin)),
    _jnp("cos", INEXACT, _w(np.cos)),
    _jnp("tan", INEXACT, _w(np.tan)),
    _jnp("arcsin", INEXACT, _w(np.arcsin)),
    _jnp("arccos", INEXACT, _w(np.arccos)),
    _jnp("arctan", INEXACT, _w(np.arctan)),
    _jnp("arctan2", FLOAT, _w(np.arctan2), n=2),
    _jnp("sinh", INEXACT, _w(np.sinh)),
    _jnp("cosh", INEXACT, _w(np.cosh)),
    _jnp("tanh", INEXACT, _w(np.tanh)),
    _jnp("arcsinh", INEXACT, _w(np.arcsinh)),
    _jnp("arccosh", INEXACT, _w(np.arccosh)),
    _jnp("arctanh", INEXACT, _w(np.arctanh)),
    _jnp("asin", INEXACT, _w(np.asin)),
    _jnp("acos", INEXACT, _w(np.acos)),
    _jnp("atan", INEXACT, _w(np.atan)),
    _jnp("atan2", FLOAT, _w(np.atan2), n=2),
    _jnp("asinh", INEXACT, _w(np.asinh)),
    _jnp("acosh", INEXACT, _w(np.acosh)),
    _jnp("atanh", INEXACT, _w(np.atanh)),
    _jnp("hypot", FLOAT, _w(np.hypot), n=2),
    # pi * x is rounded to the operand's dtype before the sine (as NumPy's own
    # sinc does for real operands), so near sinc's zeros the error is absolute,
    # about ulp(1); for 16-bit floats that is too coarse to compare at all.
    _jnp("sinc", [np.float32], np.sinc, atol=1e-7),
    # Complex sin(pi x) overflows complex64 for |imag x| > 28 (the quotient is then
    # inf+nanj, where NumPy computed wide is finite), and NumPy's complex64 sinc of
    # a subnormal is NaN: moderate finite values, NumPy computed wide.
    Case("jnp.sinc[complex]", jnp.sinc, _numpy_inputs(COMPLEX, elements=st.builds(
        complex, st.floats(-20, 20, width=32), st.floats(-20, 20, width=32))),
         _w(np.sinc), atol=1e-7),
    _jnp("deg2rad", FLOAT, _w(np.deg2rad)),
    _jnp("rad2deg", FLOAT, _w(np.rad2deg)),
    _jnp("maximum", ALL, np.maximum, n=2),
    _jnp("minimum", ALL, np.minimum, n=2),
    _jnp("fmax", ALL, None, n=2, divergence="complex_fmax_with_nan"),
    _jnp("fmin", ALL, None, n=2, divergence="complex_fmin_with_nan"),
    Case("jnp.clip", jnp.clip, _numpy_inputs(REAL, 3),
         lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    Case("jnp.clip[max only]", lambda x, hi: jnp.clip(x, max=hi), _numpy_inputs(REAL, 2),
         np.minimum),
    _jnp("equal", ALL, np.equal, n=2),
    _jnp("not_equal", ALL, np.not_equal, n=2),
    _jnp("less", REAL + BOOL, np.less, n=2),
    _jnp("less_equal", REAL + BOOL, np.less_equal, n=2),
    _jnp("greater", REAL + BOOL, np.greater, n=2),
    _jnp("greater_equal", REAL + BOOL, np.greater_equal, n=2),
    Case("jnp ordering comparisons[complex]", lambda x, y, ufunc: getattr(jnp, ufunc)(x, y),
         _numpy_inputs(COMPLEX, 2, kwargs=_kwargs(ufunc=st.sampled_from(
             ["less", "less_equal", "greater", "greater_equal"]))),
         divergence="complex_order_ignores_nan_imaginary_part"),
    _jnp("logical_and", ALL, np.logical_and, n=2),
    _jnp("logical_or", ALL, np.logical_or, n=2),
    _jnp("logical_xor", ALL, np.logical_xor, n=2),
    _jnp("logical_not", ALL, np.logical_not),
    _jnp("bitwise_and", INT + BOOL, np.bitwise_and, n=2),
    _jnp("bitwise_or", INT + BOOL, np.bitwise_or, n=2),
    _jnp("bitwise_xor", INT + BOOL, np.bitwise_xor, n=2),
    _jnp("bitwise_not", INT + BOOL, np.bitwise_not),
    _jnp("bitwise_invert", INT + BOOL, np.bitwise_invert),
    _jnp("invert", INT + BOOL, np.invert),
    _jnp("bitwise_count", INT, np.bitwise_count),
    _jnp("left_shift", INT, np.left_shift, n=2),
    _jnp("right_shift", INT, np.right_shift,
         n=2),
    _jnp("bitwise_left_shift", INT, np.bitwise_left_shift, n=2),
    _jnp("bitwise_right_shift", INT, np.bitwise_right_shift,
         n=2),
    _jnp("isnan", ALL, np.isnan),
    _jnp("isinf", ALL, np.isinf),
    _jnp("isfinite", ALL, np.isfinite),
    _jnp("isposinf", REAL, np.isposinf),
    _jnp("isneginf", REAL, np.isneginf),
    _jnp("signbit", REAL, np.signbit),
    _jnp("copysign", FLOAT, np.copysign, n=2),
    _jnp("nextafter", FLOAT, np.nextafter, n=2),
    _jnp("spacing", FLOAT, None, divergence="float16_spacing_of_infinity"),
    _jnp("frexp", FLOAT, np.frexp),
    Case("jnp.ldexp", jnp.ldexp, _ldexp_inputs, lambda x, n: np.ldexp(_wide(x), n)),
    _jnp("real", ALL, np.real),
    _jnp("imag", ALL, np.imag),
    _jnp("conjugate", ALL, np.conjugate),
    _jnp("angle", COMPLEX + FLOAT, None, kwargs=_kwargs(deg=st.booleans()),
         divergence="angle_of_real_scalar_is_default_float"),
    _jnp("heaviside", FLOAT, None, n=2,
         divergence="heaviside_of_nan_is_x2"),
    _jnp("nan_to_num", INEXACT + INT, _nan_to_num),
    _jnp("isclose", INEXACT, np.isclose, n=2,
         kwargs=_kwargs(equal_nan=st.booleans())),
    # Integers and booleans are compared in float32 (see the divergence).
    Case("jnp.isclose[integer operands]", lambda a, b, ufunc, equal_nan: jnp.isclose(
        a, b, equal_nan=equal_nan), _numpy_inputs(INT + BOOL, 2, kwargs=_kwargs(
            ufunc=st.just("isclose"), equal_nan=st.booleans())),
         divergence="integers_promote_to_default_float"),
    Case("jnp.where", jnp.where, _where_inputs, np.where),
    Case("jnp.astype", lambda x, dtype: jnp.astype(x, dtype),
         _inputs(ALL, kwargs=_kwargs(dtype=st.sampled_from(ALL))),
         divergence="astype_saturates"),
    _jnp("gcd", INT, None, n=2, divergence="gcd_of_int_min"),
    _jnp("lcm", INT, None, n=2, divergence="lcm_of_int_min"),
]


# --- promotion: integer operands of inexact functions, mixed dtypes ----------------------------

_INEXACT_UNARY = ["sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
                  "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                  "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "reciprocal", "fabs",
                  "rint"]
_MIXED_BINARY = ["add", "multiply", "maximum", "minimum", "equal", "not_equal", "logical_xor",
                 "true_divide"]
_MIXED_REAL_BINARY = ["subtract", "less", "greater_equal", "arctan2", "hypot", "logaddexp",
                      "copysign", "fmax"]


@st.composite
def _mixed_inputs(draw):
  """Two operands of independently drawn dtypes (NumPy-broadcastable) and a
  ufunc name that accepts them."""
  ufunc = draw(st.sampled_from(_MIXED_BINARY + _MIXED_REAL_BINARY))
  dtype_list = ALL if ufunc in _MIXED_BINARY else REAL
  shapes = draw(S.broadcastable_shapes(2))
  x, y = (draw(S.arrays(draw(st.sampled_from(dtype_list)), s)) for s in shapes)
  if ufunc == "subtract" and x.dtype == y.dtype == np.bool_:
    y = y.astype(np.int8)   # subtract rejects two booleans
  return (x, y), {"ufunc": ufunc}


PROMOTION_CASES = [
    Case("jnp inexact ufuncs[integer operands]", lambda x, ufunc: getattr(jnp, ufunc)(x),
         _inputs(INT + BOOL, kwargs=_kwargs(ufunc=st.sampled_from(_INEXACT_UNARY))),
         divergence="integers_promote_to_default_float"),
    Case("jnp binary ufuncs[mixed dtypes]", lambda x, y, ufunc: getattr(jnp, ufunc)(x, y),
         _mixed_inputs, divergence="jax_type_promotion"),
]

CASES = LAX_CASES + JNP_CASES + PROMOTION_CASES


# --- derivatives ---------------------------------------------------------------------------------
# Inputs are float64 (complex128) arrays inside each function's smooth domain:
# away from kinks, poles and branch cuts, and, for complex operands, with the
# real and imaginary parts bounded separately.

def _r(low, high):
  """Real elements in [low, high]."""
  return np.float64, st.floats(low, high)


def _r_nonzero(low, high):
  """Real elements of magnitude in [low, high], of either sign."""
  return np.float64, st.tuples(st.floats(low, high), st.booleans()).map(
      lambda p: p[0] if p[1] else -p[0])


def _c(real, imag):
  """Complex elements with real part in `real`, imaginary part in `imag` (ranges)."""
  return np.complex128, st.builds(complex, st.floats(*real), st.floats(*imag))


@st.composite
def _operand_shapes(draw, n):
  """`n` shapes lax broadcasts together: rank 0, or the full rank with some dims 1."""
  shape = draw(S.shapes(min_side=1))
  return [() if draw(st.booleans()) and draw(st.booleans())
          else tuple(d if draw(st.booleans()) else 1 for d in shape) for _ in range(n)]


@st.composite
def _ad_arrays(draw, domains, kwargs):
  shapes_ = draw(_operand_shapes(len(domains)))
  args = tuple(draw(S.arrays(dtype, shape, elements=elements))
               for (dtype, elements), shape in zip(domains, shapes_))
  return args, ({} if kwargs is None else draw(kwargs))


def _ad(name, fn, primitives, *domains, kwargs=None, **options):
  """A derivative case of `fn` on one array per domain (see `_r`, `_c`)."""
  return ADCase(name, fn, lambda: _ad_arrays(domains, kwargs), tuple(primitives), **options)


@st.composite
def _rem_inputs(draw):
  """(x, y) with x / y at least 0.1 from an integer (where rem jumps)."""
  shape = draw(S.shapes(min_side=1))
  y = draw(S.arrays(np.float64, draw(st.sampled_from([(), shape])),
                    elements=_r_nonzero(0.5, 2)[1]))
  k = draw(S.arrays(np.float64, shape, elements=st.integers(-3, 3).map(float)))
  f = draw(S.arrays(np.float64, shape, elements=st.floats(0.1, 0.9)))
  return (y * (k + f), y), {}


@st.composite
def _no_tie_inputs(draw):
  """(x, y) at least 0.05 apart (max and min have kinks at ties), one maybe scalar."""
  shape = draw(S.shapes(min_side=1))
  y = draw(S.arrays(np.float64, draw(st.sampled_from([(), shape])), elements=st.floats(-2, 2)))
  x = y + draw(S.arrays(np.float64, shape, elements=_r_nonzero(0.05, 1)[1]))
  return ((x, y) if draw(st.booleans()) else (y, x)), {}


@st.composite
def _clamp_ad_inputs(draw):
  """(lo, x, hi): lo < hi, bounds scalar or of x's shape, x at least 0.05
  from either bound (clamp has kinks there) and on any side of them."""
  shape = draw(S.shapes(min_side=1))
  bound = lambda low, high: draw(S.arrays(np.float64, draw(st.sampled_from([(), shape])),
                                          elements=st.floats(low, high)))
  lo, hi = bound(-1.5, -0.5), bound(0.5, 1.5)
  x = draw(S.arrays(np.float64, shape, elements=st.floats(-3, 3)))
  x = np.where(np.abs(x - lo) < 0.05, lo + 0.1, x)
  x = np.where(np.abs(x - hi) < 0.05, hi - 0.1, x)
  return (lo, x, hi), {}


@st.composite
def _select_n_ad_inputs(draw, dtype_domain, boolean):
  """Cases of one shape; the selector (a static kwarg: it has no derivative)
  bool with 2 cases or int32 with 3, scalar or of the cases' shape."""
  dtype, elements = dtype_domain
  shape = draw(S.shapes(min_side=1))
  n = 2 if boolean else 3
  which_shape = draw(st.sampled_from([(), shape]))
  which = draw(S.arrays(np.bool_, which_shape) if boolean else S.arrays(
      np.int32, which_shape, elements=st.integers(0, n - 1)))
  return tuple(draw(S.arrays(dtype, shape, elements=elements)) for _ in range(n)), {
      "which": which}


_HIGHEST = lax.AccuracyMode.HIGHEST

# (function, primitive, real domain, complex domain or None): smooth functions,
# checked to second order.
_SMOOTH_UNARY = [
    (lax.exp, "exp", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.exp2, "exp2", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.expm1, "expm1", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.log, "log", _r(0.1, 5), _c((0.1, 2), (-2, 2))),
    (lax.log1p, "log1p", _r(-0.9, 5), _c((-0.5, 2), (-1, 1))),
    (lax.logistic, "logistic", _r(-5, 5), _c((-1, 1), (-1, 1))),
    (lax.sqrt, "sqrt", _r(0.1, 5), _c((0.1, 2), (-2, 2))),
    # rsqrt from 0.3: its fourth derivative (~6.6 x**-4.5) makes the order-2
    # central difference too inexact below
    (lax.rsqrt, "rsqrt", _r(0.3, 5), _c((0.3, 2), (-2, 2))),
    (lax.cbrt, "cbrt", _r_nonzero(0.1, 5), None),
    (lax.square, "square", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.sin, "sin", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.cos, "cos", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.tan, "tan", _r(-1.2, 1.2), _c((-1, 1), (-1, 1))),
    (lax.asin, "asin", _r(-0.9, 0.9), _c((-0.7, 0.7), (-0.7, 0.7))),
    (lax.acos, "acos", _r(-0.9, 0.9), _c((-0.7, 0.7), (-0.7, 0.7))),
    (lax.atan, "atan", _r(-3, 3), _c((-0.7, 0.7), (-0.7, 0.7))),
    (lax.sinh, "sinh", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.cosh, "cosh", _r(-3, 3), _c((-2, 2), (-2, 2))),
    (lax.tanh, "tanh", _r(-3, 3), _c((-1, 1), (-1, 1))),
    (lax.asinh, "asinh", _r(-3, 3), _c((-0.7, 0.7), (-0.7, 0.7))),
    (lax.acosh, "acosh", _r(1.1, 5), _c((1.2, 3), (-1, 1))),
    (lax.atanh, "atanh", _r(-0.9, 0.9), _c((-0.7, 0.7), (-0.7, 0.7))),
    (lax.abs, "abs", _r_nonzero(0.1, 3), _c((0.2, 2), (-2, 2))),
    (lambda x: lax.expm1(x, accuracy=_HIGHEST), "expm1", _r(-3, 3), None),
    (lambda x: lax.tanh(x, accuracy=_HIGHEST), "tanh", _r(-3, 3), None),
    (lambda x: lax.logistic(x, accuracy=_HIGHEST), "logistic", _r(-5, 5), None),
]


def _smooth_unary_cases():
  cases = []
  for fn, prim, real, complex_ in _SMOOTH_UNARY:
    name = f"lax.{prim}" if fn is getattr(lax, prim) else f"lax.{prim}[accuracy=HIGHEST]"
    cases.append(_ad(name, fn, [prim], real, order=2))
    if complex_ is not None:
      cases.append(_ad(f"{name}[complex]", fn, [prim], complex_, order=2))
  return cases


_ANY, _ANY_C = _r(-2, 2), _c((-2, 2), (-2, 2))
_REV = ("rev",)

AD_CASES = _smooth_unary_cases() + [
    # Linear in their operands: the reverse-mode cases check the transposes
    # (including the sums over broadcast dimensions).
    _ad("lax.neg", lax.neg, ["neg"], _ANY),
    _ad("lax.neg[complex]", lax.neg, ["neg"], _ANY_C),
    _ad("lax.add", lax.add, ["add"], _ANY, _ANY),
    _ad("lax.add[complex]", lax.add, ["add"], _ANY_C, _ANY_C),
    _ad("lax.sub", lax.sub, ["sub"], _ANY, _ANY),
    _ad("lax.sub[complex]", lax.sub, ["sub"], _ANY_C, _ANY_C),
    _ad("lax.mul", lax.mul, ["mul", "add_any"], _ANY, _ANY, order=2),
    _ad("lax.mul[complex]", lax.mul, ["mul", "add_any"], _ANY_C, _ANY_C, order=2),
    _ad("x * x", lambda x: lax.mul(x, x), ["mul", "add_any"], _ANY, modes=_REV),
    _ad("lax.div", lax.div, ["div"], _ANY, _r_nonzero(0.5, 2), order=2),
    _ad("lax.div[complex]", lax.div, ["div"], _ANY_C, _c((0.5, 2), (-2, 2)), order=2),
    _ad("lax.copy_p", lax.copy_p.bind, ["copy"], _ANY),
    _ad("lax.reduce_precision", lax.reduce_precision, ["reduce_precision"], _ANY,
        kwargs=_kwargs(exponent_bits=st.just(11), mantissa_bits=st.integers(30, 52))),
    _ad("lax.convert_element_type[float64 to complex128]",
        lambda x: lax.convert_element_type(x, np.complex128), ["convert_element_type"], _ANY),
    _ad("lax.convert_element_type[complex128 to float64]",
        lambda x: lax.convert_element_type_p.bind(x, new_dtype=np.dtype(np.float64),
                                                  weak_type=False),
        ["convert_element_type"], _ANY_C),
    _ad("lax.real", lax.real, ["real"], _ANY_C),
    _ad("lax.imag", lax.imag, ["imag"], _ANY_C),
    _ad("lax.complex", lax.complex, ["complex"], _ANY, _ANY),
    _ad("lax.conj", lax.conj, ["conj"], _ANY_C),
    _ad("lax.conj[real operand]", lax.conj, ["conj"], _ANY),
    ADCase("lax.select_n[bool]", lambda *cases, which: lax.select_n(which, *cases),
           lambda: _select_n_ad_inputs(_ANY, True), ("select_n",)),
    ADCase("lax.select_n[int32, complex]", lambda *cases, which: lax.select_n(which, *cases),
           lambda: _select_n_ad_inputs(_ANY_C, False), ("select_n",)),
    # Nonlinear binary functions.
    _ad("lax.pow", lax.pow, ["pow"], _r(0.2, 3), _r(-2, 2), order=2),
    _ad("lax.pow[complex]", lax.pow, ["pow"], _c((0.2, 2), (-1, 1)), _c((-1, 1), (-1, 1)),
        order=2),
    _ad("lax.pow[int32 exponent]", lambda x, y: lax.pow(x, np.int32(y)), ["pow"],
        _r_nonzero(0.3, 2), kwargs=_kwargs(y=st.integers(-3, 3)), order=2),
    _ad("lax.integer_pow", lax.integer_pow, ["integer_pow"], _r_nonzero(0.3, 2),
        kwargs=_kwargs(y=st.integers(-3, 4)), order=2),
    _ad("lax.integer_pow[complex]", lax.integer_pow, ["integer_pow"],
        _c((0.3, 2), (-2, 2)), kwargs=_kwargs(y=st.integers(-3, 4)), order=2),
    _ad("lax.atan2", lax.atan2, ["atan2"], _r(0.5, 2), _r(-2, 2), order=2),
    _ad("lax.atan2[complex]", lax.atan2, ["atan2"], _c((0.5, 1.5), (-0.2, 0.2)),
        _c((0.5, 1.5), (-0.2, 0.2)), order=2),
    ADCase("lax.rem", lax.rem, _rem_inputs, ("rem",), order=2),
    ADCase("lax.max", lax.max, _no_tie_inputs, ("max",), order=2),
    ADCase("lax.min", lax.min, _no_tie_inputs, ("min",), order=2),
    ADCase("lax.clamp", lax.clamp, _clamp_ad_inputs, ("clamp",), order=2),
]
