"""User-defined derivative rules: `custom_jvp`, `custom_vjp`,
`custom_gradient` and `closure_convert`.

A call of a `custom_jvp` function binds `custom_jvp_call`, whose params hold
the traced function (`call_jaxpr`) and the flattened rule (`jvp_jaxpr_fun`);
evaluated or staged it is just the function, and only the JVP trace uses the
rule. A `custom_vjp` function binds `custom_vjp_call`; its JVP runs the `fwd`
rule and makes the output tangents with `custom_lin`, a primitive that only
transposition can run: its transpose calls the `bwd` rule. So forward mode
of a `custom_vjp` function raises, as in JAX.

Closed-over values are traced into the function as constants; a closed-over
value being differentiated raises (pass it as an argument instead, or use
`closure_convert`).
"""

import dataclasses
import functools
import inspect

import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.core import Primitive
from refimpl.interpreters import ad, batching
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr, run_jaxpr

__all__ = ['custom_jvp', 'custom_vjp', 'custom_gradient', 'closure_convert',
           'SymbolicZero', 'CustomVJPPrimal', 'custom_vjp_primal_tree_values',
           'zero_from_primal']


class CustomJVPException(Exception):
  def __init__(self):
    super().__init__(
        "Detected differentiation of a custom_jvp function with respect to a "
        "closed-over value. That isn't supported because the custom JVP rule only "
        "specifies how to differentiate the custom_jvp function with respect to "
        "explicit input parameters. Try passing the closed-over value into the "
        "custom_jvp function as an argument, and adapting the custom_jvp rule.")


class CustomVJPException(Exception):
  def __init__(self):
    super().__init__(
        "Detected differentiation of a custom_vjp function with respect to a "
        "closed-over value. That isn't supported because the custom VJP rule only "
        "specifies how to differentiate the custom_vjp function with respect to "
        "explicit input parameters. Try passing the closed-over value into the "
        "custom_vjp function as an argument, and adapting the custom_vjp fwd and "
        "bwd rules, or use jax.closure_convert.")


# --- shared ------------------------------------------------------------------

SymbolicZero = ad.Zero
"""The zero tangent (cotangent) that rules defined with `symbolic_zeros=True`
receive in place of an array, and may return: has `aval`, `shape`, `dtype`."""


@dataclasses.dataclass
class CustomVJPPrimal:
  """An argument leaf of a `custom_vjp` fwd rule defined with
  `symbolic_zeros=True`: its `value` and whether it is `perturbed` (being
  differentiated; when not, its cotangent is unused)."""
  value: object
  perturbed: bool


def zero_from_primal(val, symbolic_zeros=False):
  """The zero tangent of each leaf of pytree `val`: zeros of its tangent type
  (its own type for floats, float0 for integers and bools), or with
  `symbolic_zeros` a `SymbolicZero` of that type (what a custom rule defined
  with `symbolic_zeros=True` may return for an output with zero tangent)."""
  def zero(x):
    aval = ad.tangent_aval(core.get_aval(x))
    return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)
  return tree_util.tree_map(zero, val)


def custom_vjp_primal_tree_values(tree):
  """`tree` with each CustomVJPPrimal leaf replaced by its value."""
  def value(leaf):
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_util.tree_map(value, tree)


def _resolve_kwargs(fun, args, kwargs):
  """All arguments as positional ones, defaults filled in (custom rules see
  positional args only)."""
  try:
    signature = inspect.signature(fun)
  except (TypeError, ValueError):   # no signature (a builtin): args as given
    if kwargs:
      raise TypeError("keyword arguments could not be resolved to positions") from None
    return tuple(args)
  ba = signature.bind(*args, **kwargs)
  ba.apply_defaults()
  if ba.kwargs:
    raise TypeError("keyword arguments could not be resolved to positions")
  return ba.args


def _trace_call(fun, nondiff_argnums, args, kwargs):
  """Traces `fun(*args, **kwargs)` over the leaves of the differentiable args
  (those not at `nondiff_argnums`; keyword arguments bound to positions).

  Returns (nondiff args, differentiable args, closed jaxpr, tracer consts,
  in_tree, out_tree, leaves); the jaxpr takes the tracer consts first.
  """
  args = _resolve_kwargs(fun, args, kwargs)
  nondiff = tuple(args[i] for i in nondiff_argnums)
  dyn = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
  leaves, in_tree = tree_util.tree_flatten(dyn)
  out_tree_box = []

  def flat_fun(*flat):
    args = _rebuild(nondiff_argnums, nondiff, tree_util.tree_unflatten(in_tree, flat))
    out_leaves, out_tree = tree_util.tree_flatten(fun(*args))
    out_tree_box.append(out_tree)
    return out_leaves

  leaves = [_as_value(x) for x in leaves]
  closed = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in leaves])
  closed, tracer_consts = pe.split_tracer_consts(closed)
  return nondiff, dyn, closed, tracer_consts, in_tree, out_tree_box[0], leaves


def _positions(fun, nondiff_argnums, nondiff_argnames):
  """The positions of the nondiff arguments (those at `nondiff_argnums` and the
  positional parameters of `fun` named in `nondiff_argnames`), ascending and
  each once: the order in which the rules receive them, whatever order they
  were named in (as in JAX)."""
  positions = set(nondiff_argnums)
  if nondiff_argnames:
    params = inspect.signature(fun).parameters.values()
    positions.update(i for i, p in enumerate(params) if p.name in nondiff_argnames
                     and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
  return tuple(sorted(positions))


def _rebuild(nondiff_argnums, nondiff, dyn):
  """The full positional argument list from the nondiff and the dyn args."""
  args, nondiff, dyn = [], list(nondiff), list(dyn)
  for i in range(len(nondiff) + len(dyn)):
    args.append(nondiff.pop(0) if i in nondiff_argnums else dyn.pop(0))
  return args


def forward_attr(self, name):
  """Attributes a custom-rule wrapper lacks come from the function it wraps,
  so that the decorators stack (`custom_vjp(custom_vmap(f)).def_vmap`)."""
  if name == "fun":
    raise AttributeError(name)
  return getattr(self.fun, name)


def _stop_gradient(x):
  """`x` with the derivatives of its tracers stopped: the nondiff arguments
  of a custom_jvp function are not differentiated, as in JAX."""
  from refimpl.lax.ad_util import stop_gradient
  return tree_util.tree_map(
      lambda leaf: stop_gradient(leaf) if isinstance(leaf, core.Tracer) else leaf, x)


def _as_value(x):
  """A rule's output as an array; NumPy float0 arrays (the tangents of
  integer and key values) stay as they are."""
  if isinstance(x, (core.Tracer, core.ConcreteArray)):
    return x
  if getattr(x, "dtype", None) == dtypes.float0:
    return np.asarray(x)
  from refimpl.numpy import asarray
  return asarray(x)


def _check_tangents(primal_avals, tangents):
  for aval, t in zip(primal_avals, tangents):
    t_aval, expected = core.get_aval(t), ad.tangent_aval(aval)
    if t_aval.shape != expected.shape or t_aval.dtype != expected.dtype:
      short = lambda a: a.str_short(short_dtypes=True)
      raise TypeError(
          "Custom JVP rule must produce primal and tangent outputs with corresponding "
          f"shapes and dtypes. Expected {short(expected)} (tangent type of "
          f"{short(aval)}) but got {short(t_aval)}.")


class _CallPrimitive(Primitive):
  """A call of `call_jaxpr` whose other params (the custom rules) only
  transformations use."""

  multiple_results = True
  call_jaxpr_param = "call_jaxpr"

  def __init__(self, name):
    super().__init__(name)

    def impl(*args, call_jaxpr, **_):
      return run_jaxpr(call_jaxpr, *args)
    impl.__doc__ = self._doc
    self.def_impl(impl)
    self.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)


# --- custom_jvp --------------------------------------------------------------

class _CustomJVPCallPrimitive(_CallPrimitive):
  _doc = """`custom_jvp_call[call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros]`:
    the call of a function with a custom JVP rule.

    Evaluates `call_jaxpr` on the arguments (the first `num_consts` are
    closed-over values). Shape rule: the outputs of `call_jaxpr`. Under
    `jvp`, the rule `jvp_jaxpr_fun(*primals, *tangents)` gives the primal
    and tangent outputs instead (tangents of integer inputs are float0 zeros;
    with `symbolic_zeros` they may be symbolic zeros).
    """
  transformation_params = frozenset({"jvp_jaxpr_fun", "num_consts", "symbolic_zeros"})


custom_jvp_call_p = _CustomJVPCallPrimitive("custom_jvp_call")


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp_jaxpr_fun, num_consts,
                         symbolic_zeros):
  if any(not isinstance(t, ad.Zero) for t in tangents[:num_consts]):
    raise CustomJVPException()
  args, args_dot = primals[num_consts:], tangents[num_consts:]
  if not symbolic_zeros:
    args_dot = [ad.instantiate_zeros(t) for t in args_dot]
  outs = jvp_jaxpr_fun(*args, *args_dot)
  n = len(call_jaxpr.out_avals)
  tangents_out = [ad.Zero(ad.tangent_aval(core.get_aval(p))) if t is None else t
                  for p, t in zip(outs[:n], outs[n:])]
  return outs[:n], tangents_out


ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp


class custom_jvp:  # noqa: N801 (JAX's name)
  """A function with a custom JVP rule, defined with `defjvp` or `defjvps`.

  `nondiff_argnums` (positions) and `nondiff_argnames` (parameter names) name
  arguments that are not differentiated (Python values, passed first to the
  rule). Example::

      @custom_jvp
      def f(x):
        return jnp.sin(x)

      @f.defjvp
      def f_jvp(primals, tangents):
        x, = primals
        t, = tangents
        return f(x), jnp.cos(x) * t
  """

  def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = _positions(fun, nondiff_argnums, nondiff_argnames)
    self.jvp = None
    self.symbolic_zeros = False

  __getattr__ = forward_attr

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defjvp(self, jvp, symbolic_zeros=False):
    """Sets the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out,
    tangent_out)`; returns `jvp` (so it works as a decorator)."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps):
    """Sets the rule from one function per argument: `jvps[i](t_i,
    primal_out, *primals)` is the output tangent due to argument i (None
    for no dependence); the rule sums them."""
    if self.nondiff_argnums:
      raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

    def jvp(primals, tangents):
      primal_out = self(*primals)
      zeros = tree_util.tree_map(lambda x: ad.zeros_like_aval(core.get_aval(x)), primal_out)
      terms = [rule(t, primal_out, *primals) if rule is not None else zeros
               for rule, t in zip(jvps, tangents)]
      return primal_out, tree_util.tree_map(
          lambda *ts: functools.reduce(ad.add_tangents, ts), *terms)
    self.defjvp(jvp)

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", str(self.fun))
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {name} using "
                           "`defjvp`.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    args = [_stop_gradient(x) if i in self.nondiff_argnums else x for i, x in enumerate(args)]
    nondiff, dyn, closed, consts, in_tree, out_tree, leaves = _trace_call(
        self.fun, self.nondiff_argnums, args, {})
    out_avals = closed.out_avals
    jvp_rule = self.jvp
    jvp_name = getattr(jvp_rule, "__name__", str(jvp_rule))

    def jvp_jaxpr_fun(*primals_and_tangents):
      n = len(primals_and_tangents) // 2
      primals = tree_util.tree_unflatten(in_tree, primals_and_tangents[:n])
      tangents = tree_util.tree_unflatten(in_tree, primals_and_tangents[n:])
      out = jvp_rule(*nondiff, tuple(primals), tuple(tangents))
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"Custom JVP rule {jvp_name} for function {name} must produce a "
                        "pair (list or tuple of length two) representing primal and "
                        f"tangent outputs, but got {out}.")
      p_leaves, p_tree = tree_util.tree_flatten(out[0])
      t_leaves, t_tree = tree_util.tree_flatten(out[1])
      if p_tree != t_tree:
        raise TypeError(f"Custom JVP rule {jvp_name} for "
                        f"function {name} must produce primal and tangent outputs with "
                        f"equal container (pytree) structures, but got {p_tree} and "
                        f"{t_tree} respectively.")
      if p_tree != out_tree:
        raise TypeError("Custom JVP rule must produce primal outputs with the same "
                        "container (pytree) structure as the primal function, but got "
                        f"{p_tree} for the rule and {out_tree} for the function {name}.")
      p_leaves = [_as_value(p) for p in p_leaves]
      for aval, p in zip(out_avals, p_leaves):
        p_aval = core.get_aval(p)
        if p_aval.shape != aval.shape or p_aval.dtype != aval.dtype:
          raise TypeError("Custom JVP rule must produce primal outputs with the same "
                          f"shapes and dtypes as the function {name}, but got "
                          f"{p_aval.str_short()} where the function gives "
                          f"{aval.str_short()}.")
      t_leaves = [t if isinstance(t, ad.Zero) else _as_value(t) for t in t_leaves]
      _check_tangents([a for a, t in zip(out_avals, t_leaves) if not isinstance(t, ad.Zero)],
                      [t for t in t_leaves if not isinstance(t, ad.Zero)])
      t_leaves = [ad.Zero(core.get_aval(t)) if not isinstance(t, ad.Zero)
                  and core.get_aval(t).dtype == dtypes.float0 else t for t in t_leaves]
      return [*p_leaves, *t_leaves]

    jvp_jaxpr_fun.__name__ = jvp_name
    outs = custom_jvp_call_p.bind(*consts, *leaves, call_jaxpr=closed,
                                  jvp_jaxpr_fun=jvp_jaxpr_fun, num_consts=len(consts),
                                  symbolic_zeros=self.symbolic_zeros)
    return tree_util.tree_unflatten(out_tree, outs)


# --- custom_vjp --------------------------------------------------------------

class _CustomVJPCallPrimitive(_CallPrimitive):
  _doc = """`custom_vjp_call[call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, ...]`:
    the call of a function with a custom VJP rule.

    Evaluates `call_jaxpr` on the arguments (the first `num_consts` are
    closed-over values). Shape rule: the outputs of `call_jaxpr`. Under
    `jvp`, `fwd_jaxpr_thunk(*args)` gives the outputs and the residuals, and
    the output tangents are `custom_lin` of the residuals and input tangents,
    which reverse mode transposes by calling `bwd(*residuals, *cotangents)`.
    """
  transformation_params = frozenset({"fwd_jaxpr_thunk", "bwd", "out_trees", "num_consts",
                                     "symbolic_zeros"})


custom_vjp_call_p = _CustomVJPCallPrimitive("custom_vjp_call")


def _custom_lin(*args, num_res, bwd, out_avals, symbolic_zeros):
  """`custom_lin[num_res, bwd, out_avals, symbolic_zeros] *residuals *tangents`:
  the output tangents of a `custom_vjp` function, as a linear function of its
  input tangents known only through its transpose (`bwd`).

  Shape rule: `out_avals`. It cannot be evaluated: forward-mode
  differentiation of a `custom_vjp` function raises `TypeError`. Its
  transpose maps output cotangents to `bwd(*residuals, *cotangents)`.
  """
  raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p = Primitive("custom_lin")
custom_lin_p.multiple_results = True
custom_lin_p.transformation_params = frozenset({"bwd", "symbolic_zeros"})
custom_lin_p.def_impl(_custom_lin)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, symbolic_zeros):
  if not symbolic_zeros:
    cts = [ad.instantiate_zeros(ct) for ct in cts]
  cts_in = bwd(*args[:num_res], *cts)
  return [None] * num_res + list(cts_in)


ad.deftranspose(custom_lin_p, _custom_lin_transpose)


ad.defjvp_unsupported(custom_lin_p, TypeError,
                      "can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd_jaxpr_thunk, bwd,
                         num_consts, out_trees, symbolic_zeros):
  if any(not isinstance(t, ad.Zero) for t in tangents[:num_consts]):
    raise CustomVJPException()
  args, args_dot = primals[num_consts:], tangents[num_consts:]
  perturbed = tuple(not isinstance(t, ad.Zero) for t in args_dot)
  outs_and_res = fwd_jaxpr_thunk(*args, perturbed=perturbed)
  n = len(call_jaxpr.out_avals)
  outs, res = outs_and_res[:n], outs_and_res[n:]
  args_dot = [ad.instantiate_zeros(t) for t in args_dot]
  out_avals = tuple(ad.tangent_aval(core.get_aval(o)) for o in outs)
  tangents_out = custom_lin_p.bind(*res, *args_dot, num_res=len(res), bwd=bwd,
                                   out_avals=out_avals, symbolic_zeros=symbolic_zeros)
  return outs, tangents_out


ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


# --- batching ----------------------------------------------------------------
# Under vmap, a custom_jvp/custom_vjp call stays a call of the same kind: the
# function, its rules (jvp; fwd and bwd) are batched. When any argument is
# batched, every output and residual is batched (axis 0), so that the rules'
# outputs line up with the function's.

def _batch_rule_fun(fun, axis_data, in_batched, out_batched):
  """`fun` (flat lists in and out) applied to batches.

  Inputs are batched at axis 0 where `in_batched` says (None: all of them;
  symbolic zeros never), outputs are moved to axis 0 where `out_batched`
  says (None: all of them); a batched output that must be unbatched (the
  cotangent of an unbatched input) is summed over the batch.
  """
  def batched(*args, **params):
    flags = [True] * len(args) if in_batched is None else in_batched
    in_dims = [0 if b and not isinstance(x, ad.Zero) else None
               for x, b in zip(args, flags)]
    outs, dims = batching.batch_flat(functools.partial(fun, **params), axis_data, args,
                                     in_dims)
    flags = [True] * len(outs) if out_batched is None else out_batched
    results = []
    for x, d, b in zip(outs, dims, flags):
      if isinstance(x, ad.Zero):
        results.append(ad.Zero(batching.batched_aval(x.aval, axis_data.size) if b
                               else x.aval))
      elif not b and d is not None:
        from refimpl.lax.reductions import reduce_sum
        results.append(reduce_sum(x, (d,)))
      else:
        results.append(batching.matchaxis(d, 0 if b else None, axis_data.size, x))
    return results
  batched.__name__ = getattr(fun, "__name__", "fun")
  return batched


def _batch_args(args, dims):
  """The args with batch axes first, and whether each is batched."""
  return ([x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)],
          [d is not None for d in dims])


def _custom_jvp_call_batch(axis_data, args, dims, *, call_jaxpr, jvp_jaxpr_fun,
                           num_consts, symbolic_zeros):
  args, in_batched = _batch_args(args, dims)
  call, _ = batching.batch_jaxpr(call_jaxpr, axis_data, in_batched, True)
  jvp = _batch_rule_fun(jvp_jaxpr_fun, axis_data, in_batched[num_consts:] * 2, None)
  outs = custom_jvp_call_p.bind(*args, call_jaxpr=call, jvp_jaxpr_fun=jvp,
                                num_consts=num_consts, symbolic_zeros=symbolic_zeros)
  return outs, [0] * len(outs)


batching.axis_primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch


def _custom_vjp_call_batch(axis_data, args, dims, *, call_jaxpr, fwd_jaxpr_thunk, bwd,
                           num_consts, out_trees, symbolic_zeros):
  args, in_batched = _batch_args(args, dims)
  call, _ = batching.batch_jaxpr(call_jaxpr, axis_data, in_batched, True)
  arg_batched = in_batched[num_consts:]
  outs = custom_vjp_call_p.bind(
      *args, call_jaxpr=call,
      fwd_jaxpr_thunk=_batch_rule_fun(fwd_jaxpr_thunk, axis_data, arg_batched, None),
      bwd=_batch_rule_fun(bwd, axis_data, None, arg_batched),
      num_consts=num_consts, out_trees=out_trees, symbolic_zeros=symbolic_zeros)
  return outs, [0] * len(outs)


batching.axis_primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch


class custom_vjp:  # noqa: N801 (JAX's name)
  """A function with a custom VJP rule, defined with `defvjp(fwd, bwd)`.

  `fwd(*args)` returns `(output, residuals)` (residuals: any pytree of
  arrays); `bwd(*nondiff_args, residuals, output_cotangent)` returns a tuple
  with one cotangent per (differentiable) argument, `None` meaning zero.
  `nondiff_argnums` and `nondiff_argnames` name the nondiff arguments, as for
  `custom_jvp`.
  """

  def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = _positions(fun, nondiff_argnums, nondiff_argnames)
    self.fwd = self.bwd = None
    self.symbolic_zeros = False

  __getattr__ = forward_attr

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
    """Sets the forward and backward rules. With `symbolic_zeros`, `fwd`
    receives each argument leaf as a `CustomVJPPrimal(value, perturbed)` and
    `bwd` receives the zero output cotangents as `SymbolicZero`s."""
    self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", str(self.fun))
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {name} using "
                           "`defvjp`.")
    nondiff, dyn, closed, consts, in_tree, out_tree, leaves = _trace_call(
        self.fun, self.nondiff_argnums, args, kwargs)
    fwd, bwd, fwd_name = self.fwd, self.bwd, getattr(self.fwd, "__name__", "fwd")
    res_tree_box = []

    def fwd_flat(*flat, perturbed=None):
      if self.symbolic_zeros:   # leaves as CustomVJPPrimal(value, perturbed)
        perturbed = (True,) * len(flat) if perturbed is None else perturbed
        flat = [CustomVJPPrimal(x, p) for x, p in zip(flat, perturbed)]
      dyn_args = tree_util.tree_unflatten(in_tree, flat)
      out = fwd(*_rebuild(self.nondiff_argnums, nondiff, dyn_args))
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair "
            "(list or tuple of length two) where the first element represents the "
            f"primal output (equal to the output of the custom_vjp-decorated function "
            f"{name}) and the second element represents residuals (i.e. values stored "
            "from the forward pass for use on the backward pass), but instead the fwd "
            f"rule output was {out}.")
      out_leaves, fwd_out_tree = tree_util.tree_flatten(out[0])
      if fwd_out_tree != out_tree:
        raise TypeError(
            f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair "
            "(list or tuple of length two) where the first element represents the "
            "primal output with the same container (pytree) structure as the output "
            f"of {name}, but got {fwd_out_tree} where the function gives {out_tree}.")
      res_leaves, res_tree = tree_util.tree_flatten(out[1])
      res_tree_box[:] = [res_tree]
      return [*map(_as_value, out_leaves), *map(_as_value, res_leaves)]

    # (what bwd_flat checks cotangents against: trees and tangent types, not
    # the arguments, which may be tracers that it must not keep alive)
    dyn_tree = tree_util.tree_structure(tuple(dyn))
    arg_types = [(tree, [ad.tangent_aval(core.get_aval(a)) for a in arg_leaves])
                 for arg_leaves, tree in map(tree_util.tree_flatten, dyn)]

    def bwd_flat(*res_and_cts):
      n_res = len(res_and_cts) - len(closed.out_avals)
      res = tree_util.tree_unflatten(res_tree_box[0], res_and_cts[:n_res])
      ct = tree_util.tree_unflatten(out_tree, res_and_cts[n_res:])
      cts_in = bwd(*nondiff, res, ct)
      if not isinstance(cts_in, (tuple, list)):
        cts_in = None   # reported below as a structure mismatch
      expected = dyn_tree
      got = tree_util.tree_structure(
          tuple(cts_in) if cts_in is not None else cts_in, is_leaf=lambda x: x is None)
      structure_error = TypeError(
          "Custom VJP bwd rule must produce an output with the same container "
          "(pytree) structure as the args tuple of the primal function, and in "
          "particular must produce a tuple of length equal to the number of "
          "arguments to the primal function, but got bwd output structure "
          f"{got} for primal input structure {expected}.")
      if cts_in is None or len(cts_in) != len(arg_types):
        raise structure_error
      leaves_out = []
      for (arg_tree, avals), ct_arg in zip(arg_types, cts_in):
        if ct_arg is None:
          leaves_out += [ad.zeros_like_aval(aval) for aval in avals]
          continue
        ct_leaves, ct_tree = tree_util.tree_flatten(ct_arg, is_leaf=lambda x: x is None)
        if ct_tree != arg_tree and tree_util.tree_structure(ct_arg) != arg_tree:
          raise structure_error
        for aval, c in zip(avals, ct_leaves):
          if c is None or aval.dtype == dtypes.float0:   # as JAX: any cotangent of an
            leaves_out.append(ad.zeros_like_aval(aval))   # integer or key input is zero
            continue
          if isinstance(c, SymbolicZero):
            if c.aval.shape != aval.shape or c.aval.dtype != aval.dtype:
              raise ValueError(
                  "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that "
                  "does not match the corresponding input tangent shape/dtype: the "
                  f"SymbolicZero had shape/dtype {c.aval.str_short()} while the "
                  f"corresponding input had shape/dtype {aval.str_short()}. Consider "
                  "just returning a None here instead of a SymbolicZero object.")
            leaves_out.append(ad.zeros_like_aval(aval))
            continue
          c_aval = core.get_aval(c)
          if c_aval.shape != aval.shape:
            raise ValueError(
                "Custom VJP bwd rule must produce an output with the same shape/dtypes "
                "as the args tuple of the primal function, but the bwd rule produced "
                f"an output of shape/dtype {c_aval.str_short()} corresponding to an "
                f"input of shape/dtype {aval.str_short()}.")
          leaves_out.append(_as_value(c))
      return leaves_out

    outs = custom_vjp_call_p.bind(
        *consts, *leaves, call_jaxpr=closed, fwd_jaxpr_thunk=fwd_flat, bwd=bwd_flat,
        num_consts=len(consts), out_trees=lambda: (out_tree, res_tree_box[0]),
        symbolic_zeros=self.symbolic_zeros)
    return tree_util.tree_unflatten(out_tree, outs)


def custom_gradient(fun):
  """A function whose reverse-mode derivative is given by `fun` itself:
  `fun(*args)` returns `(output, vjp)` where `vjp(cotangent)` returns the
  cotangents of the arguments (a tuple, or a single value for one argument)."""
  @custom_vjp
  def wrapped(*args):
    return fun(*args)[0]

  def fwd(*args):
    out, vjp = fun(*args)
    residual = tree_util.Partial(vjp) if not isinstance(vjp, tree_util.Partial) else vjp
    return out, residual

  def bwd(vjp, ct):
    cts = vjp(ct)
    return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)

  wrapped.defvjp(fwd, bwd)
  return functools.wraps(fun)(lambda *args: wrapped(*args))


def closure_convert(fun, *example_args):
  """Makes the values `fun` closes over explicit: returns `(converted,
  consts)` where `converted(*args, *consts)` equals `fun(*args)` and
  `consts` are the closed-over floating-point values that may be perturbed
  by differentiation (tracers; concrete arrays stay inside `converted`), so
  that a `custom_vjp` function can differentiate with respect to them."""
  leaves, in_tree = tree_util.tree_flatten(example_args)
  out_tree_box = []

  def flat_fun(*flat):
    out_leaves, out_tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, flat)))
    out_tree_box.append(out_tree)
    return out_leaves

  closed = pe.trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in leaves])
  hoist = [isinstance(c, core.Tracer) and dtypes.is_inexact(core.get_aval(c).dtype)
           for c in closed.consts]
  kept = [c for c, h in zip(closed.consts, hoist) if not h]
  hoisted = [c for c, h in zip(closed.consts, hoist) if h]
  jaxpr = closed.jaxpr
  from refimpl.jaxpr import ClosedJaxpr, Jaxpr
  hoisted_vars = [v for v, h in zip(jaxpr.constvars, hoist) if h]
  kept_vars = [v for v, h in zip(jaxpr.constvars, hoist) if not h]
  converted_jaxpr = ClosedJaxpr(
      Jaxpr(kept_vars, jaxpr.invars + hoisted_vars, jaxpr.outvars, jaxpr.eqns), kept)
  num_args = len(leaves)

  def converted(*args_and_consts):
    args, consts = args_and_consts[:len(example_args)], args_and_consts[len(example_args):]
    flat, tree = tree_util.tree_flatten(tuple(args))
    if tree != in_tree or len(flat) != num_args:
      raise TypeError(f"closure_convert: expected arguments of structure {in_tree}, "
                      f"got {tree}")
    outs = eval_closed_jaxpr(converted_jaxpr, *flat, *consts)
    return tree_util.tree_unflatten(out_tree_box[0], outs)
  return converted, hoisted


def _custom_lin_batch(axis_data, args, dims, *, num_res, bwd, out_avals, symbolic_zeros):
  # Reached when a batched tangent meets custom_lin: vmap of a function
  # linearized outside it, or of jvp (which raises on evaluation, as JAX's
  # rule does at once). A batched custom_lin stays linear: its transpose
  # runs `bwd` batched, summing the cotangents of unbatched tangents.
  args, in_batched = _batch_args(args, dims)
  n_out = len(out_avals)
  batched_bwd = _batch_rule_fun(bwd, axis_data, in_batched[:num_res] + [True] * n_out,
                                in_batched[num_res:])
  outs = custom_lin_p.bind(
      *args, num_res=num_res, bwd=batched_bwd, symbolic_zeros=symbolic_zeros,
      out_avals=tuple(batching.batched_aval(a, axis_data.size) for a in out_avals))
  return outs, [0] * n_out


batching.axis_primitive_batchers[custom_lin_p] = _custom_lin_batch
