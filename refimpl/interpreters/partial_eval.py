"""Tracing Python functions into jaxprs.

`JaxprTrace` records each primitive application as an equation instead of
running it. Values that are not its own tracers (arrays closed over by the
function, tracers of an enclosing trace) become constants: scalars are
inlined as literals, everything else becomes a constvar of the ClosedJaxpr.
"""

from refimpl import core
from refimpl.config import config
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var


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
  """Records primitive applications as jaxpr equations."""

  def __init__(self):
    self.invars = []
    self.eqns = []
    self.const_tracers = {}  # id(value) -> tracer, so each constant is captured once
    self.consts = []         # (var, value) in order of capture

  def new_arg(self, aval):
    tracer = JaxprTracer(self, aval)
    self.invars.append(tracer.var)
    return tracer

  def to_tracer(self, x):
    if isinstance(x, JaxprTracer) and x._trace is self:
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

    Concrete scalar constants are inlined as literals; other constants
    (arrays, and tracers of enclosing traces) become constvars.
    """
    out_vars = [self.to_tracer(x).var for x in out_values]
    literals, constvars, consts = {}, [], []
    for var, value in self.consts:
      if not isinstance(value, core.Tracer) and var.aval.shape == ():
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
  return trace.to_closed_jaxpr(outs)


def split_tracer_consts(closed):
  """Moves constvars bound to tracers to the front of the invars.

  Returns (closed_jaxpr, tracer_consts): the jaxpr now takes the tracers as
  its first inputs, so a call primitive can pass them as ordinary arguments.
  """
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
