"""Shared by the control-flow primitives: tracing the user's functions
(branches, loop bodies) to closed jaxprs, and checking their types.

A control-flow primitive holds its sub-programs as closed jaxprs without
constants: the values a function closes over (arrays, and tracers of
enclosing traces) become its leading inputs, and the primitive receives
them as operands, as in JAX. So `make_jaxpr` shows them as operands of the
`cond`/`while`/`scan` equation, and every transformation sees them as
ordinary inputs.
"""

import inspect

from refimpl import core, dtypes, tree_util
from refimpl.interpreters import partial_eval as pe
from refimpl.jaxpr import ClosedJaxpr, Jaxpr, Var

__all__ = []


def initial_style_jaxpr(fun, in_tree, in_avals):
  """Traces `fun(*args)`, where `args` is the pytree `in_tree` with leaves of
  types `in_avals`, to a closed jaxpr taking its constants as leading inputs.

  Returns (jaxpr, consts, out_tree): `jaxpr` takes `*consts, *leaves`.
  """
  out_tree_box = []

  def flat_fun(*flat):
    out_leaves, out_tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, flat)))
    out_tree_box.append(out_tree)
    return out_leaves

  closed = pe.trace_to_jaxpr(flat_fun, list(in_avals))
  jaxpr = closed.jaxpr
  opened = Jaxpr((), [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns)
  return ClosedJaxpr(opened, ()), list(closed.consts), out_tree_box[0]


def initial_style_jaxprs_with_common_consts(funs, in_tree, in_avals):
  """Traces each of `funs` as `initial_style_jaxpr` does, so that all take
  the same inputs: the constants of every function (each uses only its own),
  then the leaves. Returns (jaxprs, consts, out_trees)."""
  traced = [initial_style_jaxpr(f, in_tree, in_avals) for f in funs]
  all_consts = [c for _, consts, _ in traced for c in consts]
  jaxprs, offset = [], 0
  for jaxpr, consts, _ in traced:
    n = len(consts)
    own, rest = jaxpr.jaxpr.invars[:n], jaxpr.jaxpr.invars[n:]
    before = [Var(core.get_aval(c)) for c in all_consts[:offset]]
    after = [Var(core.get_aval(c)) for c in all_consts[offset + n:]]
    jaxprs.append(ClosedJaxpr(Jaxpr((), [*before, *own, *after, *rest], jaxpr.jaxpr.outvars,
                                    jaxpr.jaxpr.eqns), ()))
    offset += n
  return jaxprs, all_consts, [out_tree for _, _, out_tree in traced]


def typematch(a, b):
  """Whether two avals have the same shape and dtype (weak types aside)."""
  return a.shape == b.shape and a.dtype == b.dtype


def _show_diff(a, b):
  return f"{a}" if typematch(a, b) else f"DIFFERENT {a} vs. {b}"


def check_tree_and_avals(what1, tree1, avals1, what2, tree2, avals2):
  """`TypeError` if the pytree `tree1` of `avals1` differs from `tree2` of
  `avals2` in structure, or in the shape or dtype of a leaf (each leaf
  shown, the differing ones marked DIFFERENT)."""
  if tree1 != tree2:
    raise TypeError(f"{what1} must have same type structure as {what2}, but there are "
                    f"differences: {what1} has structure {tree1} and {what2} has "
                    f"structure {tree2}.")
  if not all(map(typematch, avals1, avals2)):
    diff = tree_util.tree_map(_show_diff, tree_util.tree_unflatten(tree1, avals1),
                              tree_util.tree_unflatten(tree2, avals2))
    raise TypeError(f"{what1} and {what2} must have identical types, got\n{diff}.")


def promote_weak_typed_inputs(values, in_avals, out_avals):
  """The carries, with each weakly typed one whose type the body changes
  converted to the type it promotes to with the body's output (so that
  `while_loop(c, lambda x: x + 1.5, 0)` carries a float). Returns (values,
  whether any changed)."""
  from refimpl.lax.elementwise import convert_element_type
  changed = False
  values = list(values)
  for i, (a_in, a_out) in enumerate(zip(in_avals, out_avals)):
    if a_in.weak_type and not typematch(a_in, a_out):
      values[i] = convert_element_type(values[i], dtypes.result_type(values[i], a_out))
      changed = True
  return values, changed


def _structure_differences(path, t1, t2):
  """(path, what t1 is, what t2 is, why they differ) for each place the
  pytrees `t1` and `t2` differ in structure, as JAX's `equality_errors`."""
  leaf1, leaf2 = (not tree_util.is_tree_node(type(t)) for t in (t1, t2))
  if leaf1 and leaf2:
    return
  if type(t1) is not type(t2):
    yield path, str(type(t1)), str(type(t2)), "their Python types differ"
    return
  if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
    yield (path, f"{type(t1).__name__} of length {len(t1)}",
           f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")
    return
  kids1, meta1 = tree_util.flatten_one_level_with_keys(t1)
  kids2, meta2 = tree_util.flatten_one_level_with_keys(t2)
  if len(kids1) != len(kids2):
    def children(kids):
      return f"{type(t1 if kids is kids1 else t2)} with {len(kids)} child" + \
          ("ren" if len(kids) > 1 else "")
    keys = {getattr(k, "key", k) for k, _ in kids1} ^ {getattr(k, "key", k) for k, _ in kids2}
    diff = " ".join(map(repr, keys))
    yield (path, children(kids1), children(kids2), "the numbers of children do not match"
           + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""))
    return
  if meta1 != meta2:
    yield (path, f"{type(t1)} with pytree metadata {meta1}",
           f"{type(t2)} with pytree metadata {meta2}",
           "the pytree node metadata does not match")
    return
  for (key, c1), (_, c2) in zip(kids1, kids2):
    yield from _structure_differences((*path, key), c1, c2)


def _list_differences(diffs):
  if len(diffs) == 1:
    return diffs[0][0].upper() + diffs[0][1:] + ".\n"
  return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def check_carry_type(name, body_fun, in_carry, out_tree, out_avals):
  """`TypeError` (JAX's message) naming each leaf where the body's output
  carry differs from its input carry in pytree structure, shape or dtype."""
  try:
    carry_name = next(iter(inspect.signature(body_fun).parameters), None)
  except (TypeError, ValueError):
    carry_name = None

  def component(path):
    if carry_name:
      return (f"the input carry component {carry_name}{tree_util.keystr(path)}" if path
              else f"the input carry {carry_name}")
    return f"the input carry at path {tree_util.keystr(path)}" if path else "the input carry"

  leaves_with_paths, in_tree = tree_util.tree_flatten_with_path(in_carry)
  if in_tree != out_tree:
    out_carry = tree_util.tree_unflatten(out_tree, out_avals)
    diffs = [f"{component(path)} is a {thing1} but the corresponding component of the "
             f"carry output is a {thing2}, so {why}"
             for path, thing1, thing2, why in _structure_differences((), in_carry, out_carry)]
    if not diffs:
      return
    raise TypeError(
        f"{name} function carry input and carry output must have the same pytree "
        f"structure, but they differ:\n\n{_list_differences(diffs)}\nRevise the function "
        "so that the carry output has the same pytree structure as the carry input.")
  diffs = []
  for (path, leaf), out in zip(leaves_with_paths, out_avals):
    aval = core.get_aval(leaf)
    if not typematch(aval, out):
      dtype_differs, shape_differs = aval.dtype != out.dtype, aval.shape != out.shape
      extra = (", so " + " and also ".join(
          ["the dtypes do not match"] * dtype_differs + ["the shapes do not match"] *
          shape_differs))
      diffs.append(f"{component(path)} has type {aval.str_short()} but the corresponding "
                   f"output carry component has type {out.str_short()}{extra}")
  if diffs:
    raise TypeError(
        f"{name} function carry input and carry output must have equal types (e.g. "
        f"shapes and dtypes of arrays), but they differ:\n\n{_list_differences(diffs)}\n"
        "Revise the function so that all output types (e.g. shapes and dtypes) match "
        "the corresponding input types.")
