"""Complex functions at infinities, NaNs and zeros: JAX's (XLA's) values.

JAX computes complex abs, sign, exp, log, sqrt, * and / with XLA's formulas
(xla/service/elemental_ir_emitter.cc), which differ from C99's special
values (NumPy's) in places: abs is NaN when either part is NaN, sign is
x / abs(x) part by part, exp(a + bi) is exp(a) cos(b) + exp(a) sin(b) i,
log is log(abs(x)) + atan2(imag, real) i, * is the plain formula, and / is
Smith's algorithm with XLA's recovery where both parts come out NaN. The
expected values below are those formulas evaluated by hand at each input
(complex64); they are recorded as data. (sqrt's infinities and NaNs are
C99's in XLA too; its float32 formula's rounding at finite values, such as
sqrt(-4+0j)'s tiny nonzero real part, is not the reference's and is left out.)
"""

import math

import numpy as np
import pytest

import refimpl as jax
from refimpl import lax

inf, nan = math.inf, math.nan
PI = float(np.float32(math.pi))

UNARY = [
    # (function, input, JAX's result)
    ("abs", complex(inf, nan), nan),
    ("abs", complex(-inf, nan), nan),
    ("abs", complex(nan, inf), nan),
    ("abs", complex(nan, 0.0), nan),
    ("abs", complex(inf, inf), inf),
    ("abs", complex(-inf, 1.0), inf),
    ("abs", complex(0.0, 0.0), 0.0),
    ("abs", complex(3.0, 4.0), 5.0),
    ("sign", complex(inf, 1.0), complex(nan, 0.0)),
    ("sign", complex(1.0, -inf), complex(0.0, nan)),
    ("sign", complex(inf, inf), complex(nan, nan)),
    ("sign", complex(nan, 1.0), complex(nan, nan)),
    ("sign", complex(0.0, 0.0), complex(0.0, 0.0)),
    ("sign", complex(3.0, -4.0), complex(0.6, -0.8)),
    ("exp", complex(inf, 0.0), complex(inf, nan)),
    ("exp", complex(-inf, 0.0), complex(0.0, 0.0)),
    ("exp", complex(inf, 1.0), complex(inf, inf)),
    ("exp", complex(inf, inf), complex(nan, nan)),
    ("exp", complex(-inf, inf), complex(nan, nan)),
    ("exp", complex(-inf, nan), complex(nan, nan)),
    ("exp", complex(nan, 0.0), complex(nan, nan)),
    ("exp", complex(0.0, inf), complex(nan, nan)),
    ("exp", complex(0.0, 0.0), complex(1.0, 0.0)),
    ("log", complex(inf, nan), complex(nan, nan)),
    ("log", complex(nan, -inf), complex(nan, nan)),
    ("log", complex(0.0, 0.0), complex(-inf, 0.0)),
    ("log", complex(-0.0, 0.0), complex(-inf, PI)),
    ("log", complex(-inf, 0.0), complex(inf, PI)),
    ("log", complex(inf, inf), complex(inf, float(np.float32(math.pi / 4)))),
    ("log", complex(-1.0, 0.0), complex(0.0, PI)),
    ("sqrt", complex(nan, inf), complex(inf, inf)),
    ("sqrt", complex(inf, nan), complex(inf, nan)),
    ("sqrt", complex(-inf, 1.0), complex(0.0, inf)),
    ("sqrt", complex(inf, 1.0), complex(inf, 0.0)),
    ("sqrt", complex(1.0, -inf), complex(inf, -inf)),
]

BINARY = [
    # (function, x, y, JAX's result)
    ("mul", complex(inf, 0.0), complex(1.0, 0.0), complex(inf, nan)),
    ("mul", complex(inf, inf), complex(1.0, 0.0), complex(nan, nan)),
    ("mul", complex(0.0, 1.0), complex(0.0, inf), complex(-inf, nan)),
    ("mul", complex(1.0, 1.0), complex(1.0, 1.0), complex(0.0, 2.0)),
    ("div", complex(1.0, 1.0), complex(0.0, 0.0), complex(inf, inf)),
    ("div", complex(1.0, 1.0), complex(-0.0, 0.0), complex(-inf, -inf)),
    ("div", complex(0.0, 1.0), complex(-0.0, 0.0), complex(nan, -inf)),
    ("div", complex(nan, nan), complex(0.0, 0.0), complex(nan, nan)),
    ("div", complex(inf, 0.0), complex(1.0, 1.0), complex(inf, -inf)),
    ("div", complex(inf, inf), complex(1.0, 0.0), complex(inf, inf)),
    ("div", complex(1.0, 1.0), complex(inf, 0.0), complex(0.0, 0.0)),
    ("div", complex(1.0, 1.0), complex(inf, inf), complex(0.0, 0.0)),
    ("div", complex(1.0, 1.0), complex(nan, 0.0), complex(nan, nan)),
    ("div", complex(6.0, 8.0), complex(3.0, 4.0), complex(2.0, 0.0)),
]


def _c64(z):
  out = np.empty((), np.complex64)
  out.real, out.imag = z.real, z.imag
  return out


def _assert_same(actual, expected):
  """Equal part by part, the sign of zero included; NaN equal to NaN."""
  actual = np.asarray(actual)
  expected = np.asarray(expected, np.complex64 if actual.dtype.kind == "c" else np.float32)
  assert actual.dtype == expected.dtype
  for part in (np.real, np.imag):
    a, e = part(actual), part(expected)
    if np.isnan(e):
      assert np.isnan(a), (actual, expected)
    else:
      assert a == e and np.signbit(a) == np.signbit(e), (actual, expected)


def _id(case):
  return f"{case[0]}{tuple(case[1:-1])}"


@pytest.mark.parametrize("case", UNARY, ids=_id)
def test_unary_special_values(case):
  name, z, expected = case
  fn = getattr(lax, name)
  _assert_same(fn(_c64(z)), expected)
  _assert_same(jax.jit(fn)(_c64(z)), expected)


@pytest.mark.parametrize("case", BINARY, ids=_id)
def test_binary_special_values(case):
  name, x, y, expected = case
  fn = getattr(lax, name)
  _assert_same(fn(_c64(x), _c64(y)), expected)
  _assert_same(jax.jit(fn)(_c64(x), _c64(y)), expected)
