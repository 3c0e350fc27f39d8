"""Cases for the tile primitive (lax.tile) against np.tile."""

import numpy as np
from hypothesis import strategies as st

from refimpl import lax
from conformance import strategies as S
from conformance.cases import Case


def _tile_inputs():
  return S.array_and_kwargs(
      lambda shape: st.fixed_dictionaries({"reps": st.lists(
          st.integers(0, 3), min_size=len(shape), max_size=len(shape)).map(tuple)}),
      S.ALL_DTYPES, shape=S.shapes(max_side=3))


CASES = [
    Case("lax.tile", lambda x, reps: lax.tile(x, reps), _tile_inputs,
         lambda x, reps: np.tile(x, reps), ("tile",)),
]
