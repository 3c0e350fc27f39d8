"""The numba backend's special functions agree with the reference rules bit for bit.

Each test jits one program applying a family of primitives to the same
operands, on the reference and on the numba backend (see test_elementwise.py).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import refimpl as jax
from refimpl import dtypes, lax
from conformance import strategies as cst
from tests.numba_backend.test_elementwise import check

pytest.importorskip("numba")

SETTINGS = settings(max_examples=20, deadline=None)

FLOAT_DTYPES = [np.dtype(d) for d in cst.FLOAT_DTYPES] + [np.dtype(np.float64)]


def _width(dtype):
  return 32 if dtype == dtypes.bfloat16 else np.dtype(dtype).itemsize * 8


def _representable(values, dtype):
  return [v for v in values if np.isnan(v) or float(np.asarray(v, dtype)) == v]


def floats(dtype, shape):
  """Floats in the functions' interesting ranges, with 0, ±1, ±inf, NaN and huge values."""
  width = _width(dtype)
  special = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -2.5, np.inf, -np.inf, np.nan, 1e5, 2e5, -3.0]
  element = st.one_of(
      st.sampled_from(_representable(special, dtype)),
      st.floats(-30, 30, width=width), st.floats(0, 200, width=width),
      st.floats(width=width))
  return cst.arrays(dtype, shape, elements=element)


def unit_floats(dtype, shape):
  """Floats in [-1.125, 1.125] (erf_inv's domain and beyond), with ±1 and NaN."""
  width = _width(dtype)
  element = st.one_of(st.sampled_from([1.0, -1.0, 0.0, -0.0, np.nan, -0.5, 0.875]),
                      st.floats(-1.125, 1.125, width=width))
  return cst.arrays(dtype, shape, elements=element)


def run(dtype, fn):
  if dtype == np.float64:
    with jax.enable_x64():
      return fn()
  return fn()


UNARY = {"lgamma": lax.lgamma, "digamma": lax.digamma, "bessel_i0e": lax.bessel_i0e,
         "bessel_i1e": lax.bessel_i1e, "erf": lax.erf, "erfc": lax.erfc}


def temme_domain(a, x):
  """x, but at least a / 2 where a > 1e5: the reference's Temme expansion for
  the derivatives in a raises (math domain error) where x / a rounds to 0."""
  large = lax.gt(a, lax.full_like(a, 1e5))
  return lax.select(large, lax.max(x, lax.mul(a, lax.full_like(a, 0.5))), x)


def finite_q(q):
  """q, but at least -1e4: the reference's zeta raises at q = -inf (math.floor(-inf))."""
  return lax.max(q, lax.full_like(q, -1e4))


BINARY = {"polygamma": lambda x, y: lax.polygamma(lax.floor(lax.abs(x)), finite_q(y)),
          "zeta": lambda x, y: lax.zeta(x, finite_q(y)),
          "igamma": lax.igamma, "igammac": lax.igammac,
          "igamma_grad_a": lambda a, x: lax.igamma_grad_a(a, temme_domain(a, x)),
          "random_gamma_grad": lambda a, x: lax.random_gamma_grad(a, temme_domain(a, x)),
          "betainc": lambda x, y: lax.betainc(lax.abs(x), lax.abs(y), lax.erfc(y) / 2)}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@SETTINGS
@given(data=st.data())
def test_special_functions(dtype, data):
  shape = data.draw(cst.shapes(max_dims=2))
  x, y = data.draw(floats(dtype, shape)), data.draw(floats(dtype, shape))
  u = data.draw(unit_floats(dtype, shape))
  program = lambda x, y, u: ([f(x) for f in UNARY.values()] + [f(x, y) for f in BINARY.values()]
                             + [lax.erf_inv(u)])
  run(dtype, lambda: check(program, [*UNARY, *BINARY, "erf_inv"], x, y, u))


def integers(dtype, shape):
  info = np.iinfo(dtype)
  element = st.one_of(st.sampled_from([int(info.min), int(info.max), 0, 1, -1 if info.min else 2]),
                      st.integers(int(info.min), int(info.max)))
  return cst.arrays(dtype, shape, elements=element)


@pytest.mark.parametrize("dtype", [np.dtype(d) for d in cst.INT_DTYPES + [np.int64, np.uint64]],
                         ids=str)
@SETTINGS
@given(data=st.data())
def test_mulhi(dtype, data):
  shape = data.draw(cst.shapes(max_dims=1))
  x, y = data.draw(integers(dtype, shape)), data.draw(integers(dtype, shape))
  if dtype.itemsize == 8:
    with jax.enable_x64():
      check(lambda x, y: [lax.mulhi(x, y)], ["mulhi"], x, y)
  else:
    check(lambda x, y: [lax.mulhi(x, y)], ["mulhi"], x, y)
