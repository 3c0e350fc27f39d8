"""Vectorization checks: every conformance case under `vmap`.

`check_vmap` runs a `Case` (conformance/cases.py) on a batch of inputs:
some of its array arguments are stacked into batches, each along an axis
drawn at random (negative axes included), of a random size (1 included),
possibly under two nested `vmap`s; the others are shared by the whole
batch (`in_axes` None). A case without array arguments is mapped with
`axis_size` and every `in_axes` None: its results are the same for every
member. The vectorized function must equal the function
applied to each member in a Python loop, stacked along the drawn
`out_axes` — with the case's tolerances, since a batched primitive may
round differently (for example, sum in another order).

Members of a batch are the case's drawn arguments with their elements
shuffled, so they keep whatever per-element domain the case draws from.
Arrays inside containers (a list of arrays) are batched like the others.
"""

import numpy as np
from hypothesis import strategies as st

import refimpl
from conformance.cases import CONTRACTION_SLACK, compare_outputs, run_jitted

__all__ = ["check_vmap", "loop_over_batch"]


def _shuffled(x, rng):
  return rng.permutation(x.ravel()).reshape(x.shape)


def _draw_members(args, positions, sizes, rng):
  """Nested lists (one level per vmap) of argument lists: the batch members."""
  if not sizes:
    return args
  first = _draw_members(args, positions, sizes[1:], rng)
  rest = [_draw_members([_shuffled(a, rng) if i in positions else a
                         for i, a in enumerate(args)], positions, sizes[1:], rng)
          for _ in range(sizes[0] - 1)]
  return [first] + rest


def _stack_args(members, positions, in_axes, depth):
  """The batched arguments: members stacked level by level along `in_axes`."""
  if depth == len(in_axes):
    return members
  inner = [_stack_args(m, positions, in_axes, depth + 1) for m in members]
  axes = in_axes[depth]
  return [np.stack([m[i] for m in inner], axis=axes[i]) if i in positions
          else inner[0][i] for i in range(len(inner[0]))]


def _loop(fn, members, depth, levels):
  """`fn` on each member, outputs stacked along axis 0 level by level."""
  if depth == levels:
    return [np.asarray(x) for x in refimpl.tree_util.tree_leaves(fn(*members))]
  outs = [_loop(fn, m, depth + 1, levels) for m in members]
  return [np.stack(leaves) for leaves in zip(*outs)]


def check_vmap(case, data, backend="reference"):
  """`vmap` of the case's function equals the loop over the batch: evaluated
  eagerly, and for a backend other than the reference, jitted on it."""
  args, kwargs = data.draw(case.inputs())
  leaves, tree = refimpl.tree_util.tree_flatten(tuple(args))   # lists of arrays too
  arrays = [i for i, a in enumerate(leaves) if isinstance(a, np.ndarray)]
  positions = (data.draw(st.sets(st.sampled_from(arrays), min_size=1), label="batched")
               if arrays else set())   # no array argument: map with `axis_size` only
  levels = data.draw(st.sampled_from([1, 1, 2]), label="levels")
  sizes = [data.draw(st.integers(1, 3), label="size") for _ in range(levels)]
  rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
  members = _draw_members(leaves, positions, sizes, rng)

  in_axes = []   # per level, outermost first: one axis per leaf
  for depth in range(levels):
    axes = []
    for i, a in enumerate(leaves):
      if i not in positions:
        axes.append(None)
        continue
      ndim = np.ndim(a) + levels - depth - 1   # rank when this level is stacked
      axes.append(data.draw(st.integers(-ndim - 1, ndim), label=f"in_axis {i}"))
    in_axes.append(tuple(axes))

  def fn(*flat):
    return case.fn(*refimpl.tree_util.tree_unflatten(tree, flat), **kwargs)

  expected = _loop(fn, members, 0, levels)
  min_rank = min((np.ndim(e) for e in expected), default=levels)
  out_axis = data.draw(st.integers(-min_rank, min_rank - 1), label="out_axis")
  expected = [np.moveaxis(e, 0, out_axis) if levels == 1 else e for e in expected]

  mapped = fn
  for depth in reversed(range(levels)):
    mapped = refimpl.vmap(mapped, in_axes=in_axes[depth],
                          out_axes=out_axis if levels == 1 else 0,
                          axis_size=None if positions else sizes[depth])
  stacked = _stack_args(members, positions, in_axes, 0)
  if backend == "reference":
    actual, slack = mapped(*stacked), 1
  else:
    actual, slack = run_jitted(mapped, backend, stacked, case.name), CONTRACTION_SLACK
  compare_outputs(refimpl.tree_util.tree_leaves(actual), expected, case, rtol_scale=slack)


def loop_over_batch(fn, in_axes, *args):
  """`fn` on each member of a batch — the slices of `args` along `in_axes`
  (None: the argument is shared) — with the outputs stacked along axis 0: an
  array, or a list of arrays for a function returning a tuple/list."""
  size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
  outs = [fn(*[a if ax is None else np.take(a, i, ax) for a, ax in zip(args, in_axes)])
          for i in range(size)]
  if isinstance(outs[0], (list, tuple)):
    return [np.stack([np.asarray(x) for x in o]) for o in zip(*outs)]
  return np.stack([np.asarray(o) for o in outs])
