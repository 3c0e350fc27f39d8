"""Cases for the primitives that hand values to Python or pass them through:
pure_callback, io_callback, debug_callback and optimization_barrier."""

import numpy as np

import refimpl
from refimpl import lax
from refimpl.experimental import io_callback
from conformance import strategies as S
from conformance.autodiff import ADCase
from conformance.cases import Case


def _pure_sin(x):
  """sin computed on the host by NumPy, through pure_callback."""
  result = refimpl.ShapeDtypeStruct(np.shape(x), refimpl.numpy.result_type(x))
  return refimpl.pure_callback(lambda a: np.sin(a).astype(a.dtype), result, x,
                               vmap_method="sequential")


def _io_sin(x):
  """sin computed on the host by NumPy, through io_callback (unordered, so
  that vmap calls it once per member)."""
  result = refimpl.ShapeDtypeStruct(np.shape(x), refimpl.numpy.result_type(x))
  return io_callback(lambda a: np.sin(a).astype(a.dtype), result, x)


def _debug_passthrough(x):
  """Hands `x` to a debug callback, which records it; returns `x` doubled."""
  refimpl.debug.callback(lambda v: None, x)
  return x * 2


CASES = [
    Case("pure_callback", _pure_sin, lambda: S.case_inputs([np.float32]), np.sin),
    Case("io_callback", _io_sin, lambda: S.case_inputs([np.float32]), np.sin),
    Case("debug.callback", _debug_passthrough, lambda: S.case_inputs(S.INT_DTYPES + [np.float32]),
         lambda x: x * 2),
    Case("lax.optimization_barrier", lambda x, y: lax.optimization_barrier((x, y)),
         lambda: S.case_inputs(S.ALL_DTYPES, 2), lambda x, y: (x, y)),
]


# --- derivatives ------------------------------------------------------------------
# A debug callback sees the primal values and has no derivative of its own.
# A pure callback has none either (its JVP raises, as in JAX): it is
# differentiated through `custom_jvp`, whose rule here is another callback.

@refimpl.custom_jvp
def _host_sin(x):
  return _pure_sin(x)


@_host_sin.defjvp
def _host_sin_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  result = refimpl.ShapeDtypeStruct(np.shape(x), refimpl.numpy.result_type(x))
  cos = refimpl.pure_callback(lambda a: np.cos(a).astype(a.dtype), result, x)
  return _host_sin(x), cos * t


def _bounded_inputs():
  return S.bounded_case_inputs([np.float64], low=-3, high=3)


AD_CASES = [
    ADCase("debug.callback", _debug_passthrough, _bounded_inputs, ("debug_callback",),
           order=2),
    ADCase("pure_callback (under custom_jvp)", _host_sin, _bounded_inputs,
           ("pure_callback", "custom_jvp_call")),
]
