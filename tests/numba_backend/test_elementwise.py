"""The numba backend's elementwise lowerings agree with the reference rules.

Each test jits one program applying a family of primitives to the same
operands, on the reference and on the numba backend, and compares every
result bit for bit (NaNs equal to NaNs). The program is compiled once per
dtype and rank: hypothesis's shapes and values reuse it.
"""

import numpy as np
import pytest
from numpy._core._multiarray_umath import __cpu_features__
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax
from refimpl import dtypes
from conformance import strategies as cst
from numba_backend import float32

pytest.importorskip("numba")

SETTINGS = settings(max_examples=25, deadline=None)


NUMPY_SIMD_FLOAT64_MATH = bool(__cpu_features__.get("AVX512F"))
"""Whether NumPy's float64 loops of exp, log, pow, atan2 and the trigonometric
and hyperbolic functions are its SIMD implementations on this CPU, within 2
ulps of the C library's, which the backend calls (docs/backends.md,
"Tolerances of the numba backend")."""


def _within_ulps(reference, backend, ulps):
  """Elementwise: equal, both NaN, or (finite, real) at most `ulps` apart."""
  same = (reference == backend) | (np.isnan(reference) & np.isnan(backend))
  if ulps:
    bits = np.dtype(f"int{reference.dtype.itemsize * 8}")
    ordered = [np.where(b < 0, np.iinfo(bits).min - b, b)
               for b in (reference.view(bits).astype(np.int64),
                         backend.view(bits).astype(np.int64))]
    close = np.abs(ordered[0] - ordered[1]) <= ulps
    same |= close & np.isfinite(reference) & np.isfinite(backend)
  return same


def assert_same(reference, backend, what, ulps=0):
  """Bit for bit (NaNs equal to NaNs), or within `ulps` (of each part of a complex number)."""
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  if dtypes.is_complex(reference.dtype):
    same = (_within_ulps(reference.real, backend.real, ulps)
            & _within_ulps(reference.imag, backend.imag, ulps))
  elif dtypes.is_inexact(reference.dtype):
    same = _within_ulps(reference, backend, ulps)
  else:
    same = reference == backend
  bad = ~np.asarray(same)
  assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements differ, e.g. at "
                         f"{np.argwhere(bad)[0].tolist() if bad.ndim else ()}: reference "
                         f"{reference[bad][:3]}, numba {backend[bad][:3]} (inputs "
                         f"differ there)")


FLOATS = [*cst.FLOAT_DTYPES, np.dtype(np.float64)]


def run_x64(dtype, fn):
  """fn(), under enable_x64 for a 64-bit `dtype`."""
  if np.dtype(dtype).itemsize == 8 or np.dtype(dtype) == np.complex128:
    with jax.enable_x64():
      return fn()
  return fn()


def check(program, names, *args, ulps=None):
  """`program`'s results (named `names`) on the numba backend are the
  reference's, bit for bit or within `ulps[name]`."""
  reference = jax.jit(program)(*args)
  backend = jax.jit(program, backend="numba")(*args)
  for name, r, b in zip(names, reference, backend):
    assert_same(r, b, name, (ulps or {}).get(name, 0))


def simd_ulps(dtype, names):
  """The tolerance of the float64 (complex128) functions `names` for `dtype`
  on this CPU: 2 ulps where NumPy's loops are its SIMD ones; for float32,
  the ulps of the functions of numba_backend/float32.py."""
  if np.dtype(dtype) == np.float32:
    return {name: float32.ULPS[name] for name in names if name in float32.ULPS}
  wide = np.dtype(dtype) in (np.float64, np.complex128)
  return {name: 2 for name in names} if wide and NUMPY_SIMD_FLOAT64_MATH else {}


EXACT_FLOAT_UNARY = {
    "neg": lax.neg, "sign": lax.sign, "abs": lax.abs, "floor": lax.floor, "ceil": lax.ceil,
    "round": lax.round, "round_even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
    "is_finite": lax.is_finite, "sqrt": lax.sqrt, "square": lax.square,
    "pow3": lambda x: lax.integer_pow(x, 3), "pow-2": lambda x: lax.integer_pow(x, -2),
    "to_int32": lambda x: lax.convert_element_type(x, np.int32),
    "to_uint8": lambda x: lax.convert_element_type(x, np.uint8),
    "to_bool": lambda x: lax.convert_element_type(x, np.bool_),
    "to_f16": lambda x: lax.convert_element_type(x, np.float16),
    "to_bf16": lambda x: lax.convert_element_type(x, dtypes.bfloat16),
    "to_f32": lambda x: lax.convert_element_type(x, np.float32),
}

FLOAT64_FUNCTIONS = {
    "exp": lax.exp, "exp2": lax.exp2, "expm1": lax.expm1, "log": lax.log, "log1p": lax.log1p,
    "logistic": lax.logistic, "tanh": lax.tanh, "sin": lax.sin, "cos": lax.cos, "tan": lax.tan,
    "asin": lax.asin, "acos": lax.acos, "atan": lax.atan, "sinh": lax.sinh, "cosh": lax.cosh,
    "asinh": lax.asinh, "acosh": lax.acosh, "atanh": lax.atanh, "cbrt": lax.cbrt,
    "rsqrt": lax.rsqrt,
}

FLOAT_BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "rem": lax.rem,
    "max": lax.max, "min": lax.min, "pow": lax.pow, "atan2": lax.atan2,
    "nextafter": lax.nextafter, "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le,
    "gt": lax.gt, "ge": lax.ge,
    "select": lambda x, y: lax.select(x < y, x, y),
    "clamp": lambda x, y: lax.clamp(x, y, y),
    "fma": lambda x, y: x * y + x,
    "fms": lambda x, y: x - x * y,
}

same_shape_pairs = lambda dtype: cst.shapes(max_dims=2).flatmap(
    lambda s: st.tuples(cst.arrays(dtype, s), cst.arrays(dtype, s)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(data=st.data())
def test_exact_float_unary(dtype, data):
  x = data.draw(cst.arrays(dtype, cst.shapes(max_dims=2)))
  names = list(EXACT_FLOAT_UNARY)
  run_x64(dtype, lambda: check(lambda x: [f(x) for f in EXACT_FLOAT_UNARY.values()], names, x))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(data=st.data())
def test_float64_functions(dtype, data):
  x = data.draw(cst.arrays(dtype, cst.shapes(max_dims=2)))
  run_x64(dtype, lambda: check(lambda x: [f(x) for f in FLOAT64_FUNCTIONS.values()],
                               list(FLOAT64_FUNCTIONS), x,
                               ulps=simd_ulps(dtype, FLOAT64_FUNCTIONS)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(data=st.data())
def test_float_binary(dtype, data):
  x, y = data.draw(same_shape_pairs(dtype))
  run_x64(dtype, lambda: check(lambda x, y: [f(x, y) for f in FLOAT_BINARY.values()],
                               list(FLOAT_BINARY), x, y, ulps=simd_ulps(dtype, ["pow", "atan2"])))


REDUCED_FORMATS = [(8, 7), (5, 10), (4, 3), (5, 2), (2, 0), (1, 1), (8, 23), (11, 52), (3, 30)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@SETTINGS
@given(data=st.data())
def test_float_bits_powers_selection(dtype, data):
  """reduce_precision in several formats, bitcasts to narrower and back,
  pow with integer exponents, negative integer_pow, clamp with scalar
  bounds and select_n with int32 selectors (out of range too)."""
  shape = data.draw(cst.shapes(max_dims=2))
  x, y = data.draw(cst.arrays(dtype, shape)), data.draw(cst.arrays(dtype, shape))
  which = data.draw(cst.arrays(np.int32, shape, elements=st.integers(-2, 4)))
  exponent = data.draw(integer_arrays(np.int32, shape))
  same_width = np.dtype(f"uint{np.dtype(dtype).itemsize * 8}")
  program = lambda x, y, which, exponent: (
      [lax.reduce_precision(x, e, m) for e, m in REDUCED_FORMATS]
      + [lax.bitcast_convert_type(x, same_width),
         lax.bitcast_convert_type(lax.bitcast_convert_type(x, np.uint8), dtype),
         lax.pow(x, exponent), lax.pow(x, lax.convert_element_type(which, np.int32)),
         lax.integer_pow(x, -1), lax.integer_pow(x, -3),
         lax.clamp(np.asarray(-1.5, dtype), x, np.asarray(2.0, dtype)),
         lax.select_n(which, x, y, lax.neg(x)), lax.select_n(which, x)])
  names = ([f"reduce_precision{f}" for f in REDUCED_FORMATS]
           + ["bitcast", "bitcast_narrow_wide", "pow_int", "pow_small_int", "pow-1", "pow-3",
              "clamp_scalar", "select_n3", "select_n1"])
  run_x64(dtype, lambda: check(program, names, x, y, which, exponent))


# --- integers, bool, complex, float64 ----------------------------------------------------------

ALL_INTEGER_DTYPES = cst.INT_DTYPES + [np.int64, np.uint64]


def x64_dtype(dtype):
  return pytest.param(np.dtype(dtype), id=np.dtype(dtype).name)


def integer_arrays(dtype, shape):
  """Integers with the extremes (MIN, MIN + 1, -1, 0, 1, MAX) drawn often."""
  info = np.iinfo(dtype)
  special = [int(info.min), int(info.min) + 1, -1 if info.min < 0 else 2, 0, 1, int(info.max),
             int(info.max) - 1]
  element = st.one_of(st.sampled_from(special), st.integers(int(info.min), int(info.max)))
  return cst.arrays(dtype, shape, elements=element)


def shift_amounts(dtype, shape):
  """Shift amounts in and around [0, bits), negative and huge ones too."""
  info, bits = np.iinfo(dtype), np.dtype(dtype).itemsize * 8
  element = st.one_of(st.integers(0, bits), st.sampled_from([int(info.max), int(info.min), bits - 1,
                                                              bits + 1]),
                      st.integers(int(info.min), int(info.max)))
  return cst.arrays(dtype, shape, elements=element)


INTEGER_UNARY = {
    "neg": lax.neg, "sign": lax.sign, "not": lax.bitwise_not,
    "population_count": lax.population_count, "clz": lax.clz, "square": lax.square,
    "pow0": lambda x: lax.integer_pow(x, 0), "pow1": lambda x: lax.integer_pow(x, 1),
    "pow5": lambda x: lax.integer_pow(x, 5),
    "to_bool": lambda x: lax.convert_element_type(x, np.bool_),
    "to_int8": lambda x: lax.convert_element_type(x, np.int8),
    "to_uint16": lambda x: lax.convert_element_type(x, np.uint16),
    "to_int32": lambda x: lax.convert_element_type(x, np.int32),
    "to_uint32": lambda x: lax.convert_element_type(x, np.uint32),
    "to_f16": lambda x: lax.convert_element_type(x, np.float16),
    "to_bf16": lambda x: lax.convert_element_type(x, dtypes.bfloat16),
    "to_f32": lambda x: lax.convert_element_type(x, np.float32),
    "to_c64": lambda x: lax.convert_element_type(x, np.complex64),
    "copy": lambda x: lax.copy_p.bind(x),
}

INTEGER_BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "rem": lax.rem,
    "max": lax.max, "min": lax.min, "and": lax.bitwise_and, "or": lax.bitwise_or,
    "xor": lax.bitwise_xor, "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le,
    "gt": lax.gt, "ge": lax.ge,
    "select": lambda x, y: lax.select(x < y, x, y),
    "clamp": lambda x, y: lax.clamp(y, x, y),
    "mul_to_f32": lambda x, y: lax.mul(x, y, out_dtype=np.float32),
    "mul_to_int16": lambda x, y: lax.mul(x, y, out_dtype=np.int16),
}

SHIFTS = {"shift_left": lax.shift_left, "shift_right_logical": lax.shift_right_logical,
          "shift_right_arithmetic": lax.shift_right_arithmetic}


@pytest.mark.parametrize("dtype", [x64_dtype(d) for d in ALL_INTEGER_DTYPES])
@SETTINGS
@given(data=st.data())
def test_integers(dtype, data):
  shape = data.draw(cst.shapes(max_dims=2))
  x, y = data.draw(integer_arrays(dtype, shape)), data.draw(integer_arrays(dtype, shape))
  amount = data.draw(shift_amounts(dtype, shape))
  unary, binary = list(INTEGER_UNARY.values()), list(INTEGER_BINARY.values())
  shifts = list(SHIFTS.values())
  program = lambda x, y, s: ([f(x) for f in unary] + [f(x, y) for f in binary]
                             + [f(x, s) for f in shifts])
  run_x64(dtype, lambda: check(program, [*INTEGER_UNARY, *INTEGER_BINARY, *SHIFTS], x, y, amount))


@pytest.mark.parametrize("dtype", [x64_dtype(d) for d in cst.FLOAT_DTYPES + [np.float64]])
@SETTINGS
@given(data=st.data())
def test_float_to_integer(dtype, data):
  """Truncation, saturation and NaN to 0 for every integer width."""
  x = data.draw(cst.arrays(dtype, cst.shapes(max_dims=2)))
  targets = ALL_INTEGER_DTYPES + [np.bool_]
  run_x64(np.float64, lambda: check(
      lambda x: [lax.convert_element_type(x, t) for t in targets], [str(t) for t in targets], x))


BOOL_FUNCTIONS = {
    "not": lambda x, y: lax.bitwise_not(x), "and": lax.bitwise_and, "or": lax.bitwise_or,
    "xor": lax.bitwise_xor, "max": lax.max, "min": lax.min, "eq": lax.eq, "ne": lax.ne,
    "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge,
    "select_n": lambda x, y: lax.select_n(x, y, x),
    "to_int32": lambda x, y: lax.convert_element_type(x, np.int32),
    "to_f16": lambda x, y: lax.convert_element_type(x, np.float16),
    "to_f32": lambda x, y: lax.convert_element_type(x, np.float32),
    "to_c64": lambda x, y: lax.convert_element_type(x, np.complex64),
}


@SETTINGS
@given(data=st.data())
def test_bool(data):
  x, y = data.draw(same_shape_pairs(np.bool_))
  check(lambda x, y: [f(x, y) for f in BOOL_FUNCTIONS.values()], list(BOOL_FUNCTIONS), x, y)


def complex_arrays(dtype, shape):
  """Complex numbers with parts drawn from zeros, ones, infinities, NaN and floats."""
  part = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5]),
                   st.floats(width=32, min_value=-1e4, max_value=1e4), st.floats(width=32))
  return cst.arrays(dtype, shape, elements=st.builds(complex, part, part))


COMPLEX_UNARY = {
    "neg": lax.neg, "sign": lax.sign, "abs": lax.abs, "sqrt": lax.sqrt, "rsqrt": lax.rsqrt,
    "square": lax.square, "pow3": lambda x: lax.integer_pow(x, 3),
    "pow-2": lambda x: lax.integer_pow(x, -2), "exp": lax.exp, "log": lax.log,
    "log1p": lax.log1p, "real": lax.real, "imag": lax.imag, "conj": lax.conj,
    "to_f32": lambda x: lax.convert_element_type(x, np.float32),
    "to_int32": lambda x: lax.convert_element_type(x, np.int32),
    "to_bool": lambda x: lax.convert_element_type(x, np.bool_),
    "to_c128": lambda x: lax.convert_element_type(x, np.complex128),
}

COMPLEX_BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "max": lax.max,
    "min": lax.min, "eq": lax.eq, "ne": lax.ne, "select": lambda x, y: lax.select(x == y, x, y),
    "complex": lambda x, y: lax.complex(lax.real(x), lax.imag(y)),
}

COMPLEX_FUNCTIONS = {
    "exp2": lax.exp2, "expm1": lax.expm1, "logistic": lax.logistic, "tanh": lax.tanh,
    "sin": lax.sin, "cos": lax.cos, "tan": lax.tan, "asin": lax.asin, "acos": lax.acos,
    "atan": lax.atan, "sinh": lax.sinh, "cosh": lax.cosh, "asinh": lax.asinh,
    "acosh": lax.acosh, "atanh": lax.atanh,
}

COMPLEX_FUNCTIONS_BINARY = {"pow": lax.pow, "atan2": lax.atan2}


@pytest.mark.parametrize("dtype", [x64_dtype(d) for d in [np.complex64, np.complex128]])
@SETTINGS
@given(data=st.data())
def test_complex_exact(dtype, data):
  shape = data.draw(cst.shapes(max_dims=2))
  x, y = data.draw(complex_arrays(dtype, shape)), data.draw(complex_arrays(dtype, shape))
  unary, binary = list(COMPLEX_UNARY.values()), list(COMPLEX_BINARY.values())
  run_x64(dtype, lambda: check(lambda x, y: [f(x) for f in unary] + [f(x, y) for f in binary],
                               [*COMPLEX_UNARY, *COMPLEX_BINARY], x, y,
                               ulps=simd_ulps(dtype, ["exp", "log", "log1p"])))


@pytest.mark.parametrize("dtype", [x64_dtype(d) for d in [np.complex64, np.complex128]])
@SETTINGS
@given(data=st.data())
def test_complex_functions(dtype, data):
  """The transcendental functions, at special values too (the C library's, as NumPy's)."""
  shape = data.draw(cst.shapes(max_dims=2))
  x, y = data.draw(complex_arrays(dtype, shape)), data.draw(complex_arrays(dtype, shape))
  unary, binary = list(COMPLEX_FUNCTIONS.values()), list(COMPLEX_FUNCTIONS_BINARY.values())
  integer_exponent = data.draw(cst.arrays(np.int32, shape, elements=st.integers(-120, 120)))
  program = lambda x, y, n: ([f(x) for f in unary] + [f(x, y) for f in binary]
                             + [lax.pow(x, n), lax.pow(x, lax.convert_element_type(n, dtype))])
  names = [*COMPLEX_FUNCTIONS, *COMPLEX_FUNCTIONS_BINARY, "pow_int32", "pow_integral"]
  run_x64(dtype, lambda: check(program, names, x, y, integer_exponent))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, dtypes.float16, dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
def test_max_and_min_of_equal_zeros_are_numpys(dtype):
  """Of two equal operands NumPy's maximum and minimum give the second (their
  vector loops'): max(0.0, -0.0) is -0.0. The elementwise max, min, clamp and
  the cumulative maxima and minima give the reference's zero."""
  zeros = np.array([0.0, -0.0, 0.0, -0.0, -0.0, 0.0], dtype)
  other = np.array([-0.0, 0.0, 0.0, -0.0, -0.0, 0.0], dtype)
  programs = [lax.max, lax.min, lambda x, y: lax.clamp(y, x, y),
              lambda x, y: lax.cummax(x), lambda x, y: lax.cummin(x, reverse=True)]
  for program in programs:
    got = np.asarray(jax.jit(program, backend="numba")(zeros, other)).astype(np.float64)
    want = np.asarray(jax.jit(program, backend="reference")(zeros, other)).astype(np.float64)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
