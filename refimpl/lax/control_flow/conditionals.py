"""Conditionals: `lax.cond` and `lax.switch`, both the `cond` primitive.

`cond[branches=(b0, b1, ...)] index *operands` runs the one branch `index`
picks. The branches are closed jaxprs of one signature (see common.py): the
values any branch closes over are operands too (every branch takes all of
them and uses its own), so the operands are the int32 index, then the
branches' common constants, then the user's operands. `lax.cond(pred, t, f)`
is `cond[branches=(f, t)]` on `int32(pred)`; `lax.switch` clamps its index.

Transformations (JAX's rules):

* JVP: a cond of the branches' JVPs, each taking the tangents of the
  operands any tangent reaches and producing a tangent for each output that
  some branch makes nonzero;
* partial evaluation (what gives reverse mode its residuals): with a known
  index, a cond of the branches' known halves runs now and a cond of their
  unknown halves is recorded. Branches save different residuals, so their
  residuals are joined into one list of types that every known half
  outputs (zeros in the slots a branch does not fill) and every unknown
  half takes;
* transpose: a cond of the branches' transposes (the index is never linear);
* vmap: with an unbatched index, a cond of the batched branches; with a
  batched index, every branch runs on the whole batch and `select_n` picks
  each member's result, as JAX converts cond to select.
"""

import inspect

import numpy as np

from refimpl import core, dtypes, tree_util
from refimpl.config import config
from refimpl.core import Primitive
from refimpl.interpreters import ad, batching
from refimpl.interpreters import partial_eval as pe
from refimpl.interpreters.eval import eval_closed_jaxpr, run_jaxpr
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, Var
from refimpl.lax.ad_util import stop_gradient
from refimpl.lax.control_flow.common import initial_style_jaxprs_with_common_consts, typematch
from refimpl.lax.elementwise import clamp, convert_element_type, eq, select_n
from refimpl.lax.shapes import broadcast_in_dim

__all__ = ['cond', 'switch', 'cond_p']


# --- the cond primitive --------------------------------------------------------

def _cond_impl(index, *operands, branches):
  """`cond[branches] index *operands`: the outputs of `branches[index]` on
  `operands`; the other branches do not run.

  `index` is an int32 scalar; an index outside [0, len(branches)) is clamped
  to that range (`lax.switch` clamps before binding and `lax.cond` binds 0 or
  1, so programs built through the API never rely on it). Every branch takes
  the operands' types and returns the same output types (shapes and dtypes;
  weak types may differ), and the outputs have the types of `branches[0]`'s
  outputs, weak types included.

  Transformations: JVP is a cond of the branches' JVPs; partial evaluation
  (reverse mode) runs a cond of the known halves, which also outputs the
  residuals joined across branches, and records a cond of the unknown
  halves; the transpose is a cond of the transposed branches (linear in the
  operands the branches are linear in, never in the index); vmap is a cond
  of the batched branches, or with a batched index every branch on the
  whole batch and `select_n` on the index. See docs/control_flow.md.
  """
  i = int(np.clip(index, 0, len(branches) - 1))
  return run_jaxpr(branches[i], *operands)


def _cond_abstract_eval(index, *operands, branches):
  if index.shape != () or index.dtype != np.int32:
    raise TypeError(f"cond index must be an int32 scalar, got {index}")
  for i, branch in enumerate(branches):
    if len(branch.in_avals) != len(operands) or not all(
        map(typematch, branch.in_avals, operands)):
      raise TypeError(f"cond branch {i} takes inputs "
                      f"{' '.join(map(str, branch.in_avals))}, called with operands "
                      f"{' '.join(map(str, operands))}")
    if not all(map(typematch, branch.out_avals, branches[0].out_avals)):
      raise TypeError(f"cond branches 0 and {i} have different output types: "
                      f"{' '.join(map(str, branches[0].out_avals))} vs "
                      f"{' '.join(map(str, branch.out_avals))}")
  return list(branches[0].out_avals)


cond_p = Primitive("cond")
cond_p.multiple_results = True
cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract_eval)


# --- JVP -------------------------------------------------------------------------

def _cond_jvp(primals, tangents, *, branches):
  """A cond of the branches' JVPs. An output has a tangent when some branch
  gives it a nonzero one; the other branches then output explicit zeros."""
  index, *ops = primals
  ops_nz = [not isinstance(t, ad.Zero) for t in tangents[1:]]
  out_nz = [any(nzs) for nzs in zip(*[ad.jvp_jaxpr(b, ops_nz, False)[1] for b in branches])]
  branches_jvp = tuple(ad.jvp_jaxpr(b, ops_nz, out_nz)[0] for b in branches)
  ops_dot = [t for t in tangents[1:] if not isinstance(t, ad.Zero)]
  outs = cond_p.bind(index, *ops, *ops_dot, branches=branches_jvp)
  out_primals, nz_tangents = outs[:len(out_nz)], iter(outs[len(out_nz):])
  out_tangents = [next(nz_tangents) if nz else ad.Zero(ad.tangent_aval(a))
                  for a, nz in zip(branches[0].out_avals, out_nz)]
  return out_primals, out_tangents


ad.primitive_jvps[cond_p] = _cond_jvp


# --- partial evaluation ------------------------------------------------------------

def _cond_partial_eval(trace, args, params):
  """Known index: the known halves of the branches run now (in the parent
  trace) as one cond, which also outputs the residuals; a cond of the
  unknown halves on (index, residuals, unknown operands) is recorded.
  Unknown index: the whole cond is recorded."""
  branches = params["branches"]
  index, *ops = args
  if trace.is_own(index):
    return trace.record(cond_p, args, params)
  ops_uk = [trace.is_own(x) for x in ops]
  out_uks = [any(uks) for uks in zip(*[pe.partial_eval_jaxpr(b, ops_uk)[2] for b in branches])]
  splits = [pe.partial_eval_jaxpr(b, ops_uk, instantiate=out_uks) for b in branches]
  res_avals = [unknown.in_avals[:num_res] for _, unknown, _, num_res in splits]
  all_res_avals, slots = _merge_branch_residuals(res_avals)
  num_known_outs = len(out_uks) - sum(out_uks)
  known_branches = tuple(_join_residual_outputs(known, all_res_avals, branch_slots,
                                                num_known_outs)
                         for (known, _, _, _), branch_slots in zip(splits, slots))
  unknown_branches = tuple(_join_residual_inputs(unknown, all_res_avals, branch_slots)
                           for (_, unknown, _, _), branch_slots in zip(splits, slots))
  known_ops = [x for x, uk in zip(ops, ops_uk) if not uk]
  known_outs = []
  if known_branches[0].out_avals:
    with core.set_current_trace(trace.parent):
      known_outs = cond_p.bind(index, *known_ops, branches=known_branches)
  known_outs, residuals = known_outs[:num_known_outs], known_outs[num_known_outs:]
  unknown_ops = [x for x, uk in zip(ops, ops_uk) if uk]
  unknown_outs = iter(trace.record(cond_p, [index, *residuals, *unknown_ops],
                                   dict(branches=unknown_branches)) if any(out_uks) else [])
  known_outs = iter(known_outs)
  return [next(unknown_outs) if uk else next(known_outs) for uk in out_uks]


def _merge_branch_residuals(res_avals_per_branch):
  """One list of residual types serving every branch, and for each branch the
  slot of each of its residuals. Slots are shared by type (shape and dtype),
  so the list is as long as the most residuals of a type any branch needs:
  [x], [y], [x, x] -> [x, y, x] with slots [0], [1], [0, 2]."""
  all_avals, slots = [], []
  for avals in res_avals_per_branch:
    used, branch_slots = set(), []
    for aval in avals:
      slot = next((i for i, a in enumerate(all_avals)
                   if i not in used and typematch(a, aval)), None)
      if slot is None:
        slot = len(all_avals)
        all_avals.append(aval.strip_weak_type())
      used.add(slot)
      branch_slots.append(slot)
    slots.append(branch_slots)
  return all_avals, slots


def _join_residual_outputs(known, all_res_avals, branch_slots, num_known_outs):
  """`known` (known outputs, then its residuals) made to output every residual
  slot: its own residuals in their slots, zeros in the others."""
  def fun(*args):
    outs = eval_closed_jaxpr(known, *args)
    residuals = [ad.zeros_like_aval(a) for a in all_res_avals]
    for slot, res in zip(branch_slots, outs[num_known_outs:]):
      residuals[slot] = res
    return outs[:num_known_outs] + residuals
  return pe.trace_to_jaxpr(fun, known.in_avals)


def _join_residual_inputs(unknown, all_res_avals, branch_slots):
  """`unknown` (its residuals, then unknown operands) made to take every
  residual slot, ignoring those of other branches."""
  jaxpr = unknown.jaxpr
  num_res = len(branch_slots)
  res_vars = [Var(a) for a in all_res_avals]
  for slot, var in zip(branch_slots, jaxpr.invars[:num_res]):
    res_vars[slot] = var
  return ClosedJaxpr(Jaxpr(jaxpr.constvars, res_vars + jaxpr.invars[num_res:],
                           jaxpr.outvars, jaxpr.eqns), unknown.consts)


pe.partial_eval_rules[cond_p] = _cond_partial_eval


# --- transpose ---------------------------------------------------------------------

def _cond_transpose(cts, index, *ops, branches):
  """A cond of the branches transposed with respect to the linear operands,
  taking the other operands (residuals) and the output cotangents."""
  assert not ad.is_undefined_primal(index), "the index of a cond is never linear"
  linear = [ad.is_undefined_primal(x) for x in ops]
  branches_t = tuple(ad.transpose_jaxpr(b, linear) for b in branches)
  residuals = [x for x, lin in zip(ops, linear) if not lin]
  cts = [ad.instantiate_zeros(ct) for ct in cts]
  cts_in = iter(cond_p.bind(index, *residuals, *cts, branches=branches_t))
  return [None] + [next(cts_in) if lin else None for lin in linear]


ad.deftranspose(cond_p, _cond_transpose)


# --- vmap --------------------------------------------------------------------------

def _cond_batching_rule(axis_data, args, dims, *, branches):
  """Unbatched index: one cond of the branches batched alike (an output is
  batched if any branch batches it). Batched index: each branch runs on
  the whole batch (operands broadcast to it), and `select_n` on the index
  picks each member's outputs. A branch's operands are masked with
  `stop_gradient` where another branch is picked, so that reverse mode
  sends no cotangent through the values of branches not taken."""
  index, *ops = args
  index_dim, *op_dims = dims
  if index_dim is batching.not_mapped:
    ops_bat = [d is not batching.not_mapped for d in op_dims]
    ops = [batching.moveaxis(x, d, 0) if b else x for x, d, b in zip(ops, op_dims, ops_bat)]
    out_bat = [any(bs) for bs in zip(*[batching.batch_jaxpr(b, axis_data, ops_bat, False)[1]
                                       for b in branches])]
    branches_batched = tuple(batching.batch_jaxpr(b, axis_data, ops_bat, out_bat)[0]
                             for b in branches)
    outs = cond_p.bind(index, *ops, branches=branches_batched)
    return outs, [0 if b else batching.not_mapped for b in out_bat]

  index, *ops = [batching.bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims)]
  in_batched = [True] * len(ops)
  branch_outs = []
  for i, branch in enumerate(branches):
    batched, _ = batching.batch_jaxpr(branch, axis_data, in_batched, True)
    taken = eq(index, np.int32(i))
    masked = [_bcast_select_n(taken, stop_gradient(x), x) for x in ops]
    branch_outs.append(eval_closed_jaxpr(batched, *masked))
  outs = [_bcast_select_n(index, *cases) for cases in zip(*branch_outs)]
  return outs, [0] * len(outs)


def _bcast_select_n(which, *cases):
  """`select_n` with the batch of selectors `which` broadcast along the
  members' axes."""
  shape = core.get_aval(cases[0]).shape
  if len(shape) != core.get_aval(which).ndim:
    which = broadcast_in_dim(which, shape, (0,))
  return select_n(which, *cases)


batching.axis_primitive_batchers[cond_p] = _cond_batching_rule


# --- lax.cond and lax.switch ----------------------------------------------------------

_no_operand = object()


def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
  """`true_fun(*operands)` if `pred` else `false_fun(*operands)`.

  `pred` is a scalar boolean or number (nonzero is true). Both functions
  are traced and must return the same pytree of the same types (shape and
  dtype; weak types may differ, the result taking false_fun's). Only the
  chosen branch runs, except under `vmap` with a batched `pred`, where both
  run and `select_n` picks (JAX's conversion of cond to select). With
  `jax.disable_jit()` and a concrete `pred`, the chosen function is simply
  called. The deprecated form `cond(pred, true_operand, true_fun,
  false_operand, false_fun)` is still accepted, and `operand=` may pass a
  single operand by keyword.
  """
  if not (callable(true_fun) and callable(false_fun)):
    if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
      x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
      return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  operands = _operands(operands, operand)
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, (list, tuple)) or np.ndim(pred) != 0:
    raise TypeError(f"Pred must be a scalar, got {pred} of " +
                    (f"type {type(pred)}" if isinstance(pred, (list, tuple))
                     else f"shape {np.shape(pred)}."))
  try:
    pred_dtype = dtypes.result_type(pred)
  except TypeError as err:
    raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
  if pred_dtype.kind != "b":
    if pred_dtype.kind not in "iuf":
      raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
    pred = pred != 0
  if config.jax_disable_jit and _concrete_value(pred) is not None:
    return true_fun(*operands) if _concrete_value(pred) else false_fun(*operands)
  index = convert_element_type(pred, np.int32)
  return _bind_cond(index, (false_fun, true_fun), ("false_fun", "true_fun"), operands,
                    "cond", reference=1)


def switch(index, branches, *operands, operand=_no_operand):
  """`branches[clamp(0, index, len(branches) - 1)](*operands)`.

  `index` is an integer scalar, converted to int32 and clamped to the
  branches (out of range picks the first or last). All branches are traced
  and must return the same pytree of the same types. A single branch is
  simply called. Under `vmap` with a batched index every branch runs and
  `select_n` picks.
  """
  if not all(callable(branch) for branch in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  operands = _operands(operands, operand)
  if len(np.shape(index)) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  try:
    index_dtype = dtypes.result_type(index)
  except TypeError as err:
    raise TypeError(f"Index type must be an integer, got {index}.") from err
  if index_dtype.kind not in "iu":
    raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
  branches = tuple(branches)
  if not branches:
    raise ValueError("Empty branch sequence")
  if len(branches) == 1:
    return branches[0](*operands)
  index = convert_element_type(index, np.int32)
  index = clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
  if config.jax_disable_jit and _concrete_value(index) is not None:
    return branches[int(_concrete_value(index))](*operands)
  names = tuple(f"branch {i}" for i in range(len(branches)))
  return _bind_cond(index, branches, names, operands, "switch", reference=0)


def _operands(operands, operand):
  """The operands, with a single one passed by the `operand=` keyword (an
  older calling convention JAX keeps)."""
  if operand is _no_operand:
    return operands
  if operands:
    raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                    f"passed, got operand={operand!r} and positional operands {operands}")
  return (operand,)


def _concrete_value(x):
  """The value of `x` as NumPy data if it is known now, else None."""
  if isinstance(x, core.Tracer):
    return x.to_concrete_value()
  return core.to_numpy(x)


def _bind_cond(index, funs, names, operands, api_name, reference):
  """Traces `funs` on the operands' types, checks the outputs of each against
  those of `funs[reference]` (whose pytree structure the result has), and
  binds `cond`. Outputs that every branch passes through from the same
  input are not outputs of the cond: that input is returned (JAX prunes
  them too)."""
  leaves, in_tree = tree_util.tree_flatten(operands)
  avals = [core.get_aval(x) for x in leaves]
  jaxprs, consts, out_trees = initial_style_jaxprs_with_common_consts(funs, in_tree, avals)
  r = reference
  for i in range(len(funs)):
    if i != r:
      _check_branch_outputs(api_name, names[r], names[i], funs[r], funs[i],
                            out_trees[r], jaxprs[r].out_avals, out_trees[i], jaxprs[i].out_avals)
  inputs = [*consts, *leaves]
  forwarded = _forwarded_inputs(jaxprs)
  jaxprs = tuple(_drop_outputs(j, forwarded) for j in jaxprs)
  outs = iter(cond_p.bind(index, *inputs, branches=jaxprs))
  out_leaves = [next(outs) if f is None else _as_array(inputs[f], jaxprs[0].in_avals[f])
                for f in forwarded]
  return tree_util.tree_unflatten(out_trees[r], out_leaves)


def _forwarded_inputs(jaxprs):
  """For each output: the position of the input that every branch returns
  unchanged there, or None."""
  def forwarding(jaxpr):
    position = {v: i for i, v in enumerate(jaxpr.jaxpr.invars)}
    return [position.get(v) if isinstance(v, Var) else None for v in jaxpr.jaxpr.outvars]
  per_branch = [forwarding(j) for j in jaxprs]
  return [fs[0] if len(set(fs)) == 1 else None for fs in zip(*per_branch)]


def _drop_outputs(closed, forwarded):
  jaxpr = closed.jaxpr
  outvars = [v for v, f in zip(jaxpr.outvars, forwarded) if f is None]
  return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns), closed.consts)


def _as_array(x, aval):
  """A passed-through input as an array (a Python scalar becomes a weakly
  typed Array)."""
  if isinstance(x, (core.Tracer, core.ConcreteArray)):
    return x
  return convert_element_type(x, aval.dtype, aval.weak_type)


# --- errors --------------------------------------------------------------------------

def _check_branch_outputs(api_name, name1, name2, f1, f2, tree1, avals1, tree2, avals2):
  """`TypeError` if two branches' outputs differ in pytree structure, or in the
  shape or dtype of a leaf (each differing leaf named by its path)."""
  where = f"{name1} is {_source_info(f1)}\n{name2} is {_source_info(f2)}\n\n"
  if tree1 != tree2:
    raise TypeError(
        f"{api_name} branch outputs must have the same pytree structure, but they "
        f"differ:\n\n{where}{name1} output is a {tree1} but {name2} output is a "
        f"{tree2}.\n\nRevise {name1} and/or {name2} so that they have the same pytree "
        "structure.")
  if all(map(typematch, avals1, avals2)):
    return
  dummy = tree_util.tree_unflatten(tree1, [0] * len(avals1))
  paths = [path for path, _ in tree_util.tree_flatten_with_path(dummy)[0]]
  diffs = [f"the output of {name1}{_at_path(p)} has type {a1.str_short()} but the "
           f"corresponding output of {name2} has type {a2.str_short()}{_mismatch(a1, a2)}"
           for p, a1, a2 in zip(paths, avals1, avals2) if not typematch(a1, a2)]
  if len(diffs) == 1:
    differences = diffs[0][0].upper() + diffs[0][1:] + ".\n"
  else:
    differences = "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
  raise TypeError(
      f"{api_name} branches must have equal output types but they differ.\n\n{where}"
      f"{differences}\nRevise {name1} and/or {name2} so that all output types match.")


def _at_path(path):
  return f" at path {tree_util.keystr(path)}" if path else ""


def _mismatch(a1, a2):
  what = [w for w, differ in (("dtypes", a1.dtype != a2.dtype), ("shapes", a1.shape != a2.shape))
          if differ]
  return ", so " + ", and ".join(f"the {w} do not match" for w in what)


def _source_info(fun):
  """`name at file:line` for a Python function, else its repr."""
  fun = inspect.unwrap(fun)
  code = getattr(fun, "__code__", None)
  if code is None:
    return repr(fun)
  return f"{getattr(fun, '__name__', 'fun')} at {code.co_filename}:{code.co_firstlineno}"
