"""Tracing Python functions into jaxprs, and partial evaluation.

`JaxprTrace` records each primitive application as an equation instead of
running it. Values that are not its own tracers (arrays closed over by the
function, tracers of an enclosing trace) become constants: scalars are
inlined as literals, everything else becomes a constvar of the ClosedJaxpr.

Given a `parent` trace, a `JaxprTrace` *partially evaluates*: its own tracers
are the *unknown* values, anything else is *known*. An application whose
inputs are all known runs now, in the parent trace; only the applications
that touch an unknown value are recorded. This is how `linearize` splits a
JVP into the primal computation (done now) and the linear tangent program
(recorded, with the known values it needs as constants: the residuals). A
primitive that holds a sub-program (a `jit` call) splits that program with
its rule in `partial_eval_rules`, so its known half also runs now.
"""

import weakref

from refimpl import core, dtypes
from refimpl.config import config
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var

partial_eval_rules = {}
"""primitive -> rule(trace, args, params) for primitives whose known and
unknown inputs must be split inside their sub-programs (call primitives)."""


class JaxprTracer(core.Tracer):
  """A value being recorded into a jaxpr: an abstract value and its variable."""

  __slots__ = ("_aval", "var")
  repr_name = "JitTracer"

  def __init__(self, trace, aval):
    self._trace = trace
    self._aval = aval
    self.var = Var(aval)

  @property
  def aval(self):
    return self._aval


class JaxprTrace(core.Trace):
  """Records primitive applications as jaxpr equations.

  With a `parent` trace, applications on known values only run in the
  parent instead (partial evaluation, see the module docstring).
  """

  def __init__(self, parent=None):
    self.parent = parent
    self.invars = []
    self.eqns = []
    self.const_tracers = {}  # id(value) -> tracer, so each constant is captured once
    self.consts = []         # (var, value) in order of capture

  def new_arg(self, aval):
    tracer = JaxprTracer(self, aval)
    self.invars.append(tracer.var)
    return tracer

  def is_own(self, x):
    """Whether `x` is one of this trace's tracers (an unknown value)."""
    return isinstance(x, JaxprTracer) and x._trace is self

  def to_tracer(self, x):
    if self.is_own(x):
      return x
    tracer = self.const_tracers.get(id(x))
    if tracer is None:
      tracer = JaxprTracer(self, core.get_aval(x))
      self.const_tracers[id(x)] = tracer
      self.consts.append((tracer.var, x))
    return tracer

  def process_primitive(self, primitive, args, params):
    if config.jax_enable_compile_time_eval and not any(
        isinstance(x, core.Tracer) for x in args):
      with core.eval_context():  # `ensure_compile_time_eval`: constants fold now
        return primitive.bind(*args, **params)
    if self.parent is not None:
      if not any(self.is_own(x) for x in args):
        with core.set_current_trace(self.parent):
          return primitive.bind(*args, **params)
      if primitive in partial_eval_rules:
        return partial_eval_rules[primitive](self, args, params)
    return self.record(primitive, args, params)

  def record(self, primitive, args, params):
    """Appends the equation `outs = primitive[params] args`; returns the outs."""
    tracers = [self.to_tracer(x) for x in args]
    out_avals = primitive.abstract_eval(*[t.aval for t in tracers], **params)
    if not primitive.multiple_results:
      out_avals = [out_avals]
    outs = [JaxprTracer(self, aval) for aval in out_avals]
    self.eqns.append(JaxprEqn([t.var for t in tracers], [o.var for o in outs],
                              primitive, params))
    return outs if primitive.multiple_results else outs[0]

  def to_closed_jaxpr(self, out_values):
    """The recorded program with `out_values` as its outputs.

    Concrete scalar constants of numeric types are inlined as literals; other
    constants (arrays, keys, and tracers of enclosing traces) become constvars.
    """
    out_vars = [self.to_tracer(x).var for x in out_values]
    literals, constvars, consts = {}, [], []
    for var, value in self.consts:
      if (not isinstance(value, core.Tracer) and var.aval.shape == ()
          and not dtypes.is_extended(var.aval.dtype)):
        literals[var] = Literal(core.to_numpy(value), var.aval)
      else:
        constvars.append(var)
        consts.append(value)
    inline = lambda v: literals.get(v, v)
    eqns = [JaxprEqn(map(inline, e.invars), e.outvars, e.primitive, e.params)
            for e in self.eqns]
    jaxpr = Jaxpr(constvars, self.invars, map(inline, out_vars), eqns)
    return ClosedJaxpr(jaxpr, consts)


def trace_to_jaxpr(fun, in_avals):
  """Traces `fun(*tracers)` (flat lists in and out) to a ClosedJaxpr.

  Returns the ClosedJaxpr; its consts may include tracers of enclosing traces.
  """
  trace = JaxprTrace()
  args = [trace.new_arg(aval) for aval in in_avals]
  with core.set_current_trace(trace):
    outs = fun(*args)
  closed = trace.to_closed_jaxpr(outs)
  if config.jax_check_tracer_leaks:
    trace_ref = weakref.ref(trace)
    del trace, args, outs
    core.check_no_leaks(trace_ref)
  return closed



def split_tracer_consts(closed):
  """Moves constvars bound to tracers to the front of the invars.

  Returns (closed_jaxpr, tracer_consts): the jaxpr now takes the tracers as
  its first inputs, so a call primitive can pass them as ordinary arguments.
  Without tracer consts it is `(closed, [])`, the same ClosedJaxpr.
  """
  if not any(isinstance(c, core.Tracer) for c in closed.consts):
    return closed, []
  jaxpr = closed.jaxpr
  keep_vars, keep_vals, moved_vars, moved_vals = [], [], [], []
  for var, value in zip(jaxpr.constvars, closed.consts):
    if isinstance(value, core.Tracer):
      moved_vars.append(var)
      moved_vals.append(value)
    else:
      keep_vars.append(var)
      keep_vals.append(value)
  new = Jaxpr(keep_vars, moved_vars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)
  return ClosedJaxpr(new, keep_vals), moved_vals


def partial_eval_jaxpr(closed, in_unknowns, instantiate=False):
  """Splits `closed` into a known and an unknown program.

  `in_unknowns[i]` says whether input i is unknown. Returns
  `(known, unknown, out_unknowns, num_res)`: `known` takes the known inputs
  and returns the known outputs followed by `num_res` residuals; `unknown`
  takes the residuals followed by the unknown inputs and returns the unknown
  outputs. An output is unknown when it depends on an unknown input, or when
  `instantiate` (a bool, or one per output) asks for it.
  """
  from refimpl.interpreters.eval import eval_closed_jaxpr
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(closed.out_avals)
  split = {}

  def known_fun(*known_args):
    trace = JaxprTrace(parent=core.current_trace())
    known = iter(known_args)
    args = [trace.new_arg(aval) if unknown else next(known)
            for aval, unknown in zip(closed.in_avals, in_unknowns)]
    with core.set_current_trace(trace):
      outs = eval_closed_jaxpr(closed, *args)
    out_unknowns = [trace.is_own(o) or inst for o, inst in zip(outs, instantiate)]
    unknown = trace.to_closed_jaxpr([o for o, u in zip(outs, out_unknowns) if u])
    unknown, residuals = split_tracer_consts(unknown)
    split.update(unknown=unknown, out_unknowns=out_unknowns, num_res=len(residuals))
    return [o for o, u in zip(outs, out_unknowns) if not u] + residuals

  known_avals = [a for a, u in zip(closed.in_avals, in_unknowns) if not u]
  known = trace_to_jaxpr(known_fun, known_avals)
  return known, split["unknown"], split["out_unknowns"], split["num_res"]
