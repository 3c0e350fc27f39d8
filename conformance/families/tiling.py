"""Cases for the tile primitive (lax.tile) against np.tile."""

import numpy as np
from hypothesis import strategies as st

from refimpl import lax
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def _tile_inputs():
  return S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"reps": st.lists(
          st.integers(0, 3), min_size=len(shape), max_size=len(shape)).map(tuple)}),
      S.ALL_DTYPES, shape=S.shapes(max_side=3))


CASES = [
    Case("lax.tile", lambda x, reps: lax.tile(x, reps), _tile_inputs,
         lambda x, reps: np.tile(x, reps)),
]


@st.composite
def _ad_tile_inputs(draw):
  """A float64 or complex128 operand in [-1, 1] and one repetition count per dimension."""
  dtype = draw(st.sampled_from([np.float64, np.complex128]))
  x = draw(S.bounded_arrays(dtype, S.shapes(max_side=3)))
  reps = draw(st.lists(st.integers(0, 3), min_size=x.ndim, max_size=x.ndim).map(tuple))
  return (x,), {"reps": reps}


# tile is linear: its JVP tiles the tangent, its transpose sums the copies.
AD_CASES = [
    ADCase("tile", lambda x, reps: lax.tile(x, reps), _ad_tile_inputs, ("tile",)),
]
