"""The numba backend's elementwise lowerings agree with the reference rules.

Each test jits one program applying a family of primitives to the same
operands, on the reference and on the numba backend, and compares every
result bit for bit (NaNs equal to NaNs). The program is compiled once per
dtype and rank: hypothesis's shapes and values reuse it.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import lax
from refimpl import dtypes
from conformance import strategies as cst

pytest.importorskip("numba")

SETTINGS = settings(max_examples=25, deadline=None)


def assert_same(reference, backend, what):
  reference, backend = np.asarray(reference), np.asarray(backend)
  assert backend.dtype == reference.dtype and backend.shape == reference.shape, what
  if dtypes.is_inexact(reference.dtype):
    same = (reference == backend) | (np.isnan(reference) & np.isnan(backend))
    if dtypes.is_complex(reference.dtype):
      same = ((reference.real == backend.real) | (np.isnan(reference.real) & np.isnan(backend.real))) \
          & ((reference.imag == backend.imag) | (np.isnan(reference.imag) & np.isnan(backend.imag)))
  else:
    same = reference == backend
  bad = ~np.asarray(same)
  assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements differ, e.g. at "
                         f"{np.argwhere(bad)[0].tolist() if bad.ndim else ()}: reference "
                         f"{reference[bad][:3]}, numba {backend[bad][:3]} (inputs "
                         f"differ there)")


def check(program, names, *args):
  reference = jax.jit(program)(*args)
  backend = jax.jit(program, backend="numba")(*args)
  for name, r, b in zip(names, reference, backend):
    assert_same(r, b, name)


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
    "clamp": lambda x, y: lax.clamp(x[()] if x.ndim == 0 else lax.reduce_min(x, tuple(range(x.ndim))) if False else x, y, y),
    "fma": lambda x, y: x * y + x,
    "fms": lambda x, y: x - x * y,
}

same_shape_pairs = lambda dtype: cst.shapes(max_dims=2).flatmap(
    lambda s: st.tuples(cst.arrays(dtype, s), cst.arrays(dtype, s)))


@pytest.mark.parametrize("dtype", cst.FLOAT_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_exact_float_unary(dtype, data):
  x = data.draw(cst.arrays(dtype, cst.shapes(max_dims=2)))
  names = list(EXACT_FLOAT_UNARY)
  check(lambda x: [f(x) for f in EXACT_FLOAT_UNARY.values()], names, x)


@pytest.mark.parametrize("dtype", cst.FLOAT_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_float64_functions(dtype, data):
  x = data.draw(cst.arrays(dtype, cst.shapes(max_dims=2)))
  check(lambda x: [f(x) for f in FLOAT64_FUNCTIONS.values()], list(FLOAT64_FUNCTIONS), x)


@pytest.mark.parametrize("dtype", cst.FLOAT_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_float_binary(dtype, data):
  x, y = data.draw(same_shape_pairs(dtype))
  check(lambda x, y: [f(x, y) for f in FLOAT_BINARY.values()], list(FLOAT_BINARY), x, y)
