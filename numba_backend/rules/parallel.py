"""Lowering rules of the collectives (refimpl/lax/parallel.py).

A collective over a named axis never reaches a backend: `vmap` (and `pmap`,
which is `jit(vmap(f))`) computes it in its batching rule, and tracing one
outside its map raises NameError. What can reach a program is psum, pmax or
pmin over positional axes only, which reduce as reduce_sum/max/min do."""

import copy

from refimpl.lax import parallel, reductions
from numba_backend.lower import LoweringError, register

_REDUCTIONS = {parallel.psum_p: reductions.reduce_sum_p, parallel.pmax_p: reductions.reduce_max_p,
               parallel.pmin_p: reductions.reduce_min_p}


@register(*_REDUCTIONS)
def _allreduce(ctx, *operands, axes, axis_index_groups):
  """Each operand reduced over `axes` by its reduction's rule."""
  if any(not isinstance(a, int) for a in axes) or axis_index_groups is not None:
    raise LoweringError(f"{ctx.eqn.primitive.name} over named axes {axes} reached the backend "
                        f"(vmap computes collectives)")
  rule = ctx.lowering.rules[_REDUCTIONS[ctx.eqn.primitive]]
  outs = []
  for x, aval, out_aval in zip(operands, ctx.avals_in, ctx.avals_out):
    one = copy.copy(ctx)
    one.avals_in, one.avals_out = [aval], [out_aval]
    outs.append(rule(one, x, axes=tuple(axes)))
  return outs
