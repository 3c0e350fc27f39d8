"""The numba backend's windowed reductions and selections agree with the
reference rules (bit for bit; NaNs equal NaNs, zeros of either sign equal).

The window geometry (dimensions, strides, padding, dilations) is drawn by
hypothesis as well as the operand; programs depend only on the rank and
dtypes, so each test compiles once per dtype.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from refimpl import dtypes, lax
from refimpl.lax import elementwise, windows
from refimpl.lax.rules import max_identity, min_identity
from conformance import strategies as cst
from tests.numba_backend.test_elementwise import check, run_x64

pytest.importorskip("numba")

SETTINGS = settings(max_examples=10, deadline=None)
X64 = [np.dtype(np.float64), np.dtype(np.int64)]
ORDERED = [t for t in cst.ALL_DTYPES if not dtypes.is_complex(t) and not dtypes.is_bool(t)]


@st.composite
def geometry(draw, shape, dilations=True):
  """Window parameters for an operand of `shape` (windows may hang over padding)."""
  rank = len(shape)
  one = st.integers(1, 3)
  params = dict(
      window_dimensions=tuple(draw(one) for _ in range(rank)),
      window_strides=tuple(draw(one) for _ in range(rank)),
      padding=tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(rank)))
  if dilations:
    params["base_dilation"] = tuple(draw(one) for _ in range(rank))
    params["window_dilation"] = tuple(draw(one) for _ in range(rank))
  return params


def window_output_shape(shape, params):
  return windows.reduce_window_shape_tuple(
      shape, params["window_dimensions"], params["window_strides"], params["padding"],
      params.get("base_dilation", (1,) * len(shape)),
      params.get("window_dilation", (1,) * len(shape)))


def valid(shape, params):
  dilated = [0 if n == 0 else 1 + b * (n - 1)
             for n, b in zip(shape, params.get("base_dilation", (1,) * len(shape)))]
  return all(lo + hi + n >= 0 for n, (lo, hi) in zip(dilated, params["padding"]))


@pytest.mark.parametrize("dtype", [*cst.ALL_DTYPES, *X64], ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_reduce_window(dtype, data):
  """reduce_window_sum/max/min and the generic reduce_window (a non-monoid fold)."""
  x = data.draw(cst.arrays(dtype, cst.shapes(min_dims=2, max_dims=2)))
  params = data.draw(geometry(x.shape).filter(lambda p: valid(x.shape, p)))
  fns = {"max": lambda x: lax.reduce_window(x, np.array(max_identity(dtype), dtype), lax.max,
                                            **params),
         "min": lambda x: lax.reduce_window(x, np.array(min_identity(dtype), dtype), lax.min,
                                            **params)}
  if not dtypes.is_bool(dtype):
    fns["sum"] = lambda x: lax.reduce_window(x, np.array(0, dtype), lax.add, **params)
    fns["fold"] = lambda x: lax.reduce_window(x, np.array(1, dtype), lambda a, b: a * b - a,
                                              **params)
  run_x64(dtype, lambda: check(lambda x: [f(x) for f in fns.values()], list(fns), x))


@pytest.mark.parametrize("dtype", [*ORDERED, *X64], ids=lambda d: np.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_select_and_scatter(dtype, data):
  """select_and_scatter_add (ge and le), the generic select_and_scatter, and
  select_and_gather_add (with dilations)."""
  x = data.draw(cst.arrays(dtype, cst.shapes(min_dims=2, max_dims=2)))
  params = data.draw(geometry(x.shape, dilations=False).filter(lambda p: valid(x.shape, p)))
  out_shape = window_output_shape(x.shape, params)
  source = data.draw(cst.arrays(dtype, st.just(out_shape)))
  gather_params = data.draw(geometry(x.shape).filter(lambda p: valid(x.shape, p)))
  tangents = data.draw(cst.arrays(dtype, st.just(x.shape)))
  geometry_args = (params["window_dimensions"], params["window_strides"], params["padding"])

  def program(x, source, tangents):
    return [windows.select_and_scatter_add(source, x, elementwise.ge_p, *geometry_args),
            windows.select_and_scatter_add(source, x, elementwise.le_p, *geometry_args),
            windows.select_and_scatter(x, lax.ge, *geometry_args, source, np.array(1, dtype),
                                       lambda a, b: a * b + a),
            windows.select_and_gather_add(tangents, x, elementwise.ge_p,
                                          *gather_params.values()),
            windows.select_and_gather_add(tangents, x, elementwise.le_p,
                                          *gather_params.values())]
  names = ["scatter_add ge", "scatter_add le", "select_and_scatter", "gather ge", "gather le"]
  run_x64(dtype, lambda: check(program, names, x, source, tangents))
