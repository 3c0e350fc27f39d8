"""`lax.while_loop` and the `while` primitive.

`while_loop(cond_fun, body_fun, init_val)` means::

    val = init_val
    while cond_fun(val):
      val = body_fun(val)
    return val

with a carry `val` of fixed type (the same pytree of shapes and dtypes
before and after every iteration). Both functions are traced once to
jaxprs; the values they close over become the loop's leading operands
(the cond's constants, then the body's), as in JAX.

Transformations:

* JVP: the loop carries primals and tangents together; the carries that get
  nonzero tangents are found by a fixpoint over the body; the cond ignores
  the tangents.
* Partial evaluation: the carries that stay known through the body (a
  fixpoint) are computed now by a loop of the known part of the body; the
  unknown ones by the whole loop, recorded. A while loop cannot save
  per-iteration residuals, so it has no transpose: reverse-mode
  differentiation raises JAX's `ValueError`.
* Batching: with an unbatched predicate, a loop of the batched body. With a
  batched predicate the loop runs while any member's predicate holds, and a
  member whose predicate is false keeps its carry: the primitive itself
  accepts a predicate of shape `p` (a prefix of every carry's shape) and
  applies that rule, as JAX's `while` does.
"""

import operator

import numpy as np

from refimpl import core, tree_util
from refimpl.config import config
from refimpl.core import Primitive, ShapedArray
from refimpl.errors import ConcretizationTypeError
from refimpl.interpreters import ad, batching
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr, run_jaxpr
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, Var, dce_jaxpr
from refimpl.lax.control_flow.common import (check_carry_type, initial_style_jaxpr,
                                             promote_weak_typed_inputs, typematch)

__all__ = ["while_loop", "while_p"]


# --- the primitive -----------------------------------------------------------

def _split(values, cond_nconsts, body_nconsts):
  """(cond consts, body consts, carries) of the operands of a `while`."""
  values = list(values)
  n = cond_nconsts + body_nconsts
  return values[:cond_nconsts], values[cond_nconsts:n], values[n:]


def _mask_rows(pred, new, old):
  """`new` where the per-member predicate `pred` holds, else `old` (`pred`'s
  shape is a prefix of theirs)."""
  pred = pred.reshape(pred.shape + (1,) * (np.ndim(new) - pred.ndim))
  return np.where(pred, new, old)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """`while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts] *cconsts *bconsts *init`:
  runs `carry = body_jaxpr(*bconsts, *carry)` while `cond_jaxpr(*cconsts, *carry)`
  holds, starting from `init`; returns the final carry.

  Shape rule: the outputs have the body's output types, which equal the
  carries' types. The cond returns a boolean: a scalar, or (for a loop
  batched by `vmap`) an array of shape `p` that is a prefix of every carry's
  shape, one predicate per member. Then the loop runs while *any* member's
  predicate holds, and each iteration updates only the members whose
  predicate holds: `carry = select_n(pred, carry, body(carry))`, the
  predicate broadcast over the trailing axes. A loop whose predicate is
  false at the start returns `init` unchanged (zero iterations); one whose
  predicate never becomes false does not return.

  Transformations: JVP and batching as described in the module; no
  reverse mode (the transpose rule raises JAX's `ValueError`: a loop of
  unknown trip count cannot save per-iteration residuals).
  """
  cconsts, bconsts, carry = _split(args, cond_nconsts, body_nconsts)

  def pred_of(carry):
    return run_jaxpr(cond_jaxpr, *cconsts, *carry)[0]

  with core.eval_context():
    pred = pred_of(carry)
    while pred.any():
      new = run_jaxpr(body_jaxpr, *bconsts, *carry)
      carry = new if pred.ndim == 0 else [_mask_rows(pred, n, c) for n, c in zip(new, carry)]
      pred = pred_of(carry)
  return [core.to_numpy(c) for c in carry]


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  _, _, carry_avals = _split(avals, cond_nconsts, body_nconsts)
  pred, = cond_jaxpr.out_avals
  if pred.dtype != np.bool_ or any(
      a.shape[:pred.ndim] != pred.shape for a in carry_avals):
    raise TypeError(f"while: the cond must return a boolean whose shape is a prefix "
                    f"of every carry's, got {pred} for carries "
                    f"{[str(a) for a in carry_avals]}")
  if not all(map(typematch, body_jaxpr.out_avals, carry_avals)):
    raise TypeError(f"while: the body's output types "
                    f"{[str(a) for a in body_jaxpr.out_avals]} differ from the carry "
                    f"types {[str(a) for a in carry_avals]}")
  return list(body_jaxpr.out_avals)


while_p = Primitive("while")
while_p.multiple_results = True
while_p.def_impl(_while_impl)
while_p.def_abstract_eval(_while_abstract_eval)


# --- JVP ---------------------------------------------------------------------

def _move_invars(closed, order):
  """`closed` with its inputs reordered: input i of the result is input
  `order[i]` of `closed`."""
  j = closed.jaxpr
  return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in order], j.outvars, j.eqns),
                     closed.consts)


def _add_unused_invars(closed, avals):
  """`closed` taking extra trailing inputs of types `avals`, unused."""
  j = closed.jaxpr
  return ClosedJaxpr(Jaxpr(j.constvars, j.invars + [Var(a) for a in avals], j.outvars,
                           j.eqns), closed.consts)


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  """A loop carrying primals and the nonzero tangents together.

  A carry's tangent is nonzero if its initial tangent is, or if the body
  makes it so from a nonzero tangent (of a body constant or another carry):
  a fixpoint. The cond sees the primals only.
  """
  nonzeros = [not isinstance(t, ad.Zero) for t in tangents]
  _, bconst_nz, carry_nz = _split(nonzeros, cond_nconsts, body_nconsts)
  for _ in range(len(carry_nz) + 1):
    body_jvp, out_nz = ad.jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)
    if out_nz == carry_nz:
      break
    carry_nz = list(map(operator.or_, carry_nz, out_nz))

  cconsts, bconsts, init = _split(primals, cond_nconsts, body_nconsts)
  _, bconst_dot, init_dot = _split(tangents, cond_nconsts, body_nconsts)
  bconst_dot = [t for t in bconst_dot if not isinstance(t, ad.Zero)]
  init_dot = [ad.instantiate_zeros(t) for t, nz in zip(init_dot, carry_nz) if nz]

  # body_jvp takes (bconsts, carry, bconst_dot, carry_dot); the loop passes
  # (bconsts, bconst_dot, carry, carry_dot).
  nb, nc, nbd = len(bconsts), len(init), len(bconst_dot)
  order = [*range(nb), *range(nb + nc, nb + nc + nbd), *range(nb, nb + nc),
           *range(nb + nc + nbd, nb + nc + nbd + len(init_dot))]
  body = _move_invars(body_jvp, order)
  cond = _add_unused_invars(cond_jaxpr, [core.get_aval(t) for t in init_dot])
  outs = while_p.bind(*cconsts, *bconsts, *bconst_dot, *init, *init_dot,
                      cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=cond_nconsts,
                      body_nconsts=nb + nbd)
  out_primals, out_dots = outs[:nc], iter(outs[nc:])
  out_tangents = [next(out_dots) if nz else ad.Zero(ad.tangent_aval(core.get_aval(p)))
                  for p, nz in zip(out_primals, carry_nz)]
  return out_primals, out_tangents


ad.primitive_jvps[while_p] = _while_jvp


# --- partial evaluation and (no) transpose ---------------------------------------

def _known_part(closed, in_unknowns, out_unknowns):
  """The known half of `closed` given which inputs and outputs are unknown:
  takes the known inputs and returns the known outputs (no residuals)."""
  known, _, _, _ = pe.partial_eval_jaxpr(closed, in_unknowns, instantiate=out_unknowns)
  j = known.jaxpr
  num_outs = out_unknowns.count(False)
  return ClosedJaxpr(dce_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars[:num_outs], j.eqns)),
                     known.consts)


def _while_partial_eval(trace, args, params):
  """Computes the carries that stay known now, with a loop of the known part
  of the body; records the whole loop for the unknown ones.

  Which carries are unknown is a fixpoint: a carry is unknown if it starts
  unknown or the body computes it from an unknown value. If the predicate
  itself depends on an unknown value, the whole loop is recorded. No
  residuals are saved (a loop cannot store one per iteration): the recorded
  loop recomputes the known carries, so the linear program `linearize`
  records is correct but cannot be transposed.
  """
  cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
  cond_nconsts, body_nconsts = params["cond_nconsts"], params["body_nconsts"]
  unknowns = [trace.is_own(x) for x in args]
  cconst_uk, bconst_uk, carry_uk = _split(unknowns, cond_nconsts, body_nconsts)
  for _ in range(len(carry_uk) + 1):
    _, _, out_uk, _ = pe.partial_eval_jaxpr(body_jaxpr, bconst_uk + carry_uk,
                                            instantiate=carry_uk)
    if out_uk == carry_uk:
      break
    carry_uk = list(map(operator.or_, carry_uk, out_uk))
  _, _, (pred_uk,), _ = pe.partial_eval_jaxpr(cond_jaxpr, cconst_uk + carry_uk)
  if pred_uk or all(carry_uk):
    return trace.record(while_p, args, params)

  cond_known = _known_part(cond_jaxpr, cconst_uk + carry_uk, [False])
  body_known = _known_part(body_jaxpr, bconst_uk + carry_uk, carry_uk)
  known_args = [x for x, uk in zip(args, cconst_uk + bconst_uk + carry_uk) if not uk]
  with core.set_current_trace(trace.parent):
    known_outs = iter(while_p.bind(
        *known_args, cond_jaxpr=cond_known, body_jaxpr=body_known,
        cond_nconsts=cconst_uk.count(False), body_nconsts=bconst_uk.count(False)))
  if not any(carry_uk):
    return list(known_outs)
  all_outs = trace.record(while_p, args, params)
  return [out if uk else next(known_outs) for out, uk in zip(all_outs, carry_uk)]


pe.partial_eval_rules[while_p] = _while_partial_eval


ad.deftranspose_unsupported(
    while_p, ValueError,
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
    "start/stop.")


# --- batching ----------------------------------------------------------------

def _batch_jaxpr_at(closed, axis_data, in_dims, out_dims):
  """`closed` batched with the batch axis of input i at `in_dims[i]` and of
  output j at `out_dims[j]` (`not_mapped`: unbatched; an unbatched output
  the batched program computes from batched inputs is an error)."""
  in_batched = [d is not batching.not_mapped for d in in_dims]
  out_batched = [d is not batching.not_mapped for d in out_dims]
  batched, _ = batching.batch_jaxpr(closed, axis_data, in_batched, out_batched)
  if list(in_dims) == [0 if b else batching.not_mapped for b in in_batched] and \
      list(out_dims) == [0 if b else batching.not_mapped for b in out_batched]:
    return batched

  def fun(*args):
    args = [x if d is batching.not_mapped else batching.moveaxis(x, d, 0)
            for x, d in zip(args, in_dims)]
    outs = eval_closed_jaxpr(batched, *args)
    return [x if d is batching.not_mapped else batching.moveaxis(x, 0, d)
            for x, d in zip(outs, out_dims)]

  in_avals = [a if d is batching.not_mapped else batching.batched_aval(a, axis_data.size, d)
              for a, d in zip(closed.in_avals, in_dims)]
  return pe.trace_to_jaxpr(fun, in_avals)


def _while_batching_rule(axis_data, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                         body_nconsts):
  """A loop of the batched body.

  Which carries are batched is a fixpoint (a carry is batched if it starts
  batched or the body computes it from a batched value). If the predicate
  is then batched, every carry is batched (members stop at different
  iterations) and the loop's predicate is the per-member one (see the
  primitive). Otherwise batched carries get their batch axis after the
  predicate's own axes, so the predicate's shape stays a prefix of theirs.
  """
  not_mapped = batching.not_mapped
  batched = [d is not not_mapped for d in dims]
  cconst_bat, bconst_bat, carry_bat = _split(batched, cond_nconsts, body_nconsts)
  cconst_dims, bconst_dims, init_dims = _split(dims, cond_nconsts, body_nconsts)
  for _ in range(len(carry_bat) + 1):
    _, out_bat = batching.batch_jaxpr(body_jaxpr, axis_data, bconst_bat + carry_bat,
                                      instantiate=carry_bat)
    if out_bat == carry_bat:
      break
    carry_bat = list(map(operator.or_, carry_bat, out_bat))
  _, (pred_bat,) = batching.batch_jaxpr(cond_jaxpr, axis_data, cconst_bat + carry_bat,
                                        instantiate=False)
  if pred_bat:
    carry_dims = [0] * len(carry_bat)
    pred_dim = 0
  else:
    pred_rank = cond_jaxpr.out_avals[0].ndim
    carry_dims = [pred_rank if b else not_mapped for b in carry_bat]
    pred_dim = not_mapped
  body = _batch_jaxpr_at(body_jaxpr, axis_data, bconst_dims + carry_dims, carry_dims)
  cond = _batch_jaxpr_at(cond_jaxpr, axis_data, cconst_dims + carry_dims, [pred_dim])
  cconsts, bconsts, init = _split(args, cond_nconsts, body_nconsts)
  init = [x if new is not_mapped else batching.matchaxis(old, new, axis_data.size, x)
          for x, old, new in zip(init, init_dims, carry_dims)]
  outs = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond, body_jaxpr=body,
                      cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
  return outs, carry_dims


batching.axis_primitive_batchers[while_p] = _while_batching_rule


# --- the API -------------------------------------------------------------------

def _trace_loop(cond_fun, body_fun, init_val):
  """Traces both functions for the carry `init_val`; checks the cond's output."""
  init_vals, in_tree = tree_util.tree_flatten((init_val,))
  init_avals = [core.get_aval(x) for x in init_vals]
  cond_jaxpr, cond_consts, cond_tree = initial_style_jaxpr(cond_fun, in_tree, init_avals)
  body_jaxpr, body_consts, body_tree = initial_style_jaxpr(body_fun, in_tree, init_avals)
  if not tree_util.treedef_is_leaf(cond_tree) or len(cond_jaxpr.out_avals) != 1:
    raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
  if cond_jaxpr.out_avals[0].strip_weak_type() != ShapedArray((), np.bool_):
    raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) "
                    f"{cond_jaxpr.out_avals}.")
  return init_vals, init_avals, cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree


def while_loop(cond_fun, body_fun, init_val):
  """Calls `body_fun` repeatedly while `cond_fun` is true; returns the final value.

  Means `val = init_val; while cond_fun(val): val = body_fun(val)`, with a
  carry of fixed pytree structure, shapes and dtypes (a weakly typed initial
  leaf, such as a Python scalar, takes the type the body gives it).
  `cond_fun` must return a boolean scalar. Differentiable in forward mode
  only: reverse mode raises `ValueError` (use `lax.scan`, or `fori_loop`
  with static bounds). Under `disable_jit` it runs as the Python loop.
  """
  if not (callable(body_fun) and callable(cond_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  if config.jax_disable_jit:
    try:
      val = init_val
      while cond_fun(val):
        val = body_fun(val)
      return val
    except ConcretizationTypeError:
      pass  # a traced predicate (under vmap, say): use the primitive
  traced = _trace_loop(cond_fun, body_fun, init_val)
  init_vals, changed = promote_weak_typed_inputs(traced[0], traced[1], traced[4].out_avals)
  if changed:
    init_val = tree_util.tree_unflatten(tree_util.tree_structure(init_val), init_vals)
    traced = _trace_loop(cond_fun, body_fun, init_val)
  init_vals, _, cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree = traced
  check_carry_type("while_loop body", body_fun, init_val, body_tree, body_jaxpr.out_avals)
  outs = while_p.bind(*cond_consts, *body_consts, *init_vals,
                      cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                      cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
  return tree_util.tree_unflatten(body_tree, outs)
