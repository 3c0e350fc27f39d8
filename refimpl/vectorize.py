"""The mapping transformations: `vmap` and `pmap`, with JAX's signatures,
checks and error messages.

They flatten pytrees, find each leaf's mapped axis from `in_axes` (a pytree
prefix of the positional arguments; keyword arguments are mapped along axis
0), and run the function with `refimpl.interpreters.batching`; each output
gets its mapped axis where `out_axes` says.
"""

import collections
import functools
import inspect

import numpy as np

from refimpl import core, lax, tree_util
from refimpl.interpreters import batching

__all__ = ["vmap", "pmap"]


def _is_none(x):
  return x is None


def _flatten_axes(what, treedef, axes):
  """One axis (int or None) per leaf of `treedef`, from `axes`: a pytree
  prefix of it whose leaves are ints or None."""
  axis_leaves, axis_tree = tree_util.tree_flatten(axes, is_leaf=_is_none)
  proxies = tree_util.tree_unflatten(treedef, [0] * treedef.num_leaves)
  try:
    subtrees = axis_tree.flatten_up_to(proxies)
  except ValueError:
    raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                     f"value, got specification {axes} for value tree {treedef}.") from None
  return [axis for axis, sub in zip(axis_leaves, subtrees)
          for _ in tree_util.tree_leaves(sub)]


def _check_axes_type(what, axes):
  if not all(type(a) is int or a is None
             for a in tree_util.tree_leaves(axes, is_leaf=_is_none)):
    raise TypeError(f"vmap {what} must be an int, None, or (nested) container with "
                    f"those types as leaves, but got {axes}.")


def _axis_of(name, x, axis):
  """The length of `x`'s axis `axis`, with JAX's error for a missing axis."""
  shape = np.shape(x)
  if not -len(shape) <= axis < len(shape):
    min_rank = axis + 1 if axis >= 0 else -axis
    raise ValueError(f"{name} was requested to map its argument along axis {axis}, "
                     f"which implies that its rank should be at least {min_rank}, "
                     f"but is only {len(shape)} (its shape is {shape})")
  return shape[axis]


def _type_str(x):
  try:
    return core.get_aval(x).str_short()
  except TypeError:
    return "unknown"


def _mapped_axis_size(name, fun, in_tree, leaves, dims):
  """The common length of the mapped axes; `ValueError` naming the
  arguments whose lengths disagree."""
  sizes = [_axis_of(name, x, d) if d is not None else None for x, d in zip(leaves, dims)]
  distinct = {s for s in sizes if s is not None}
  if len(distinct) == 1:
    return distinct.pop()
  if not distinct:
    raise ValueError(f"{name} must have at least one non-None value in in_axes")
  args, kwargs = tree_util.tree_unflatten(in_tree, leaves)
  try:
    params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
  except (TypeError, ValueError):
    params = None

  def arg_name(path):
    if params is None or path[0].idx >= len(params):
      return f"args{tree_util.keystr(path)}"
    return f"argument {params[path[0].idx]}{tree_util.keystr(path[1:])}"

  where = [f"{arg_name(p)} of type {_type_str(x)}"
           for p, x in tree_util.tree_flatten_with_path(args)[0]]
  where += [f"kwargs{tree_util.keystr(p)} of type {_type_str(x)}"
            for p, x in tree_util.tree_flatten_with_path(kwargs)[0]]
  lines = []
  for rank, (size, count) in enumerate(collections.Counter(
      s for s in sizes if s is not None).most_common()):
    i = sizes.index(size)
    if count == 1:
      lines.append(f"  * one axis had size {size}: axis {dims[i]} of {where[i]}")
    else:
      which = "most" if rank == 0 else "some"
      lines.append(f"  * {which} axes ({count} of them) had size {size}, e.g. axis "
                   f"{dims[i]} of {where[i]}")
  raise ValueError(f"{name} got inconsistent sizes for array axes to be mapped:\n"
                   + ";\n".join(lines))


def _as_batch(x):
  """A mapped argument as an array (Python scalars and NumPy values too)."""
  if isinstance(x, (core.Tracer, core.ConcreteArray)):
    return x
  from refimpl.numpy import asarray
  return asarray(x)


def _move_out_axis(x, src, dst, size, axis_name, path, sum_match):
  """An output with its mapped axis moved from `src` to `dst` (with
  `sum_match`, summed over when `dst` is None)."""
  if dst is None and src is not None and sum_match:
    return lax.reduce_sum(x, (src,))
  if dst is None and src is not None:
    if axis_name is not None:
      raise ValueError(f"vmap has mapped output (axis_name={axis_name!r}) but "
                       "out_axes is None")
    raise ValueError(f"at vmap out_axes{tree_util.keystr(path)}, got axis spec None but "
                     f"output was batched on axis {src}")
  if dst is not None:
    ndim = core.get_aval(x).ndim + (src is None)
    if not -ndim <= dst < ndim:
      raise ValueError(f"vmap out_axes specification {dst} is out of bounds for an "
                       f"output of rank {ndim} (with its mapped axis)")
  return batching.matchaxis(src, dst, size, x)


def _map_axes(name, fun, in_axes, axis_size, args, kwargs):
  """The leaves of (args, kwargs), their tree, each leaf's mapped axis (or
  None) and the size of the map, with JAX's errors."""
  if isinstance(in_axes, tuple) and len(in_axes) != len(args):
    raise ValueError(f"{name} in_axes must be an int, None, or a tuple of entries "
                     "corresponding to the positional arguments passed to the "
                     f"function, but got len(in_axes)={len(in_axes)}, "
                     f"len(args)={len(args)}")
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  num_kwargs = len(tree_util.tree_leaves(kwargs))
  dims = _flatten_axes(f"{name} in_axes", tree_util.tree_structure(args), in_axes)
  dims += [0] * num_kwargs   # keyword arguments are mapped along axis 0
  if axis_size is not None:
    for x, d in zip(leaves, dims):
      if d is not None and _axis_of(name, x, d) != axis_size:
        raise ValueError(f"{name} got inconsistent sizes for array axes to be mapped: "
                         f"axis_size={axis_size} but axis {d} of an argument of type "
                         f"{_type_str(x)} has size {np.shape(x)[d]}")
    return leaves, in_tree, dims, axis_size
  if not leaves:
    raise ValueError(f"{name} wrapped function must be passed at least one argument "
                     f"containing an array, got empty *args={args} and "
                     f"**kwargs={kwargs}")
  return leaves, in_tree, dims, _mapped_axis_size(name, fun, in_tree, leaves, dims)


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None,
         sum_match=False):
  """Vectorizes `fun` over the axes `in_axes` of its arguments.

  `in_axes` is an int, None, or a tuple with one entry per positional
  argument, each a pytree prefix of that argument with ints (the mapped
  axis; negative counts from the end) or None (not mapped) as leaves;
  keyword arguments are mapped along axis 0. `out_axes` says the same of
  the outputs (None: an output that does not depend on the mapped axis).
  `axis_name` names the mapped axis for collectives (`lax.psum`, ...);
  `axis_size` gives its length when no argument is mapped. With `sum_match`,
  an output that depends on the mapped axis but has out_axes None is summed
  over it (instead of raising).
  """
  if not callable(fun):
    raise TypeError(f"vmap requires a callable argument, got {fun}")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)   # lists and tuples mean the same here, as in JAX
  if not (in_axes is None or type(in_axes) in (int, tuple)):
    raise TypeError("vmap in_axes must be an int, None, or a tuple of entries "
                    "corresponding to the positional arguments passed to the "
                    f"function, but got {in_axes}.")
  _check_axes_type("in_axes", in_axes)
  _check_axes_type("out_axes", out_axes)

  @functools.wraps(fun)
  def vmap_f(*args, **kwargs):
    leaves, in_tree, dims, size = _map_axes("vmap", fun, in_axes, axis_size, args, kwargs)
    leaves = [x if d is None else _as_batch(x) for x, d in zip(leaves, dims)]
    out_tree_box = []

    def flat_fun(*flat):
      f_args, f_kwargs = tree_util.tree_unflatten(in_tree, flat)
      out_leaves, out_tree = tree_util.tree_flatten(fun(*f_args, **f_kwargs))
      out_tree_box.append(out_tree)
      return out_leaves

    outs, out_dims = batching.batch_flat(
        flat_fun, batching.AxisData(axis_name, size), leaves, dims)
    out_tree = out_tree_box[0]
    dsts = _flatten_axes("vmap out_axes", out_tree, out_axes)
    paths = [p for p, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves))[0]]
    outs = [_move_out_axis(x, src, dst, size, axis_name, path, sum_match)
            for x, src, dst, path in zip(outs, out_dims, dsts, paths)]
    return tree_util.tree_unflatten(out_tree, outs)

  return vmap_f


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
  """Maps `fun` over the leading axes of its arguments, as a compiled program
  with collectives across `axis_name` (see `vmap` for `in_axes`/`out_axes`).

  `pmap(f)` is `jit(vmap(f))`, with JAX's semantics for values and
  collectives, on the one device there is: as in JAX, a map longer than the
  device count raises `ValueError`. `static_broadcasted_argnums` are passed
  as static Python values.
  """
  from refimpl.api import device_count, jit
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  if isinstance(static_broadcasted_argnums, int):
    static_broadcasted_argnums = (static_broadcasted_argnums,)
  static = tuple(static_broadcasted_argnums)

  def axes_of(nargs):
    if not static:
      return in_axes
    return tuple(None if i in static else  # static arguments are not mapped
                 in_axes[i] if isinstance(in_axes, (tuple, list)) else in_axes
                 for i in range(nargs))

  @functools.lru_cache(maxsize=None)
  def mapped(nargs):
    return jit(vmap(fun, axes_of(nargs), out_axes, axis_name=axis_name, axis_size=axis_size),
               static_argnums=static, backend=backend)

  @functools.wraps(fun)
  def pmap_f(*args, **kwargs):
    *_, size = _map_axes("pmap", fun, axes_of(len(args)), axis_size, args, kwargs)
    if size > device_count():
      raise ValueError(f"compiling computation that requires {size} logical devices, but "
                       f"only {device_count()} XLA devices are available "
                       f"(num_replicas={size})")
    return mapped(len(args))(*args, **kwargs)

  return pmap_f
