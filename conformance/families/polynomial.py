"""Cases for refimpl/numpy/polynomial.py.

Coefficients are small integers, so sums and products are exact. JAX keeps
the leading zeros that NumPy trims from products and remainders (shapes must
be static), so those twins are written with NumPy's `convolve` and a padded
`polydiv`; roots are compared sorted.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl.numpy as jnp
from refimpl import dtypes
from conformance import strategies as S
from conformance.cases import Case

REAL = S.INT_DTYPES + S.FLOAT_DTYPES
INT_AND_F32 = S.SIGNED_DTYPES + [dtypes.float32]


def _coefficients(dtype_list, n=1, min_size=1, max_size=5, kwargs=None):
  """`n` 1-D small-integer coefficient arrays of one dtype (and static kwargs)."""
  @st.composite
  def inputs(draw):
    dtype = draw(st.sampled_from(dtype_list))
    arrays_ = tuple(draw(S.small_integer_arrays(dtype, draw(st.integers(min_size, max_size))))
                    for _ in range(n))
    return arrays_, {} if kwargs is None else draw(kwargs)
  return inputs


@st.composite
def _polydiv_inputs(draw):
  """A dividend and a divisor with leading coefficient ±1 or ±2 (exact quotients)."""
  u = draw(S.small_integer_arrays(np.float32, draw(st.integers(1, 5))))
  v = draw(S.small_integer_arrays(np.float32, draw(st.integers(1, 3))))
  v[0] = draw(st.sampled_from([1, -1, 2, -2]))
  return (u, v), {}


@st.composite
def _polyval_inputs(draw):
  dtype = draw(st.sampled_from(INT_AND_F32))
  p = draw(S.small_integer_arrays(dtype, draw(st.integers(1, 4)), bound=3))
  return (p, draw(S.small_integer_arrays(dtype, S.shapes(0, 2), bound=3))), {}


@st.composite
def _roots_inputs(draw):
  """Coefficients of a polynomial with distinct small integer roots (well
  separated, so float32 eigenvalues are accurate) and a nonzero leading term."""
  roots = draw(st.lists(st.integers(-3, 3), min_size=1, max_size=4, unique=True))
  return (np.poly(roots).astype(np.float32),), {}


def _np_polydiv(u, v):
  """NumPy's quotient, and its remainder padded with leading zeros to len(u)."""
  q, r = np.polydiv(u.astype(np.float64), v.astype(np.float64))
  return q, np.concatenate([np.zeros(len(u) - len(r)), r])


def _np_vander(x, N, increasing):
  """NumPy's vander in x's dtype (NumPy widens integers; JAX keeps the dtype)."""
  return np.vander(x, N, increasing).astype(x.dtype)


CASES = [
    Case("jnp.polyadd", jnp.polyadd, _coefficients(REAL, 2), np.polyadd),
    Case("jnp.polysub", jnp.polysub, _coefficients(S.SIGNED_DTYPES + S.FLOAT_DTYPES, 2),
         np.polysub),
    Case("jnp.polymul", jnp.polymul, _coefficients(INT_AND_F32, 2), np.convolve),
    Case("jnp.polydiv", jnp.polydiv, _polydiv_inputs, _np_polydiv),
    Case("jnp.polyder", jnp.polyder,
         _coefficients(INT_AND_F32, kwargs=st.fixed_dictionaries({"m": st.integers(0, 3)})),
         np.polyder),
    Case("jnp.polyint", jnp.polyint,
         _coefficients(INT_AND_F32, kwargs=st.fixed_dictionaries(
             {"m": st.integers(1, 3), "k": st.sampled_from([0.0, 2.0])})),
         np.polyint),
    Case("jnp.polyval", jnp.polyval, _polyval_inputs,
         lambda p, x: np.polyval(p.astype(np.float64), x)),
    Case("jnp.poly", jnp.poly, _coefficients(INT_AND_F32, max_size=4), np.poly),
    Case("jnp.vander", jnp.vander,
         _coefficients(INT_AND_F32, min_size=0, kwargs=st.fixed_dictionaries(
             {"N": st.none() | st.integers(0, 4), "increasing": st.booleans()})),
         _np_vander),
    Case("jnp.roots", lambda p: jnp.sort_complex(jnp.roots(p, strip_zeros=False)),
         _roots_inputs, lambda p: np.sort_complex(np.roots(p)), atol=1e-3),
]
