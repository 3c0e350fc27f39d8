"""The reference interpreter: evaluates a jaxpr equation by equation.

Each equation's primitive is bound in the current trace, so the same
interpreter runs a jaxpr eagerly (under the eval trace) and re-traces it
under any transformation.
"""

from refimpl.config import config
from refimpl.jaxpr import Literal


def eval_jaxpr(jaxpr, consts, *args):
  """Runs `jaxpr` on `consts` and `args`; returns the list of outputs.

  With `jax_debug_nans` or `jax_debug_infs` on, a `FloatingPointError` raised
  by an equation is re-raised naming that equation.
  """
  if len(args) != len(jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  steps, literals = _schedule(jaxpr)
  env = dict(literals)  # atom -> value; literals are read like variables
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn, primitive, invars, outvars, params, dead in steps:
    invals = [env[a] for a in invars]
    try:
      outs = primitive.bind(*invals, **params)
    except FloatingPointError as err:
      if not (config.jax_debug_nans or config.jax_debug_infs):
        raise
      raise FloatingPointError(f"{err}\n  in equation: {eqn}") from None
    if primitive.multiple_results:
      env.update(zip(outvars, outs))
    else:
      env[outvars[0]] = outs
    for v in dead:   # read for the last time: its value's memory can go now
      del env[v]
  return [env[v] for v in jaxpr.outvars]


def _schedule(jaxpr):
  """What `eval_jaxpr` needs of `jaxpr`, computed once per jaxpr (jaxprs are
  not modified once built): for each equation (eqn, primitive, invars,
  outvars, params, dead), where dead lists the variables that no later
  equation and no output reads; and the value of each literal."""
  if jaxpr._schedule is None:
    literals = {a: literal_value(a) for eqn in jaxpr.eqns for a in eqn.invars
                if isinstance(a, Literal)}
    literals.update((a, literal_value(a)) for a in jaxpr.outvars if isinstance(a, Literal))
    steps = [(eqn, eqn.primitive, eqn.invars, eqn.outvars, eqn.params, dead)
             for eqn, dead in zip(jaxpr.eqns, _dead_after(jaxpr))]
    jaxpr._schedule = (steps, literals)
  return jaxpr._schedule


def _dead_after(jaxpr):
  """For each equation, the variables that no later equation and no output reads."""
  last = {}
  for i, eqn in enumerate(jaxpr.eqns):
    for v in eqn.outvars:
      last[v] = i
    for v in eqn.invars:
      if not isinstance(v, Literal):
        last[v] = i
  for v in jaxpr.outvars:
    last.pop(v, None)
  dead = [[] for _ in jaxpr.eqns]
  for v, i in last.items():
    dead[i].append(v)
  return dead


def literal_value(literal):
  """The value of a literal as an Array, weakly typed if its type is
  (`2.0:f32[]` from a Python scalar stays weak when the jaxpr is re-evaluated)."""
  from refimpl.array import Array
  return Array(literal.val, weak_type=literal.aval.weak_type)


def eval_closed_jaxpr(closed, *args):
  return eval_jaxpr(closed.jaxpr, closed.consts, *args)
