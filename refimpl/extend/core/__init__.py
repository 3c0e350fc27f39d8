"""`refimpl.extend.core`: refimpl's core under JAX's names, as `jax.extend.core`.

The classes of the jaxpr IR (`Jaxpr`, `ClosedJaxpr`, `JaxprEqn`, `Var`,
`DropVar`, `Literal`; refimpl.jaxpr), `Primitive` (refimpl.core), the
functions over jaxprs and traces that JAX exports here, and in
`primitives` every primitive under its JAX name. refimpl has no effect
system (a side-effecting primitive sets `Primitive.has_side_effects`), no
tokens and no debug info in jaxprs: JAX's names for those are not here.
"""

import contextlib
import functools

import numpy as np

from refimpl import core as _core, dtypes as _dtypes
from refimpl.core import Primitive, valid_jaxtype  # noqa: F401
from refimpl.errors import (ConcretizationTypeError, InconclusiveDimensionOperation,  # noqa: F401
                            JaxprTypeError)
from refimpl.extend.core import primitives  # noqa: F401
from refimpl.interpreters import ad as _ad, batching as _batching
from refimpl.interpreters import partial_eval as _pe
from refimpl.interpreters.eval import eval_jaxpr as _eval_jaxpr
from refimpl.jaxpr import (ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var,  # noqa: F401
                           check_jaxpr, jaxprs_in_params, subjaxprs)

array_types = frozenset({np.ndarray, *(np.dtype(d).type for d in _dtypes.SUPPORTED_DTYPES)})
"""The NumPy types of the values refimpl takes as arrays: `np.ndarray` and
the NumPy scalar type of each supported dtype."""


def _eval_closed(closed_jaxpr, *args):
  return _eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


def jaxpr_as_fun(closed_jaxpr, *args):
  """The function that evaluates `closed_jaxpr` (curried, as in JAX:
  `jaxpr_as_fun(closed)(*args)` is the list of its outputs)."""
  return functools.partial(_eval_closed, closed_jaxpr, *args)


def new_jaxpr_eqn(invars, outvars, primitive, params, effects, source_info=None, ctx=None):
  """The equation `outvars = primitive[params] invars`. refimpl's equations
  carry no effects, source info or context: those arguments are not kept."""
  return JaxprEqn(invars, outvars, primitive, params)


def gensym():
  """A function making a new variable of each aval it is given."""
  return Var


def concrete_or_error(force, val, context=""):
  """`force(v)` (`v` itself when `force` is None) of the concrete value `v`
  of `val`: `val` if it is not a tracer, the value its trace knows if it is,
  else ConcretizationTypeError (`context` says where it was needed)."""
  force = force or (lambda v: v)
  if isinstance(val, _core.Tracer):
    value = val.to_concrete_value()
    if value is None:
      raise ConcretizationTypeError(val, context)
    return force(value)
  return force(val)


def mapped_aval(size, axis, aval):
  """The aval of a member of a batch of `aval`s mapped along `axis` (None:
  not mapped, `aval` itself); the axis must have length `size`."""
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped axis {axis} of {aval} does not have size {size}")
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
  """The aval of a batch of `size` values of type `aval` along the new axis
  `axis` (None: `aval` itself). There are no mesh axes here."""
  return aval if axis is None else _batching.batched_aval(aval, size, axis)


def primal_dtype_to_tangent_dtype(primal_dtype):
  """The dtype of the tangents of values of `primal_dtype`: itself for
  inexact dtypes, float0 otherwise."""
  return _ad.tangent_aval(_core.ShapedArray((), primal_dtype)).dtype


# --- traces ---------------------------------------------------------------------------------

def find_top_trace(_):
  """The current trace (whatever the values given, as in JAX)."""
  return _core.current_trace()


def set_current_trace(trace, check_leaks=False):
  """A context manager making `trace` the current trace within its block.
  (`check_leaks` asks JAX to check for leaked tracers on exit; refimpl does
  not check.)"""
  return _core.set_current_trace(trace)


class _NotATrace(_core.Trace):
  """The current trace while one is taken: binding raises."""

  def process_primitive(self, primitive, args, params):
    raise RuntimeError(f"{primitive} was bound while the current trace was taken "
                       "(take_current_trace): no trace is current.")


@contextlib.contextmanager
def take_current_trace():
  """Yields the current trace, with no trace current within the block."""
  trace = _core.current_trace()
  with _core.set_current_trace(_NotATrace()):
    yield trace


class _OpaqueTraceState:
  """The trace state of a point in the program: equal for points under the
  same traces (and named axes)."""

  def __init__(self):
    self._trace, self._axis_env = _core.current_trace(), _core.axis_env()

  def __eq__(self, other):
    return (isinstance(other, _OpaqueTraceState) and self._trace is other._trace
            and self._axis_env == other._axis_env)

  def __hash__(self):
    return hash((id(self._trace), self._axis_env))


def get_opaque_trace_state(convention=None):
  """The current trace state, an opaque value comparable with `==`."""
  return _OpaqueTraceState()


def _enclosing_traces():
  trace = _core.current_trace()
  while trace is not None:
    yield trace
    trace = getattr(trace, "parent", None)


def unsafe_am_i_under_a_jit_DO_NOT_USE():  # noqa: N802 (JAX's name)
  """Whether the code runs while a function is staged into a jaxpr (jit,
  make_jaxpr, a control-flow body)."""
  return any(isinstance(t, _pe.JaxprTrace) and t.parent is None for t in _enclosing_traces())


def unsafe_am_i_under_a_vmap_DO_NOT_USE():  # noqa: N802 (JAX's name)
  """Whether the code runs under `vmap`."""
  return any(isinstance(t, _batching.BatchTrace) for t in _enclosing_traces())


def unsafe_get_axis_names_DO_NOT_USE():  # noqa: N802 (JAX's name)
  """The names of the named axes in scope, outermost first."""
  return [name for name, _ in _core.axis_env()]


def nonempty_axis_env_DO_NOT_USE():  # noqa: N802 (JAX's name)
  """Whether a named axis is in scope."""
  return bool(_core.axis_env())
