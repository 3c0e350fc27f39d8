"""The rounding of refimpl/lax/elementwise.py's floating rules, and their blocks.

The exact functions and the IEEE operations (+, -, *, / and sqrt of reals,
+ and - of complex numbers) are computed in the operands' own dtype; the
module documents their result as the exact value rounded once. Computing in
float64 (complex128) and rounding, by way of float32 for 16-bit floats, is
that same value: each test here checks it bit for bit (any NaN equal to any
NaN) over every bit pattern, subnormals, infinities and NaNs included.
The last tests check that computing a rule block by block (`_in_blocks`)
gives the values of one call on all elements.
"""

from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from refimpl import lax
from refimpl.lax import elementwise
from conformance import strategies as S

REAL = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)]
COMPLEX = [np.dtype(np.complex64)]


def _special_values(dtype):
  info = ml_dtypes.finfo(dtype)
  return [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.0,
          float(info.smallest_subnormal), -float(info.smallest_subnormal),
          float(info.smallest_normal) - float(info.smallest_subnormal),
          float(info.smallest_normal), float(info.max), -float(info.max)]


def _reals(dtype, shape):
  """Arrays of `dtype` from any bit pattern, or special values."""
  bits = np.dtype(f"uint{dtype.itemsize * 8}")
  specials = np.array(_special_values(dtype), np.float32).astype(dtype).view(bits)
  elements = st.one_of(st.integers(0, np.iinfo(bits).max),
                       st.sampled_from([int(b) for b in specials]))
  return hnp.arrays(bits, shape, elements=elements).map(lambda a: a.view(dtype))


def _values(dtype, shape):
  if dtype.kind != "c":
    return _reals(dtype, shape)
  parts = np.dtype(np.float32)
  return st.tuples(_reals(parts, shape), _reals(parts, shape)).map(lambda p: _complex(*p, dtype))


def _complex(real, imag, dtype):
  """The complex array of these parts (exactly: `real + 1j * imag` makes NaN of inf * 0)."""
  z = np.empty(real.shape, dtype)
  z.real, z.imag = real, imag
  return z


@st.composite
def _operands(draw, dtype, n):
  """`n` operands of `dtype` that lax broadcasts: rank 0, or the full rank
  with any dimension possibly 1."""
  shape = draw(S.shapes(max_dims=3, max_side=5))
  shapes = [() if draw(st.integers(0, 3)) == 0 else
            tuple(d if draw(st.booleans()) else 1 for d in shape) for _ in range(n)]
  return [draw(_values(dtype, s)) for s in shapes]


def _wide(x):
  return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _rounded(value, dtype):
  """A float64 (complex128) result rounded to `dtype`, 16-bit floats by way of float32."""
  value = np.asarray(value)
  with np.errstate(over="ignore"):
    if dtype.itemsize == 2 and value.dtype.kind == "f":
      value = value.astype(np.float32)
    return value.astype(dtype)


def _wide_formula(fn):
  """`fn` computed in float64 (complex128), rounded to the operands' dtype
  (or kept, for a boolean result)."""
  def formula(*xs, **params):
    with np.errstate(all="ignore"):
      out = np.asarray(fn(*map(_wide, xs), **params))
    return out if out.dtype == np.bool_ else _rounded(out, xs[0].dtype)
  return formula


def _assert_same_values(actual, expected):
  """Equal bit for bit, except that any NaN equals any NaN."""
  actual, expected = np.asarray(actual), np.asarray(expected)
  assert actual.dtype == expected.dtype and actual.shape == expected.shape
  if actual.dtype.kind == "c":
    for part in (np.real, np.imag):
      _assert_same_values(part(actual), part(expected))
    return
  if actual.dtype == np.bool_:
    np.testing.assert_array_equal(actual, expected)
    return
  bits = np.dtype(f"uint{actual.dtype.itemsize * 8}")
  nan = np.isnan(actual.astype(np.float32))
  np.testing.assert_array_equal(nan, np.isnan(expected.astype(np.float32)))
  np.testing.assert_array_equal(actual.view(bits)[~nan], expected.view(bits)[~nan])


def _round_away(x):
  t = np.trunc(x)
  return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


def _sign(x):
  return np.where((x == 0) | np.isnan(x), x, np.copysign(1.0, x))


UNARY = {
    "neg": (lax.neg, np.negative, REAL + COMPLEX),
    "sign": (lax.sign, _sign, REAL),
    "abs": (lax.abs, np.abs, REAL),
    "floor": (lax.floor, np.floor, REAL),
    "ceil": (lax.ceil, np.ceil, REAL),
    "round_away": (lax.round, _round_away, REAL),
    "round_even": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.rint, REAL),
    "is_finite": (lax.is_finite, np.isfinite, REAL),
    "sqrt": (lax.sqrt, np.sqrt, REAL),
    "square": (lax.square, np.square, REAL),
}

BINARY = {
    "add": (lax.add, np.add, REAL + COMPLEX),
    "sub": (lax.sub, np.subtract, REAL + COMPLEX),
    "mul": (lax.mul, np.multiply, REAL),
    "div": (lax.div, np.divide, REAL),
    "rem": (lax.rem, np.fmod, REAL),
    "max": (lax.max, np.maximum, REAL + COMPLEX),
    "min": (lax.min, np.minimum, REAL + COMPLEX),
    "eq": (lax.eq, np.equal, REAL + COMPLEX),
    "ne": (lax.ne, np.not_equal, REAL + COMPLEX),
    "lt": (lax.lt, np.less, REAL),
    "le": (lax.le, np.less_equal, REAL),
    "gt": (lax.gt, np.greater, REAL),
    "ge": (lax.ge, np.greater_equal, REAL),
}


def _cases(table):
  return [(name, dtype) for name, (_, _, dts) in table.items() for dtype in dts]


@pytest.mark.parametrize("name,dtype", _cases(UNARY), ids=str)
@given(data=st.data())
def test_unary_rule_is_the_float64_result_rounded(name, dtype, data):
  op, fn, _ = UNARY[name]
  (x,) = data.draw(_operands(dtype, 1))
  _assert_same_values(op(x), _wide_formula(fn)(x))


@pytest.mark.parametrize("name,dtype", _cases(BINARY), ids=str)
@given(data=st.data())
def test_binary_rule_is_the_float64_result_rounded(name, dtype, data):
  op, fn, _ = BINARY[name]
  x, y = data.draw(_operands(dtype, 2))
  _assert_same_values(op(x, y), _wide_formula(fn)(x, y))


@pytest.mark.parametrize("dtype", REAL, ids=str)
@given(data=st.data())
def test_clamp_is_the_float64_result_rounded(dtype, data):
  (x,) = data.draw(_operands(dtype, 1))
  lo, hi = data.draw(_operands(dtype, 2).filter(lambda v: v[0].shape == v[1].shape == ()))
  expected = _wide_formula(lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi))(lo, x, hi)
  _assert_same_values(lax.clamp(lo, x, hi), expected.astype(dtype))


def _integer_pow_formula(x, y):
  """Binary exponentiation, each product computed in float64 and rounded; a
  negative power's reciprocal too."""
  dtype, base, n, acc = x.dtype, x, abs(y), None
  while n:
    if n & 1:
      acc = base if acc is None else _rounded(_wide(acc) * _wide(base), dtype)
    n >>= 1
    if n:
      base = _rounded(_wide(base) * _wide(base), dtype)
  if y > 0:
    return acc
  with np.errstate(all="ignore"):
    return _rounded(1.0 / _wide(acc), dtype)


@pytest.mark.parametrize("dtype", REAL, ids=str)
@given(data=st.data(), y=st.integers(-4, 6).filter(lambda y: y != 0))
def test_integer_pow_is_the_float64_products_rounded(dtype, data, y):
  (x,) = data.draw(_operands(dtype, 1))
  _assert_same_values(lax.integer_pow(x, y), _integer_pow_formula(x, y))


# --- blocks ------------------------------------------------------------------------------------

BLOCKED = {
    "sin": lambda x, y: lax.sin(x),
    "atan2": lax.atan2,
    "pow": lax.pow,
    "add": lax.add,
    "mul": lax.mul,
    "mul_out_dtype": lambda x, y: lax.mul(x, y, out_dtype=np.float32),
    "complex": lax.complex,
    "convert_to_int8": lambda x, y: lax.convert_element_type(x, np.int8),
    "select_n": lambda x, y: lax.select_n(lax.lt(x, y), *np.broadcast_arrays(x, y)),
    "integer_pow": lambda x, y: lax.integer_pow(x, 3),
}


@pytest.mark.parametrize("name", BLOCKED)
@given(data=st.data())
def test_rules_in_blocks_give_the_values_of_one_call(name, data):
  # Blocks of 3 elements (the machinery's blocks are 2**16), so that the
  # small arrays drawn here span several blocks.
  dtype = np.dtype(np.float32) if name == "complex" else data.draw(st.sampled_from(REAL))
  x, y = data.draw(_operands(dtype, 2))
  op = BLOCKED[name]
  whole = op(x, y)
  with mock.patch.object(elementwise, "_BLOCK", 3):
    blocked = op(x, y)
  _assert_same_values(blocked, whole)


def test_large_results_are_computed_in_blocks():
  # Above the block size, each block's float64 intermediates are small: the
  # peak memory of sin on a float32 array is about the size of its result.
  import tracemalloc
  x = np.linspace(-10, 10, 1 << 20, dtype=np.float32)
  tracemalloc.start()
  try:
    out = lax.sin(x)
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert peak < 1.5 * x.nbytes, peak
  _assert_same_values(out, _rounded(np.sin(x.astype(np.float64)), x.dtype))
