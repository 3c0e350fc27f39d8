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
  env = {}

  def read(atom):
    return literal_value(atom) if isinstance(atom, Literal) else env[atom]

  if len(args) != len(jaxpr.invars):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    invals = [read(a) for a in eqn.invars]
    try:
      outs = eqn.primitive.bind(*invals, **eqn.params)
    except FloatingPointError as err:
      if not (config.jax_debug_nans or config.jax_debug_infs):
        raise
      raise FloatingPointError(f"{err}\n  in equation: {eqn}") from None
    if not eqn.primitive.multiple_results:
      outs = [outs]
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def literal_value(literal):
  """The value of a literal, weakly typed if its type is (`2.0:f32[]` from
  a Python scalar stays weak when the jaxpr is re-evaluated)."""
  if not literal.aval.weak_type:
    return literal.val
  from refimpl.array import Array
  return Array(literal.val, weak_type=True)


def eval_closed_jaxpr(closed, *args):
  return eval_jaxpr(closed.jaxpr, closed.consts, *args)
