"""Cases for refimpl/numpy/statistics.py: bincount, histograms, cov/corrcoef,
gradient, trapezoid, interp, ediff1d, unwrap and the whole-array comparisons.

Inputs are small integers or quarter-integers so sums are exact and no value
falls within rounding of a histogram edge (NumPy bins uniform ranges by
arithmetic, JAX by comparing with the edges).
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import refimpl.numpy as jnp
from refimpl import dtypes
from conformance import strategies as S
from conformance.cases import Case

REAL = S.INT_DTYPES + S.FLOAT_DTYPES


def _quarters(dtype, shape, bound=10):
  """Multiples of 1/4 in [-bound, bound] (integers for integer dtypes)."""
  scale = 1 if dtypes.is_integer(dtype) else 4
  return S.arrays(dtype, shape, elements=st.integers(-bound * scale, bound * scale).map(
      lambda v: v / scale if scale > 1 else v))


@st.composite
def _bincount_inputs(draw, weighted):
  length = draw(st.integers(0, 6))
  x = draw(hnp.arrays(np.int32, S.shapes(1, 1), elements=st.integers(0, max(length - 1, 0))))
  x = x if length else x[:0]
  args = (x, draw(_quarters(np.float32, x.shape))) if weighted else (x,)
  return args, {"length": length}


@st.composite
def _histogram_inputs(draw, weighted=False):
  dtype = draw(st.sampled_from([dtypes.float32, dtypes.int32]))  # (float16 edges round)
  x = draw(_quarters(dtype, S.shapes(1, 2)))
  args = (x, draw(_quarters(np.float32, x.shape))) if weighted else (x,)
  return args, {"bins": draw(st.integers(1, 6)), "range": (-3.0, 5.0)}


@st.composite
def _histogram2d_inputs(draw):
  n = draw(st.integers(0, 6))
  x, y = draw(_quarters(np.float32, n)), draw(_quarters(np.float32, n))
  return (x, y), {"bins": [draw(st.integers(1, 4)), draw(st.integers(1, 4))],
                  "range": [(-3.0, 5.0), (-4.0, 4.0)]}


@st.composite
def _cov_inputs(draw):
  """Rows of at least 3 observations and ddof <= 1: positive degrees of freedom."""
  dtype = draw(st.sampled_from([dtypes.float32, dtypes.int32, dtypes.complex64]))
  shape = draw(S.shapes(1, 2, min_side=3))
  m = draw(S.small_integer_arrays(dtype, shape))
  kwargs = {"rowvar": draw(st.booleans()), "bias": draw(st.booleans()),
            "ddof": draw(st.sampled_from([None, 0, 1]))}
  return (m,), kwargs


@st.composite
def _axis_inputs(draw, min_side=0, dtype_list=(dtypes.float32,)):
  dtype = draw(st.sampled_from(dtype_list))
  x = draw(_quarters(dtype, S.shapes(1, 3, min_side=min_side)))
  return (x,), {"axis": draw(st.integers(-x.ndim, x.ndim - 1))}


@st.composite
def _interp_inputs(draw):
  xp = np.sort(np.array(draw(st.lists(st.integers(-8, 8), min_size=1, max_size=6,
                                      unique=True)), np.float32))
  fp = draw(_quarters(np.float32, xp.shape))
  x = draw(_quarters(np.float32, S.shapes(0, 2)))
  return (x, xp, fp), {"left": draw(st.sampled_from([None, -99.0])),
                       "right": draw(st.sampled_from([None, 99.0]))}


@st.composite
def _ediff1d_inputs(draw):
  dtype = draw(st.sampled_from(REAL))
  x = draw(S.small_integer_arrays(dtype, S.shapes()))
  return (x, draw(S.small_integer_arrays(dtype, S.shapes(0, 1))),
          draw(S.small_integer_arrays(dtype, S.shapes(0, 1)))), {}


@st.composite
def _comparison_inputs(draw):
  """Two arrays that are equal, or differ in one element, or in shape."""
  dtype = draw(st.sampled_from([dtypes.float32, dtypes.int32, dtypes.bool_]))
  x = draw(S.arrays(dtype, S.shapes(0, 2)))
  y = x.copy()
  if y.size and draw(st.booleans()):
    y.flat[0] = draw(S.arrays(dtype, ()))
  if draw(st.booleans()):  # another shape: broadcast to more dims, or cut
    cut = x.ndim and draw(st.booleans())
    y = y[..., :1] if cut else np.broadcast_to(y, (2,) + y.shape).copy()
  return (x, y), {}


def _np_histogram2d(x, y, bins, range):
  return np.histogram2d(x, y, bins, range)


CASES = [
    Case("jnp.bincount", lambda x, length: jnp.bincount(x, length=length),
         lambda: _bincount_inputs(False),
         lambda x, length: np.bincount(x, minlength=length)),
    Case("jnp.bincount (weights)", lambda x, w, length: jnp.bincount(x, w, length=length),
         lambda: _bincount_inputs(True),
         lambda x, w, length: np.bincount(x, w, minlength=length)),
    Case("jnp.histogram", lambda x, bins, range: jnp.histogram(x, bins, range),
         _histogram_inputs, lambda x, bins, range: np.histogram(x, bins, range)),
    Case("jnp.histogram (weights, density)",
         lambda x, w, bins, range: jnp.histogram(x, bins, range, w, density=True),
         lambda: _histogram_inputs(True),
         lambda x, w, bins, range: np.histogram(x, bins, range, weights=w, density=True),
         rtol=1e-5, atol=1e-6),
    Case("jnp.histogram2d", lambda x, y, bins, range: jnp.histogram2d(x, y, bins, range),
         _histogram2d_inputs, _np_histogram2d),
    Case("jnp.cov", jnp.cov, _cov_inputs, np.cov, rtol=1e-5, atol=1e-5),
    Case("jnp.corrcoef", lambda m, rowvar, bias, ddof: jnp.corrcoef(m, rowvar=rowvar),
         _cov_inputs, lambda m, rowvar, bias, ddof: np.corrcoef(m, rowvar=rowvar),
         rtol=1e-5, atol=1e-5),
    Case("jnp.gradient", lambda f, axis: jnp.gradient(f, 0.5, axis=axis),
         lambda: _axis_inputs(min_side=2),
         lambda f, axis: np.gradient(f, 0.5, axis=axis)),
    Case("jnp.trapezoid", lambda y, axis: jnp.trapezoid(y, dx=0.5, axis=axis),
         lambda: _axis_inputs(dtype_list=[dtypes.float32, dtypes.int32]),
         lambda y, axis: np.trapezoid(y, dx=0.5, axis=axis)),
    Case("jnp.unwrap", lambda p, axis: jnp.unwrap(p, axis=axis, period=3.0),
         lambda: _axis_inputs(min_side=1),
         lambda p, axis: np.unwrap(p, axis=axis, period=3.0), rtol=1e-5, atol=1e-5),
    Case("jnp.interp", jnp.interp, _interp_inputs, np.interp, rtol=1e-5,
         atol=1e-5),
    Case("jnp.ediff1d", jnp.ediff1d, _ediff1d_inputs,
         lambda x, to_end, to_begin: np.ediff1d(x, to_end, to_begin)),
    Case("jnp.allclose", jnp.allclose,
         lambda: S.same_shape_arrays([dtypes.float32, dtypes.float16, dtypes.int32]),
         np.allclose),
    Case("jnp.array_equal", jnp.array_equal, _comparison_inputs, np.array_equal),
    Case("jnp.array_equiv", jnp.array_equiv, _comparison_inputs, np.array_equiv),
]
