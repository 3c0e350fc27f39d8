"""`jax.custom_batching`: functions with their own `vmap` rule.

A call of a `custom_vmap` function binds `custom_vmap_call`, whose params
hold the traced function (`call`) and the rule; evaluated, staged or
differentiated it is the function, and only `vmap` uses the rule. Its JVP is
a `custom_vmap_call` of the JVP of the function whose rule is the JVP of the
rule (so `vmap` of `jvp` still uses the rule); reverse mode is not supported,
as in JAX (wrap the function in `custom_vjp` for that).
"""

import functools
import inspect
import operator

from refimpl import core, tree_util
from refimpl.core import Primitive
from refimpl.custom_derivatives import forward_attr
from refimpl.interpreters import ad, batching
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import run_jaxpr

__all__ = ["custom_vmap", "sequential_vmap"]


def _call_impl(*args, call, rule, in_tree, out_tree):
  """`custom_vmap_call[call, rule, in_tree, out_tree] *args`: the call of a
  function with a custom batching rule.

  Evaluates `call` on the arguments. Shape rule: the outputs of `call`.
  Under `vmap`, `rule(axis_size, in_batched, *args)` (arguments as the pytree
  `in_tree`, batched ones with the batch axis first) gives the outputs of the
  whole batch and which of them are batched (at axis 0).
  """
  return run_jaxpr(call, *args)


custom_vmap_p = Primitive("custom_vmap_call")
custom_vmap_p.multiple_results = True
custom_vmap_p.call_jaxpr_param = "call"
custom_vmap_p.transformation_params = frozenset({"rule", "in_tree", "out_tree"})
custom_vmap_p.def_impl(_call_impl)
custom_vmap_p.def_abstract_eval(lambda *avals, call, **_: call.out_avals)


def _check_rule_trees(rule, out_tree, rule_out_tree, batched_tree):
  name = getattr(rule, "__name__", "<unnamed rule>")
  if rule_out_tree != batched_tree:
    raise ValueError("structure of output value and output batching specification "
                     f"returned by custom vmap rule ({name}) do not match.\n"
                     f"Output values: {rule_out_tree}\nBatching spec: {batched_tree}")
  if rule_out_tree != out_tree:
    raise ValueError(f"structure of output returned by custom vmap rule ({name}) does "
                     "not match that of original custom-vmapped function.\n"
                     f"Original output: {out_tree}\nRule output: {rule_out_tree}")


def _custom_vmap_batch(args, dims, *, call, rule, in_tree, out_tree):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  in_batched = tree_util.tree_unflatten(in_tree, [d is not None for d in dims])
  out, out_batched = rule(size, list(in_batched),
                          *tree_util.tree_unflatten(in_tree, args))
  outs, rule_out_tree = tree_util.tree_flatten(out)
  flags, batched_tree = tree_util.tree_flatten(out_batched)
  _check_rule_trees(rule, out_tree, rule_out_tree, batched_tree)
  return outs, [0 if b else None for b in flags]


batching.primitive_batchers[custom_vmap_p] = _custom_vmap_batch


def _custom_vmap_jvp(primals, tangents, *, call, rule, in_tree, out_tree):
  """A custom_vmap call of the JVP of `call`, whose rule is the JVP of
  `rule`: primals and tangents batched alike go through `rule`'s JVP; a
  primal or tangent batched alone is mapped with `vmap` around it."""
  def jvp_rule(axis_size, in_batched, primals, tangents):
    batched_p, batched_t = in_batched
    both = tree_util.tree_map(operator.and_, batched_p, batched_t)
    extra_p = tree_util.tree_map(lambda p, t: 0 if p and not t else None,
                                 batched_p, batched_t)
    extra_t = tree_util.tree_map(lambda p, t: 0 if t and not p else None,
                                 batched_p, batched_t)
    out_both = []

    def rule_value(*ps):
      out, out_batched = rule(axis_size, both, *ps)
      _check_rule_trees(rule, out_tree, tree_util.tree_structure(out),
                        tree_util.tree_structure(out_batched))
      out_both.append(out_batched)
      return out

    leaves, tree = tree_util.tree_flatten((primals, tangents))
    in_dims = tree_util.tree_leaves((extra_p, extra_t), is_leaf=lambda x: x is None)

    def flat_jvp(*flat):
      ps, ts = tree_util.tree_unflatten(tree, flat)
      out = ad_api.jvp(rule_value, tuple(ps), tuple(ts))
      return tree_util.tree_leaves(out)

    outs, out_dims = batching.batch_flat(flat_jvp, batching.AxisData(None, axis_size),
                                         leaves, in_dims)
    outs = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(outs, out_dims)]
    n = len(outs) // 2
    both_flags = tree_util.tree_leaves(out_both[0])
    flags = [b or d is not None for b, d in zip(both_flags * 2, out_dims)]
    return ((tree_util.tree_unflatten(out_tree, outs[:n]),
             tree_util.tree_unflatten(out_tree, outs[n:])),
            (tree_util.tree_unflatten(out_tree, flags[:n]),
             tree_util.tree_unflatten(out_tree, flags[n:])))

  from refimpl import autodiff as ad_api
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  jvp_call, _ = ad.jvp_jaxpr(call, [True] * len(primals), True)
  outs = custom_vmap_p.bind(
      *primals, *tangents, call=jvp_call, rule=jvp_rule,
      in_tree=tree_util.treedef_tuple((in_tree, in_tree)),
      out_tree=tree_util.treedef_tuple((out_tree, out_tree)))
  n = len(outs) // 2
  return outs[:n], outs[n:]


ad.primitive_jvps[custom_vmap_p] = _custom_vmap_jvp


def _custom_vmap_partial_eval(trace, args, params):
  raise TypeError("reverse-mode differentiation (grad, vjp, linearize) of a custom_vmap "
                  "function is not supported: its JVP computes primal and tangent outputs "
                  "together. To give it a VJP, wrap the custom_vmap function in "
                  "jax.custom_vjp.")


pe.partial_eval_rules[custom_vmap_p] = _custom_vmap_partial_eval


class custom_vmap:  # noqa: N801 (JAX's name)
  """A function whose `vmap` is given by a rule, defined with `def_vmap`.

  `rule(axis_size, in_batched, *args)` receives the batched arguments (batch
  axis first; unbatched ones as they are) and `in_batched`, a list with one
  pytree of bools per argument; it returns `(out, out_batched)`, with
  `out_batched` a pytree of bools of `out`'s structure (batched outputs have
  the batch axis first).
  """

  def __init__(self, fun):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule = None

  __getattr__ = forward_attr

  def def_vmap(self, vmap_rule):
    """Sets the rule; returns it (so it works as a decorator)."""
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", str(self.fun))
    if self.vmap_rule is None:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                           "using def_vmap.")
    if kwargs:
      args = inspect.signature(self.fun).bind(*args, **kwargs).args
    leaves, in_tree = tree_util.tree_flatten(tuple(args))
    out_tree_box = []

    def flat_fun(*flat):
      out_leaves, out_tree = tree_util.tree_flatten(
          self.fun(*tree_util.tree_unflatten(in_tree, flat)))
      out_tree_box.append(out_tree)
      return out_leaves

    closed = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in leaves])
    closed, consts = pe.split_tracer_consts(closed)
    if consts:
      raise ValueError(f"custom_vmap function {name} closes over a value being "
                       "transformed; pass it as an argument instead.")
    outs = custom_vmap_p.bind(*leaves, call=closed, rule=self.vmap_rule,
                              in_tree=in_tree, out_tree=out_tree_box[0])
    return tree_util.tree_unflatten(out_tree_box[0], outs)


def sequential_vmap(f):
  """A `custom_vmap` function batched by calling `f` on each member in turn:
  a `lax.map` over the batched arguments, the others shared."""
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    from refimpl.lax.control_flow.loops import map as lax_map
    flags = tree_util.tree_leaves(in_batched)
    leaves, tree = tree_util.tree_flatten(list(args))

    def member(batched):
      batched = iter(batched)
      return f(*tree_util.tree_unflatten(
          tree, [next(batched) if b else x for x, b in zip(leaves, flags)]))

    out = lax_map(member, [x for x, b in zip(leaves, flags) if b])
    return out, tree_util.tree_map(lambda _: True, out)

  return f
