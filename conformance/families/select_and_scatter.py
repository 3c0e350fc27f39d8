"""Cases for select_and_scatter_add, select_and_scatter and select_and_gather_add
(the primitives behind max-pooling's derivatives), against window loops.

Each window selects its first maximum in row-major order (ge); values are
NaN-free here, since the selection of a NaN depends on the fold (see the
primitives' docstrings).
"""

import itertools

import numpy as np
from hypothesis import strategies as st

from refimpl import lax
from refimpl.lax import elementwise, windows
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def _windows(shape, window_dimensions, window_strides):
  """(output index, [operand indices of the window in row-major order]) pairs."""
  out_shape = [(n - w) // s + 1 for n, w, s in zip(shape, window_dimensions, window_strides)]
  for out in itertools.product(*map(range, out_shape)):
    starts = [o * s for o, s in zip(out, window_strides)]
    yield out, [tuple(st_ + k for st_, k in zip(starts, offset))
                for offset in itertools.product(*map(range, window_dimensions))]


def _first_max(operand, cells):
  return max(cells, key=lambda c: (operand[c], -cells.index(c)))


def _np_scatter_add(source, operand, window_dimensions, window_strides):
  out = np.zeros(operand.shape, np.float64)
  for idx, cells in _windows(operand.shape, window_dimensions, window_strides):
    out[_first_max(operand, cells)] += source[idx]
  return out.astype(operand.dtype)


def _np_gather_add(tangents, operand, window_dimensions, window_strides):
  out = np.zeros(source_shape(operand.shape, window_dimensions, window_strides), tangents.dtype)
  for idx, cells in _windows(operand.shape, window_dimensions, window_strides):
    out[idx] = tangents[_first_max(operand, cells)]
  return out


def source_shape(shape, window_dimensions, window_strides):
  return tuple((n - w) // s + 1 for n, w, s in zip(shape, window_dimensions, window_strides))


@st.composite
def _operand_and_window(draw, with_source):
  """An operand (1-D or 2-D, no NaN, all windows VALID), window params, and a
  source (or tangents) array."""
  ndim = draw(st.integers(1, 2))
  window_dimensions = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
  window_strides = tuple(draw(st.integers(1, 2)) for _ in range(ndim))
  shape = tuple(draw(st.integers(w, 4)) for w in window_dimensions)
  elements = st.integers(-4, 4).map(float)  # small integers: ties are common
  operand = draw(S.arrays(np.float32, shape, elements=elements))
  other_shape = source_shape(shape, window_dimensions, window_strides) if with_source else shape
  other = draw(S.arrays(np.float32, other_shape, elements=elements))
  params = {"window_dimensions": window_dimensions, "window_strides": window_strides}
  return (other, operand), params


def _scatter_add(source, operand, window_dimensions, window_strides):
  return windows.select_and_scatter_add(
      source, operand, elementwise.ge_p, window_dimensions, window_strides,
      [(0, 0)] * operand.ndim)


def _scatter_generic(source, operand, window_dimensions, window_strides):
  return windows.select_and_scatter(
      operand, lax.ge, window_dimensions, window_strides, [(0, 0)] * operand.ndim,
      source, np.float32(0), lax.add)


def _gather_add(tangents, operand, window_dimensions, window_strides):
  ones = (1,) * operand.ndim
  return windows.select_and_gather_add(
      tangents, operand, elementwise.ge_p, window_dimensions, window_strides,
      [(0, 0)] * operand.ndim, ones, ones)


CASES = [
    Case("select_and_scatter_add", _scatter_add, lambda: _operand_and_window(True),
         _np_scatter_add),
    Case("select_and_scatter", _scatter_generic, lambda: _operand_and_window(True),
         _np_scatter_add),
    Case("select_and_gather_add", _gather_add, lambda: _operand_and_window(False),
         _np_gather_add),
]


# --- derivatives: linear in the source (tangents); the operand only selects ----------
# Operands without ties (`S.distinct_arrays`), where the selection is constant.

@st.composite
def _ad_inputs(draw, with_source, window_dilation=False):
  """(source or tangents, operand) and the primitive's params, with ge or le
  (and, for select_and_gather_add, dilations)."""
  shape = draw(S.shapes(min_dims=1, max_dims=2, min_side=1))
  window = draw(S.window_params(shape, max_pad=1, string_padding=False))
  if not window_dilation:
    window["window_dilation"] = (1,) * len(shape)
  if with_source:
    del window["base_dilation"], window["window_dilation"]
  operand = draw(S.distinct_arrays(shape))
  out_shape = windows.reduce_window_shape_tuple(shape, **window)
  other = draw(S.bounded_arrays(np.float64, out_shape if with_source else shape))
  select_prim = draw(st.sampled_from([elementwise.ge_p, elementwise.le_p]))
  return (other, operand), dict(window, select_prim=select_prim)


AD_CASES = [
    ADCase("select_and_scatter_add", windows.select_and_scatter_add,
           lambda: _ad_inputs(True), ("select_and_scatter_add",)),
    ADCase("select_and_gather_add", windows.select_and_gather_add,
           lambda: _ad_inputs(False), ("select_and_gather_add",)),
    # JAX's transpose of select_and_gather_add has no window dilation.
    ADCase("select_and_gather_add (window dilation)", windows.select_and_gather_add,
           lambda: _ad_inputs(False, window_dilation=True), ("select_and_gather_add",),
           modes=("fwd",)),
]
