"""Automatic differentiation: forward mode by JVP tracing, reverse mode by
linearizing and transposing, structured as JAX does.

* **JVP.** `JVPTrace` carries a (primal, tangent) pair per value. Binding a
  primitive runs its rule from `primitive_jvps` in the parent trace: the rule
  computes the primal output and the tangent output. Tangents may be symbolic
  zeros (`Zero`), so inputs that do not influence an output cost nothing; a
  primitive whose tangents are all zero just runs on its primals.
* **Linearize.** Running the JVP inside a partially evaluating `JaxprTrace`
  whose unknowns are the input tangents computes the primal outputs now and
  records the tangent computation: a *linear* jaxpr whose constants (the
  residuals) are the primal values it needs.
* **Transpose.** `backward_pass` runs a linear jaxpr backwards: each
  equation's rule from `primitive_transposes` maps the cotangent of its
  output to cotangents of its linear inputs (`UndefinedPrimal`s), summing
  where a value is used twice. `vjp` is linearize followed by transpose.

This module holds the machinery only; each primitive's rules sit next to
the primitive, registered with `defjvp`, `deflinear` and friends.
"""

import numpy as np

from refimpl import core, dtypes
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr, eval_jaxpr, literal_value
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, Literal, dce_jaxpr

primitive_jvps = {}
"""primitive -> rule(primals, tangents, **params) -> (primal_out, tangent_out).
Tangents may be `Zero`; for multiple-result primitives both are lists."""

non_differentiable = set()
"""The primitives registered with `defjvp_zero`: their tangents are zero."""

unsupported_jvps = {}
"""primitive -> the error its differentiation raises, for the primitives JAX
cannot differentiate either (registered with `defjvp_unsupported`)."""

unsupported_transposes = {}
"""primitive -> the error its transposition raises, for the primitives JAX
cannot run in reverse either (registered with `deftranspose_unsupported`)."""

primitive_transposes = {}
"""primitive -> rule(ct, *args, **params) -> one cotangent (or None) per arg.
Linear args arrive as `UndefinedPrimal`; `ct` is never a `Zero` for a
single-result primitive (the equation is skipped instead)."""


# --- tangent values ----------------------------------------------------------

class Zero:
  """A symbolic zero tangent (or cotangent) of abstract value `aval`; custom
  rules defined with `symbolic_zeros=True` see it as
  `custom_derivatives.SymbolicZero` (with `aval`, `shape` and `dtype`)."""

  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  @property
  def shape(self):
    return self.aval.shape

  @property
  def dtype(self):
    return self.aval.dtype

  def __repr__(self):
    return f"Zero({self.aval})"


class UndefinedPrimal:
  """A linear input of an equation being transposed: only its aval is known."""

  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x):
  return isinstance(x, UndefinedPrimal)


def primal_aval(x):
  """The aval of a transpose rule's argument: a value or an `UndefinedPrimal`."""
  return x.aval if is_undefined_primal(x) else core.get_aval(x)


def tangent_aval(aval):
  """The tangent type of a primal type: the same, except that integer and
  boolean values have `float0` tangents (there is no way to perturb them)."""
  if dtypes.is_inexact(aval.dtype):
    return aval
  return core.ShapedArray(aval.shape, dtypes.float0)


def zeros_like_aval(aval):
  """An array of zeros of type `aval`, weak type included as in JAX (a float0
  array for float0)."""
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  from refimpl.lax.shapes import broadcast, full
  if aval.weak_type:
    from refimpl.lax.elementwise import convert_element_type
    return broadcast(convert_element_type(0, aval.dtype, weak_type=True), aval.shape)
  return full(aval.shape, np.zeros((), aval.dtype), aval.dtype)


def instantiate_zeros(t):
  """`t`, with a symbolic `Zero` made into an array of zeros."""
  return zeros_like_aval(t.aval) if isinstance(t, Zero) else t


def add_tangents(x, y):
  """x + y for tangents, keeping symbolic zeros symbolic (`add_any`)."""
  if isinstance(x, Zero):
    return y
  if isinstance(y, Zero):
    return x
  if core.get_aval(x).dtype == dtypes.float0:
    return x
  from refimpl.lax.ad_util import add_any
  return add_any(x, y)


# --- registering rules -------------------------------------------------------

def defjvp(primitive, *jvp_rules):
  """Defines the JVP of `primitive` as a sum of per-argument linear maps.

  `jvp_rules[i](t_i, *primals, **params)` is the output tangent due to the
  tangent `t_i` of argument i (None for an argument that is not
  differentiable). Zero tangents skip their rule.
  """
  def rule(primals, tangents, **params):
    primal_out = primitive.bind(*primals, **params)
    tangent_out = Zero(tangent_aval(core.get_aval(primal_out)))
    for jvp_rule, t in zip(jvp_rules, tangents):
      if jvp_rule is not None and not isinstance(t, Zero):
        tangent_out = add_tangents(tangent_out, jvp_rule(t, *primals, **params))
    return primal_out, tangent_out
  primitive_jvps[primitive] = rule


def defjvp2(primitive, *jvp_rules):
  """As `defjvp`, but each rule also receives the primal output:
  `jvp_rules[i](t_i, primal_out, *primals, **params)`."""
  def rule(primals, tangents, **params):
    primal_out = primitive.bind(*primals, **params)
    tangent_out = Zero(tangent_aval(core.get_aval(primal_out)))
    for jvp_rule, t in zip(jvp_rules, tangents):
      if jvp_rule is not None and not isinstance(t, Zero):
        tangent_out = add_tangents(tangent_out,
                                   jvp_rule(t, primal_out, *primals, **params))
    return primal_out, tangent_out
  primitive_jvps[primitive] = rule


def defjvp_zero(primitive):
  """`primitive` is not differentiable: its output tangents are zero (as for
  comparisons, rounding, integer operations)."""
  def rule(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    if primitive.multiple_results:
      return out, [Zero(tangent_aval(core.get_aval(o))) for o in out]
    return out, Zero(tangent_aval(core.get_aval(out)))
  primitive_jvps[primitive] = rule
  non_differentiable.add(primitive)


def defjvp_unsupported(primitive, error_class, message):
  """Differentiating `primitive` raises `error_class(message)`, as in JAX
  (callbacks, the generic select_and_scatter, custom_vjp tangents)."""
  def rule(primals, tangents, **params):
    raise error_class(message)
  primitive_jvps[primitive] = rule
  unsupported_jvps[primitive] = f"{error_class.__name__}: {message}"


def deflinear(primitive, transpose_rule):
  """`primitive` is linear in all its arguments: its JVP applies it to the
  tangents, and `transpose_rule(ct, **params)` gives the arguments'
  cotangents."""
  def jvp(primals, tangents, **params):
    out = primitive.bind(*primals, **params)
    if all(isinstance(t, Zero) for t in tangents):
      zeros = [Zero(tangent_aval(core.get_aval(o)))
               for o in (out if primitive.multiple_results else [out])]
      return out, (zeros if primitive.multiple_results else zeros[0])
    return out, primitive.bind(*map(instantiate_zeros, tangents), **params)
  primitive_jvps[primitive] = jvp
  primitive_transposes[primitive] = (
      lambda ct, *args, **params: transpose_rule(ct, **params))


def deflinear2(primitive, transpose_rule):
  """As `deflinear`, but `transpose_rule(ct, *args, **params)` also sees the
  arguments (`UndefinedPrimal`s carrying their avals)."""
  deflinear(primitive, transpose_rule)
  primitive_transposes[primitive] = transpose_rule


def defbilinear(primitive, lhs_transpose, rhs_transpose):
  """`primitive(x, y, **params)` is linear in each argument separately (a
  product): its JVP is `p(t_x, y) + p(x, t_y)`, and the transpose with
  respect to the undefined argument is `lhs_transpose(ct, x, y, **params)`
  or `rhs_transpose(ct, x, y, **params)`."""
  defjvp(primitive,
         lambda t, x, y, **params: primitive.bind(t, y, **params),
         lambda t, x, y, **params: primitive.bind(x, t, **params))

  def transpose(ct, x, y, **params):
    if is_undefined_primal(x):
      return [lhs_transpose(ct, x, y, **params), None]
    return [None, rhs_transpose(ct, x, y, **params)]
  primitive_transposes[primitive] = transpose


def deftranspose_unsupported(primitive, error_class, message):
  """Transposing `primitive` (reverse-mode differentiation through it) raises
  `error_class(message)`, as in JAX (a `while` loop saves no residuals)."""
  def rule(ct, *args, **params):
    raise error_class(message)
  primitive_transposes[primitive] = rule
  unsupported_transposes[primitive] = f"{error_class.__name__}: {message}"


def deftranspose(primitive, transpose_rule):
  """Registers `transpose_rule(ct, *args, **params)` for a primitive linear
  in some of its arguments (those arriving as `UndefinedPrimal`)."""
  primitive_transposes[primitive] = transpose_rule


# --- forward mode ------------------------------------------------------------

class JVPTracer(core.Tracer):
  """A value under `jvp`: its primal (a value of the parent trace) and its
  tangent (a value of the parent trace, or a `Zero`)."""

  __slots__ = ("primal", "tangent")
  repr_name = "JVPTracer"

  def __init__(self, trace, primal, tangent):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent

  @property
  def aval(self):
    return core.get_aval(self.primal)

  def to_concrete_value(self):
    if isinstance(self.primal, core.Tracer):
      return self.primal.to_concrete_value()
    return core.to_numpy(self.primal)


class JVPTrace(core.Trace):
  """Propagates tangents alongside primals. Values that are not this
  trace's tracers (constants, tracers of enclosing traces) have zero
  tangents here."""

  def __init__(self, parent):
    self.parent = parent

  def to_primal_tangent(self, x):
    if isinstance(x, JVPTracer) and x._trace is self:
      return x.primal, x.tangent
    return x, Zero(tangent_aval(core.get_aval(x)))

  def process_primitive(self, primitive, args, params):
    primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
    with core.set_current_trace(self.parent):
      if all(isinstance(t, Zero) for t in tangents):
        return primitive.bind(*primals, **params)
      rule = primitive_jvps.get(primitive)
      if rule is None:
        raise NotImplementedError(
            f"Differentiation rule for '{primitive.name}' not implemented")
      primal_out, tangent_out = rule(primals, tangents, **params)
    if primitive.multiple_results:
      return [self.new_tracer(p, t) for p, t in zip(primal_out, tangent_out)]
    return self.new_tracer(primal_out, tangent_out)

  def new_tracer(self, primal, tangent):
    if isinstance(tangent, Zero):
      return primal
    return JVPTracer(self, primal, tangent)


def jvp_flat(fun, primals, tangents):
  """Runs `fun` (flat lists in and out) on primals with tangents (which may
  be `Zero`); returns (primal outputs, tangent outputs, `Zero` where none)."""
  trace = JVPTrace(core.current_trace())
  args = [trace.new_tracer(p, t) for p, t in zip(primals, tangents)]
  with core.set_current_trace(trace):
    outs = fun(*args)
  pairs = [trace.to_primal_tangent(o) for o in outs]
  return [p for p, _ in pairs], [t for _, t in pairs]


_jvp_jaxpr_cache = {}


def jvp_jaxpr(closed, nonzeros, instantiate):
  """The JVP of a closed jaxpr, as a closed jaxpr.

  The result takes the primals followed by the tangents of the inputs where
  `nonzeros` is True, and returns the primal outputs followed by the
  tangents of the outputs that are nonzero (or `instantiate`d). Returns
  (jaxpr, out_nonzeros). Used by the rules of primitives holding jaxprs.
  """
  if isinstance(instantiate, bool):
    instantiate = (instantiate,) * len(closed.out_avals)
  key = (closed, tuple(nonzeros), tuple(instantiate))
  if key in _jvp_jaxpr_cache:
    return _jvp_jaxpr_cache[key]
  out_nonzeros_box = []
  n = len(closed.in_avals)

  def fun(*args):
    primals, nz_tangents = args[:n], iter(args[n:])
    tangents = [next(nz_tangents) if nz else Zero(tangent_aval(a))
                for a, nz in zip(closed.in_avals, nonzeros)]
    out_p, out_t = jvp_flat(lambda *xs: eval_closed_jaxpr(closed, *xs), primals, tangents)
    out_t = [instantiate_zeros(t) if inst else t for t, inst in zip(out_t, instantiate)]
    out_nonzeros_box.append([not isinstance(t, Zero) for t in out_t])
    return out_p + [t for t in out_t if not isinstance(t, Zero)]

  in_avals = list(closed.in_avals) + [tangent_aval(a) for a, nz in
                                      zip(closed.in_avals, nonzeros) if nz]
  result = pe.trace_to_jaxpr(fun, in_avals), out_nonzeros_box[0]
  _jvp_jaxpr_cache[key] = result
  return result


# --- linearize and transpose -------------------------------------------------

def linearize_flat(fun, primals):
  """Linearizes `fun` (flat lists in and out) at `primals`.

  Returns (primal outputs, linear jaxpr): the ClosedJaxpr maps the input
  tangents to the output tangents; its constants are the residuals. Inputs
  without tangent type (integers) still have a (float0) input, unused.
  """
  trace = pe.JaxprTrace(parent=core.current_trace())
  tangents = []
  for p in primals:
    aval = tangent_aval(core.get_aval(p))
    arg = trace.new_arg(aval)
    tangents.append(Zero(aval) if aval.dtype == dtypes.float0 else arg)
  with core.set_current_trace(trace):
    out_primals, out_tangents = jvp_flat(fun, primals, tangents)
    out_tangents = [instantiate_zeros(t) for t in out_tangents]
  if any(trace.is_own(p) for p in out_primals):
    raise TypeError("Linearization failed to produce known values for all output "
                    "primals: a primal output depends on a tangent, so a primitive's "
                    "JVP rule computes its primal output from tangents.")
  linear = trace.to_closed_jaxpr(out_tangents)
  return out_primals, ClosedJaxpr(dce_jaxpr(linear.jaxpr), linear.consts)


def backward_pass(jaxpr, consts, cts_out):
  """Transposes the linear `jaxpr` (linear in its invars; its constvars are
  bound to `consts`): maps output cotangents to input cotangents.

  Equations that do not depend on the linear inputs are evaluated forwards
  first; the others are transposed in reverse order. Returns a cotangent
  (possibly `Zero`) per invar.
  """
  env = dict(zip(jaxpr.constvars, consts))
  linear = set(jaxpr.invars)
  linear_eqns = []
  for eqn in jaxpr.eqns:
    if any(not isinstance(v, Literal) and v in linear for v in eqn.invars):
      linear.update(eqn.outvars)
      linear_eqns.append(eqn)
    else:
      outs = eqn.primitive.bind(*[_read(env, v) for v in eqn.invars], **eqn.params)
      env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))

  ct_env = {}

  def write_ct(var, ct):
    if isinstance(var, Literal) or var not in linear or ct is None or isinstance(ct, Zero):
      return
    ct_env[var] = add_tangents(ct_env[var], ct) if var in ct_env else ct

  for var, ct in zip(jaxpr.outvars, cts_out):
    write_ct(var, ct)
  for eqn in reversed(linear_eqns):
    cts = [ct_env.pop(v, Zero(v.aval)) for v in eqn.outvars]
    if all(isinstance(ct, Zero) for ct in cts):
      continue
    args = [UndefinedPrimal(v.aval) if not isinstance(v, Literal) and v in linear
            else _read(env, v) for v in eqn.invars]
    rule = primitive_transposes.get(eqn.primitive)
    if rule is None:
      raise NotImplementedError(
          f"Transpose rule (for reverse-mode differentiation) for "
          f"'{eqn.primitive.name}' not implemented")
    ct = cts if eqn.primitive.multiple_results else cts[0]
    cts_in = rule(ct, *args, **eqn.params)
    for var, ct_in in zip(eqn.invars, cts_in):
      write_ct(var, ct_in)
  return [ct_env.get(v, Zero(v.aval)) for v in jaxpr.invars]


def _read(env, atom):
  return literal_value(atom) if isinstance(atom, Literal) else env[atom]


def transpose_jaxpr(closed, linear_mask):
  """The transpose of `closed` with respect to its inputs where `linear_mask`
  is True, as a closed jaxpr: it takes the non-linear inputs followed by the
  output cotangents and returns the cotangents of the linear inputs (zeros
  made explicit)."""
  in_avals = closed.in_avals
  lin_avals = [a for a, lin in zip(in_avals, linear_mask) if lin]
  n_nonlin = len(in_avals) - len(lin_avals)

  def fun(*args):
    nonlin, cts = iter(args[:n_nonlin]), args[n_nonlin:]
    # A sub-jaxpr whose linear inputs are made invars of the outer jaxpr.
    outer_invars = [v for v, lin in zip(closed.jaxpr.invars, linear_mask) if lin]
    consts = list(closed.consts)
    constvars = list(closed.jaxpr.constvars)
    for v, lin in zip(closed.jaxpr.invars, linear_mask):
      if not lin:
        constvars.append(v)
        consts.append(next(nonlin))
    jaxpr = Jaxpr(constvars, outer_invars, closed.jaxpr.outvars, closed.jaxpr.eqns)
    cts_in = backward_pass(jaxpr, consts, cts)
    return [instantiate_zeros(ct) for ct in cts_in]

  nonlin_avals = [a for a, lin in zip(in_avals, linear_mask) if not lin]
  return pe.trace_to_jaxpr(fun, nonlin_avals + list(closed.out_avals))


# --- rules for primitives that call a jaxpr ---------------------------------

def call_jvp_rule(primitive, jvp_params=lambda params: params):
  """The JVP rule of a primitive calling its `jaxpr` param (jit, checkpoint):
  a call of the JVP of the jaxpr, with params updated by `jvp_params`."""
  def rule(primals, tangents, *, jaxpr, **params):
    nonzeros = [not isinstance(t, Zero) for t in tangents]
    jvp_closed, out_nonzeros = jvp_jaxpr(jaxpr, nonzeros, instantiate=False)
    outs = primitive.bind(*primals, *[t for t in tangents if not isinstance(t, Zero)],
                          jaxpr=jvp_closed, **jvp_params(params))
    n = len(jaxpr.out_avals)
    nz_tangents = iter(outs[n:])
    return outs[:n], [next(nz_tangents) if nz else Zero(tangent_aval(a))
                      for a, nz in zip(jaxpr.out_avals, out_nonzeros)]
  return rule


def call_transpose_rule(primitive):
  """The transpose rule of a primitive calling its `jaxpr` param: a call of
  the transposed jaxpr."""
  def rule(cts, *args, jaxpr, **params):
    linear = [is_undefined_primal(x) for x in args]
    transposed = transpose_jaxpr(jaxpr, linear)
    cts = [instantiate_zeros(ct) for ct in cts]
    outs = iter(primitive.bind(*[x for x in args if not is_undefined_primal(x)], *cts,
                               jaxpr=transposed, **params))
    return [next(outs) if lin else None for lin in linear]
  return rule


def eval_linear(linear, tangents):
  """Applies the linear jaxpr from `linearize_flat` to input tangents."""
  return eval_jaxpr(linear.jaxpr, linear.consts, *tangents)
