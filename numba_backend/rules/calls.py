"""Lowering rules of checkpoint and of the primitives that transformations
leave in programs: `name`, `stop_gradient`, `add_any`, `custom_lin`,
`random_clone` and `custom_linear_solve`, and of `stage` and `dce_sink`.
(The other call primitives, jit, custom_jvp_call, custom_vjp_call,
custom_vmap_call and any primitive with `Primitive.call_jaxpr_param` and
no rule of its own, are inlined by `lower.lower_jaxpr`.)"""

from refimpl import ad_checkpoint, custom_derivatives, random
from refimpl.lax import ad_util, elementwise, staging
from refimpl.lax.control_flow import solves
from numba_backend.lower import ELEMENTWISE_RULES, lower_jaxpr, register, register_elementwise, \
    register_for_keys


def inline(ctx, closed, operands, contract=True, destinations=None):
  """The names of the outputs of the ClosedJaxpr `closed` evaluated on the
  values named `operands` (as `run_jaxpr` does; `contract=False`: as
  `eval_jaxpr` does), its statements written in place (its consts passed to
  the program at run time); `destinations` as `lower_jaxpr`'s."""
  consts = [ctx.lowering.array(c, v.aval) for c, v in zip(closed.consts, closed.jaxpr.constvars)]
  return lower_jaxpr(ctx.lowering, closed.jaxpr, [*consts, *operands], contract, destinations)


@register(ad_checkpoint.checkpoint_p)
@register_for_keys(ad_checkpoint.checkpoint_p)
def _checkpoint(ctx, *operands, jaxpr, **params):
  """The reference evaluates a checkpoint's jaxpr with `eval_jaxpr`, which
  contracts no multiply-add (XLA, inlining it, would)."""
  return inline(ctx, jaxpr, operands, contract=False)


@register(ad_checkpoint.name_p, random.random_clone_p, staging.stage_p)
@register_for_keys(ad_checkpoint.name_p, random.random_clone_p, staging.stage_p)
def _identity(ctx, x, **params):
  return x


@register(staging.dce_sink_p)
@register_for_keys(staging.dce_sink_p)
def _dce_sink(ctx, x, *, prevent_mlir_dce):
  """Nothing to do: the operand was computed."""
  return []


@register_elementwise(ad_util.stop_gradient_p)
def _stop_gradient(ctx, x):
  return x


@register_elementwise(ad_util.add_any_p)
def _add_any(ctx, x, y):
  """`add`'s rule."""
  return ELEMENTWISE_RULES[elementwise.add_p](ctx, x, y)


@register(custom_derivatives.custom_lin_p)
def _custom_lin(ctx, *args, **params):
  """Evaluating it raises, as the reference's rule does."""
  custom_derivatives.custom_lin_p.impl(*args, **params)


@register(solves.linear_solve_p)
@register_for_keys(solves.linear_solve_p)
def _linear_solve(ctx, *args, const_lengths, jaxprs):
  """`solve(*solve_consts, *b)`, as the reference runs it."""
  params, b = solves._split_linear_solve_args(args, const_lengths)
  return inline(ctx, jaxprs.solve, [*params.solve, *b])
