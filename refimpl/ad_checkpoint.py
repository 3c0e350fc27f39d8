"""Rematerialization: `checkpoint` (alias `remat`), its policies and
`checkpoint_name`.

`checkpoint(f)` computes what `f` computes, but under reverse-mode
differentiation the values `f`'s tangent program needs (the residuals) are
not stored from the forward pass: they are recomputed from `f`'s inputs in
the backward pass, except those a `policy` says may be saved. It is the
`checkpoint` primitive, whose `jaxpr` param holds the traced function. Its
partial-evaluation rule does the work: the known half runs now, and the
recorded unknown half takes the primal inputs (plus the saved residuals) and
recomputes the rest.
"""

import collections
import functools
import inspect
import types

import numpy as np

from refimpl import core, tree_util
from refimpl.core import Primitive
from refimpl.interpreters import ad, batching
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr, eval_jaxpr
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, Var, dce_jaxpr

__all__ = ['checkpoint', 'remat', 'checkpoint_policies', 'checkpoint_name', 'Recompute',
           'Saveable', 'Offloadable', 'print_saved_residuals']


# --- the checkpoint primitive ------------------------------------------------

def _checkpoint_impl(*args, jaxpr, prevent_cse, differentiated, policy):
  """`checkpoint[jaxpr, prevent_cse, differentiated, policy] *args`: calls
  `jaxpr` on `args`.

  Shape rule: the outputs of `jaxpr`. Evaluating it is evaluating the jaxpr;
  the params only direct differentiation: under partial evaluation the
  values the unknown half needs are recomputed from the inputs, except the
  outputs of the equations `policy(prim, *avals, **params)` calls saveable
  (None: nothing is saved). `differentiated` marks the JVP of a checkpoint;
  `prevent_cse` is a hint for compilers.
  """
  return [core.to_numpy(x) for x in eval_closed_jaxpr(jaxpr, *args)]


checkpoint_p = Primitive("checkpoint")
checkpoint_p.multiple_results = True
checkpoint_p.call_jaxpr_param = "jaxpr"
checkpoint_p.transformation_params = frozenset({"policy", "differentiated"})
checkpoint_p.def_impl(_checkpoint_impl)
checkpoint_p.def_abstract_eval(lambda *avals, jaxpr, **_: jaxpr.out_avals)
ad.primitive_jvps[checkpoint_p] = ad.call_jvp_rule(
    checkpoint_p, lambda params: dict(params, differentiated=True))
ad.deftranspose(checkpoint_p, ad.call_transpose_rule(checkpoint_p))
batching.axis_primitive_batchers[checkpoint_p] = batching.call_batching_rule(checkpoint_p)


def _plan_recomputation(known, num_res, policy):
  """Which values the known half saves, and which equations the backward
  pass recomputes.

  Walking back from the residuals of `known` (its last `num_res` outputs),
  a value produced by an equation the policy calls saveable is saved;
  any other value is recomputed by its equation, from its own inputs. Inputs
  and constants are always available. Returns (saved vars, recomputed eqns
  in program order).
  """
  jaxpr = known.jaxpr
  producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
  available = set(jaxpr.invars) | set(jaxpr.constvars)
  saved, recomputed, seen = [], set(), set()
  stack = [v for v in jaxpr.outvars[len(jaxpr.outvars) - num_res:] if isinstance(v, Var)]
  while stack:
    var = stack.pop()
    if var in seen or var in available:
      continue
    seen.add(var)
    eqn = producer[var]
    if policy is not None and _saves(policy(eqn.primitive, *[v.aval for v in eqn.invars],
                                            **eqn.params)):
      saved.append(var)
    else:
      recomputed.add(id(eqn))
      stack += [v for v in eqn.invars if isinstance(v, Var)]
  return saved, [e for e in jaxpr.eqns if id(e) in recomputed]


class RecomputeType:
  """The type of `Recompute`."""

  def __repr__(self):
    return "Recompute"


class SaveableType:
  """The type of `Saveable`."""

  def __repr__(self):
    return "Saveable"


Recompute = RecomputeType()
"""What a policy returns for a value to recompute in the backward pass (as False)."""

Saveable = SaveableType()
"""What a policy returns for a value to save for the backward pass (as True)."""


class Offloadable(collections.namedtuple("Offloadable", ["src", "dst"])):
  """What a policy returns for a value to save in another memory (`dst`, a
  memory kind such as "pinned_host") and bring back to `src` ("device") for
  the backward pass: on one device, whose memory is the host's, saved as
  `Saveable` is."""

  __slots__ = ()


def _saves(decision):
  """Whether a policy's `decision` (a bool, `Saveable`, `Recompute` or an
  `Offloadable`) saves the value."""
  if isinstance(decision, (bool, np.bool_)):
    return bool(decision)
  if isinstance(decision, (SaveableType, Offloadable)):
    return True
  if isinstance(decision, RecomputeType):
    return False
  raise TypeError("Value returned by a remat policy should be a bool or "
                  "`ad_checkpoint.Recompute`, `ad_checkpoint.Saveable` or "
                  f"`ad_checkpoint.Offloadable(...)`. Got {decision} of type {type(decision)}.")


def _checkpoint_partial_eval(trace, args, params):
  """The known half runs now, computing the known outputs and the values the
  policy saves; the unknown half is recorded as a checkpoint that takes the
  known inputs and the saved values and recomputes the other residuals."""
  jaxpr, policy = params["jaxpr"], params["policy"]
  unknowns = [trace.is_own(x) for x in args]
  known, unknown, out_unknowns, num_res = pe.partial_eval_jaxpr(jaxpr, unknowns)
  k = known.jaxpr
  num_known_outs = len(k.outvars) - num_res
  saved_vars, recomputed = _plan_recomputation(known, num_res, policy)
  forward = Jaxpr(k.constvars, k.invars, k.outvars[:num_known_outs] + saved_vars, k.eqns)
  known_args = [x for x, u in zip(args, unknowns) if not u]
  with core.set_current_trace(trace.parent):
    outs = eval_jaxpr(dce_jaxpr(forward), known.consts, *known_args)
  known_outs, saved = outs[:num_known_outs], outs[num_known_outs:]
  residuals_jaxpr = Jaxpr(k.constvars, k.invars + saved_vars,
                          k.outvars[num_known_outs:], recomputed)

  def recompute(*rec_args):
    num_in = len(known_args) + len(saved)
    residuals = eval_jaxpr(residuals_jaxpr, known.consts, *rec_args[:num_in])
    return eval_closed_jaxpr(unknown, *residuals, *rec_args[num_in:])

  unknown_args = [x for x, u in zip(args, unknowns) if u]
  rec = pe.trace_to_jaxpr(recompute, [core.get_aval(x) for x in
                                      [*known_args, *saved, *unknown_args]])
  rec = ClosedJaxpr(dce_jaxpr(rec.jaxpr), rec.consts)
  unknown_outs = iter(trace.record(checkpoint_p, [*known_args, *saved, *unknown_args],
                                   dict(params, jaxpr=rec, differentiated=True)))
  known_iter = iter(known_outs)
  return [next(unknown_outs) if u else next(known_iter) for u in out_unknowns]


pe.partial_eval_rules[checkpoint_p] = _checkpoint_partial_eval


class _Deprecated:
  """The default of `checkpoint`'s removed `concrete` argument."""

  def __repr__(self):
    return "Deprecated"


_DEPRECATED = _Deprecated()


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=(),
               concrete=_DEPRECATED):
  """`fun`, with its residuals recomputed in the backward pass instead of
  stored (except those `policy` saves; see `checkpoint_policies`).
  `static_argnums` (positions) and `static_argnames` (keyword arguments) name
  arguments passed as Python values. `concrete`, removed in JAX 0.10, raises
  NotImplementedError when given."""
  if not isinstance(concrete, _Deprecated):
    raise NotImplementedError(
        "The `concrete` option to `jax.checkpoint` was deprecated in JAX v0.8.2, and removed "
        "in JAX v0.10.0. In its place please use `static_argnums`; for details refer to "
        "https://docs.jax.dev/en/latest/jep/11830-new-remat-checkpoint.html.")
  static_argnums = (static_argnums,) if type(static_argnums) is int else static_argnums
  static_argnames = (static_argnames,) if isinstance(static_argnames, str) else static_argnames

  @functools.wraps(fun)
  def fun_remat(*args, **kwargs):
    # checked on each call, as JAX does
    if not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
      raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must "
                      f"be an int, tuple of ints or, bool, but got value {static_argnums}")
    if not all(-len(args) <= d < len(args) for d in static_argnums):
      raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` "
                       "can only take integer values greater than or equal to "
                       f"`-len(args)` and less than `len(args)`, but got {static_argnums}, "
                       f"while `len(args)` = {len(args)}")
    static = {i % len(args): args[i] for i in static_argnums}
    static_kwargs = {k: v for k, v in kwargs.items() if k in static_argnames}
    dyn = [a for i, a in enumerate(args) if i not in static]
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    leaves, in_tree = tree_util.tree_flatten((dyn, dyn_kwargs))
    out_tree_box = []

    def flat_fun(*flat):
      d_args, d_kwargs = tree_util.tree_unflatten(in_tree, flat)
      it = iter(d_args)
      full = [static[i] if i in static else next(it) for i in range(len(args))]
      out_leaves, out_tree = tree_util.tree_flatten(fun(*full, **d_kwargs, **static_kwargs))
      out_tree_box.append(out_tree)
      return out_leaves

    closed = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in leaves])
    closed, tracer_consts = pe.split_tracer_consts(closed)
    outs = checkpoint_p.bind(*tracer_consts, *leaves, jaxpr=closed,
                             prevent_cse=prevent_cse, differentiated=False, policy=policy)
    return tree_util.tree_unflatten(out_tree_box[0], outs)
  return fun_remat


def remat(fun, *, prevent_cse=True, policy=None, static_argnums=(), concrete=_DEPRECATED):
  """`checkpoint`, by its older name (which takes no `static_argnames`)."""
  return checkpoint(fun, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums,
                    concrete=concrete)


# --- names and policies --------------------------------------------------------

def _name_impl(x, *, name):
  """`name[name] x`: the identity, naming `x` for checkpoint policies
  (`save_only_these_names` and friends). Linear: its JVP and transpose are
  `name` itself."""
  return x


name_p = Primitive("name")
name_p.def_impl(_name_impl)
name_p.def_abstract_eval(lambda aval, *, name: aval)
ad.deflinear(name_p, lambda ct, *, name: [ct])
batching.defvectorized(name_p)


def checkpoint_name(x, name):
  """Names every leaf of pytree `x` (the values are unchanged) so that a
  checkpoint policy can choose to save it by name."""
  return tree_util.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


def _everything_saveable(*_, **__):
  return True


def _nothing_saveable(*_, **__):
  return False


def _dots_saveable(prim, *_, **__):
  return prim.name == "dot_general"


def _dots_with_no_batch_dims_saveable(prim, *_, **params):
  if prim.name != "dot_general":
    return False
  (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
  return not lhs_batch and not rhs_batch


def _save_only_these_names(*names):
  names = set(names)
  return lambda prim, *_, **params: prim is name_p and params["name"] in names


def _save_any_names_but_these(*names):
  names = set(names)
  return lambda prim, *_, **params: prim is name_p and params["name"] not in names


def _save_anything_except_these_names(*names):
  names = set(names)
  return lambda prim, *_, **params: not (prim is name_p and params["name"] in names)


def _save_from_both_policies(policy_1, policy_2):
  """Saves what either policy saves."""
  return lambda prim, *avals, **params: bool(policy_1(prim, *avals, **params)
                                             or policy_2(prim, *avals, **params))


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=_everything_saveable,
    nothing_saveable=_nothing_saveable,
    dots_saveable=_dots_saveable,
    checkpoint_dots=_dots_saveable,
    dots_with_no_batch_dims_saveable=_dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=_dots_with_no_batch_dims_saveable,
    save_only_these_names=_save_only_these_names,
    save_any_names_but_these=_save_any_names_but_these,
    save_anything_except_these_names=_save_anything_except_these_names,
    save_from_both_policies=_save_from_both_policies,
)
checkpoint_policies.__doc__ = """Policies for `checkpoint`: each is called as
`policy(primitive, *in_avals, **params)` for an equation of the checkpointed
function and says whether its output may be saved for the backward pass."""


def saved_residuals(f, *args, **kwargs):
  """The values `vjp(f, *args, **kwargs)` saves for the backward pass, as
  (aval, where it comes from) pairs, in this order: 'from a literal', 'from
  a constant', 'from the argument NAME' (the argument's name and path in its
  pytree), then in program order the equation computing it ("named 'N'" for
  `checkpoint_name`, "output of jitted function 'F'", 'output of PRIM';
  refimpl's equations carry no source location, which JAX appends)."""
  from refimpl.api import make_jaxpr
  from refimpl.autodiff import vjp
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))

  def flat_f(*leaves):
    call_args, call_kwargs = tree_util.tree_unflatten(in_tree, leaves)
    return f(*call_args, **call_kwargs)
  closed, out_shape = make_jaxpr(lambda *leaves: vjp(flat_f, *leaves),
                                 return_shape=True)(*leaves)
  jaxpr = closed.jaxpr
  residuals = jaxpr.outvars[len(jaxpr.outvars) - len(tree_util.tree_leaves(out_shape[1])):]
  names = _argument_names(f, args, kwargs)
  residual_vars = {v for v in residuals if isinstance(v, Var)}
  results = [(v.aval, "from a literal") for v in residuals if not isinstance(v, Var)]
  results += [(v.aval, "from a constant") for v in jaxpr.constvars if v in residual_vars]
  results += [(v.aval, f"from the argument {name}") for v, name in zip(jaxpr.invars, names)
              if v in residual_vars]
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      if v not in residual_vars:
        continue
      if eqn.primitive is name_p:
        results.append((v.aval, f"named '{eqn.params['name']}'"))
      elif eqn.primitive.name == "jit":
        results.append((v.aval, f"output of jitted function '{eqn.params['name']}'"))
      else:
        results.append((v.aval, f"output of {eqn.primitive.name}"))
  return results


def _argument_names(f, args, kwargs):
  """The name of each flattened argument: its parameter's name and its path
  in the argument's pytree (`x`, `params['w']`)."""
  try:
    bound = inspect.signature(f).bind(*args, **kwargs).arguments
  except (TypeError, ValueError):   # (no signature, or one these arguments do not fit)
    bound = {f"args[{i}]": a for i, a in enumerate(args)} | kwargs
  return [name + tree_util.keystr(path) for name, value in bound.items()
          for path, _ in tree_util.tree_flatten_with_path(value)[0]]


def print_saved_residuals(f, *args, **kwargs):
  """Prints `saved_residuals(f, *args, **kwargs)`, one line a value: its
  type (`f32[3]`) and where it comes from."""
  for aval, source in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {source}")
