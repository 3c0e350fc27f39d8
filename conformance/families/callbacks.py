"""Cases for the primitives that hand values to Python or pass them through:
pure_callback, debug_callback and optimization_barrier."""

import numpy as np

import refimpl
from refimpl import lax
from conformance import strategies as S
from conformance.cases import Case


def _pure_sin(x):
  """sin computed on the host by NumPy, through pure_callback."""
  result = refimpl.ShapeDtypeStruct(np.shape(x), refimpl.numpy.result_type(x))
  return refimpl.pure_callback(lambda a: np.sin(a).astype(a.dtype), result, x)


def _debug_passthrough(x):
  """Hands `x` to a debug callback, which records it; returns `x` doubled."""
  refimpl.debug.callback(lambda v: None, x)
  return x * 2


CASES = [
    Case("pure_callback", _pure_sin, lambda: S.case_inputs([np.float32]), np.sin,
         ("pure_callback",)),
    Case("debug.callback", _debug_passthrough, lambda: S.case_inputs(S.INT_DTYPES + [np.float32]),
         lambda x: x * 2, ("debug_callback", "mul")),
    Case("lax.optimization_barrier", lambda x, y: lax.optimization_barrier((x, y)),
         lambda: S.case_inputs(S.ALL_DTYPES, 2), lambda x, y: (x, y),
         ("optimization_barrier",)),
]
